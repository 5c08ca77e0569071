"""ONNX Runtime's dynamic quantization (issue 19): DynamicQuantizeLinear, and ConvInteger and
MatMulInteger whose zero point it computes at run time, imported by convc, compiled for the
cpu target and run by PJRT, against ONNX Runtime's CPU kernels.

Single nodes are integer results, compared exactly: DynamicQuantizeLinear's y, scale and zero
point bit for bit; ConvInteger's and MatMulInteger's i32 sums equal. Models quantized by
`quantize_dynamic` (its default QOperator form, weights per tensor or per channel) end in
float (the i32 sums Cast, times x_scale * w_scale, plus the bias): every integer tensor they
compute (each DynamicQuantizeLinear's y, each ConvInteger's and MatMulInteger's sums) by the
issue's QOperator bar (identical on at least 99.9% of elements, never more than one step
apart), its scales within 1e-6 relative, and the float output within one step of the head's
input: a_scale * b_scale * max|B - b_zero_point|, what one uint8 step of one of the head's
inputs moves an output by. The networks are test_onnx_quantized_models.py's (32x32 inputs).
"""

from __future__ import annotations

import functools
import logging
import tempfile
from pathlib import Path
from typing import Any

import convc
import jax
import numpy as np
import pytest
from convc.compile import Compiler
from convc.diagnostics import ConvcError
from convc.passes import default_pipeline
from optional_oracles import oracle
from test_onnx_import import _model, _onnxruntime, _random, _skip_where_check_did_not_compare_with_onnxruntime
from test_onnx_quantized import MATMUL_SHAPES, QLINEAR_CASES, _exactly_as_onnxruntime, _integer_weights

onnx = oracle("onnx")
ort = oracle("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

# --- DynamicQuantizeLinear ------------------------------------------------------------------

SHAPE = (2, 3, 16, 16)


def _ties() -> np.ndarray:
    """x whose range is exactly 255 (scale 1, zero point round(100.5) = 100, a tie) and whose x / scale hits
    k + 0.5 (ties, which round to even)."""
    x = np.random.default_rng(4).integers(-100, 154, SHAPE).astype(np.float32) + 0.5
    x.flat[:2] = (-100.5, 154.5)
    return x


INPUTS = {
    "normal": lambda: _random(SHAPE, 1) * 3,
    "offset_wide": lambda: _random(SHAPE, 2) * 80 + 30,
    "positive": lambda: np.abs(_random(SHAPE, 3)) * 7,  # min(0, min(x)) = 0: zero point 0
    "negative": lambda: -np.abs(_random(SHAPE, 5)) * 7,  # max(0, max(x)) = 0: zero point 255
    "ties": _ties,
    "zeros": lambda: np.zeros(SHAPE, np.float32),  # range 0: scale 1 (ONNX Runtime's), not 0 / 0
}


@functools.cache
def _dynamic_quantize_model() -> bytes:
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"])
    return _model([node], {"x": SHAPE}, ["y", "y_scale", "y_zero_point"])


@functools.cache
def _dynamic_quantize_graph() -> convc.Graph:
    return convc.load_onnx(_dynamic_quantize_model())


@pytest.mark.parametrize("case", INPUTS)
def test_dynamic_quantize_linear_is_bit_identical_to_onnxruntime(case: str) -> None:
    """DynamicQuantizeLinear's y (uint8), y_scale (f32) and y_zero_point (uint8): bit for bit ONNX Runtime's, for a
    centred, a wide offset, an all-positive, an all-negative, a half-way (ties to even) and an all-zero x."""
    x = INPUTS[case]()
    ours = convc.run(_dynamic_quantize_graph(), {"x": x}, platform="cpu", target="cpu").outputs
    theirs = _onnxruntime(_dynamic_quantize_model(), {"x": x})
    for got, want in zip(ours, theirs, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    if case == "ties":
        assert float(theirs[1]) == 1.0 and int(theirs[2]) == 100
    if case == "zeros":
        assert float(theirs[1]) == 1.0 and int(theirs[2]) == 0


def test_dynamic_quantize_linear_is_built_from_plain_ops() -> None:
    """No quantized type: the scale is a run-time value, so y is a plain uint8 tensor made by `convert`, its steps by
    `round_nearest_even` of x / scale, its range by `reduce_min` and `reduce_max`."""
    graph = _dynamic_quantize_graph()
    kinds = [op.kind for op in graph.ops]
    assert {"reduce_min", "reduce_max", "round_nearest_even", "clamp"} <= set(kinds)
    assert "uniform_quantize" not in kinds and [v.type.dtype for v in graph.outputs] == ["ui8", "f32", "ui8"]


# --- ConvInteger and MatMulInteger with a run-time zero point -------------------------------

CONV_CASES = QLINEAR_CASES | {
    "same_lower": ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 3, 16, 16), (4, 3, 4, 4), False, False),
    "valid": ({"auto_pad": "VALID", "dilations": [2, 1]}, (1, 3, 16, 16), (4, 3, 3, 3), False, False),
}


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_integer_with_a_run_time_zero_point_equals_onnxruntime_exactly(case: str) -> None:
    """DynamicQuantizeLinear -> ConvInteger of its uint8 y and zero point (a run-time value, about 128) with int8
    weights (zero point 3): the same int32 sums as ONNX Runtime for explicit pads, SAME_UPPER, SAME_LOWER, VALID,
    strides, dilations, groups, depthwise, 1-D and 3-D; padding stays x's zero point (0 once shifted)."""
    attrs, x_shape, w_shape, _, _ = CONV_CASES[case]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
             helper.make_node("ConvInteger", ["q", "w", "qz", "wz"], ["y"], **attrs)]
    inits = {"w": _integer_weights(w_shape, np.int8), "wz": np.array(3, np.int8)}
    graph = _exactly_as_onnxruntime(_model(nodes, {"x": x_shape}, ["y"], inits), x_shape)
    assert [op.kind for op in graph.ops].count("conv") == 1


def test_conv_integer_with_zero_points_from_graph_inputs_equals_onnxruntime_exactly() -> None:
    """ConvInteger of an int8 graph input whose zero point is an int8 graph input too (another run-time value), with
    uint8 weights, padded: the same int32 sums as ONNX Runtime."""
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 2, 2, 1], strides=[1, 2])
    inits = {"w": _integer_weights((4, 3, 3, 3), np.uint8), "wz": np.array(131, np.uint8)}
    model = _model([node], {"x": (1, 3, 12, 12), "xz": ()}, ["y"], inits, dtype=TensorProto.INT8)
    feeds = {"x": np.random.default_rng(6).integers(-128, 128, (1, 3, 12, 12)).astype(np.int8), "xz": np.array(-37, np.int8)}
    ours = convc.run(convc.load_onnx(model), feeds, platform="cpu", target="cpu").outputs[0]
    np.testing.assert_array_equal(ours, _onnxruntime(model, feeds)[0])


def test_conv_integer_of_a_quantized_value_with_a_run_time_zero_point_equals_onnxruntime_exactly() -> None:
    """ConvInteger of QuantizeLinear's output (a convc quantized value, zero point 100) with DynamicQuantizeLinear's
    zero point (another, at run time): its stored integers less the run-time zero point, the sums ONNX Runtime gives."""
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["d", "ds", "dz"]),
             helper.make_node("QuantizeLinear", ["x", "qs", "qz"], ["q"]),
             helper.make_node("ConvInteger", ["q", "w", "dz", "wz"], ["y"], pads=[1, 1, 1, 1])]
    inits = {"qs": np.array(0.05, np.float32), "qz": np.array(100, np.uint8), "w": _integer_weights((4, 3, 3, 3), np.int8),
             "wz": np.array(-2, np.int8)}
    _exactly_as_onnxruntime(_model(nodes, {"x": (1, 3, 8, 8)}, ["y"], inits), (1, 3, 8, 8))


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_integer_with_a_run_time_zero_point_equals_onnxruntime_exactly(shapes: str) -> None:
    """DynamicQuantizeLinear -> MatMulInteger of its uint8 y and zero point with int8 B (one zero point per column):
    the same int32 sums as ONNX Runtime."""
    a_shape, b_shape = MATMUL_SHAPES[shapes]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
             helper.make_node("MatMulInteger", ["q", "b", "qz", "bz"], ["y"])]
    inits = {"b": _integer_weights(b_shape, np.int8), "bz": np.arange(b_shape[1], dtype=np.int8) - 3}
    _exactly_as_onnxruntime(_model(nodes, {"x": a_shape}, ["y"], inits), a_shape)


def test_run_time_zero_point_of_the_wrong_size_is_located() -> None:
    """A ConvInteger x_zero_point computed at run time with two elements (one is the op's rule) is one located O6
    naming the node, not a failure at run time."""
    node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], name="wide_zero")
    model = _model([node], {"x": (1, 3, 8, 8), "xz": (2,)}, ["y"], {"w": _integer_weights((4, 3, 3, 3), np.int8)},
                   dtype=TensorProto.INT8)
    with pytest.raises(ConvcError) as caught:
        convc.load_onnx(model)
    line = str(caught.value)
    assert caught.value.constraint == "O6" and "\n" not in line
    assert "/graph/node/0" in line and "wide_zero" in line and "x_zero_point (computed at run time) must be" in line


# --- models quantized by quantize_dynamic ---------------------------------------------------


@functools.cache
def _dynamic_file(network: str, per_channel: bool = False) -> bytes:
    """NETWORKS[network] quantized by quantize_dynamic with its defaults (QOperator: uint8 activations, int8 weights;
    per tensor unless `per_channel`), once per session."""
    from onnxruntime import quantization
    from test_onnx_quantized_models import _float_model

    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice to pre-process
    with tempfile.TemporaryDirectory() as directory:
        source, target = Path(directory) / "float.onnx", Path(directory) / "int8.onnx"
        source.write_bytes(_float_model(network))
        quantization.quantize_dynamic(str(source), str(target), per_channel=per_channel)
        return target.read_bytes()


def _with_integer_outputs(model: bytes) -> tuple[bytes, list[str]]:
    """The model with every output of its DynamicQuantizeLinear, ConvInteger and MatMulInteger nodes a graph output
    too, and those names."""
    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(model))
    kinds = ("DynamicQuantizeLinear", "ConvInteger", "MatMulInteger")
    names = [name for node in proto.graph.node if node.op_type in kinds for name in node.output]
    typed = {value.name: value for value in proto.graph.value_info}
    proto.graph.output.extend(typed[name] for name in names)
    return proto.SerializeToString(), names


def _head_step(model: bytes, outputs: dict[str, np.ndarray]) -> float:
    """a_scale * b_scale * max|B - b_zero_point| (the largest over B's columns, per-column scales and zero points) of
    the file's last MatMulInteger: one uint8 step of one of its inputs, in the float output."""
    proto = onnx.load_from_string(model)
    arrays = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    head = [node for node in proto.graph.node if node.op_type == "MatMulInteger"][-1]
    quantizer = next(node for node in proto.graph.node if node.output[0] == head.input[0])
    b = arrays[head.input[1]].astype(np.int32) - arrays[head.input[3]].astype(np.int32)
    b_scale = next(arrays[node.input[1]] for node in proto.graph.node if node.op_type == "Mul" and node.input[0] == quantizer.output[1])
    return float(outputs[quantizer.output[1]]) * float((b_scale * np.abs(b).max(axis=0)).max())


MODEL_FILES = {"small_resnet": ("small_resnet", False), "inverted_residual": ("inverted_residual", False),
               "inverted_residual_per_channel": ("inverted_residual", True)}


@pytest.mark.parametrize("target", ["cpu", "gpu"])
@pytest.mark.parametrize("file", MODEL_FILES)
def test_quantize_dynamic_model_agrees_with_onnxruntime(file: str, target: str) -> None:
    """A quantize_dynamic file (DynamicQuantizeLinear before every ConvInteger and the MatMulInteger head; weights per
    tensor, or per output channel with one scale and zero point each), lowered for `target` and run where that target's
    runs go (the cpu module on the CPU; the gpu module, whose ConvIntegers are f64 convs, on the default platform, a
    GPU where there is one): every
    integer tensor it computes identical to ONNX Runtime's on at least 99.9% of its elements and never more than one
    step apart (scales within 1e-6 relative: the float steps between them may round differently), and the float output
    within one step of the head's input (a_scale * b_scale * max|B - b_zero_point|)."""
    from test_onnx_quantized_models import _input

    network = MODEL_FILES[file][0]
    model, names = _with_integer_outputs(_dynamic_file(*MODEL_FILES[file]))
    ours = convc.run(convc.load_onnx(model), _input(network), target=target).outputs
    theirs = _onnxruntime(model, _input(network))
    assert sum(name.endswith("_quantized") for name in names) >= 10
    found = dict(zip(["y", *names], theirs, strict=True))
    for name, got, want in zip(["y", *names], ours, theirs, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if want.dtype == np.float32 and name != "y":  # a DynamicQuantizeLinear's scale
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=name)
        elif name != "y":
            apart = np.abs(got.astype(np.int64) - want.astype(np.int64))
            step = 1 if want.dtype == np.uint8 else _conv_step(model, name, found)
            assert apart.max() <= step and (apart == 0).mean() >= 0.999, (name, int(apart.max()), float((apart == 0).mean()))
    worst, bound = float(np.abs(ours[0] - theirs[0]).max()), _head_step(model, found)
    assert worst <= bound, (worst, bound)


def _conv_step(model: bytes, name: str, outputs: dict[str, Any]) -> int:
    """What one uint8 step of one input moves the integer op's sum `name` by: max|w - w_zero_point|."""
    proto = onnx.load_from_string(model)
    arrays = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    node = next(node for node in proto.graph.node if node.output[0] == name)
    w, zero_points = arrays[node.input[1]].astype(np.int32), arrays[node.input[3]].astype(np.int32)
    if node.op_type == "ConvInteger" and zero_points.ndim == 1:  # one per output channel
        zero_points = zero_points.reshape(-1, *[1] * (w.ndim - 1))
    return int(np.abs(w - zero_points).max())


def test_run_check_on_a_quantize_dynamic_file_compares_with_both_oracles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc int8.onnx --run --check --target cpu` on a quantize_dynamic file: the jax.lax oracle of the imported graph
    and ONNX Runtime both agree, exit 0 (where ONNX Runtime's 8-bit products saturate, the check says it did not
    compare with it)."""
    from convc.cli import main as convc_main

    (tmp_path / "int8.onnx").write_bytes(_dynamic_file("small_resnet"))
    assert convc_main([str(tmp_path / "int8.onnx"), "--run", "--check", "--target", "cpu", "-o", str(tmp_path / "int8.mlir")]) == 0
    out = capsys.readouterr().out
    assert "y: max abs error vs jax.lax" in out and "(ok)" in out.split("vs jax.lax")[1].splitlines()[0]
    _skip_where_check_did_not_compare_with_onnxruntime((tmp_path / "int8.onnx").read_bytes(), out)
    assert "y: max abs error vs onnxruntime" in out and "(ok)" in out.split("vs onnxruntime")[1].splitlines()[0]


# --- the cpu target's exact f32 form of ConvInteger (lower-quantized, exact_f32) -------------

CPU_I32_CONVS = default_pipeline("cpu").replace("lower-quantized", "lower-quantized{exact_f32=false}")


def _conv_dtypes(graph: convc.Graph, pipeline: str) -> list[str]:
    """The result element type of each conv (and dot: the cpu pipeline makes 1x1 convs dots) `pipeline` leaves."""
    lowered = Compiler(pipeline=pipeline).run_passes(graph.clone())
    return [op.result.type.dtype for op in lowered.ops if op.kind in ("conv", "dot_general")]


def _extreme_kernel(shape: tuple[int, ...], taps_sum: int) -> np.ndarray:
    """An int8 kernel of `shape` (2 output channels): channel 0 -128 on its first 514 elements, -(taps_sum - 65792) on
    the next and 0 after, so that its sum of |w| is `taps_sum`; channel 1 random."""
    w = np.zeros(shape, np.int64)
    w[0].flat[:514] = -128
    w[0].flat[514] = -(taps_sum - 514 * 128)
    w[1] = np.random.default_rng(8).integers(-128, 128, shape[1:])
    return w.astype(np.int8)


BOUND_CASES = {  # kernel shape, its channel 0's sum of |w|, the cpu target's convs
    "below": ((2, 58, 3, 3), 65793, ["f32"]),  # 255 * 65793 = 2^24 - 1: one f32 conv
    "past_two_ranges": ((2, 58, 3, 3), 65795, ["f32", "f32"]),  # 2^24 + 509: f32 convs over features 0-56 and 57
    "past_one_feature": ((2, 1, 23, 23), 65795, ["i32"]),  # one input feature alone past 2^24: the i32 conv stays
}


@pytest.mark.parametrize("case", BOUND_CASES)
def test_conv_integer_at_the_2_24_bound_takes_the_exact_form_and_equals_onnxruntime(case: str) -> None:
    """ConvInteger of an int8 input less a run-time int8 zero point (|x - zx| <= 255) with an int8 kernel whose largest
    per-channel sum of |w| is 65793 (255 * 65793 = 2^24 - 1: the cpu target makes it one f32 conv) or 65795 (past 2^24:
    an f32 conv over ranges of input features each below it, summed in i32; or, where one feature alone is past it, the
    i32 conv). Each output equals ONNX Runtime's, its largest element (x = -128, zx = 127 under every tap) is
    255 * taps_sum exactly, and past the bound one f32 conv of the whole would not have been exact."""
    shape, taps_sum, forms = BOUND_CASES[case]
    size = shape[-1] + 3
    node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[1, 1, 1, 1])
    model = _model([node], {"x": (1, shape[1], size, size), "xz": ()}, ["y"], {"w": _extreme_kernel(shape, taps_sum)},
                   dtype=TensorProto.INT8)
    x = np.random.default_rng(9).integers(-128, 128, (1, shape[1], size, size)).astype(np.int8)
    x[..., :-2, :-2] = -128  # (x - zx) = -255 under every tap of output (1, 1)
    feeds = {"x": x, "xz": np.array(127, np.int8)}
    graph = convc.load_onnx(model)
    assert _conv_dtypes(graph, default_pipeline("cpu")) == forms
    ours = convc.run(graph, feeds, platform="cpu", target="cpu").outputs[0]
    theirs = _onnxruntime(model, feeds)[0]
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(ours, theirs)
    assert ours[0, 0, 1, 1] == ours.max() == 255 * taps_sum
    shifted = x.astype(np.float32) - np.float32(127)
    whole = jax.lax.conv(shifted, _extreme_kernel(shape, taps_sum).astype(np.float32), (1, 1), [(1, 1), (1, 1)])
    assert (float(whole[0, 0, 1, 1]) == 255 * taps_sum) == (case == "below")


def test_quantize_dynamic_model_convs_are_f32_on_cpu_and_bit_identical_to_the_i32_form() -> None:
    """small_resnet quantized by quantize_dynamic: on the cpu target every ConvInteger (weights per tensor, |w| <= 127,
    so every sum is far below 2^24) is an f32 conv and the head's MatMulInteger an f32 dot; every integer tensor the
    file computes and its float output are bit for bit those of the same pipeline keeping the i32 convs and dot
    (lower-quantized{exact_f32=false})."""
    from test_onnx_quantized_models import _input

    model, names = _with_integer_outputs(_dynamic_file("small_resnet"))
    graph = convc.load_onnx(model)
    convs = [node for node in onnx.load_from_string(model).graph.node if node.op_type == "ConvInteger"]
    kept = _conv_dtypes(graph, CPU_I32_CONVS)
    assert len(convs) >= 5 and kept.count("i32") == len(convs) + 1  # the head: MatMulInteger's i32 dot
    assert "i32" not in _conv_dtypes(graph, default_pipeline("cpu"))
    fast = convc.run(graph, _input("small_resnet"), platform="cpu", target="cpu").outputs
    slow = convc.run(graph, _input("small_resnet"), platform="cpu", pipeline=CPU_I32_CONVS).outputs
    for name, got, want in zip(["y", *names], fast, slow, strict=True):
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


MATMUL_BOUND_CASES = {"below": (65793, "f32"), "past": (65795, "i32")}  # 255 * 65793 = 2^24 - 1; 255 * 65795 > 2^24


@pytest.mark.parametrize("case", MATMUL_BOUND_CASES)
def test_matmul_integer_at_the_2_24_bound_takes_the_exact_form_and_equals_onnxruntime(case: str) -> None:
    """MatMulInteger of an int8 A less a run-time int8 zero point (|a - za| <= 255) with a constant int8 B whose column
    0 sums to 65793 in |b| (255 * 65793 = 2^24 - 1: the cpu target makes it an f32 dot_general) or 65795 (past 2^24:
    the i32 dot_general stays). The output equals ONNX Runtime's and its largest element (a = -128, za = 127 against
    the whole column) is 255 * that sum exactly."""
    column_sum, form = MATMUL_BOUND_CASES[case]
    b = np.random.default_rng(10).integers(-128, 128, (520, 3))
    b[:, 0] = 0
    b[:514, 0], b[514, 0] = -128, -(column_sum - 514 * 128)
    node = helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])
    model = _model([node], {"a": (2, 520), "az": ()}, ["y"], {"b": b.astype(np.int8)}, dtype=TensorProto.INT8)
    a = np.random.default_rng(11).integers(-128, 128, (2, 520)).astype(np.int8)
    a[0] = -128
    feeds = {"a": a, "az": np.array(127, np.int8)}
    graph = convc.load_onnx(model)
    assert _conv_dtypes(graph, default_pipeline("cpu")) == [form]
    ours = convc.run(graph, feeds, platform="cpu", target="cpu").outputs[0]
    np.testing.assert_array_equal(ours, _onnxruntime(model, feeds)[0])
    assert ours.dtype == np.int32 and ours[0, 0] == ours.max() == 255 * column_sum
