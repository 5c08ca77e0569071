"""Training steps of whole imported networks (`python -m convc.tools.bench --suite train-models`):
ResNet-18, MobileNet v2 (torchvision's when it imports, else the models suite's `*_style`
stand-ins) and a DCGAN generator (written here, ConvTranspose2d), each exported to ONNX with
its weights as named initializers, imported with those weights kept as inputs
(`load_onnx(keep_as_inputs=)`) and differentiated with respect to them (`convc.grad`). One
step is the forward and the backward of the loss sum(y * cotangent), run two ways in one
process on the same weights, input and cotangent:

* convc: the gradient step through the target's default passes, compiled by PJRT;
* PyTorch: the source module, eager, and `torch.autograd.grad` of the same loss.

The weights differentiated are every conv's, transposed conv's and linear layer's (weights and
biases). BatchNorm runs in its inference form on both sides (eval mode, running statistics),
and its scale and shift are not differentiated: the importer folds them into constants at
import (a BatchNormalization's scale must be known then, O6), so they cannot be inputs. Both
sides compute exactly the gradients convc's step returns (PyTorch's input needs no gradient).

convc's output and every gradient are checked against PyTorch's before anything is timed: a
disagreement ends the run (exit 1).
"""

from __future__ import annotations

import io
import math
import os
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import bench, bench_models

TOLERANCE = 1e-4  # per tensor: max |convc - torch| / max |torch|, f32
TORCHVISION_NETWORKS = ("resnet18", "mobilenet_v2", "dcgan_generator")
FALLBACK_NETWORKS = ("resnet18_style", "mobilenet_v2_style", "dcgan_generator")
DCGAN_LATENT = 100  # the DCGAN paper's z
BATCHNORM_SHIFTS = {"running_mean": -0.5, "running_var": 0.5, "weight": 0.5, "bias": -0.5}  # each U(0, 1) + shift
DCGAN_WIDTH, DCGAN_QUICK_WIDTH = 64, 8  # its generator's last hidden features (ngf); --quick narrows it


@dataclass(frozen=True)
class TrainModelSpec:
    """One network at one batch size; `input_shape` is NCHW (the DCGAN's is its latent,
    N x 100 x 1 x 1); `width`: the DCGAN generator's ngf (None for the others)."""

    name: str
    source: str  # "torchvision", "fallback", or "here" (the DCGAN generator)
    batch: int
    input_shape: tuple[int, ...]
    width: int | None = None

    def describe(self) -> str:
        shape = "x".join(str(d) for d in self.input_shape)
        return f"{shape} ngf{self.width}" if self.width else shape


@dataclass
class TrainModelResult(bench_models.NetworkTiming):
    ratio_vs_torch: float
    max_error_vs_torch: float  # the worst tensor's (the output or a gradient)
    wrt: int  # the weights differentiated
    weights: int  # their elements
    import_s: float
    grad_s: float  # convc.grad
    compile_s: float  # passes, emission and PJRT's compile
    profile: dict[str, Any] | None = None  # --profile's census and op times


# --- the networks --------------------------------------------------------------------------


def train_specs(size: int, batches: Sequence[int], quick: bool = False) -> list[TrainModelSpec]:
    """Every network at every batch: the classifiers at `size` x `size`, the DCGAN generator
    from its latent (its output is 64 x 64 whatever `size`)."""
    source = "torchvision" if bench_models.has_torchvision() else "fallback"
    names = TORCHVISION_NETWORKS if source == "torchvision" else FALLBACK_NETWORKS
    specs = []
    for name in names:
        for batch in batches:
            if name == "dcgan_generator":
                specs.append(TrainModelSpec(name, "here", batch, (batch, DCGAN_LATENT, 1, 1), DCGAN_QUICK_WIDTH if quick else DCGAN_WIDTH))
            else:
                specs.append(TrainModelSpec(name, source, batch, (batch, 3, size, size)))
    return specs


def dcgan_generator(width: int = DCGAN_WIDTH, latent: int = DCGAN_LATENT) -> Any:
    """The DCGAN paper's generator: z (latent x 1 x 1) through five ConvTranspose2d 4x4 (the
    first stride 1 to 4 x 4, then stride 2 padding 1, each doubling H and W), BatchNorm and
    ReLU between them, 8w-4w-2w-w features, tanh on the 3 x 64 x 64 image."""
    from torch import nn

    layers: list[Any] = []
    features = [latent, 8 * width, 4 * width, 2 * width, width]
    for i, (cin, cout) in enumerate(zip(features, features[1:])):
        layers += [nn.ConvTranspose2d(cin, cout, 4, 1 if i == 0 else 2, 0 if i == 0 else 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
    return nn.Sequential(*layers, nn.ConvTranspose2d(width, 3, 4, 2, 1, bias=False), nn.Tanh())


def build_module(spec: TrainModelSpec) -> Any:
    """The PyTorch module (eval mode, seed 0) with non-trivial BatchNorm statistics and
    affine weights: fresh ones are all ones and zeros, which the exporter merges into one
    initializer (Identity nodes), so no weight would keep its own name."""
    import torch

    torch.manual_seed(0)
    module = dcgan_generator(spec.width or DCGAN_WIDTH) if spec.name == "dcgan_generator" else bench_models.build_module(spec.name)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm):
                for name, shift in BATCHNORM_SHIFTS.items():
                    tensor: Any = getattr(layer, name)
                    tensor.copy_(torch.rand(tensor.shape, generator=generator) + shift)
    return module.eval()


def trained_weights(module: Any) -> list[str]:
    """The names (as `named_parameters` spells them, and so the exported initializers) of every
    conv's, transposed conv's and linear layer's parameters, in the module's order."""
    from torch import nn

    kinds = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Linear)
    return [f"{prefix}.{name}" if prefix else name for prefix, layer in module.named_modules() if isinstance(layer, kinds)
            for name, _ in layer.named_parameters(recurse=False)]


def export_onnx(module: Any, x: Any) -> bytes:
    """`module` exported by the TorchScript exporter (opset 17, eval mode) with its
    initializers under their PyTorch names: no constant folding, which would fold each
    BatchNorm into the conv before it and rename that conv's weight."""
    import torch

    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buffer, dynamo=False, opset_version=17, input_names=["x"], output_names=["y"],  # type: ignore[arg-type]  # a file-like object is documented
                          do_constant_folding=False, training=torch.onnx.TrainingMode.EVAL)
    return buffer.getvalue()


# --- one network ---------------------------------------------------------------------------


@dataclass
class Prepared:
    """A network's step, compiled by convc, with the arrays it runs on and PyTorch's thunk."""

    executable: Any
    arrays: list[np.ndarray]  # x, the weights in `wrt`'s order, the cotangent
    wrt: list[str]
    outputs: list[str]  # the step's: y, then each weight's gradient
    torch_run: Callable[[], list[Any]]
    import_s: float
    grad_s: float
    compile_s: float
    lowerings: dict[str, int]  # --profile: the convs each cpu lowering took (empty without)


@dataclass
class Step:
    """A network's step before convc compiles it: the ONNX export it is imported from, the
    weights it differentiates, the arrays it runs on and PyTorch's thunk."""

    model: bytes  # the exported ONNX file
    wrt: list[str]
    arrays: list[np.ndarray]  # x, the weights in `wrt`'s order, the cotangent
    torch_run: Callable[[], list[Any]]


def gradient_step(spec: TrainModelSpec, model: bytes, wrt: Sequence[str]) -> tuple[Any, float, float]:
    """convc's step: the ONNX file imported with `wrt` kept as inputs and differentiated with
    respect to them; the seconds the import and convc.grad took."""
    import convc

    start = time.perf_counter()
    graph = convc.load_onnx(model, keep_as_inputs=list(wrt), file=f"{spec.name}.onnx")
    imported = time.perf_counter()
    step = convc.grad(graph, list(wrt))
    return step, imported - start, time.perf_counter() - imported


def export_step(spec: TrainModelSpec, module: Any, seed: int = 0) -> Step:
    """Export `module` on a random input, and set PyTorch's step up on the same weights, input
    and a random cotangent of the output's shape."""
    import torch

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(spec.input_shape).astype(np.float32)
    x_torch = torch.from_numpy(x)
    model = export_onnx(module, x_torch)
    wrt = trained_weights(module)
    parameters = dict(module.named_parameters())
    for name, parameter in parameters.items():
        parameter.requires_grad_(name in wrt)
    weights = [parameters[name].detach().numpy().copy() for name in wrt]
    with torch.no_grad():
        cotangent = rng.standard_normal(tuple(module(x_torch).shape)).astype(np.float32)
    cotangent_torch = torch.from_numpy(cotangent)
    leaves = [parameters[name] for name in wrt]

    def torch_run() -> list[Any]:
        y = module(x_torch)
        return [y, *torch.autograd.grad(y, leaves, cotangent_torch)]

    return Step(model, wrt, [x, *weights, cotangent], torch_run)


def prepare(spec: TrainModelSpec, target: str, module: Any, profile: bool = False, seed: int = 0) -> Prepared:
    """Export, import with the weights as inputs, differentiate, compile (each timed), and
    set PyTorch's step up on the same weights, input and cotangent."""
    from convc.compile import Compiler

    from . import bench_profile

    exported = export_step(spec, module, seed)
    step, import_s, grad_s = gradient_step(spec, exported.model, exported.wrt)
    start = time.perf_counter()
    compiler = Compiler(target=target)
    lowerings: dict[str, int] = {}
    if profile:
        lowerings = bench_profile.run_passes_counting(compiler, step)
    else:
        compiler.run_passes(step)
    executable = compiler.executable(step, "cpu")
    compile_s = time.perf_counter() - start
    if tuple(step.inputs[-1].type.shape) != exported.arrays[-1].shape:
        raise bench.BenchError(f"{spec.name}: convc's output is {step.inputs[-1].type.shape}, PyTorch's {exported.arrays[-1].shape}")
    return Prepared(executable, exported.arrays, exported.wrt, [v.name for v in step.outputs], exported.torch_run,
                    import_s, grad_s, compile_s, lowerings)


def step_error(ours: Sequence[np.ndarray], theirs: Sequence[Any], names: Sequence[str]) -> tuple[float, str]:
    """The worst relative error (max |diff| / max |torch|) over the output and the gradients,
    and the tensor it is on."""
    worst, where = 0.0, names[0]
    for name, a, b in zip(names, ours, theirs, strict=True):
        error = bench_models.relative_error(np.asarray(a), b.detach().numpy())
        if not error <= worst and not math.isnan(worst):  # a NaN error is the worst, and stays so
            worst, where = error, name
    return worst, where


def run_train_model(spec: TrainModelSpec, target: str, budget_s: float, module: Any | None = None,
                    profile: bool = False) -> TrainModelResult:
    """Prepare, check convc's output and gradients against PyTorch's (BenchError on a
    disagreement), then time both steps interleaved; with `profile`, the census and op times
    of convc's executable too."""
    import jax

    from . import bench_profile

    module = module if module is not None else build_module(spec)
    prepared = prepare(spec, target, module, profile)
    buffers = [jax.device_put(a, prepared.executable.device) for a in prepared.arrays]

    def convc_run() -> Any:
        return prepared.executable.run_on_device(buffers)

    error, where = step_error(convc_run(), prepared.torch_run(), prepared.outputs)
    if not error <= TOLERANCE:
        raise bench.BenchError(f"{spec.name} (batch {spec.batch}): convc's '{where}' differs from PyTorch autograd's "
                               f"(max relative error {error:.2e} > {TOLERANCE:.0e})")
    thunks: dict[str, Callable[[], Any]] = {"convc": lambda: bench.block_until_ready(convc_run()), "torch": prepared.torch_run}
    samples = bench.Timer(budget_s).run(thunks)
    medians, best, iqr = bench.summarize(samples)
    report = None
    if profile:
        report = bench_profile.profile_executable(prepared.executable, buffers, prepared.lowerings).as_dict()
    return TrainModelResult(
        spec.name, spec.source, spec.batch, spec.describe(), medians, best, iqr, len(samples["convc"]),
        medians["convc"] / medians["torch"], error, len(prepared.wrt), sum(a.size for a in prepared.arrays[1:-1]),
        prepared.import_s, prepared.grad_s, prepared.compile_s, report)


# --- the suite -----------------------------------------------------------------------------


def format_table(results: Sequence[TrainModelResult]) -> str:
    head = (f"{'network':<20} {'input':<18} {'wrt':>4} {'convc ms':>9} {'torch ms':>9} {'c/torch':>8} "
            f"{'import s':>9} {'grad s':>7} {'compile s':>10} {'err':>8}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.name:<20} {r.shape:<18} {r.wrt:>4} {r.ms['convc']:9.2f} {r.ms['torch']:9.2f} {r.ratio_vs_torch:8.3f} "
                     f"{r.import_s:9.2f} {r.grad_s:7.2f} {r.compile_s:10.2f} {r.max_error_vs_torch:8.1e}")
    lines.append("-" * len(head))
    lines.append(f"geometric mean convc/torch: {bench.geomean([r.ratio_vs_torch for r in results]):.3f}")
    return "\n".join(lines)


def run_train_models_suite(args: Any, info: dict[str, Any], target: str, budget: float, use_torch: bool,
                           log: Callable[[str], None]) -> dict[str, Any]:
    """The suite's report (the same top-level keys as the other suites where they apply)."""
    check_requirements(args, use_torch)
    from . import bench_profile

    specs = bench.selected_cases(args)
    info["threads"] = os.cpu_count() or 1
    log(f"machine: {info['cpu']}, {info['cores']} cores, jax {info['jax']}, torch {info['torch']} on {info.get('torch_threads')} threads; "
        f"target {target}; load {info['load_average'][0]:.2f}; networks: "
        + ", ".join(sorted({f'{s.name} ({s.source})' for s in specs})))
    results = []
    for spec, module in with_modules(specs):
        result = run_train_model(spec, target, budget, module, profile=args.profile)
        log(f"  {spec.name} batch {spec.batch}: convc {result.ms['convc']:.2f} ms, torch {result.ms['torch']:.2f} ms; "
            f"import {result.import_s:.2f} s, grad {result.grad_s:.2f} s, compile {result.compile_s:.2f} s ({result.rounds} rounds)")
        if result.profile is not None:
            log(bench_profile.format_profile(f"{spec.name} batch {spec.batch}", result.profile))
        results.append(result)
    info["load_average_after"] = list(os.getloadavg())
    return {
        "machine": info, "suite": "train-models", "platform": "cpu", "target": target, "quick": args.quick, "budget_s": budget,
        "batches": list(args.batch), "tolerance": TOLERANCE, "cases": [vars(r) for r in results],
        "geomean_convc_over_torch": bench.geomean([r.ratio_vs_torch for r in results]),
        "table": format_table(results) if results else "",
    }


def check_requirements(args: Any, use_torch: bool) -> None:
    """BenchError unless PyTorch (the networks' source and the baseline) and onnx are at hand
    and the platform is the cpu."""
    if args.no_torch or not use_torch:
        raise bench.BenchError(f"--suite {args.suite} exports its networks from PyTorch and checks against its autograd; "
                               "--no-torch (or no torch) leaves nothing to compare with")
    if args.platform != "cpu":
        raise bench.BenchError(f"--suite {args.suite} runs on the cpu platform only (got '{args.platform}')")
    try:
        import onnx  # noqa: F401
    except ImportError as err:
        raise bench.BenchError(f"--suite {args.suite} needs onnx and torch (pip install 'convc[onnx,bench]'): {err}") from None


def with_modules(specs: Sequence[TrainModelSpec]) -> Iterator[tuple[TrainModelSpec, Any]]:
    """Each spec with its PyTorch module, built once per network (and DCGAN width) for every batch."""
    modules: dict[tuple[str, int | None], Any] = {}
    for spec in specs:
        yield spec, modules.setdefault((spec.name, spec.width), build_module(spec))


def default_size(args: Any) -> int:
    """The classifiers' input side: --size, else the models suite's (224, --quick 64)."""
    return int(args.size or (bench_models.QUICK_SIZE if args.quick else bench_models.FULL_SIZE))

