"""Timing a conv's candidate lowerings on a PJRT device: the measure convc's `Compiler`
gives `autotune-conv-lowering` (convc.autotune chooses and caches; this module times).

Each candidate is measured as a one-conv module (inputs -> conv -> output; a kernel known at
compile time a constant, as in its network) with that choice pinned, lowered by the rest of the cpu pipeline, compiled and run by PJRT on seeded random
inputs: one warm-up call, whose result must agree with the `"xla"` candidate's (else the
candidate is never chosen), then timed rounds, each calling every candidate once in a
rotating order, until the time budget is spent. The median wins. Measurements hold for a
device: PJRT platform and device kind, jax and jaxlib versions, CPU count.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from convc.passes.autotune_conv_lowering import AutotuneConvLowering

from .autotune import Log, Measurement, kernel_is_constant, log_to_stderr
from .conv_lowering import LOWERING
from .diagnostics import one_line
from .ir import Graph, Op, Value
from .lowering_pins import XLA
from .pass_manager import Pass, PassManager, PipelineError
from .runtime_inputs import random_array

MAX_ROUNDS = 25  # timed calls per candidate at most; a budget of a few ms ends sooner


@dataclass(frozen=True)
class PjrtMeasure:
    """The measure autotune is given: candidates timed on `platform` (None: the one PJRT
    finds), about `budget_s` per candidate per conv signature."""

    platform: str | None = None
    budget_s: float = 0.1
    xla_options: tuple[tuple[str, str], ...] = ()  # what every candidate is compiled with: the module's own

    def device(self) -> str:
        options = ", ".join(f"{name}={value}" for name, value in self.xla_options)
        return device_key(self.platform) + (f"; XLA options {options}" if options else "")

    def __call__(self, op: Op, candidates: list[str], log: Log) -> Measurement | None:
        return measure(op, candidates, self.platform, self.budget_s, log, xla_options=dict(self.xla_options))


def with_pjrt_measure(p: Pass, xla_options: Callable[[str], Mapping[str, str]] | None = None) -> Pass:
    """`p`, measuring on PJRT if it is autotune-conv-lowering (on the platform, and within
    the budget, its options name), each candidate compiled with `xla_options(platform)`: the
    options the module itself will be compiled with there (None: XLA's defaults)."""
    if not isinstance(p, AutotuneConvLowering):
        return p
    platform = p.platform or None
    options = {} if xla_options is None else dict(xla_options(_device(platform).platform))
    return replace(p, measure=PjrtMeasure(platform, p.budget_ms / 1e3, tuple(sorted(options.items()))))


def _device(platform: str | None) -> Any:
    from .runtime import PlatformUnavailableError, first_device

    try:
        return first_device(platform)
    except PlatformUnavailableError as err:
        raise PipelineError(f"pass 'autotune-conv-lowering': no PJRT platform '{platform}' here ({err})") from None


def device_key(platform: str | None) -> str:
    """The device a measurement holds for (the cache files it under this key): PJRT platform
    and device kind, the XLA that compiled it (jax, jaxlib), and the CPUs this process may
    use (XLA:CPU's thread pool)."""
    import jax
    import jaxlib

    device = _device(platform)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{device.platform} {device.device_kind}; jax {jax.__version__}, jaxlib {jaxlib.__version__}; {cpus} cpus"


KERNEL_SEED = 0  # the seeded values a kernel known at compile time is timed with


def one_conv_graph(op: Op, lowering: str | None) -> Graph:
    """inputs -> `op` pinned to `lowering` -> output (at `op`'s location, for any error);
    `lowering` None leaves the conv unpinned, to the cost model (what convc without
    --autotune would choose: bench_limits compares it with the pinned forms). A kernel
    computed from constants in `op`'s graph (an imported network's weights) is a constant
    here too, of seeded values, so that XLA folds what depends on it alone (a form's kernel
    relayout) as it does in the network; any other kernel is an input."""
    lhs = Value("lhs", op.operands[0].type)
    attrs = {name: value for name, value in op.attrs.items() if name != LOWERING}
    if kernel_is_constant(op):
        values = random_array(op.operands[1].type, np.random.default_rng(KERNEL_SEED))
        kernel = Op("constant", [], {"value": values}, "rhs", op.operands[1].type, op.loc)
        inputs, rhs, ops = [lhs], kernel.result, [kernel]
    else:
        rhs = Value("rhs", op.operands[1].type)
        inputs, ops = [lhs, rhs], []
    conv = Op("conv", [lhs, rhs], attrs if lowering is None else {**attrs, LOWERING: lowering}, "conv", op.result.type, op.loc)
    return Graph("autotune", inputs, [*ops, conv], [conv.result])


def one_conv_operands(op: Op, seed: int) -> list[np.ndarray]:
    """The lhs and kernel the one-conv module of `op` convolves, given `seed` for its inputs
    (the kernel: its constant's values where it is one)."""
    from .runtime_inputs import random_inputs

    graph = one_conv_graph(op, XLA)
    arrays = random_inputs(graph, seed)
    return arrays if len(arrays) == 2 else [*arrays, np.asarray(graph.ops[0].attrs["value"])]


def lowered_stablehlo(op: Op, lowering: str | None) -> str:
    """The one-conv module as the cpu target emits it with `lowering` pinned (None: unpinned,
    the cost model's choice on this host)."""
    from .compile import Compiler
    from .emit import emit_stablehlo

    graph = one_conv_graph(op, lowering)
    PassManager(Compiler(target="cpu").passes()).run(graph)
    return emit_stablehlo(graph)


def _block(outputs: list[Any]) -> None:
    for out in outputs:
        out.block_until_ready()


def measure(op: Op, candidates: list[str], platform: str | None, budget_s: float, log: Log = log_to_stderr,
            seed: int = 0, xla_options: Mapping[str, str] | None = None) -> Measurement | None:
    """Time every candidate of `op` ("xla" first), each compiled with `xla_options` (None:
    XLA's defaults); None when not even "xla" compiles and runs."""
    from .runtime import platform_name
    from .runtime_inputs import compare, random_inputs, tolerance_for

    arrays = random_inputs(one_conv_graph(op, XLA), seed)
    precision = tolerance_for([one_conv_graph(op, XLA)], platform_name(platform))  # what the device computes it in
    runs: dict[str, Callable[[], list[Any]]] = {}
    warm_ms: dict[str, float] = {}
    rejected: dict[str, str] = {}
    reference: np.ndarray | None = None
    for name in candidates:  # "xla" first: the reference
        try:
            runs[name], result, warm_ms[name] = warm_up(op, name, platform, arrays, xla_options)
        except Exception as err:  # noqa: BLE001 - a candidate that fails is reported and skipped, never fatal
            rejected[name] = f"failed: {one_line(str(err))[:200]}"
        else:
            reference = result if name == XLA else reference
            if reference is None or not compare(name, precision, result, reference)[1]:
                rejected[name] = "disagrees with xla" if reference is not None else "xla failed, nothing to check it against"
                del runs[name]
        if name in rejected:
            log(one_line(f"autotune: '{op.name}': {name} {rejected[name]}: not chosen"))
    if XLA not in runs:
        return None
    return Measurement(_timed(runs, warm_ms, budget_s), rejected)


def warm_up(op: Op, lowering: str | None, platform: str | None, arrays: list[np.ndarray],
            xla_options: Mapping[str, str] | None = None) -> tuple[Callable[[], list[Any]], np.ndarray, float]:
    """Compile the candidate (with `xla_options`; None: XLA's defaults) and call it once:
    (a runner for timing, its result, that call's ms)."""
    import jax

    from .runtime import compile_stablehlo

    executable = compile_stablehlo(lowered_stablehlo(op, lowering), platform, xla_options)
    buffers = [jax.device_put(a, executable.device) for a in arrays]
    start = time.perf_counter()
    result = np.asarray(executable.run_on_device(buffers)[0])
    return (lambda: executable.run_on_device(buffers)), result, (time.perf_counter() - start) * 1e3


def _timed(runs: dict[str, Callable[[], list[Any]]], warm_ms: dict[str, float], budget_s: float) -> dict[str, float]:
    """Median ms per candidate from timed rounds, except for a candidate whose warm-up call
    alone outlasted the whole budget and the fastest warm-up: its warm-up time (an upper
    bound) stands, sparing a call of seconds (XLA's G-fold batch-group expansion)."""
    fastest = min(runs, key=lambda name: warm_ms[name])
    slow = {name for name in runs if name != fastest and warm_ms[name] > budget_s * 1e3 * len(runs)}
    timed = time_rounds({name: run for name, run in runs.items() if name not in slow}, budget_s)
    return {**timed, **{name: warm_ms[name] for name in slow}}


def time_rounds(runs: dict[str, Callable[[], list[Any]]], budget_s: float) -> dict[str, float]:
    """Median ms per candidate. Rounds call each once, the order rotating so none always
    follows another (XLA's thread pool spins on after a call), until `budget_s` per
    candidate is spent (one round at least) or MAX_ROUNDS."""
    names = list(runs)
    samples: dict[str, list[float]] = {name: [] for name in names}
    deadline = time.perf_counter() + budget_s * len(names)
    for round_index in range(MAX_ROUNDS):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            _block(runs[name]())
            samples[name].append(time.perf_counter() - start)
        if time.perf_counter() >= deadline:
            break
    return {name: statistics.median(times) * 1e3 for name, times in samples.items()}


