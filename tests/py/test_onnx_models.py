"""Whole networks exported from PyTorch in the test session, by both of its exporters (the
TorchScript one, opset 17, and the dynamo one, which needs onnxscript), imported by convc
(`load_onnx`, default pipeline, PJRT on the CPU) and compared with ONNX Runtime on the same
inputs: torchvision's ResNet-18, MobileNet v2 and v3-small, EfficientNet-B0, ShuffleNet v2
and DenseNet at cut widths, and written here a DCGAN generator (ConvTranspose), a 3-D conv
net, a small segmentation net (Resize) and a small ResNet, which also serves the dynamic
batch, external data and `--grad` (against PyTorch autograd of the source module) tests.
Inputs are 32x32; each network is exported once per session.

A network holding ops convc has no converter for yet is not skipped: its test asserts that
`load_onnx` refuses it with one O5 line naming exactly those op types, so the test holds
either way and turns into the comparison with ONNX Runtime when the converters land. What
each network came to is printed at the end of the run (the census).
"""

from __future__ import annotations

import functools
import io
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.cli import main as convc_main
from convc.diagnostics import ConvcError
from convc.frontend.onnx import lookup
from convc.frontend.onnx.model import MIN_OPSET
from convc.frontend.onnx.registry import UNSUPPORTED_OP
from optional_oracles import oracle, torchvision_models
from suite_census import record

onnx = oracle("onnx")
ort = oracle("onnxruntime")

RTOL = 1e-4  # relative to the largest ONNX Runtime output
EXPORTERS = ("torchscript", "dynamo")
CENSUS: dict[str, str] = {}


# --- exporting -----------------------------------------------------------------------------


def _torch() -> Any:
    return oracle("torch")


def _export(module: Any, shape: tuple[int, ...], exporter: str, dynamic_batch: bool = False, **options: Any) -> bytes:
    """`module` in eval mode exported with input 'x' and output 'y' by `exporter`."""
    torch = _torch()
    x = torch.randn(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            buffer = io.BytesIO()
            axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None
            torch.onnx.export(module.eval(), (x,), buffer, dynamo=False, opset_version=17, input_names=["x"], output_names=["y"],
                              dynamic_axes=axes, **options)
            return buffer.getvalue()
        oracle("onnxscript")
        shapes = ({0: torch.export.Dim("batch", min=1, max=64)},) if dynamic_batch else None
        program = torch.onnx.export(module.eval(), (x,), dynamo=True, input_names=["x"], output_names=["y"], dynamic_shapes=shapes,
                                    verbose=False, **options)
        return program.model_proto.SerializeToString()  # type: ignore[no-any-return]


def _with_statistics(module: Any) -> Any:
    """Non-trivial BatchNorm running statistics and affine weights (fresh ones are an identity)."""
    torch = _torch()
    generator = torch.Generator().manual_seed(0)
    for layer in module.modules():
        if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm):
            layer.running_mean.copy_(torch.rand(layer.running_mean.shape, generator=generator) - 0.5)
            layer.running_var.copy_(torch.rand(layer.running_var.shape, generator=generator) + 0.5)
            layer.weight.data.copy_(torch.rand(layer.weight.shape, generator=generator) + 0.5)
            layer.bias.data.copy_(torch.rand(layer.bias.shape, generator=generator) - 0.5)
    return module.eval()


def _resnet18() -> Any:
    return torchvision_models().resnet18(num_classes=10)


def _mobilenet_v2() -> Any:
    return torchvision_models().mobilenet_v2(num_classes=10, width_mult=0.25)


def _mobilenet_v3_small() -> Any:
    """Hard-swish and squeeze-excite (HardSigmoid gate)."""
    return torchvision_models().mobilenet_v3_small(num_classes=10, width_mult=0.25)


def _efficientnet_b0() -> Any:
    """SiLU (Sigmoid times x), squeeze-excite, stochastic depth (an identity in eval mode); widths and depths / 4."""
    models = torchvision_models()
    settings, last_channel = models.efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return models.EfficientNet(settings, 0.2, num_classes=10, last_channel=last_channel)


def _shufflenet_v2() -> Any:
    """Channel shuffle (reshape, transpose, reshape) and channel splits (chunk)."""
    return torchvision_models().ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10)


def _densenet() -> Any:
    """Dense blocks (concatenation), BatchNorm after a concat (unfused), transitions with average pooling."""
    return torchvision_models().DenseNet(growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2, num_classes=10)


def _small_resnet() -> Any:
    """A ResNet stem, two basic blocks (one with a strided 1x1 downsample) and head, at width 8."""
    nn = _torch().nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x: Any) -> Any:
            y = self.bn1(self.conv1(x)).relu()
            return (self.bn2(self.conv2(y)) + self.down(x)).relu()

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            self.layer1, self.layer2 = Block(8, 8, 1), Block(8, 16, 2)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

        def forward(self, x: Any) -> Any:
            return self.head(self.layer2(self.layer1(self.stem(x))))

    _torch().manual_seed(0)
    return ResNet()


def _dcgan_generator() -> Any:
    """DCGAN's generator: a 16-dim code through strided ConvTranspose2d + BatchNorm + ReLU up to a 32x32 Tanh image."""
    nn = _torch().nn
    _torch().manual_seed(1)
    return nn.Sequential(nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False), nn.Tanh())


def _video_net() -> Any:
    """A 3-D conv net in the pattern of R(2+1)D: a 3-D stem, a (1,3,3) spatial then (3,1,1) temporal conv, 3-D pooling."""
    nn = _torch().nn
    _torch().manual_seed(2)
    return nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False), nn.BatchNorm3d(8), nn.ReLU(),
                         nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)),
                         nn.Conv3d(8, 12, (1, 3, 3), 1, (0, 1, 1), bias=False), nn.BatchNorm3d(12), nn.ReLU(),
                         nn.Conv3d(12, 16, (3, 1, 1), (2, 1, 1), (1, 0, 0), bias=False), nn.BatchNorm3d(16), nn.ReLU(),
                         nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(16, 5))


def _segmentation_net() -> Any:
    """An FCN-style head: a strided encoder, a 1x1 classifier, and bilinear upsampling back to the input size."""
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(3)

    class Segmenter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())
            self.classifier = nn.Conv2d(16, 4, 1)

        def forward(self, x: Any) -> Any:
            y = self.classifier(self.encoder(x))
            return torch.nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

    return Segmenter()


# name -> (builder, input shape)
NETWORKS: dict[str, tuple[Callable[[], Any], tuple[int, ...]]] = {
    "resnet18": (_resnet18, (1, 3, 32, 32)),
    "mobilenet_v2": (_mobilenet_v2, (1, 3, 32, 32)),
    "mobilenet_v3_small": (_mobilenet_v3_small, (1, 3, 32, 32)),
    "efficientnet_b0": (_efficientnet_b0, (1, 3, 32, 32)),
    "shufflenet_v2": (_shufflenet_v2, (1, 3, 32, 32)),
    "densenet": (_densenet, (1, 3, 32, 32)),
    "small_resnet": (_small_resnet, (2, 3, 32, 32)),
    "dcgan_generator": (_dcgan_generator, (2, 16, 1, 1)),
    "video_3d": (_video_net, (1, 3, 8, 32, 32)),
    "segmentation": (_segmentation_net, (1, 3, 32, 32)),
}


@functools.cache
def _exported(name: str, exporter: str, dynamic_batch: bool = False) -> bytes:
    """NETWORKS[name] exported by `exporter`, once per session."""
    build, shape = NETWORKS[name]
    return _export(_with_statistics(build()), shape, exporter, dynamic_batch)


# --- comparing -----------------------------------------------------------------------------


def _onnxruntime(model: bytes | str, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """ONNX Runtime's outputs; a skip (counted and printed) where it is no oracle for the model
    on this host (`onnxruntime_unfit`: 8-bit products that saturate)."""
    from convc.frontend.onnx.check import onnxruntime_unfit

    unfit = onnxruntime_unfit(model)
    if unfit is not None:
        pytest.skip(f"ONNX Runtime is no oracle for this model here: {unfit}")
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))  # type: ignore[no-any-return]


def _random(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _unconverted_ops(model: bytes) -> set[str]:
    """The op types of the nodes convc can neither convert (no converter at the model's opset)
    nor evaluate at import (some input is not known then: it depends on a graph input)."""
    proto = onnx.load_from_string(model)
    opset = max(max(e.version for e in proto.opset_import if e.domain in ("", "ai.onnx")), MIN_OPSET)
    known = {tensor.name for tensor in proto.graph.initializer}
    missing = set()
    for node in proto.graph.node:
        entry = lookup(node.op_type, opset)
        present = [name for name in node.input if name]
        if (present and all(name in known for name in present)) or (entry is not None and entry.known_output):
            known.update(node.output)
        elif entry is None:
            missing.add(node.op_type)
    return missing


def _named_op_types(line: str) -> set[str]:
    """The op types an O5 line lists ("'node' (OpType), ...")."""
    listed = line.split(": ", 2)[-1]
    return set(re.findall(r"'[^']*' \(([A-Za-z0-9_]+)\)", listed.split(" (docs/onnx.md")[0]))


def _max_error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """The largest abs difference relative to the largest expected value, asserting RTOL."""
    worst = 0.0
    for ours, theirs in zip(got, want, strict=True):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        scale = max(float(np.abs(theirs).max(initial=0.0)), 1e-6)
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=RTOL * scale)
        worst = max(worst, float(np.abs(ours - theirs).max(initial=0.0)) / scale)
    return worst


def _agrees_or_names_its_missing_ops(label: str, model: bytes, **load: Any) -> convc.Graph | None:
    """convc's outputs agree with ONNX Runtime's on random inputs; or, where the model holds ops
    convc has no converter for, load_onnx refuses it with one O5 line naming exactly those op
    types. The graph it ran, or None after the refusal; the census says which."""
    missing = _unconverted_ops(model)
    if missing:
        with pytest.raises(ConvcError) as caught:
            convc.load_onnx(model, file=f"{label}.onnx", **load)
        line = str(caught.value)
        assert caught.value.constraint == UNSUPPORTED_OP and "\n" not in line and line.startswith(f"{label}.onnx:/graph/node/"), line
        assert _named_op_types(line) == missing, line
        CENSUS[label] = f"refused (O5), no converter yet for: {', '.join(sorted(missing))}"
        return None
    graph = convc.load_onnx(model, file=f"{label}.onnx", **load)
    feeds = {value.name: _random(value.type.shape, seed) for seed, value in enumerate(graph.inputs)}
    got = convc.run(graph, feeds, platform="cpu").outputs
    assert [value.name for value in graph.outputs] == [value.name for value in onnx.load_from_string(model).graph.output]
    error = _max_error(got, _onnxruntime(model, feeds))
    CENSUS[label] = f"agrees with ONNX Runtime: max abs error {error:.2g} of the largest output"
    return graph


@pytest.fixture(autouse=True, scope="module")
def _census() -> Any:
    yield
    record("ONNX models exported from PyTorch (tests/py/test_onnx_models.py)", [f"{label:>34}: {line}" for label, line in CENSUS.items()])


# --- the networks ---------------------------------------------------------------------------


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", NETWORKS)
def test_exported_network_agrees_with_onnxruntime(name: str, exporter: str) -> None:
    """NETWORKS[name] exported by `exporter`: convc agrees with ONNX Runtime (rtol 1e-4 of the
    largest output), or refuses it naming exactly the op types it has no converter for."""
    _agrees_or_names_its_missing_ops(f"{name}-{exporter}", _exported(name, exporter))


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_dynamic_batch_export_takes_its_batch_from_input_shapes(exporter: str) -> None:
    """The small ResNet exported with a symbolic batch dim: input_shapes makes it 3, and the
    static-shaped result agrees with ONNX Runtime at batch 3; without it, batch 1 and a note."""
    model = _exported("small_resnet", exporter, dynamic_batch=True)
    assert onnx.load_from_string(model).graph.input[0].type.tensor_type.shape.dim[0].dim_param
    graph = _agrees_or_names_its_missing_ops(f"small_resnet-{exporter}-batch3", model, input_shapes={"x": (3, 3, 32, 32)})
    if graph is not None:
        assert graph.inputs[0].type.shape == (3, 3, 32, 32) and graph.outputs[0].type.shape == (3, 10)
        notes: list[str] = []
        assert convc.load_onnx(model, log=notes.append).inputs[0].type.shape == (1, 3, 32, 32)
        assert len(notes) == 1 and "taken as 1" in notes[0]


def test_external_data_model_runs_and_checks_from_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The small ResNet saved with its weights in a separate file (save_as_external_data):
    load_onnx(path) agrees with ONNX Runtime reading the same files, and `convc m.onnx --run
    --check` compares with both oracles and exits 0."""
    proto = onnx.load_from_string(_exported("small_resnet", "torchscript"))
    onnx.save_model(proto, tmp_path / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True, location="m.weights",
                    size_threshold=0)
    assert (tmp_path / "m.weights").stat().st_size > 4 * 1000 and (tmp_path / "m.onnx").stat().st_size < 16 * 1000
    x = _random((2, 3, 32, 32))
    got = convc.run(convc.load_onnx(tmp_path / "m.onnx"), {"x": x}, platform="cpu").outputs
    _max_error(got, _onnxruntime(str(tmp_path / "m.onnx"), {"x": x}))
    assert convc_main([str(tmp_path / "m.onnx"), "--run", "--check", "--target", "cpu", "-o", str(tmp_path / "m.mlir")]) == 0
    out = capsys.readouterr().out
    assert "y: max abs error vs jax.lax" in out and "y: max abs error vs onnxruntime" in out


# --- gradients against PyTorch autograd ---------------------------------------------------

GRAD_WRT = ("stem.0.weight", "layer2.conv1.weight", "layer2.down.0.weight", "head.2.weight", "head.2.bias")


@functools.cache
def _grad_case() -> tuple[Any, bytes]:
    """The small ResNet and its export with the weights under their PyTorch names (no
    constant folding, so BatchNorm is not folded into the convs' weights)."""
    module = _with_statistics(_small_resnet())
    return module, _export(module, NETWORKS["small_resnet"][1], "torchscript", do_constant_folding=False)


def _torch_gradients(module: Any, x: np.ndarray, cotangent: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """y and the gradients of sum(y * cotangent) with respect to x and GRAD_WRT, by PyTorch autograd."""
    torch = _torch()
    params = dict(module.named_parameters())
    for param in params.values():
        param.grad = None
    xt = torch.tensor(x, requires_grad=True)
    y = module(xt)
    (y * torch.tensor(cotangent)).sum().backward()
    return y.detach().numpy(), {"x": xt.grad.numpy(), **{name: params[name].grad.numpy() for name in GRAD_WRT}}


def test_grad_of_an_imported_network_agrees_with_torch_autograd() -> None:
    """convc.grad of the imported small ResNet, its weights kept as inputs (keep_as_inputs),
    run on the CPU: the gradients of sum(y * cotangent) with respect to the input and five
    weights (stem and strided convs, downsample, classifier) agree with PyTorch autograd of
    the source module."""
    module, model = _grad_case()
    graph = convc.load_onnx(model, keep_as_inputs=GRAD_WRT)
    step = convc.grad(graph, ["x", *GRAD_WRT])
    assert [v.name for v in step.inputs] == ["x", *GRAD_WRT, "y.grad"]
    x, cotangent = _random((2, 3, 32, 32), 1), _random((2, 10), 2)
    weights = [module.get_parameter(name).detach().numpy() for name in GRAD_WRT]
    got = convc.run(step, [x, *weights, cotangent], platform="cpu").named_outputs
    y, want = _torch_gradients(module, x, cotangent)
    _max_error([got["y"]], [y])
    for name, gradient in want.items():
        _max_error([got[f"{name}.grad"]], [gradient])


def test_grad_flag_on_an_onnx_file_agrees_with_torch_autograd(tmp_path: Path) -> None:
    """`convc m.onnx --grad W... --run --platform cpu --inputs --outputs` names initializers
    (constants) as `--grad` targets: the gradients it writes agree with PyTorch autograd of the
    source module."""
    module, model = _grad_case()
    (tmp_path / "m.onnx").write_bytes(model)
    x, cotangent = _random((2, 3, 32, 32), 3), _random((2, 10), 4)
    np.savez(tmp_path / "in.npz", x=x, **{"y.grad": cotangent})
    assert convc_main([str(tmp_path / "m.onnx"), "--grad", ",".join(GRAD_WRT), "--run", "--platform", "cpu", "--inputs",
                       str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz"), "-o", str(tmp_path / "step.mlir")]) == 0
    saved = np.load(tmp_path / "out.npz")
    y, want = _torch_gradients(module, x, cotangent)
    _max_error([saved["y"]], [y])
    for name in GRAD_WRT:
        _max_error([saved[f"{name}.grad"]], [want[name]])
