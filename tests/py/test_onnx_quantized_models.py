"""Networks quantized by ONNX Runtime's `quantize_static` (QDQ per tensor, QDQ per channel,
QOperator), imported by convc, compiled for the cpu target and run by PJRT, against ONNX
Runtime's int8 runs of the same files, by the bars of issue 19. The networks: two written here
and those of the ONNX model suite (tests/py/test_onnx_models.py; its small_resnet is the one
here), each in the forms that pass, a subset chosen to keep the file's time small (docs/onnx.md
has every network's figures in every form, and the causes of the failures):

- QOperator (QLinearConv): every quantized tensor the file computes (each QLinearConv's
  output, made a graph output) identical on at least 99.9% of elements, never more than one
  step apart;
- QDQ: the output on the file's output quantization grid, its error against the float model
  (RMS and mean absolute) within 1.25x of ONNX Runtime's own int8 error, and of int8 size (at
  least half of it: no float computation passed through); every Conv and Gemm a quantized conv,
  lowered to integer convolutions or dots only in the cpu module (the float ones are the other
  ops': Resize).

The networks are small (widths cut, 32x32 inputs); each file is made once per session.
"""

from __future__ import annotations

import functools
import logging
import re
import tempfile
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.dtypes import is_quantized
from optional_oracles import oracle
from test_lower_quantized import I8_CPU_PIPELINE  # every 8-bit quantized conv an i8 one (the default makes some exact f32 convs)
from test_onnx_models import NETWORKS as SUITE_NETWORKS
from test_onnx_models import _export, _onnxruntime, _small_resnet, _torch, _with_statistics

onnx = oracle("onnx")
ort = oracle("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

SHAPE = (1, 3, 32, 32)


def _inverted_residual_net() -> Any:
    """MobileNet v2's layout at cut widths (tools/bench_models.py's mobilenet_v2_style, 8-32 channels): inverted
    residuals (1x1 expand, 3x3 depthwise, 1x1 project) with ReLU6 (Clip) and a residual add, a Linear head."""
    nn = _torch().nn

    def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> list[Any]:
        return [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]

    class Inverted(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            hidden = cin * 4
            self.body = nn.Sequential(*conv_bn(cin, hidden, 1), nn.ReLU6(), *conv_bn(hidden, hidden, 3, stride, hidden), nn.ReLU6(),
                                      *conv_bn(hidden, cout, 1))
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.residual else self.body(x)

    return nn.Sequential(*conv_bn(3, 8, 3, 2), nn.ReLU6(), Inverted(8, 8, 1), Inverted(8, 16, 2), Inverted(16, 16, 1),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def _decoder_net() -> Any:
    """A small 2-layer decoder: a stride-2 Conv down (3 -> 16), then two ConvTranspose up, ReLU between: stride 2
    with kernel 4 (16 -> 8), stride 1 (8 -> 4); 4 x 32 x 32 out."""
    nn = _torch().nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.ReLU(),
                         nn.ConvTranspose2d(8, 4, 3, 1, 1))


# name -> (builder, input shape)
NETWORKS = {"small_resnet": (_small_resnet, SHAPE), "inverted_residual": (_inverted_residual_net, SHAPE),
            "decoder": (_decoder_net, SHAPE), **{name: case for name, case in SUITE_NETWORKS.items() if name != "small_resnet"}}
# name -> (quant_format, per_channel, op_types_to_quantize): QOperator quantizes only Conv, so that no
# com.microsoft op (QLinearAdd, QGemm, QLinearGlobalAveragePool) appears; convc refuses those (O4).
FORMATS = {"qdq_per_tensor": ("QDQ", False, None), "qdq_per_channel": ("QDQ", True, None), "qoperator": ("QOperator", False, ["Conv"])}
# The (network, form) pairs tested: every network in at least one form, each form on several networks.
QOPERATOR_NETWORKS = ["small_resnet", "inverted_residual", "resnet18", "efficientnet_b0", "shufflenet_v2", "densenet", "video_3d", "segmentation"]
QDQ_CASES = [*((name, form) for name in ("small_resnet", "inverted_residual") for form in ("qdq_per_tensor", "qdq_per_channel")),
             ("mobilenet_v3_small", "qdq_per_tensor"), ("shufflenet_v2", "qdq_per_tensor"), ("segmentation", "qdq_per_tensor"),
             ("dcgan_generator", "qdq_per_tensor"), ("resnet18", "qdq_per_channel"), ("mobilenet_v2", "qdq_per_channel"),
             ("efficientnet_b0", "qdq_per_channel"), ("densenet", "qdq_per_tensor"), ("densenet", "qdq_per_channel"),
             ("video_3d", "qdq_per_channel")]
FLOAT_OUTPUT = {"dcgan_generator"}  # its last op (Tanh) is not one quantize_static quantizes: no DequantizeLinear writes y


@functools.cache
def _float_model(name: str) -> bytes:
    """NETWORKS[name] (weights seeded: torchvision's initializers draw from torch's generator) exported, once per session."""
    build, shape = NETWORKS[name]
    _torch().manual_seed(0)
    return _export(_with_statistics(build()), shape, "torchscript")


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    """Eight standard-normal inputs of `shape` (seeded)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.batches = iter([{"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)} for seed in range(8)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.batches, None)


@functools.cache
def _quantized(name: str, form: str) -> bytes:
    """NETWORKS[name] quantized by quantize_static in FORMATS[form] (uint8 activations, int8 weights), once per session."""
    quant_format, per_channel, op_types = FORMATS[form]
    options = {"op_types_to_quantize": op_types} if op_types else {}
    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice to pre-process
    with tempfile.TemporaryDirectory() as directory:
        source, target = Path(directory) / "float.onnx", Path(directory) / "int8.onnx"
        source.write_bytes(_float_model(name) if quant_format == "QDQ" else _without_initializer_aliases(_float_model(name)))
        quantization.quantize_static(str(source), str(target), _Calibration(NETWORKS[name][1]),
                                     quant_format=getattr(quantization.QuantFormat, quant_format), per_channel=per_channel, **options)
        return target.read_bytes()


def _without_initializer_aliases(model: bytes) -> bytes:
    """The model with each Identity of an initializer made a copy of the initializer under the Identity's output name:
    quantize_static's QOperator form fails on a Conv bias that is no initializer (the TorchScript exporter aliases equal
    ones, such as MobileNet v3's zero squeeze-excite biases, with Identity)."""
    proto = onnx.load_from_string(model)
    initializers = {tensor.name: tensor for tensor in proto.graph.initializer}
    for node in list(proto.graph.node):
        if node.op_type == "Identity" and node.input[0] in initializers:
            copy = onnx.TensorProto()
            copy.CopyFrom(initializers[node.input[0]])
            copy.name = node.output[0]
            proto.graph.initializer.append(copy)
            proto.graph.node.remove(node)
    return proto.SerializeToString()  # type: ignore[no-any-return]


def _input(name: str) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(100).standard_normal(NETWORKS[name][1]).astype(np.float32)}


TARGETS = ("cpu", "gpu")  # the cpu module on XLA:CPU; the gpu module (no integer conv) on the default platform, a GPU where there is one


def _convc(model: bytes, name: str, target: str = "cpu") -> tuple[convc.Graph, list[np.ndarray]]:
    graph = convc.load_onnx(model)
    return graph, convc.run(graph, _input(name), platform="cpu" if target == "cpu" else None, target=target).outputs


def _with_conv_outputs(model: bytes) -> tuple[bytes, list[str]]:
    """The model with each QLinearConv's (quantized) output a graph output too, and those names."""
    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(model))
    names = [node.output[0] for node in proto.graph.node if node.op_type == "QLinearConv"]
    typed = {value.name: value for value in proto.graph.value_info}
    proto.graph.output.extend(typed[name] for name in names)
    return proto.SerializeToString(), names


@pytest.mark.parametrize(("network", "target"), [(network, target) for network in QOPERATOR_NETWORKS for target in TARGETS
                                                  if (network, target) != ("resnet18", "gpu")])  # the deepest, once
def test_qoperator_model_is_identical_to_onnxruntime_on_every_quantized_tensor(network: str, target: str) -> None:
    """A QOperator file (every Conv a QLinearConv, float elsewhere), lowered for `target`: every QLinearConv output
    identical to ONNX Runtime's on at least 99.9% of its elements and never more than one step apart; the float output
    within float rounding of it."""
    model, names = _with_conv_outputs(_quantized(network, "qoperator"))
    _, ours = _convc(model, network, target)
    theirs = _onnxruntime(model, _input(network))
    assert len(names) == sum(node.op_type == "Conv" for node in onnx.load_from_string(_float_model(network)).graph.node) >= 3
    for name, got, want in zip(["y", *names], ours, theirs, strict=True):
        if name == "y":
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * float(np.abs(want).max()))
            continue
        assert got.dtype == want.dtype and want.dtype in (np.uint8, np.int8)
        apart = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert apart.max() <= 1 and (apart == 0).mean() >= 0.999, (name, int(apart.max()), float((apart == 0).mean()))


def _errors(got: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(RMS, mean absolute) error against the float model's output."""
    difference = got.astype(np.float64) - reference.astype(np.float64)
    return float(np.sqrt(np.mean(difference ** 2))), float(np.mean(np.abs(difference)))


def _output_grid(model: bytes) -> tuple[float, int]:
    """The scale and zero point of the DequantizeLinear that writes the graph's output."""
    proto = onnx.load_from_string(model)
    arrays = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    last = next(node for node in proto.graph.node if node.output[0] == proto.graph.output[0].name)
    assert last.op_type == "DequantizeLinear"
    return float(arrays[last.input[1]]), int(arrays[last.input[2]])


CONV_LINE = re.compile(r'stablehlo\.(?:convolution|dot_general)\b.*->\s*tensor<[^>]*x([a-z]+)\d+>.*loc\("([^"]*)"\)')


def _lowered_kinds(text: str, convs: list[str]) -> dict[str, list[str]]:
    """For each name in `convs` (convc conv ops), the element kinds ('i', 'ui', 'f', 'bf') of the convolutions and
    dot_generals emitted for it (their locations start with its name) in `text`, emitted StableHLO."""
    kinds: dict[str, list[str]] = {name: [] for name in convs}
    for kind, location in CONV_LINE.findall(text):
        origin = next((name for name in convs if location == name or location.startswith(f"{name}.")), None)
        if origin is not None:
            kinds[origin].append(kind)
    return kinds


@pytest.mark.parametrize(("network", "form"), QDQ_CASES)
def test_qdq_model_is_integer_and_as_accurate_as_onnxruntime(network: str, form: str) -> None:
    """A QDQ file: every Conv and Gemm (the Linear heads) imported as a quantized conv, each lowered to integer
    convolutions or dots only in the cpu module (float ones are the other ops': Resize); the output on the file's output grid (unless its last
    op is float: FLOAT_OUTPUT); its RMS and mean absolute error against the float model within 1.25x of ONNX Runtime's
    int8 run's, and at least half of it (int8-sized, not the float answer)."""
    model = _quantized(network, form)
    graph, (ours,) = _convc(model, network)
    file_convs = sum(node.op_type in ("Conv", "Gemm") for node in onnx.load_from_string(model).graph.node)
    quantized_convs = [op for op in graph.ops if op.kind == "conv" and all(is_quantized(v.type.dtype) for v in op.operands)]
    assert len(quantized_convs) == file_convs == len([op for op in graph.ops if op.kind == "conv"])
    lowered = _lowered_kinds(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"), [op.result.name for op in quantized_convs])
    assert all(kinds and set(kinds) <= {"i", "ui"} for kinds in lowered.values()), lowered
    _assert_as_accurate_as_onnxruntime(model, network, ours)


@pytest.mark.parametrize(("network", "form"), QDQ_CASES)
def test_qdq_model_through_the_gpu_pipeline_is_as_accurate_as_onnxruntime(network: str, form: str) -> None:
    """A QDQ file lowered for the gpu target (no integer conv: XLA:GPU compiles none) and run on the default platform,
    a GPU where there is one: by the QDQ bar, as the cpu module is."""
    model = _quantized(network, form)
    _, (ours,) = _convc(model, network, "gpu")
    _assert_as_accurate_as_onnxruntime(model, network, ours)


def _assert_as_accurate_as_onnxruntime(model: bytes, network: str, ours: np.ndarray) -> None:
    """The QDQ bar: `ours` on the file's output grid (unless the network's last op is float: FLOAT_OUTPUT); its RMS
    and mean absolute error against the float model within 1.25x of ONNX Runtime's int8 run's, and at least half of
    it (int8-sized, not the float answer)."""
    (theirs,) = _onnxruntime(model, _input(network))
    (reference,) = _onnxruntime(_float_model(network), _input(network))
    if network not in FLOAT_OUTPUT:
        scale, zero_point = _output_grid(model)
        steps = ours / scale + zero_point
        np.testing.assert_allclose(steps, np.round(steps), atol=1e-3)
    (ours_rms, ours_mean), (their_rms, their_mean) = _errors(ours, reference), _errors(theirs, reference)
    assert 0.5 * their_rms <= ours_rms <= 1.25 * their_rms, (ours_rms, their_rms)
    assert 0.5 * their_mean <= ours_mean <= 1.25 * their_mean, (ours_mean, their_mean)


@pytest.mark.parametrize("form", ["qdq_per_tensor", "qdq_per_channel"])
def test_qdq_decoder_with_conv_transposes_is_integer_and_as_accurate_as_onnxruntime(form: str) -> None:
    """A QDQ file of a 2-layer decoder (a Conv, two ConvTranspose): every Conv and ConvTranspose imported as one
    quantized window op (per tensor a conv_backprop_input; per channel, W's axis 1, an lhs-dilated conv), no float
    convolution in the cpu module; the output on the file's grid, its error against the float model within 1.25x of
    ONNX Runtime's int8 run's, and at least half of it."""
    model = _quantized("decoder", form)
    graph, (ours,) = _convc(model, "decoder")
    file_ops = [node.op_type for node in onnx.load_from_string(model).graph.node]
    assert file_ops.count("Conv") == 1 and file_ops.count("ConvTranspose") == 2
    windows = [op for op in graph.ops if op.kind in ("conv", "conv_backprop_input")]
    assert len(windows) == 3 and all(is_quantized(v.type.dtype) for op in windows for v in (*op.operands, op.result))
    assert sum(op.kind == "conv_backprop_input" for op in windows) == (2 if form == "qdq_per_tensor" else 0)
    lowered = _lowered_kinds(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"), [op.result.name for op in windows])
    assert all(kinds and set(kinds) <= {"i", "ui"} for kinds in lowered.values()), lowered
    _assert_as_accurate_as_onnxruntime(model, "decoder", ours)


def test_default_qoperator_model_is_refused_naming_its_com_microsoft_ops() -> None:
    """quantize_static's QOperator file with every op type quantized holds com.microsoft ops (QLinearAdd, ...), which
    convc refuses by name (O4), not by a traceback."""
    from convc.diagnostics import ConvcError

    logging.getLogger().setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as directory:
        source, target = Path(directory) / "float.onnx", Path(directory) / "int8.onnx"
        source.write_bytes(_float_model("small_resnet"))
        quantization.quantize_static(str(source), str(target), _Calibration(SHAPE), quant_format=quantization.QuantFormat.QOperator)
        with pytest.raises(ConvcError) as err:
            convc.load_onnx(target.read_bytes())
    assert err.value.constraint == "O4" and "com.microsoft.QLinearAdd" in str(err.value)


def test_run_check_on_a_qdq_file_compares_with_both_oracles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc int8.onnx --run --check --target cpu` on a QDQ file: the spec oracle (jax.lax, quantized steps) and ONNX
    Runtime agree, exit 0; where ONNX Runtime's 8-bit kernels saturate (x86 without VNNI) the check says it
    did not compare with it, and still exits 0."""
    from convc.cli import main as convc_main
    from test_onnx_import import _skip_where_check_did_not_compare_with_onnxruntime

    (tmp_path / "int8.onnx").write_bytes(_quantized("small_resnet", "qdq_per_channel"))
    assert convc_main([str(tmp_path / "int8.onnx"), "--run", "--check", "--target", "cpu", "-o", str(tmp_path / "int8.mlir")]) == 0
    out = capsys.readouterr().out
    assert "y: 100.00% identical, at most 0 quantization steps apart vs jax.lax (ok)" in out
    _skip_where_check_did_not_compare_with_onnxruntime((tmp_path / "int8.onnx").read_bytes(), out)
    assert "y: max abs error vs onnxruntime" in out and "(ok)" in out.split("vs onnxruntime")[1]
