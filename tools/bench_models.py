"""Whole networks imported from ONNX (`python -m convc.tools.bench --suite models`): each
network is a PyTorch module, exported with the TorchScript exporter (`torch.onnx.export(...,
dynamo=False)`, opset 17) into memory and read by `convc.load_onnx`, then run three ways in
one process:

* convc: the imported graph through the default passes for `--target`, compiled by PJRT;
* ONNX Runtime: the same ONNX bytes on its CPU provider;
* PyTorch eager: the source module (NCHW, `no_grad`).

With `--save-onnx DIR` the suite only exports: each network's ONNX file and a manifest
(MANIFEST: the network, batch, input shape and the seed its input is drawn with) go to DIR,
and nothing is timed. With `--onnx-dir DIR` it reads those files instead of exporting, so it
runs where PyTorch does not install (jaxlib's newest release wants a newer Python than
PyTorch's wheels here): convc against ONNX Runtime only, the PyTorch column empty and the
report saying why.

With `--without-pass PASS`, convc runs a fourth way: compiled with the target's default
pipeline minus PASS ("convc_without"), checked and timed with the rest, so a pass's before
and after are compared in one process.

Thread counts: XLA:CPU's intra-op pool has one thread per core (`os.cpu_count()`, its
default); ONNX Runtime's session gets `intra_op_num_threads` = the same count (one
inter-op thread, sequential execution, its threads stopped from spinning once a run returns:
ORT_STOP_SPINNING) and PyTorch `torch.set_num_threads` of it (`--torch-threads` overrides
PyTorch's alone).

The networks come from torchvision when it imports; otherwise from the small hand-written
architectures below (FALLBACK_NETWORKS), and the report says which. convc's and PyTorch's
outputs are checked against ONNX Runtime's before anything is timed: a disagreement ends
the run (exit 1).
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from . import bench, bench_profile

TOLERANCE = 1e-4  # max |ours - onnxruntime| / max |onnxruntime|, f32
QUICK_SIZE = 64
FULL_SIZE = 224
FALLBACK_NETWORKS = ("resnet18_style", "mobilenet_v2_style", "efficientnet_style", "densenet_style", "segmentation_style",
                     "conv3d_style")
TORCHVISION_NETWORKS = ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "lraspp_mobilenet_v3_large",
                        "r3d_18")
SEGMENTATION_NETWORKS = ("lraspp_mobilenet_v3_large", "segmentation_style")  # their output: the 'out' tensor of a dict
MANIFEST = "manifest.json"  # --save-onnx / --onnx-dir: what the directory holds
MANIFEST_FORMAT = "convc-bench-models-onnx/1"
OPSET = 17


@dataclass(frozen=True)
class ModelSpec:
    """One network at one batch size; `input_shape` is NCHW (NCDHW for 3-D nets)."""

    name: str
    source: str  # "torchvision" or "fallback"
    batch: int
    input_shape: tuple[int, ...]
    onnx_file: str | None = None  # --onnx-dir: the saved export to read (None: export from PyTorch)

    def describe(self) -> str:
        return "x".join(str(d) for d in self.input_shape)


@dataclass
class NetworkTiming:
    """What every network suite reports of one network at one batch: the timer's medians, best
    times and spreads per implementation, over its rounds."""

    name: str
    source: str
    batch: int
    shape: str
    ms: dict[str, float]  # medians
    best_ms: dict[str, float]
    iqr_ms: dict[str, float]
    rounds: int


@dataclass
class ModelResult(NetworkTiming):
    ratio_vs_ort: float | None  # None: ONNX Runtime not timed (a GPU without its CUDA provider)
    ratio_vs_torch: float | None
    max_error_vs_ort: float
    torch_error_vs_ort: float | None
    import_s: float
    compile_s: float
    onnx_nodes: int
    checked: list[str] = field(default_factory=list)  # the implementations compared with ONNX Runtime
    ratio_vs_without: float | None = None  # convc over convc without --without-pass's pass
    profile: dict[str, Any] | None = None  # --profile: bench_profile.Profile of convc's executable
    ort_profile: dict[str, Any] | None = None  # --profile on the CPU: bench_profile.OrtProfile of ONNX Runtime's session


# --- the networks --------------------------------------------------------------------------


def torchvision_models() -> ModuleType:
    """`torchvision.models`, importable next to the CPU build of torch too (ImportError or
    RuntimeError where it is not).

    PyPI's torchvision wheel is built for CUDA, so its C++ ops library cannot load beside
    torch's CPU build (`.ci/run` installs it with --no-deps); the model definitions need only
    torch. Its import still registers fake kernels for two of those ops (nms, qnms), which
    fails when they were never defined: where the library does not load, their schemas are
    defined here first, so the import goes through. Calling either op would still fail; no
    classification, segmentation or video model calls them."""
    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.origin:
        raise ImportError("No module named 'torchvision'")
    library = next(Path(spec.origin).parent.glob("_C*.so"), None)
    if library is not None and not _TORCHVISION_OPS:
        try:
            torch.ops.load_library(str(library))
        except OSError:  # the CUDA build's library, beside a CPU torch
            fallback = torch.library.Library("torchvision", "DEF")
            for op in ("nms", "qnms"):
                fallback.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _TORCHVISION_OPS.append(fallback)  # a Library drops its definitions when it is collected
        else:
            _TORCHVISION_OPS.append(library)
    return importlib.import_module("torchvision.models")


_TORCHVISION_OPS: list[object] = []


def has_torchvision() -> bool:
    """Whether `torchvision_models()` imports."""
    try:
        torchvision_models()
    except (ImportError, RuntimeError):
        return False
    return True


def model_specs(size: int, batches: Sequence[int]) -> list[ModelSpec]:
    """Every network at every batch: torchvision's when it imports, else the fallbacks. 3-D
    nets take 8 frames at half the spatial size (a video clip's proportions)."""
    source = "torchvision" if has_torchvision() else "fallback"
    names = TORCHVISION_NETWORKS if source == "torchvision" else FALLBACK_NETWORKS
    specs = []
    for name in names:
        for batch in batches:
            three_d = name in ("r3d_18", "conv3d_style")
            shape = (batch, 3, 8, size // 2, size // 2) if three_d else (batch, 3, size, size)
            specs.append(ModelSpec(name, source, batch, shape))
    return specs


def build_module(name: str) -> Any:
    """The PyTorch module for `name` (eval mode, fixed seed)."""
    import torch

    torch.manual_seed(0)
    if name in TORCHVISION_NETWORKS:
        models = torchvision_models()
        if name == "r3d_18":
            module = models.video.r3d_18()
        elif name in SEGMENTATION_NETWORKS:  # no weights, the backbone's included (its default downloads them)
            module = getattr(models.segmentation, name)(weights=None, weights_backbone=None)
        else:
            module = getattr(models, name)()
    else:
        module = {"resnet18_style": _resnet18_style, "mobilenet_v2_style": _mobilenet_v2_style,
                  "efficientnet_style": _efficientnet_style, "densenet_style": _densenet_style,
                  "segmentation_style": _segmentation_style, "conv3d_style": _conv3d_style}[name]()
        _init_as_torchvision(module)
    return (_out_tensor(module) if name in SEGMENTATION_NETWORKS else module).eval()


def _init_as_torchvision(module: Any) -> None:
    """Weights drawn as torchvision draws its networks' (convs He-normal over fan-out,
    linear layers N(0, 0.01), zero biases). With PyTorch's default draw, what reaches the
    classifier of a deep fallback at random weights is a millionth of its bias, so the
    output is the bias and the check against ONNX Runtime would compare only that; with
    zero biases the (relative) check sees the whole network."""
    from torch import nn

    for layer in module.modules():
        if isinstance(layer, nn.Conv2d | nn.Conv3d):
            nn.init.kaiming_normal_(layer.weight, mode="fan_out")
        elif isinstance(layer, nn.Linear):
            nn.init.normal_(layer.weight, 0, 0.01)
        if isinstance(layer, nn.Conv2d | nn.Conv3d | nn.Linear) and layer.bias is not None:
            nn.init.zeros_(layer.bias)


def _out_tensor(net: Any) -> Any:
    """`net` returning the 'out' entry of its output dict (torchvision's segmentation models
    return {'out': ..., 'aux': ...}), so it exports with one output."""
    from torch import nn

    class OutTensor(nn.Module):
        def __init__(self, net: Any) -> None:
            super().__init__()
            self.net = net

        def forward(self, x: Any) -> Any:
            return self.net(x)["out"]

    return OutTensor(net)


def _conv_bn(nn: Any, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, dims: int = 2) -> list[Any]:
    conv = nn.Conv2d if dims == 2 else nn.Conv3d
    norm = nn.BatchNorm2d if dims == 2 else nn.BatchNorm3d
    return [conv(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), norm(cout)]


def _resnet18_style() -> Any:
    """ResNet-18's layout: 7x7/2 stem, max pool, four stages of two basic blocks (64-512)."""
    import torch
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(*_conv_bn(nn, cin, cout, 3, stride), nn.ReLU(), *_conv_bn(nn, cout, cout, 3))
            self.skip = nn.Sequential(*_conv_bn(nn, cin, cout, 1, stride)) if stride != 1 or cin != cout else nn.Identity()

        def forward(self, x: Any) -> Any:
            return torch.relu(self.body(x) + self.skip(x))

    layers: list[Any] = [*_conv_bn(nn, 3, 64, 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))


def _mobilenet_v2_style() -> Any:
    """MobileNet v2's layout: inverted residuals (1x1 expand, 3x3 depthwise, 1x1 project),
    ReLU6 (exported as Clip), the paper's (t, c, n, s) table at width 1.0."""
    from torch import nn

    class Inverted(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            expand_layers = [*_conv_bn(nn, cin, hidden, 1), nn.ReLU6()] if expand != 1 else []
            self.body = nn.Sequential(*expand_layers, *_conv_bn(nn, hidden, hidden, 3, stride, groups=hidden), nn.ReLU6(),
                                      *_conv_bn(nn, hidden, cout, 1))
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.residual else self.body(x)

    layers: list[Any] = [*_conv_bn(nn, 3, 32, 3, 2), nn.ReLU6()]
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            layers.append(Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    return nn.Sequential(*layers, *_conv_bn(nn, cin, 1280, 1), nn.ReLU6(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(1280, 1000))


def _efficientnet_style() -> Any:
    """EfficientNet-B0's layout: MBConv blocks (1x1 expand, k x k depthwise, squeeze-excite
    with a Sigmoid gate, 1x1 project), SiLU, the B0 stage table (expand, kernel, stride,
    channels, repeats) at width 1.0."""
    from torch import nn

    class MBConv(nn.Module):
        def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            expand_layers = [*_conv_bn(nn, cin, hidden, 1), nn.SiLU()] if expand != 1 else []
            self.body = nn.Sequential(*expand_layers, *_conv_bn(nn, hidden, hidden, kernel, stride, groups=hidden), nn.SiLU())
            squeezed = max(1, cin // 4)
            self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(hidden, squeezed, 1), nn.SiLU(),
                                      nn.Conv2d(squeezed, hidden, 1), nn.Sigmoid())
            self.project = nn.Sequential(*_conv_bn(nn, hidden, cout, 1))
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            y = self.body(x)
            y = self.project(y * self.gate(y))
            return x + y if self.residual else y

    layers: list[Any] = [*_conv_bn(nn, 3, 32, 3, 2), nn.SiLU()]
    cin = 32
    for expand, kernel, stride, cout, repeats in ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                                                  (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)):
        for i in range(repeats):
            layers.append(MBConv(cin, cout, kernel, stride if i == 0 else 1, expand))
            cin = cout
    return nn.Sequential(*layers, *_conv_bn(nn, cin, 1280, 1), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(1280, 1000))


def _segmentation_style() -> Any:
    """An LR-ASPP-shaped segmentation net: a strided conv backbone (output stride 16, a
    low-level tap at stride 8), the head's 1x1 branch gated by a pooled Sigmoid, bilinear
    upsampling to the tap and to the input size; returns {'out': ...} as torchvision's do."""
    from torch import nn

    class Segmentation(nn.Module):
        def __init__(self, classes: int = 21) -> None:
            super().__init__()
            self.low = nn.Sequential(*_conv_bn(nn, 3, 16, 3, 2), nn.Hardswish(), *_conv_bn(nn, 16, 24, 3, 2), nn.ReLU(),
                                     *_conv_bn(nn, 24, 40, 3, 2), nn.ReLU())
            self.high = nn.Sequential(*_conv_bn(nn, 40, 80, 3, 2), nn.Hardswish(), *_conv_bn(nn, 80, 160, 3), nn.Hardswish())
            self.branch = nn.Sequential(*_conv_bn(nn, 160, 128, 1), nn.ReLU())
            self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(160, 128, 1, bias=False), nn.Sigmoid())
            self.low_classifier, self.high_classifier = nn.Conv2d(40, classes, 1), nn.Conv2d(128, classes, 1)

        def forward(self, x: Any) -> Any:
            low = self.low(x)
            high = self.high(low)
            y = self.branch(high) * self.gate(high)
            y = nn.functional.interpolate(y, size=low.shape[-2:], mode="bilinear", align_corners=False)
            y = self.low_classifier(low) + self.high_classifier(y)
            return {"out": nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)}

    return Segmentation()


def _densenet_style() -> Any:
    """A DenseNet-121-shaped start: stem, one dense block of six BN-ReLU-1x1-BN-ReLU-3x3
    layers (growth 32, each concatenated onto its input), a transition, a second block."""
    import torch
    from torch import nn

    class Dense(nn.Module):
        def __init__(self, cin: int, growth: int = 32) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                      nn.BatchNorm2d(4 * growth), nn.ReLU(), nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

        def forward(self, x: Any) -> Any:
            return torch.cat([x, self.body(x)], 1)

    layers: list[Any] = [*_conv_bn(nn, 3, 64, 7, 2), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for block in range(2):
        for _ in range(6):
            layers.append(Dense(cin))
            cin += 32
        if block == 0:
            layers += [nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, cin // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
            cin //= 2
    return nn.Sequential(*layers, nn.BatchNorm2d(cin), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000))


def _conv3d_style() -> Any:
    """An R3D-18-shaped video net, narrowed: 3x7x7 stem, four stages of 3x3x3 convs."""
    from torch import nn

    layers: list[Any] = [nn.Conv3d(3, 32, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False), nn.BatchNorm3d(32), nn.ReLU()]
    cin = 32
    for cout, stride in ((32, 1), (64, 2), (128, 2), (256, 2)):
        layers += [*_conv_bn(nn, cin, cout, 3, stride, dims=3), nn.ReLU(), *_conv_bn(nn, cout, cout, 3, dims=3), nn.ReLU()]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(cin, 400))


def export_onnx(module: Any, x: Any) -> bytes:
    """`module` exported by the TorchScript exporter (opset 17) with input 'x', output 'y'."""
    import torch

    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buffer, dynamo=False, opset_version=OPSET, input_names=["x"], output_names=["y"])  # type: ignore[arg-type]  # a file-like object is documented
    return buffer.getvalue()


def network_input(spec: ModelSpec, seed: int = 0) -> np.ndarray:
    """The input every implementation runs on: standard normal f32 from numpy's default
    generator seeded with `seed` (the same array wherever the suite runs, so a saved export
    needs only its shape and the seed)."""
    return np.random.default_rng(seed).standard_normal(spec.input_shape).astype(np.float32)


# --- exported once, run anywhere (--save-onnx, --onnx-dir) ---------------------------------


def onnx_file_name(spec: ModelSpec) -> str:
    return f"{spec.name}_{spec.describe()}.onnx"


def save_onnx_files(specs: Sequence[ModelSpec], directory: Path, log: Callable[[str], None], seed: int = 0) -> dict[str, Any]:
    """Export every spec's network to `directory` (one ONNX file per network and batch) and
    write the manifest that `saved_specs` reads back; returns the manifest."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    modules: dict[str, Any] = {}
    entries = []
    for spec in specs:
        module = modules.setdefault(spec.name, build_module(spec.name))
        model = export_onnx(module, torch.from_numpy(network_input(spec, seed)))
        (directory / onnx_file_name(spec)).write_bytes(model)
        entries.append({"name": spec.name, "source": spec.source, "batch": spec.batch, "input_shape": list(spec.input_shape),
                        "file": onnx_file_name(spec), "onnx_nodes": _node_count(model), "bytes": len(model)})
        log(f"  {spec.name} batch {spec.batch}: {directory / onnx_file_name(spec)} ({len(model) / 1e6:.1f} MB)")
    manifest = {"format": MANIFEST_FORMAT, "exporter": f"torch.onnx.export(dynamo=False, opset_version={OPSET})",
                "torch": torch.__version__, "input": "x", "output": "y", "seed": seed,
                "input_data": "numpy.random.default_rng(seed).standard_normal(input_shape).astype(float32)", "networks": entries}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def saved_specs(directory: Path) -> list[ModelSpec]:
    """The networks `save_onnx_files` wrote to `directory`, each naming its file (BenchError
    where the directory holds no readable manifest of this format)."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise bench.BenchError(f"--onnx-dir {directory}: cannot read {MANIFEST} ({err}); write the files with --save-onnx DIR") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise bench.BenchError(f"--onnx-dir {directory}: {MANIFEST} is not a '{MANIFEST_FORMAT}' manifest (written by --save-onnx)")
    return [ModelSpec(e["name"], e["source"], e["batch"], tuple(e["input_shape"]), str(directory / e["file"]))
            for e in manifest["networks"]]


# --- one network ---------------------------------------------------------------------------


# ONNX Runtime's intra-op threads spin between the ops of a run, and by default for about 50 ms
# after it returns, on every core they have: whatever runs next in the process (convc's module,
# PyTorch) shares the cores with them. This option stops them when run() returns, and leaves
# their spinning within a run alone (docs/benchmarks.md, "ONNX Runtime's spinning threads").
ORT_STOP_SPINNING = ("session.force_spinning_stop", "1")


def onnx_model_bytes(graph: Any, opset: int) -> bytes:
    """`graph` as a serialized model of the default domain's `opset`, with the oldest IR version that
    opset allows: an ONNX Runtime older than the onnx package refuses the newer IR versions it writes."""
    from onnx import helper

    opsets = [helper.make_opsetid("", opset)]
    return bytes(helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)).SerializeToString())


def ort_session(model: bytes, threads: int, provider: str = "CPUExecutionProvider", profile_prefix: str | None = None) -> Any:
    """ONNX Runtime's session on `provider` with `threads` intra-op threads, one inter-op,
    sequential, its threads idle once a run returns (ORT_STOP_SPINNING); with `profile_prefix`,
    its profiler on, writing under that prefix."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry(*ORT_STOP_SPINNING)
    return ort.InferenceSession(model, options, providers=[provider])


def ort_gpu_provider() -> str | None:
    """ONNX Runtime's CUDA provider where the installed build has one (onnxruntime-gpu)."""
    import onnxruntime as ort

    return "CUDAExecutionProvider" if "CUDAExecutionProvider" in ort.get_available_providers() else None


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    """max |ours - reference| over max |reference| (inf when the shapes differ)."""
    if ours.shape != reference.shape:
        return math.inf
    scale = float(np.abs(reference).max(initial=0.0)) or 1.0  # relative to the largest output: logits can be small
    return float(np.abs(ours - reference).max(initial=0.0)) / scale


def pipeline_without(target: str, name: str) -> str:
    """The target's default pipeline minus the pass `name` (BenchError if it holds none),
    the others spelled with their options as this host's default pipeline has them."""
    from convc.compile import Compiler

    passes = Compiler(target=target).passes()
    if name not in (names := [p.name for p in passes]):
        raise bench.BenchError(f"--without-pass: '{name}' is not in the {target} target's default pipeline ({', '.join(names)})")
    return ",".join(p.spelling() for p in passes if p.name != name)


def run_model(spec: ModelSpec, target: str, budget_s: float, use_torch: bool, threads: int, seed: int = 0,
              modules: dict[str, Any] | None = None, platform: str = "cpu", without: str | None = None,
              profile: bool = False, autotune: bool = False) -> ModelResult:
    """Export, import and compile (timed), check convc and PyTorch against ONNX Runtime's CPU
    provider (BenchError on a disagreement), then time them interleaved. On `platform` gpu,
    convc and PyTorch run on the GPU (both in TF32, their default for f32 convs), and ONNX
    Runtime is timed only where it has its CUDA provider. `without`: a pipeline (the default
    minus one pass) compiled too, checked and timed as "convc_without". `profile`: after the
    timing, convc's lowerings, HLO census and op times (bench_profile). `autotune`: convc
    chooses each conv's lowering by measurement on `platform` (convc --autotune, its cache)."""
    import jax
    from convc import load_onnx
    from convc.compile import Compiler

    x = network_input(spec, seed)
    module = None
    if spec.onnx_file is not None:  # --onnx-dir: the saved export, no PyTorch
        if use_torch:
            raise bench.BenchError(f"{spec.name}: read from {spec.onnx_file}, there is no PyTorch module to time")
        model = Path(spec.onnx_file).read_bytes()
    else:
        import torch

        module = ((modules or {}).get(spec.name) or build_module(spec.name)).cpu()  # exported on the CPU; a GPU run moved it
        model = export_onnx(module, torch.from_numpy(x))
    start = time.perf_counter()
    graph = load_onnx(model, file=f"{spec.name}.onnx")
    imported = time.perf_counter()
    compiler = Compiler(target=target, autotune=autotune, autotune_platform=platform)
    lowerings = None
    if profile:
        lowerings = bench_profile.run_passes_counting(compiler, graph)
    else:
        compiler.run_passes(graph)
    executable = compiler.executable(graph, platform)
    compiled = time.perf_counter()
    buffers = [jax.device_put(x, executable.device)]
    reference = ort_session(model, threads).run(None, {"x": x})[0]
    provider = ort_gpu_provider() if platform == "gpu" else "CPUExecutionProvider"
    session = ort_session(model, threads, provider) if provider else None

    def convc_run() -> Any:
        return executable.run_on_device(buffers)

    baseline = None
    if without is not None:
        plain = Compiler(target=target, pipeline=without, autotune=autotune, autotune_platform=platform)
        baseline = plain.executable(plain.run_passes(load_onnx(model, file=f"{spec.name}.onnx")), platform)

    def ort_run() -> Any:
        assert session is not None
        return session.run(None, {"x": x})

    torch_run = torch_thunk(module, x, platform) if use_torch else None
    tolerance = bench.tolerance(platform)
    error = relative_error(np.asarray(convc_run()[0]), reference)
    torch_error = relative_error(torch_run().cpu().numpy(), reference) if torch_run is not None else None
    baseline_error = relative_error(np.asarray(baseline.run_on_device(buffers)[0]), reference) if baseline is not None else None
    for who, value in (("convc", error), ("PyTorch", torch_error), ("convc without the pass", baseline_error)):
        if value is not None and not value <= tolerance:
            raise bench.BenchError(f"{spec.name} (batch {spec.batch}): {who}'s output differs from ONNX Runtime's "
                                   f"(max relative error {value:.2e} > {tolerance:.0e})")
    thunks: dict[str, Callable[[], Any]] = {"convc": lambda: bench.block_until_ready(convc_run())}
    if session is not None:
        thunks["ort"] = ort_run
    if torch_run is not None:
        thunks["torch"] = torch_run
    if baseline is not None:
        thunks["convc_without"] = lambda: bench.block_until_ready(baseline.run_on_device(buffers))
    samples = bench.Timer(budget_s).run(thunks)
    medians, best, iqr = bench.summarize(samples)
    report = bench_profile.profile_executable(executable, buffers, lowerings).as_dict() if lowerings is not None else None
    ort_report = None
    if profile and provider == "CPUExecutionProvider":
        ort_report = bench_profile.profile_ort(lambda prefix: ort_session(model, threads, provider, prefix), {"x": x}).as_dict()
    return ModelResult(
        spec.name, spec.source, spec.batch, spec.describe(), medians, best, iqr, len(samples["convc"]),
        medians["convc"] / medians["ort"] if "ort" in medians else None,
        medians["convc"] / medians["torch"] if "torch" in medians else None, error, torch_error,
        imported - start, compiled - imported, _node_count(model),
        ["convc", *(["torch"] if use_torch else []), *(["convc_without"] if baseline is not None else [])],
        medians["convc"] / medians["convc_without"] if "convc_without" in medians else None, report, ort_report)


def torch_thunk(module: Any, x: np.ndarray, platform: str) -> Callable[[], Any]:
    """PyTorch eager running `module` on `x` (on CUDA for platform gpu, synchronised)."""
    import torch

    device = "cuda" if platform == "gpu" else "cpu"
    torch_module, x_torch = module.to(device), torch.from_numpy(x).to(device)

    def run() -> Any:
        with torch.no_grad():
            y = torch_module(x_torch)
        if platform == "gpu":
            torch.cuda.synchronize()
        return y
    return run


def _node_count(model: bytes) -> int:
    import onnx

    return len(onnx.load_from_string(model).graph.node)


# --- the suite -----------------------------------------------------------------------------


def format_table(results: Sequence[ModelResult]) -> str:
    width = max([20, *(len(r.name) for r in results)])  # lraspp_mobilenet_v3_large is 25
    head = (f"{'network':<{width}} {'input':<18} {'convc ms':>9} {'ORT ms':>9} {'torch ms':>9} {'c/ORT':>7} {'c/torch':>8} "
            f"{'import s':>9} {'compile s':>10} {'err':>8}")
    lines = [head, "-" * len(head)]
    for r in results:
        torch_ms = f"{r.ms['torch']:9.2f}" if "torch" in r.ms else f"{'-':>9}"
        ort_ms = f"{r.ms['ort']:9.2f}" if "ort" in r.ms else f"{'-':>9}"
        vs_ort = f"{r.ratio_vs_ort:7.3f}" if r.ratio_vs_ort is not None else f"{'-':>7}"
        vs_torch = f"{r.ratio_vs_torch:8.2f}" if r.ratio_vs_torch is not None else f"{'-':>8}"
        lines.append(f"{r.name:<{width}} {r.shape:<18} {r.ms['convc']:9.2f} {ort_ms} {torch_ms} {vs_ort} "
                     f"{vs_torch} {r.import_s:9.2f} {r.compile_s:10.2f} {r.max_error_vs_ort:8.1e}")
    mean_vs_ort = bench.geomean([r.ratio_vs_ort for r in results if r.ratio_vs_ort is not None])
    mean_vs_torch = bench.geomean([r.ratio_vs_torch for r in results if r.ratio_vs_torch is not None])
    lines.append("-" * len(head))
    means = [f"convc/ORT: {mean_vs_ort:.3f}"] if mean_vs_ort else []
    means += [f"convc/torch: {mean_vs_torch:.3f}"] if mean_vs_torch else []
    lines.append("geometric mean " + "   ".join(means))
    compared = [r for r in results if r.ratio_vs_without is not None]
    if compared:
        lines.append("convc with the pass / without it (--without-pass): "
                     + ", ".join(f"{r.name} b{r.batch} {r.ms['convc']:.2f}/{r.ms['convc_without']:.2f} ms = {r.ratio_vs_without:.3f}" for r in compared)
                     + f"; geometric mean {bench.geomean([r.ratio_vs_without for r in compared if r.ratio_vs_without]):.3f}")
    return "\n".join(lines)


def import_onnxruntime(suite: str, saved_dir: str | None, quantization: bool = False) -> Any:
    """onnxruntime, once what `suite` needs imports: onnx and onnxruntime (and its quantization
    tools), and torch unless the networks are read from `saved_dir` (--onnx-dir); else a
    one-line BenchError naming them."""
    try:
        import onnx  # noqa: F401
        import onnxruntime
        if quantization:
            import onnxruntime.quantization  # noqa: F401
        if not saved_dir:
            import torch  # noqa: F401
    except ImportError as err:
        needs = "onnx and onnxruntime" if saved_dir else "onnx, onnxruntime and torch (or --onnx-dir)"
        raise bench.BenchError(f"{suite} needs {needs} (pip install 'convc[onnx,bench]'): {err}") from None
    return onnxruntime


def run_models_suite(args: Any, info: dict[str, Any], target: str, budget: float, use_torch: bool,
                     log: Callable[[str], None]) -> dict[str, Any]:
    """The models suite's report (the same top-level keys as the other suites where they apply).
    On `--platform gpu` ONNX Runtime is timed only with its CUDA provider, so PyTorch (cuDNN)
    must be there to compare with. `--save-onnx` only exports (save_suite); `--onnx-dir` reads
    those exports, and PyTorch is then not timed."""
    saved_dir, save_dir = getattr(args, "onnx_dir", None), getattr(args, "save_onnx", None)
    if args.no_torch and not saved_dir:  # before the imports: the flag contradicts the suite wherever it runs
        raise bench.BenchError("--suite models exports its networks from PyTorch; --no-torch leaves nothing to export")
    onnxruntime = import_onnxruntime("--suite models", saved_dir)
    if save_dir:
        return save_suite(args, info, Path(save_dir), log)
    use_torch = use_torch and not saved_dir
    platform = args.platform
    gpu_ort = ort_gpu_provider() if platform == "gpu" else None
    if platform == "gpu" and not (gpu_ort or use_torch):
        raise bench.BenchError("--suite models --platform gpu: this ONNX Runtime has no CUDA provider and PyTorch is off; nothing to compare with")
    threads = os.cpu_count() or 1
    without = pipeline_without(target, args.without_pass) if getattr(args, "without_pass", None) else None
    specs = bench.selected_cases(args)
    size = input_size(specs) if saved_dir else args.size or (QUICK_SIZE if args.quick else FULL_SIZE)
    source = specs[0].source if specs else ("torchvision" if has_torchvision() else "fallback")
    info["onnxruntime"], info["threads"], info["onnxruntime_provider"] = (
        onnxruntime.__version__, threads, gpu_ort or ("CPUExecutionProvider" if platform == "cpu" else None))
    peak = bench.measured_peak(args)  # the machine's speed now
    not_timed = f"PyTorch not timed: the networks are the ONNX files in {saved_dir} (--onnx-dir)" if saved_dir else None
    origin = (f" from the ONNX files in {saved_dir}" if saved_dir else "" if source == "torchvision"
              else f" (torchvision not importable): {', '.join(FALLBACK_NETWORKS)}")
    log(f"networks: {source}{origin}"
        + ("; convc with --autotune" if args.autotune else "")
        + f"; XLA and ONNX Runtime on {threads} intra-op threads"
        + (f", PyTorch on {info.get('torch_threads')}" if use_torch else "") + ("; PyTorch not timed" if saved_dir else "")
        + (f"; XLA's sgemm {peak:.0f} GFLOP/s" if peak else ""))
    modules: dict[str, Any] = {}
    results = []
    for spec in specs:
        if spec.onnx_file is None:
            modules.setdefault(spec.name, build_module(spec.name))
        result = run_model(spec, target, budget, use_torch, threads, modules=modules, platform=platform, without=without,
                           profile=getattr(args, "profile", False), autotune=args.autotune)
        log(f"  {spec.name} batch {spec.batch}: convc {result.ms['convc']:.2f} ms"
            + (f", ORT {result.ms['ort']:.2f} ms" if "ort" in result.ms else "")
            + (f", torch {result.ms['torch']:.2f} ms" if "torch" in result.ms else "")
            + f"; import {result.import_s:.2f} s, compile {result.compile_s:.2f} s ({result.rounds} rounds)")
        if result.profile is not None:
            log(bench_profile.format_profile(f"{spec.name} batch {spec.batch}", result.profile))
        if result.ort_profile is not None:
            log(bench_profile.format_ort_profile(result.ort_profile))
        results.append(result)
    info["load_average_after"] = list(os.getloadavg())
    table = format_table(results) + (f"\n{not_timed}" if not_timed else "") if results else ""
    return {
        "machine": info, "suite": "models", "platform": platform, "target": target, "networks_from": source,
        "quick": args.quick, "budget_s": budget, "input_size": size, "batches": list(args.batch), "tolerance": TOLERANCE,
        "sgemm_peak_gflops": peak, "onnx_dir": saved_dir, "torch_not_timed": not_timed,
        "cases": [vars(r) for r in results],
        "geomean_convc_over_ort": bench.geomean([r.ratio_vs_ort for r in results if r.ratio_vs_ort is not None]),
        "geomean_convc_over_torch": bench.geomean([r.ratio_vs_torch for r in results if r.ratio_vs_torch is not None]),
        "autotune": args.autotune, "without_pass": getattr(args, "without_pass", None),
        "geomean_convc_over_without": bench.geomean([r.ratio_vs_without for r in results if r.ratio_vs_without is not None]),
        "table": table,
    }


def input_size(specs: Sequence[ModelSpec]) -> int | None:
    """The --size the saved networks were exported at: their largest input width (the 3-D
    nets take half of it); None without networks."""
    return max((spec.input_shape[-1] for spec in specs), default=None)


def save_suite(args: Any, info: dict[str, Any], directory: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """--save-onnx: the selected networks exported to `directory`, nothing timed; the report
    lists the files (its table) and carries the manifest."""
    specs = bench.selected_cases(args)
    log(f"exporting {len(specs)} network(s) to {directory} (nothing is timed with --save-onnx)")
    manifest = save_onnx_files(specs, directory, log)
    lines = [f"{e['name']:<26} batch {e['batch']:<3} {e['file']}" for e in manifest["networks"]]
    lines.append(f"{len(specs)} ONNX file(s) and {MANIFEST} in {directory}; run them with --onnx-dir {directory}")
    return {"machine": info, "suite": "models", "saved_to": str(directory), "manifest": manifest, "cases": manifest["networks"], "table": "\n".join(lines)}
