"""The conv benchmark suite: each case compiled by convc and run through PJRT, against the
same computation as JAX writes it (`jax.jit` of jax.lax / jax.vjp) and PyTorch eager
(channels-last, when torch is installed), in one process on the same machine.

    python -m convc.tools.bench                      # full shapes, table on stdout
    python -m convc.tools.bench --quick --json out.json
    python -m convc.tools.bench --cases depthwise,grouped --target generic
    python -m convc.tools.bench --platform gpu       # CUDA: PyTorch on cuDNN, batches x32
    python -m convc.tools.bench --suite train        # training steps (tools/bench_train.py)
    python -m convc.tools.bench --suite models --target cpu   # ONNX networks vs ONNX Runtime (tools/bench_models.py)
    python -m convc.tools.bench --suite train-models          # their training steps vs PyTorch autograd (tools/bench_train_models.py)
    python -m convc.tools.bench --suite models --profile      # + where each network's time goes (tools/bench_profile.py)
    python -m convc.tools.bench --suite models --int8         # quantized: vs ONNX Runtime int8 (tools/bench_models_int8.py)
    python -m convc.tools.bench --suite dw-limit              # MobileNet v2's convs alone vs ONNX Runtime's Conv (tools/bench_dw_limit.py)
    python -m convc.tools.bench --suite models --save-onnx DIR  # export only: the networks' ONNX files, for...
    python -m convc.tools.bench --suite models --onnx-dir DIR   # ...a run without PyTorch (convc vs ONNX Runtime)
    python -m convc.tools.bench --suite models --int8 --onnx-dir DIR  # the saved files quantized, without PyTorch
    python -m convc.tools.bench --suite limits                # every form of each conv vs PyTorch (tools/bench_limits.py)
    python -m convc.tools.bench --suite train-limits          # the same for the convs of --suite train's steps
    python -m convc.tools.bench --suite train-models-limits   # ... and of --suite train-models's networks' steps
    python -m convc.tools.bench --suite models-limits         # ... and of --suite models's networks vs ONNX Runtime (tools/bench_models_limits.py)
    python -m convc.tools.bench --suite models-limits --int8  # the int8 networks' QDQ convs alone vs ONNX Runtime (tools/bench_models_int8_limits.py)

Everything runs on one PJRT platform (`--platform`, default the one PJRT picks): on `gpu`,
PyTorch runs on CUDA with cudnn.benchmark, every timed call ends with the device
synchronised, and each case records the library calls (custom-call targets, e.g.
`__cudnn$convBackwardFilter`) its compiled HLO makes.

Runs are interleaved (one call of each implementation per round, the order rotating),
warmed up, and repeated until the medians are stable or the case's time budget is
spent. convc's result is checked against JAX's on every case (exit 1 on a mismatch).
This is a benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

SPATIAL_LETTERS = {1: "W", 2: "HW", 3: "DHW"}
IMPLEMENTATIONS = ("convc", "jax", "torch")
PLATFORMS = ("cpu", "gpu")
SUITES = ("conv", "train", "models", "train-models", "dw-limit", "limits", "train-limits", "train-models-limits", "models-limits")
COST_MODEL_SUITES = ("train-models", "dw-limit")  # their convc modules take no --autotune (the limits suites time every form)
TOLERANCE = 1e-4  # max |convc - jax| / (1 + max |jax|), f32
# On the GPU, f32 convs run in TF32 (operands rounded to 2^-11 relative) and XLA autotunes
# the cuDNN algorithm per compile, so two compiles of one conv may round differently.
GPU_TOLERANCE = 5e-3
GPU_BATCH_SCALE = 32  # the suite's batches are sized for a CPU; x32 keeps a GPU busy
CUSTOM_CALL_TARGET = re.compile(r'custom_call_target="([^"]+)"')


# --- the cases ------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvSpec:
    """A channels-last conv and what is computed from it: the conv itself (`forward`), its
    PyTorch-style transposed conv (`transposed`: x is the conv's output, the result its
    input), or its gradient with respect to the kernel (`weight_grad`) or input (`input_grad`)."""

    name: str
    kind: str
    batch: int
    spatial: tuple[int, ...]  # of the forward conv's input
    in_features: int
    out_features: int
    kernel: tuple[int, ...]
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    pads: tuple[tuple[int, int], ...] | None = None  # None: PyTorch's symmetric (k - 1) * d // 2
    output_padding: int = 0  # transposed only

    @property
    def rank(self) -> int:
        return len(self.spatial)

    def explicit_pads(self) -> tuple[tuple[int, int], ...]:
        if self.pads is not None:
            return self.pads
        return tuple(((k - 1) * self.dilation // 2,) * 2 for k in self.kernel)

    def out_spatial(self) -> tuple[int, ...]:
        return tuple((size + lo + hi - (k - 1) * self.dilation - 1) // self.stride + 1
                     for size, k, (lo, hi) in zip(self.spatial, self.kernel, self.explicit_pads()))

    def layouts(self) -> tuple[str, str, str]:
        letters = SPATIAL_LETTERS[self.rank]
        return f"N{letters}C", f"{letters}IO", f"N{letters}C"

    def kernel_shape(self) -> tuple[int, ...]:
        return (*self.kernel, self.in_features // self.groups, self.out_features)

    def input_shape(self) -> tuple[int, ...]:
        return (self.batch, *self.spatial, self.in_features)

    def output_shape(self) -> tuple[int, ...]:
        return (self.batch, *self.out_spatial(), self.out_features)

    def operand_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return {
            "forward": (self.input_shape(), self.kernel_shape()),
            "transposed": (self.output_shape(), self.kernel_shape()),
            "weight_grad": (self.input_shape(), self.output_shape()),
            "input_grad": (self.output_shape(), self.kernel_shape()),
        }[self.kind]

    def flops(self) -> float:
        """2 x the forward conv's multiply-adds: every kind here does exactly that work."""
        macs = self.batch * math.prod(self.out_spatial()) * self.out_features * math.prod(self.kernel) * (self.in_features // self.groups)
        return 2.0 * macs

    def describe(self) -> str:
        size = "x".join(str(d) for d in self.input_shape())
        kernel = "x".join(str(k) for k in self.kernel)
        extras = [f"s{self.stride}"] if self.stride > 1 else []
        extras += [f"d{self.dilation}"] if self.dilation > 1 else []
        extras += [f"G{self.groups}"] if self.groups > 1 else []
        return f"{self.kind} {kernel} {size}->{self.out_features} {' '.join(extras)}".strip()

    def shrunk(self) -> ConvSpec:
        """The --quick version: batch 1, about a quarter of the spatial size and of the
        features per group (depthwise stays depthwise, over a quarter of the channels)."""
        depthwise = self.groups == self.in_features
        groups = max(1, self.groups // 4) if depthwise else self.groups

        def features(count: int) -> int:
            return groups if depthwise else max(1, count // (4 * groups)) * groups

        spatial = tuple(max(k * self.dilation + 2, size // 4) for size, k in zip(self.spatial, self.kernel))
        return replace(self, batch=1, spatial=spatial, groups=groups, in_features=features(self.in_features),
                       out_features=features(self.out_features))


def _cases() -> list[ConvSpec]:
    """The issue's table of shapes (f32, channels-last)."""
    hw56, hw28 = (56, 56), (28, 28)
    return [
        ConvSpec("dense3x3", "forward", 8, hw56, 64, 64, (3, 3)),
        ConvSpec("dense3x3_s2", "forward", 8, hw56, 64, 128, (3, 3), stride=2),
        ConvSpec("dilated3x3", "forward", 8, hw56, 64, 64, (3, 3), dilation=2),
        ConvSpec("conv1x1", "forward", 8, hw56, 256, 64, (1, 1)),
        ConvSpec("depthwise3x3", "forward", 8, hw56, 128, 128, (3, 3), groups=128),
        ConvSpec("grouped3x3_g32", "forward", 8, hw28, 256, 256, (3, 3), groups=32),
        ConvSpec("transposed3x3_s2", "transposed", 8, hw56, 64, 64, (3, 3), stride=2, output_padding=1),
        ConvSpec("transposed4x4_s2", "transposed", 8, hw56, 64, 64, (4, 4), stride=2, pads=((1, 1), (1, 1))),
        ConvSpec("weight_grad_dense", "weight_grad", 8, hw56, 64, 64, (3, 3)),
        ConvSpec("weight_grad_depthwise", "weight_grad", 8, hw56, 128, 128, (3, 3), groups=128),
        ConvSpec("weight_grad_g32", "weight_grad", 8, hw28, 256, 256, (3, 3), groups=32),
        ConvSpec("input_grad_s2", "input_grad", 8, hw56, 64, 128, (3, 3), stride=2),
        ConvSpec("wavenet1d_d8", "forward", 4, (8192,), 128, 128, (2,), dilation=8, pads=((8, 0),)),
        ConvSpec("conv3d_3x3x3", "forward", 2, (16, 32, 32), 32, 32, (3, 3, 3)),
    ]


# --- the three implementations of a case ----------------------------------------------


def convc_graph(spec: ConvSpec) -> Any:
    """The case as a convc model, written with the op a user would use for it."""
    import convc

    b = convc.Builder(spec.name)
    a_shape, b_shape = spec.operand_shapes()
    a, w = b.input("a", a_shape), b.input("b", b_shape)
    common = dict(window_strides=(spec.stride,) * spec.rank, padding=spec.explicit_pads(),
                  rhs_dilation=(spec.dilation,) * spec.rank, dimension_numbers=spec.layouts(),
                  feature_group_count=spec.groups)
    if spec.kind == "forward":
        result = b.conv(a, w, **common)
    elif spec.kind == "weight_grad":
        result = b.conv_backprop_filter(a, w, spec.kernel_shape(), **common)
    elif spec.kind == "input_grad":
        result = b.conv_backprop_input(a, w, input_shape=spec.input_shape(), **common)
    else:
        result = b.conv_backprop_input(a, w, output_padding=(spec.output_padding,) * spec.rank, **common)
    b.output(result)
    return b.build()


def jax_function(spec: ConvSpec) -> Callable[..., Any]:
    """The case as JAX writes it: lax.conv_general_dilated, its vjp, or lax.conv_transpose."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    n = spec.rank

    def conv(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(x, w, (spec.stride,) * n, spec.explicit_pads(), rhs_dilation=(spec.dilation,) * n,
                                        dimension_numbers=spec.layouts(), feature_group_count=spec.groups)

    if spec.kind == "forward":
        return conv
    if spec.kind == "weight_grad":
        zeros = jnp.zeros(spec.kernel_shape(), jnp.float32)
        return lambda x, dy: jax.vjp(lambda w: conv(x, w), zeros)[1](dy)[0]
    if spec.kind == "input_grad":
        zeros = jnp.zeros(spec.input_shape(), jnp.float32)
        return lambda dy, w: jax.vjp(lambda x: conv(x, w), zeros)[1](dy)[0]
    # PyTorch's ConvTranspose pads as lax.conv_transpose with ((k-1)d - p, (k-1)d - p + output_padding)
    pads = [((k - 1) * spec.dilation - lo, (k - 1) * spec.dilation - hi + spec.output_padding)
            for k, (lo, hi) in zip(spec.kernel, spec.explicit_pads())]
    return lambda x, w: lax.conv_transpose(x, w, (spec.stride,) * n, pads, rhs_dilation=(spec.dilation,) * n,
                                           dimension_numbers=spec.layouts(), transpose_kernel=True)


def torch_function(spec: ConvSpec, arrays: Sequence[np.ndarray], device: str = "cpu") -> Callable[[], Any] | None:
    """A thunk running the case in PyTorch eager on channels-last tensors on `device` ("cpu",
    "cuda"; None without torch); `torch_result_to_channels_last` turns its result back into
    the convc/JAX layout. On CUDA the thunk waits for the device before it returns."""
    try:
        import torch
    except ImportError:
        return None
    n = spec.rank
    memory_format = {2: torch.channels_last, 3: torch.channels_last_3d}.get(n, torch.contiguous_format)
    to_channels_first = (0, n + 1, *range(1, n + 1))
    kernel_to_torch = (n + 1, n, *range(n))  # HWIO -> OIHW

    def activation(array: np.ndarray) -> Any:
        return torch.from_numpy(array).to(device).permute(*to_channels_first).contiguous(memory_format=memory_format)

    def kernel(array: np.ndarray) -> Any:
        return torch.from_numpy(array).to(device).permute(*kernel_to_torch).contiguous(memory_format=memory_format)

    stride, dilation, groups = (spec.stride,) * n, (spec.dilation,) * n, spec.groups
    pads = spec.explicit_pads()
    symmetric = all(lo == hi for lo, hi in pads)
    padding = tuple(lo for lo, _ in pads) if symmetric else (0,) * n
    conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[n]
    a, b = arrays
    if spec.kind == "forward":
        x, w = activation(a), kernel(b)
        flat_pads = [p for lo_hi in reversed(pads) for p in lo_hi]  # F.pad: last dim first

        def run() -> Any:
            with torch.no_grad():
                padded = x if symmetric else torch.nn.functional.pad(x, flat_pads)
                return conv(padded, w, None, stride, padding, dilation, groups)
        return _synchronised(run, device)
    if spec.kind == "transposed":
        transposed = {1: torch.nn.functional.conv_transpose1d, 2: torch.nn.functional.conv_transpose2d,
                      3: torch.nn.functional.conv_transpose3d}[n]
        x, w = activation(a), kernel(b)

        def run_transposed() -> Any:
            with torch.no_grad():
                return transposed(x, w, None, stride, padding, (spec.output_padding,) * n, groups, dilation)
        return _synchronised(run_transposed, device)
    assert symmetric, "PyTorch gradient cases need symmetric padding"
    weight = torch.zeros(spec.kernel_shape(), dtype=torch.float32, device=device).permute(*kernel_to_torch).contiguous(memory_format=memory_format)
    if spec.kind == "weight_grad":
        x, dy = activation(a), activation(b)
        mask, pick = (False, True, False), 1
    else:
        x = torch.zeros(spec.input_shape(), dtype=torch.float32, device=device).permute(*to_channels_first).contiguous(memory_format=memory_format)
        dy, weight = activation(a), kernel(b)
        mask, pick = (True, False, False), 0

    def run_backward() -> Any:
        with torch.no_grad():
            return torch.ops.aten.convolution_backward(dy, x, weight, None, stride, padding, dilation, False, (0,) * n,
                                                       groups, mask)[pick]
    return _synchronised(run_backward, device)


def _synchronised(thunk: Callable[[], Any], device: str) -> Callable[[], Any]:
    """`thunk` made to return only once the device has finished (CUDA launches are async)."""
    if device == "cpu":
        return thunk
    import torch

    def run() -> Any:
        result = thunk()
        torch.cuda.synchronize()
        return result
    return run


def torch_result_to_channels_last(spec: ConvSpec, result: Any) -> np.ndarray:
    n = spec.rank
    array = result.detach().cpu().numpy()
    if spec.kind == "weight_grad":  # OIHW -> HWIO
        return np.ascontiguousarray(array.transpose(*range(2, n + 2), 1, 0))
    return np.ascontiguousarray(array.transpose(0, *range(2, n + 2), 1))


# --- timing ----------------------------------------------------------------------------


@dataclass
class Timer:
    """Interleaved rounds until every median is stable or the budget is spent.

    Each round runs every implementation in turn as a block: one untimed call first (XLA's
    and PyTorch's thread pools spin a while after a call and slow whatever runs next in
    the other runtime), then `block` timed calls. The order of the blocks cycles through
    every permutation, so each implementation follows each other one equally often; with
    `rotate` (many implementations, whose permutations a run could not cycle through), it
    cycles through the rotations of the order and of its reverse instead, so each runs at
    every position and after two different neighbours."""

    budget_s: float
    min_rounds: int = 6  # one cycle of the 6 orders of 3 implementations
    max_rounds: int = 36
    block: int = 2
    warmup: int = 2
    rotate: bool = False
    samples: dict[str, list[float]] = field(default_factory=dict)

    def orders(self, names: list[str]) -> list[tuple[str, ...]]:
        if not self.rotate:
            return list(itertools.permutations(names))
        backwards = names[::-1]
        return [tuple(order[i:] + order[:i]) for order in (names, backwards) for i in range(len(names))]

    def run(self, thunks: dict[str, Callable[[], None]]) -> dict[str, list[float]]:
        for thunk in thunks.values():
            for _ in range(self.warmup):
                thunk()
        orders = self.orders(list(thunks))
        self.samples = {name: [] for name in thunks}
        start = time.perf_counter()
        for round_index in range(self.max_rounds):
            for name in orders[round_index % len(orders)]:
                thunks[name]()  # the switch between runtimes: not timed
                for _ in range(self.block):
                    begin = time.perf_counter()
                    thunks[name]()
                    self.samples[name].append(time.perf_counter() - begin)
            rounds, elapsed = round_index + 1, time.perf_counter() - start
            if rounds >= self.min_rounds and (self.stable() or elapsed > self.budget_s):
                break
            if rounds >= 2 and elapsed > 3 * self.budget_s:  # very slow cases: fewer rounds
                break
        return self.samples

    def stable(self) -> bool:
        """Every implementation's interquartile range within 10% of its median."""
        for times in self.samples.values():
            q1, median, q3 = np.percentile(times, (25, 50, 75))
            if (q3 - q1) > 0.1 * median:
                return False
        return True


def summarize(samples: dict[str, list[float]]) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Each implementation's median, best time and interquartile range, in ms."""
    medians = {name: statistics.median(times) * 1e3 for name, times in samples.items()}
    best = {name: min(times) * 1e3 for name, times in samples.items()}
    iqr = {name: float(np.subtract(*np.percentile(times, (75, 25)))) * 1e3 for name, times in samples.items()}
    return medians, best, iqr


def block_until_ready(value: Any) -> None:
    """Wait for every device buffer in `value` (a buffer, or nested lists/tuples of them)."""
    if isinstance(value, list | tuple):
        for item in value:
            block_until_ready(item)
    elif hasattr(value, "block_until_ready"):
        value.block_until_ready()


# --- one case, the suite -----------------------------------------------------------------


@dataclass
class CaseResult:
    name: str
    shape: str
    gflop: float
    ms: dict[str, float]  # medians
    best_ms: dict[str, float]
    iqr_ms: dict[str, float]
    rounds: int
    gflops: dict[str, float]
    ratio_vs_jax: float
    ratio_vs_torch: float | None
    max_error_vs_jax: float
    torch_error_vs_jax: float | None
    percent_of_sgemm_peak: float | None = None
    custom_calls: dict[str, list[str]] = field(default_factory=dict)  # per implementation run by XLA


def custom_call_targets(hlo_text: str) -> list[str]:
    """The distinct library calls (custom-call targets) in XLA's HLO text, sorted: what a
    compiled module hands to cuDNN, cuBLAS, LAPACK and the like rather than to generated code."""
    return sorted(set(CUSTOM_CALL_TARGET.findall(hlo_text)))


def compile_case(spec: ConvSpec, target: str, pjrt_platform: str, autotune: bool) -> Any:
    """convc's executable for the case on `pjrt_platform` (--autotune measures there, or reads its cache)."""
    from convc.compile import Compiler

    compiler = Compiler(target=target, autotune=autotune, autotune_platform=pjrt_platform)
    return compiler.executable(compiler.run_passes(convc_graph(spec)), pjrt_platform)


def run_case(spec: ConvSpec, target: str, budget_s: float, use_torch: bool, seed: int = 0, autotune: bool = False,
             pjrt_platform: str = "cpu") -> CaseResult:
    import jax

    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in spec.operand_shapes()]
    executable = compile_case(spec, target, pjrt_platform, autotune)  # before any timing starts
    buffers = [jax.device_put(a, executable.device) for a in arrays]  # committed: jit runs there too
    jax_fn = jax.jit(jax_function(spec))

    def convc_run() -> Any:
        return executable.run_on_device(buffers)

    def jax_run() -> Any:
        return jax_fn(*buffers)

    convc_out = np.asarray(convc_run()[0])
    jax_out = np.asarray(jax_run())
    scale = 1.0 + float(np.abs(jax_out).max(initial=0.0))
    error = float(np.abs(convc_out - jax_out).max(initial=0.0)) / scale if convc_out.shape == jax_out.shape else math.inf
    thunks: dict[str, Callable[[], None]] = {"convc": lambda: block_until_ready(convc_run()),
                                                "jax": lambda: block_until_ready(jax_run())}
    torch_error = None
    torch_run = torch_function(spec, arrays, "cuda" if pjrt_platform == "gpu" else "cpu") if use_torch else None
    if torch_run is not None:
        torch_out = torch_result_to_channels_last(spec, torch_run())
        torch_error = float(np.abs(torch_out - jax_out).max(initial=0.0)) / scale if torch_out.shape == jax_out.shape else math.inf
        thunks["torch"] = torch_run
    samples = Timer(budget_s).run(thunks)
    medians, best, iqr = summarize(samples)
    gflop = spec.flops() / 1e9
    calls = {"convc": custom_call_targets(executable.hlo_text()),
             "jax": custom_call_targets(jax_fn.lower(*buffers).compile().as_text() or "")}
    return CaseResult(
        spec.name, spec.describe(), gflop, medians, best, iqr, len(samples["convc"]),
        {name: gflop / (ms / 1e3) for name, ms in medians.items()},
        medians["convc"] / medians["jax"],
        medians["convc"] / medians["torch"] if "torch" in medians else None,
        error, torch_error, custom_calls=calls)


def sgemm_peak_gflops(size: int = 2048, repeats: int = 5, pjrt_platform: str | None = None) -> float:
    """The device's f32 GEMM rate through XLA at its default precision (the ceiling a conv
    lowered to GEMMs can reach)."""
    import jax
    import jax.numpy as jnp
    from convc.runtime import first_device

    a = jax.device_put(np.random.default_rng(0).standard_normal((size, size)).astype(np.float32), first_device(pjrt_platform))
    matmul = jax.jit(jnp.matmul)
    matmul(a, a).block_until_ready()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        matmul(a, a).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def measured_peak(args: argparse.Namespace) -> float | None:
    """The sgemm rate beside a suite's figures (None with --no-peak): a GPU's on an 8192 matmul, --quick's on 512."""
    if args.no_peak:
        return None
    return sgemm_peak_gflops(512 if args.quick else 8192 if args.platform == "gpu" else 2048, pjrt_platform=args.platform)


def machine(pjrt_platform: str = "cpu") -> dict[str, Any]:
    """The machine, the device the suite runs on, and the versions of everything timed."""
    import jax
    import jaxlib
    from convc.runtime import first_device

    info: dict[str, Any] = {
        "cpu": _cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
        "convc": _convc_version(), "jax": jax.__version__, "jaxlib": jaxlib.__version__, "platform": pjrt_platform,
        "device_kind": first_device(pjrt_platform).device_kind, "load_average": list(os.getloadavg()),
    }
    try:
        import torch
    except ImportError:
        info["torch"] = None
        return info
    info["torch"], info["torch_threads"] = torch.__version__, torch.get_num_threads()
    if pjrt_platform == "gpu":
        info["torch_device"] = torch.cuda.get_device_name()
        info["cudnn"] = torch.backends.cudnn.version()
        info["torch_cudnn_allow_tf32"] = torch.backends.cudnn.allow_tf32
    return info


def _convc_version() -> str | None:
    """The installed convc's version (package metadata: present for editable installs too)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("convc")
    except PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def geomean(values: Sequence[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


# --- report --------------------------------------------------------------------------------


def format_table(results: Sequence[CaseResult]) -> str:
    head = (f"{'case':<24} {'shape':<42} {'convc ms':>9} {'jax ms':>9} {'torch ms':>9} "
            f"{'GFLOP/s':>8} {'%peak':>6} {'c/jax':>7} {'c/torch':>8} {'err':>8}")
    lines = [head, "-" * len(head)]
    for r in results:
        torch_ms = f"{r.ms['torch']:9.2f}" if "torch" in r.ms else f"{'-':>9}"
        vs_torch = f"{r.ratio_vs_torch:8.2f}" if r.ratio_vs_torch is not None else f"{'-':>8}"
        peak = f"{r.percent_of_sgemm_peak:6.1f}" if r.percent_of_sgemm_peak is not None else f"{'-':>6}"
        lines.append(f"{r.name:<24} {r.shape:<42} {r.ms['convc']:9.2f} {r.ms['jax']:9.2f} {torch_ms} "
                     f"{r.gflops['convc']:8.1f} {peak} {r.ratio_vs_jax:7.3f} {vs_torch} {r.max_error_vs_jax:8.1e}")
    mean_vs_jax = geomean([r.ratio_vs_jax for r in results])
    mean_vs_torch = geomean([r.ratio_vs_torch for r in results if r.ratio_vs_torch is not None])
    lines.append("-" * len(head))
    lines.append(f"geometric mean convc/jax: {mean_vs_jax:.3f}" + (f"   convc/torch: {mean_vs_torch:.3f}" if mean_vs_torch else ""))
    if any(calls for r in results for calls in r.custom_calls.values()):
        lines.append("library calls (custom-call targets in the compiled HLO):")
        lines += [f"  {r.name:<24} " + "   ".join(f"{name}: {', '.join(calls) or '-'}" for name, calls in r.custom_calls.items())
                  for r in results]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m convc.tools.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small shapes (smoke testing), short budgets")
    parser.add_argument("--suite", choices=SUITES, default="conv",
                        help="conv: single convs and their gradients (default); train: forward + backward of five blocks "
                             "(convc.grad against jax.vjp and PyTorch autograd); models: whole networks imported from ONNX "
                             "against ONNX Runtime and PyTorch eager (cpu only); train-models: training steps of imported "
                             "ResNet-18, MobileNet v2 and a DCGAN generator (convc.grad of the weights) against PyTorch autograd (cpu only); "
                             "dw-limit: the depthwise and 1x1 convs of MobileNet v2 one at a time, ONNX Runtime's Conv against "
                             "convc's cpu lowering and other StableHLO forms (cpu only); "
                             "limits: the conv suite's cases, every StableHLO form convc can emit for each conv (with convc's and "
                             "XLA's default options) against PyTorch's op (cpu only); train-limits: the same for each distinct conv of "
                             "--suite train's steps, summed, against the step and PyTorch's autograd step (cpu only); "
                             "train-models-limits: the same for --suite train-models's networks (cpu only); "
                             "models-limits: the same for --suite models's networks (inference), against ONNX Runtime's network "
                             "and its convs alone, and PyTorch eager (cpu only)")
    parser.add_argument("--cases", help="comma-separated substrings of case names to run (default: all)")
    parser.add_argument("--platform", choices=PLATFORMS,
                        help="the PJRT platform convc and JAX run on, and PyTorch's device (gpu: CUDA); default: the one PJRT picks")
    parser.add_argument("--batch-scale", type=_positive_int, metavar="N",
                        help=f"multiply every case's batch by N (default {GPU_BATCH_SCALE} on gpu, to fill the device; 1 on cpu)")
    parser.add_argument("--target", choices=("generic", "cpu", "gpu"), help="convc's lowering target (default: the platform's)")
    parser.add_argument("--autotune", action="store_true",
                        help="target cpu: convc chooses each conv's lowering by measurement (convc --autotune, default cache)")
    parser.add_argument("--batch", type=_batch_list, default=(1, 8), metavar="N,...",
                        help="--suite models(-limits), train-models(-limits), dw-limit: the batch sizes each network (conv) runs at (default 1,8)")
    parser.add_argument("--size", type=_positive_int, metavar="PIXELS",
                        help="--suite models(-limits), train-models(-limits): the input's height and width (default 224, --quick 64)")
    parser.add_argument("--without-pass", metavar="PASS",
                        help="--suite models: also time convc compiled with the target's default pipeline minus PASS, "
                             "interleaved with the rest (a pass's before and after, in one process)")
    parser.add_argument("--profile", action="store_true",
                        help="--suite models, train-models: per network, the conv lowerings convc chose, the ops of XLA's optimized "
                             "HLO and their times per call (a profiler trace of a few calls, after the timing); --suite models on "
                             "the CPU: ONNX Runtime's kernel times by op type too (its own profiler)")
    parser.add_argument("--int8", action="store_true",
                        help="--suite models: each network quantized by onnxruntime's quantize_static (QDQ, per-channel); "
                             "convc int8 against ONNX Runtime int8 and convc f32; --suite models-limits: the same networks' "
                             "QDQ convs alone, convc int8 against ONNX Runtime's and convc f32, beside the whole networks")
    parser.add_argument("--save-onnx", metavar="DIR",
                        help="--suite models: export the selected networks to DIR (an ONNX file each and manifest.json) "
                             "and time nothing, for --onnx-dir where PyTorch does not install")
    parser.add_argument("--onnx-dir", metavar="DIR",
                        help="--suite models, models-limits: read the networks --save-onnx wrote to DIR instead of exporting them "
                             "(no PyTorch needed; convc against ONNX Runtime, PyTorch not timed; with --int8 the "
                             "saved float networks are quantized); --cases and --batch select among them")
    parser.add_argument("--forms", metavar="FORM,...",
                        help="--suite dw-limit: the convc forms to time beside ONNX Runtime (default: all; "
                             "cpu, tap_pads, rewrite_nchw, xla, xla_nchw, floor; ort1: ONNX Runtime on one thread)")
    parser.add_argument("--json", help="write the results (and the machine) to this JSON file")
    parser.add_argument("--budget", type=float, help="seconds of timing per case (default 8, --quick 1)")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even when it is installed")
    parser.add_argument("--torch-threads", type=_positive_int, metavar="N",
                        help="PyTorch's intra-op threads (default: one per core, as XLA's pool)")
    parser.add_argument("--no-peak", action="store_true", help="skip measuring the sgemm peak")
    parser.add_argument("--no-malloc-tuning", action="store_true",
                        help="leave glibc's malloc at its defaults (else the bench reruns itself with "
                             "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 and raises its thresholds)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return int(text)


def _batch_list(text: str) -> tuple[int, ...]:
    return tuple(_positive_int(part.strip()) for part in text.split(","))


class BenchError(Exception):
    """A command line this machine cannot run (reported in one line, exit 1)."""


def resolve_platform(args: argparse.Namespace) -> None:
    """Fill in `args.platform` and `args.batch_scale`, checking that PJRT has the platform
    (PlatformUnavailableError otherwise) before anything is compiled."""
    from convc.runtime import default_platform, require_platform

    if args.platform is None:
        args.platform = default_platform()
        if args.platform not in PLATFORMS:
            raise BenchError(f"the suite runs on {' or '.join(PLATFORMS)}; PJRT's platform here is '{args.platform}' (pass --platform)")
    require_platform(args.platform)
    if args.batch_scale is None:
        args.batch_scale = GPU_BATCH_SCALE if args.platform == "gpu" else 1


def selected_cases(args: argparse.Namespace) -> list[Any]:
    """The suite's cases (ConvSpec; bench_train.TrainSpec for --suite train, bench_models.ModelSpec
    for models and models-limits, bench_train_models.TrainModelSpec for train-models and train-models-limits) that --cases names, shrunk
    by --quick, their batches scaled by --batch-scale."""
    if getattr(args, "suite", "conv") == "dw-limit":
        from convc.tools import bench_dw_limit

        return _wanted(bench_dw_limit.cases(args.batch, args.quick), args)
    if getattr(args, "suite", "conv") in ("train-models", "train-models-limits"):
        from convc.tools import bench_train_models

        return _wanted(bench_train_models.train_specs(bench_train_models.default_size(args), args.batch, args.quick), args)
    if getattr(args, "suite", "conv") in ("models", "models-limits"):
        from convc.tools import bench_models

        if getattr(args, "onnx_dir", None):
            return _wanted([s for s in bench_models.saved_specs(Path(args.onnx_dir)) if s.batch in args.batch], args)
        return _wanted(bench_models.model_specs(args.size or (bench_models.QUICK_SIZE if args.quick else bench_models.FULL_SIZE),
                                                args.batch), args)
    if getattr(args, "suite", "conv") in ("train", "train-limits"):
        from convc.tools import bench_train

        return [spec.with_batch(spec.batch * (args.batch_scale or 1)) for spec in _wanted(bench_train.train_cases(args.quick), args)]
    cases = _wanted(_cases(), args)
    cases = [c.shrunk() for c in cases] if args.quick else cases
    return [replace(c, batch=c.batch * (args.batch_scale or 1)) for c in cases]


def _wanted(cases: list[Any], args: argparse.Namespace) -> list[Any]:
    if not args.cases:
        return cases
    wanted = [w.strip() for w in args.cases.split(",") if w.strip()]
    return [c for c in cases if any(w in c.name for w in wanted)]


def run_suite(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    resolve_platform(args)
    target = args.target or args.platform
    if args.autotune and target != "cpu":
        raise BenchError(f"--autotune chooses among the cpu target's lowerings; the target is '{target}'")
    if args.autotune and (args.suite in COST_MODEL_SUITES or args.int8):
        raise BenchError(f"--autotune applies to --suite conv, train and models (not --int8); "
                         f"--suite {args.suite}{' --int8' if args.int8 else ''} compiles with the cost model")
    if args.without_pass and args.suite != "models":
        raise BenchError("--without-pass compares convc with and without a pass on --suite models only")
    if getattr(args, "profile", False) and args.suite not in ("models", "train-models"):
        raise BenchError("--profile profiles whole networks: --suite models or train-models")
    if args.int8 and (args.suite not in ("models", "models-limits") or args.without_pass):
        raise BenchError("--int8 quantizes the networks of --suite models and models-limits (without --without-pass)")
    _check_onnx_files_flags(args)
    if getattr(args, "forms", None) and args.suite != "dw-limit":
        raise BenchError("--forms chooses the convc forms of --suite dw-limit")
    budget = args.budget if args.budget is not None else (1.0 if args.quick else 8.0)
    use_torch = not args.no_torch and _configure_torch(args.platform, args.torch_threads)
    if not args.no_malloc_tuning:
        keep_freed_memory()
    info = machine(args.platform)
    info["host_memory"] = host_memory()
    log(f"host memory: {describe_host_memory(info['host_memory'])}")
    if args.suite == "models":
        from convc.tools import bench_models, bench_models_int8

        models_runner = bench_models_int8.run_int8_suite if args.int8 else bench_models.run_models_suite
        return models_runner(args, info, target, budget, use_torch, log)
    if args.suite == "dw-limit":
        from convc.tools import bench_dw_limit

        return bench_dw_limit.run_dw_limit_suite(args, info, target, budget, log)
    if args.suite == "train-models":
        from convc.tools import bench_train_models

        return bench_train_models.run_train_models_suite(args, info, target, budget, use_torch, log)
    if args.suite == "models-limits" and args.int8:
        from convc.tools import bench_models_int8_limits

        return bench_models_int8_limits.run_int8_limits_suite(args, info, budget, log)
    if args.suite in ("limits", "train-limits", "train-models-limits", "models-limits"):
        from convc.tools import bench_limits

        return bench_limits.run_limits_suite(args, info, target, budget, use_torch, log)
    peak = measured_peak(args)
    log(f"machine: {info['cpu']}, {info['cores']} cores, {info['device_kind']}, jax {info['jax']}, torch {info['torch']}; "
        f"platform {args.platform}, target {target}, batch x{args.batch_scale}; load {info['load_average'][0]:.2f}"
        + (f"; sgemm peak {peak:.0f} GFLOP/s" if peak else ""))
    results = []
    runner: Callable[..., CaseResult] = run_case
    if args.suite == "train":
        from convc.tools import bench_train

        runner = bench_train.run_train_case
    for spec in selected_cases(args):
        result = runner(spec, target, budget, use_torch=use_torch, autotune=args.autotune, pjrt_platform=args.platform)
        if peak:
            result.percent_of_sgemm_peak = 100 * result.gflops["convc"] / peak
        log(f"  {spec.name}: convc {result.ms['convc']:.2f} ms, jax {result.ms['jax']:.2f} ms"
            + (f", torch {result.ms['torch']:.2f} ms" if "torch" in result.ms else "") + f" ({result.rounds} rounds)")
        results.append(result)
    info["load_average_after"] = list(os.getloadavg())
    return {
        "machine": info, "suite": args.suite, "platform": args.platform, "target": target, "batch_scale": args.batch_scale, "autotune": args.autotune,
        "quick": args.quick, "budget_s": budget, "sgemm_peak_gflops": peak, "tolerance": tolerance(args.platform),
        "cases": [asdict(r) for r in results],
        "geomean_convc_over_jax": geomean([r.ratio_vs_jax for r in results]),
        "geomean_convc_over_torch": geomean([r.ratio_vs_torch for r in results if r.ratio_vs_torch is not None]),
        "table": format_table(results) if results else "",
    }


def _check_onnx_files_flags(args: argparse.Namespace) -> None:
    """--save-onnx and --onnx-dir: --suite models only (--onnx-dir models-limits too), one of
    them, --save-onnx not with --int8 (it saves float networks; --int8 --onnx-dir quantizes
    them); with --onnx-dir the files fix the input size."""
    save, read = getattr(args, "save_onnx", None), getattr(args, "onnx_dir", None)
    if not (save or read):
        return
    flag = "--save-onnx" if save else "--onnx-dir"
    if args.suite not in ("models", "models-limits") or (save and (args.int8 or args.suite != "models")):
        raise BenchError(f"{flag} writes or reads the networks of --suite models (--save-onnx without --int8); "
                         "--onnx-dir those of models-limits too")
    if save and read:
        raise BenchError("--save-onnx writes the files --onnx-dir reads: give one of them")
    if read and args.size:
        raise BenchError(f"--onnx-dir {read}: the saved files fix the input size; --size {args.size} does not apply")


def keep_freed_memory() -> None:
    """Ask glibc to reuse freed memory rather than unmap it, in the main thread's arena: every
    call of every implementation allocates its result (megabytes) there, and on this VM the
    page faults of a fresh mapping cost several ms a call. (A pool thread's arena maps any
    block over 64 MiB afresh whatever these thresholds: see HUGE_PAGE_TUNABLE.)"""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 1 << 30)
    libc.mallopt(m_trim_threshold, (1 << 31) - 1)


# XLA:CPU allocates an executable's temporaries on every call, in one block that a network at
# batch 8 makes 30-300 MiB, from a pool thread; glibc maps such a block afresh each time, and
# the call pays a page fault per 4 KiB it touches. Asked for transparent huge pages (glibc
# 2.35+, read at process start only), malloc advises the kernel to map them 2 MiB at a time.
HUGE_PAGE_TUNABLE = "glibc.malloc.hugetlb=1"


def rerun_with_huge_page_malloc(argv: Sequence[str]) -> None:
    """Replace this process by the same bench command with HUGE_PAGE_TUNABLE in GLIBC_TUNABLES
    (every runtime timed shares it); returns where it does not apply: --no-malloc-tuning, a C
    library other than glibc, or the tunable already set."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if parse_args(argv).no_malloc_tuning or platform.libc_ver()[0] != "glibc" or "glibc.malloc.hugetlb" in tunables:
        return
    env = dict(os.environ, GLIBC_TUNABLES=":".join(part for part in (tunables, HUGE_PAGE_TUNABLE) if part))
    os.execve(sys.executable, [sys.executable, "-m", "convc.tools.bench", *argv], env)


def host_memory() -> dict[str, str | None]:
    """What decides how this process's large allocations are mapped: the C library, its
    tunables, and the kernel's transparent huge page mode (None where there is none to read)."""
    libc, libc_version = platform.libc_ver()
    try:
        modes = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        modes = ""
    chosen = re.search(r"\[(\w+)\]", modes)
    return {"libc": f"{libc} {libc_version}".strip() or None, "glibc_tunables": os.environ.get("GLIBC_TUNABLES"),
            "transparent_hugepages": chosen.group(1) if chosen else None}


def describe_host_memory(memory: dict[str, str | None]) -> str:
    """One line for the suite's log."""
    return (f"{memory['libc'] or 'unknown C library'}, GLIBC_TUNABLES={memory['glibc_tunables'] or '(unset)'}, "
            f"transparent huge pages {memory['transparent_hugepages'] or 'unknown'}")


def tolerance(pjrt_platform: str) -> float:
    return GPU_TOLERANCE if pjrt_platform == "gpu" else TOLERANCE


def _configure_torch(pjrt_platform: str, threads: int | None = None) -> bool:
    """Set PyTorch up for the platform; False without torch. On gpu: cuDNN picks each conv's
    fastest algorithm (cudnn.benchmark), as XLA's autotuner does on the JAX/convc side."""
    try:
        import torch
    except ImportError:
        return False
    torch.set_num_threads(threads or os.cpu_count() or 1)
    if pjrt_platform == "gpu":
        if not torch.cuda.is_available():
            raise BenchError(f"--platform gpu: PyTorch {torch.__version__} sees no CUDA device (install a CUDA build, or pass --no-torch)")
        torch.backends.cudnn.benchmark = True
    return True


def main(argv: Sequence[str] | None = None) -> int:
    from convc.runtime import PlatformUnavailableError

    args = parse_args(argv)
    try:
        if args.list:
            resolve_platform(args)
            for spec in selected_cases(args):
                flops = f"  {spec.flops() / 1e9:.2f} GFLOP" if hasattr(spec, "flops") else f"  batch {spec.batch}"
                print(f"{spec.name:<24} {spec.describe()}{flops}")
            return 0
        report = run_suite(args)
    except PlatformUnavailableError as err:
        print(f"bench: error: --platform {err.platform}: {err}", file=sys.stderr)
        return 1
    except BenchError as err:
        print(f"bench: error: {err}", file=sys.stderr)
        return 1
    print(report["table"])
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    mismatched = [c["name"] for c in report["cases"] if "max_error_vs_jax" in c and not c["max_error_vs_jax"] <= report["tolerance"]]
    if mismatched:
        print(f"convc's result differs from JAX's on: {', '.join(mismatched)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    rerun_with_huge_page_malloc(sys.argv[1:])
    # the package's copy of this module, not __main__'s: the suites in bench_train/bench_models
    # import it, and their BenchError must be the class main() catches
    from convc.tools.bench import main as package_main

    sys.exit(package_main())
