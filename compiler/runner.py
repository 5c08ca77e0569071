"""Running a compiled module on plain arguments: inputs (given, from an .npz, or random),
PJRT on one device or on a mesh's N devices, the comparison with the jax.lax oracle, and
the XLA:CPU negative-padding run guard.

`run(model, ...)` (exported as `convc.run`) compiles, runs and checks in one call and
returns a `RunResult`; `convc --run/--check` (`convc.cli`) calls the steps one by one
around what it writes. Nothing here reads command-line flags or prints: warnings go to the
result and, as they happen, to an optional `log` callable."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .compile import DEFAULT_MAX_BYTES, Compiler, check_runnable, gc_paused, platform_for, target_for
from .diagnostics import ConvcError, Location, one_line
from .ir import Graph, Op, Value
from .pass_manager import PassManager, parse_pipeline

# What a run's inputs may be: None (random, from a seed), the path of an .npz holding one
# array per input name, arrays by input name, or arrays in the graph's input order.
Inputs = str | os.PathLike[str] | Mapping[str, np.ndarray] | Sequence[np.ndarray] | None
Log = Callable[[str], None]

XLA_CPU_SAFE_PIPELINE = "cpu-crop-negative-padding,dce"


@dataclass(frozen=True)
class CheckReport:
    """The comparison with the oracle: one `--check` line per output, and whether all passed.
    `print(report)` prints the lines, as `--check` does."""

    lines: list[str]
    passed: bool

    def __str__(self) -> str:
        return "\n".join(self.lines)

    def __repr__(self) -> str:
        return f"CheckReport(passed={self.passed}, outputs={len(self.lines)})"


@dataclass(frozen=True)
class RunResult:
    """One run of a compiled module."""

    graph: Graph  # the lowered graph that ran: its outputs name `outputs`, in order
    inputs: list[np.ndarray]  # in the graph's input order
    outputs: list[np.ndarray]  # in the graph's output order
    platform: str  # the PJRT platform that ran it ("cpu", "cuda", ...)
    warnings: list[str] = field(default_factory=list)  # the lines `convc --run` prints on stderr
    check: CheckReport | None = None  # None: not checked

    @property
    def named_outputs(self) -> dict[str, np.ndarray]:
        return {value.name: out for value, out in zip(self.graph.outputs, self.outputs)}

    def __repr__(self) -> str:
        """A summary: each array by name as `f32[1, 5, 5, 4]`, never its elements."""
        check = "not checked" if self.check is None else "passed" if self.check.passed else "FAILED"
        return (f"RunResult(platform={self.platform!r}, inputs={_shapes(self.graph.inputs, self.inputs)}, "
                f"outputs={_shapes(self.graph.outputs, self.outputs)}, warnings={len(self.warnings)}, check={check!r})")

    @property
    def ok(self) -> bool:
        """True unless a check ran and found an output beyond its tolerance."""
        return self.check is None or self.check.passed


def _shapes(values: Sequence[Value], arrays: Sequence[np.ndarray]) -> str:
    return "{" + ", ".join(f"{value.name!r}: {value.type.dtype}{list(np.shape(array))}" for value, array in zip(values, arrays)) + "}"


def run(model: Graph | str | os.PathLike[str], inputs: Inputs = None, *, seed: int = 0, platform: str | None = None,
        check: bool = False, target: str | None = None, pipeline: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES, weights_larger: int | None = None, log: Log | None = None) -> RunResult:
    """Compile `model` (a `Graph`, left unchanged, or the path of a JSON model or convc IR
    text) and run it with PJRT, as `convc MODEL --run` does; with `check`, also compare the
    outputs with the oracle, as `--check` does. A failed check is `result.ok == False`, not
    an exception; user errors (bad inputs, too few devices for the mesh) raise `ConvcError`.

    `target`, `pipeline` and `platform` mean what `--target`, `-p` and `--platform` mean;
    `inputs` and `seed` what `--inputs` and `--seed` mean, and `inputs` may also hold the
    arrays themselves; `max_bytes` what `--max-bytes` means; `weights_larger` what
    `--weights-as-inputs --weights-larger N` means (None: every constant in the module). A graph with a mesh runs on that many devices: on the CPU, convc
    asks for as many host devices, which works only before JAX's backend has started."""
    compiler = Compiler(target=target or (target_for(platform) if pipeline is None else None), pipeline=pipeline, max_bytes=max_bytes,
                        weights_larger=weights_larger)
    platform = platform or platform_for(target)
    file = None if isinstance(model, Graph) else os.fspath(model)
    graph = model.clone() if isinstance(model, Graph) else compiler.load(os.fspath(model))
    prepare_run(graph, platform)
    source = (model if isinstance(model, Graph) else graph.clone()) if check else None
    compiler.run_passes(graph)
    result = run_lowered(compiler, graph, inputs, seed=seed, platform=platform, file=file, log=log)
    if source is None:
        return result
    with compiler.timed("check (jax.lax reference)"):
        report = check_outputs(result, source)
    from .frontend.onnx.check import onnxruntime_report  # an ONNX model: ONNX Runtime's outputs too

    onnxruntime = onnxruntime_report(compiler, result)
    if onnxruntime is not None:
        report = CheckReport(report.lines + onnxruntime.lines, report.passed and onnxruntime.passed)
    return replace(result, check=report)


def prepare_run(graph: Graph, platform: str | None) -> None:
    """What must happen before compiling a graph to run it: for a graph with a mesh, ask for
    its N host devices (possible only before JAX's backend starts, and compiling may start
    it); then a `platform` this machine lacks is a `PlatformUnavailableError`."""
    from .runtime import require_platform

    if graph.mesh is not None:
        from .runtime_sharded import request_host_devices

        request_host_devices(graph.mesh.size)
    if platform is not None:
        require_platform(platform)


def run_lowered(compiler: Compiler, graph: Graph, inputs: Inputs = None, *, seed: int = 0,
                platform: str | None = None, file: str | None = None, log: Log | None = None) -> RunResult:
    """Run the lowered `graph`, as `compiler` emits it for PJRT (`Compiler.runnable`), on
    PJRT `platform` (None: the best available). `file` names the model in diagnostics and warnings."""
    from .runtime import platform_name

    warnings: list[str] = []

    def warn(line: str) -> None:
        warnings.append(line)
        if log is not None:
            log(line)

    mismatch = target_platform_warning(compiler, platform)
    if mismatch is not None:
        warn(mismatch)
    check_runnable(graph)
    to_run = _graph_to_run(compiler, graph, platform, file, warn)
    with compiler.timed("inputs"):
        arrays = run_inputs(graph, inputs, seed, compiler.max_bytes, file, warn)
    if graph.mesh is not None:  # --- sharding: N devices ---
        from .runtime_sharded import run_graph

        text = compiler.emit(to_run, "stablehlo").decode()
        with compiler.timed("pjrt compile + run on N devices"):
            outputs = run_graph(graph, text, arrays, platform, file)
        ran_on = platform_name(platform)
    else:
        executable = compiler.executable(to_run, platform)
        with compiler.timed("pjrt run"):
            outputs = executable(*compiler.weights.values(), *arrays)  # --weights-as-inputs: the weights lead
        ran_on = executable.platform
    return RunResult(graph, arrays, outputs, ran_on, warnings)


def check_outputs(result: RunResult, source: Graph, wrt: Sequence[str] | None = None) -> CheckReport:
    """Compare `result` with the oracle's evaluation of `source`, the graph before any pass
    (exact math, rounded to the output types), within the tolerance of the least precise
    thing the module computes on the platform that ran it (docs/cli.md, --check). With `wrt`
    the result is `source`'s gradient step (`convc.grad`), compared with `jax.vjp` of it."""
    from .reference import TypeDisagreement, evaluate, evaluate_vjp
    from .runtime_inputs import tolerance_for

    try:
        expected = evaluate(source, result.inputs) if wrt is None else evaluate_vjp(source, wrt, result.inputs)
    except TypeDisagreement as err:  # convc's shape rule and jax.lax's differ: no value comparison can pass
        return CheckReport([f"{err} (MISMATCH)"], False)
    precision = tolerance_for([source, result.graph], result.platform)
    forward = list(source.outputs) if wrt is None else []  # a gradient step's outputs are not the source's
    compared = [_compare_output(value, precision, got, want, forward[index] if index < len(forward) else None)
                for index, (value, got, want) in enumerate(zip(result.graph.outputs, result.outputs, expected))]
    return CheckReport([line for line, _ in compared], all(passed for _, passed in compared))


def _compare_output(value: Value, precision: str, got: np.ndarray, want: np.ndarray, source: Value | None) -> tuple[str, bool]:
    """One --check line: in quantization steps for a quantized output of the source graph and
    for a dequantized one (`uniform_dequantize`'s result), else within the tolerance."""
    from .dtypes import is_quantized
    from .runtime_inputs import compare, compare_steps, quantized_steps

    if source is None:
        return compare(value.name, precision, got, want)
    if is_quantized(source.type.dtype):
        dtype, stored = source.type.dtype, True
    elif source.producer is not None and source.producer.kind == "uniform_dequantize":
        dtype, stored = source.producer.operands[0].type.dtype, False
    else:
        return compare(value.name, precision, got, want)
    return compare_steps(value.name, quantized_steps(got, dtype, stored), quantized_steps(want, dtype, stored))


def target_platform_warning(compiler: Compiler, platform: str | None) -> str | None:
    """One line when a module lowered for one target runs on another platform (e.g. --target
    gpu on a machine without a GPU): valid, but not what was tuned for."""
    from .runtime import available_platforms, platform_name

    if compiler.pipeline is not None:
        return None
    target, ran_on = compiler.resolved_target(), platform_name(platform)
    if target == "generic" or target == ran_on:
        return None
    why = f" (no {target} device here)" if target not in available_platforms() else f" (--platform {ran_on})"
    return f"convc: warning: --run executes the --target {target} module on PJRT platform {ran_on}{why}"


# --- inputs ---------------------------------------------------------------------------------


def run_inputs(graph: Graph, inputs: Inputs, seed: int, max_bytes: int, file: str | None,
               warn: Log | None = None) -> list[np.ndarray]:
    """The input arrays of a run, in the graph's input order, each in its input's type;
    sizes are checked against `max_bytes` before anything is allocated. Arrays given by a
    name no input has are ignored, with one warning line to `warn`."""
    from .runtime_inputs import load_inputs, random_inputs

    check_seed(seed, file)
    check_run_sizes(graph, max_bytes, file)
    if inputs is None:
        return random_inputs(graph, seed, max_bytes)
    if isinstance(inputs, (str, os.PathLike)):
        return load_inputs(graph, os.fspath(inputs), max_bytes, warn)
    return _given_inputs(graph, inputs, Location(file=file), warn)


def _given_inputs(graph: Graph, arrays: Mapping[str, np.ndarray] | Sequence[np.ndarray], loc: Location,
                  warn: Log | None) -> list[np.ndarray]:
    """Arrays passed from Python, by input name or in input order, checked as `--inputs` checks an .npz."""
    from .runtime_inputs import unused_arrays_warning

    unused = None
    if isinstance(arrays, Mapping):
        missing = [v.name for v in graph.inputs if v.name not in arrays]
        if missing:
            raise ConvcError(f"no array named '{missing[0]}' (has: {', '.join(map(str, arrays))})", loc, "R1")
        ordered = [arrays[v.name] for v in graph.inputs]
        unused = unused_arrays_warning(graph, map(str, arrays), loc)
    else:
        ordered = list(arrays)
        if len(ordered) != len(graph.inputs):
            raise ConvcError(f"{len(ordered)} input arrays for the {len(graph.inputs)} inputs of the graph", loc, "R1")
    converted = [_as_input(value, np.asarray(array), loc) for value, array in zip(graph.inputs, ordered)]
    if unused is not None and warn is not None:
        warn(unused)
    return converted


def _as_input(value: Value, array: np.ndarray, loc: Location) -> np.ndarray:
    from .arrayfile import as_dtype
    from .dtypes import numpy_dtype

    if tuple(array.shape) != value.type.shape:
        raise ConvcError(f"array '{value.name}' has shape {list(array.shape)}, expected {list(value.type.shape)}", loc, "R2")
    try:
        return as_dtype(array, numpy_dtype(value.type.dtype))
    except (ValueError, TypeError) as err:
        raise ConvcError(f"array '{value.name}' ({array.dtype}) cannot be converted to {value.type.dtype}: {err}", loc,
                         "R3") from None


def check_seed(seed: object, file: str | None) -> None:
    """A run's seed is what `--seed` takes (and numpy's generators): a non-negative integer."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConvcError(f"seed must be a non-negative integer, got {seed!r}", Location(file=file), "R8")


def check_run_sizes(graph: Graph, max_bytes: int, file: str | None) -> None:
    """Refuse to run, before anything is allocated, when the inputs together or any one
    intermediate tensor would need more than `max_bytes` (--max-bytes)."""
    from .dtypes import itemsize

    total = sum(v.type.num_elements() * itemsize(v.type.dtype) for v in graph.inputs)
    if total > max_bytes:
        raise ConvcError(f"the inputs of --run would need {total} bytes, over the limit of {max_bytes} (--max-bytes)",
                         Location(file=file), "R5")
    for op in graph.ops:
        nbytes = op.result.type.num_elements() * itemsize(op.result.type.dtype)
        if nbytes > max_bytes:
            raise ConvcError(f"its result {op.result.type} would need {nbytes} bytes to --run, over the limit of "
                             f"{max_bytes} (--max-bytes)", replace(op.loc, file=op.loc.file or file, node=op.loc.node or op.name, op=op.kind), "R5")


# --- the XLA:CPU negative-padding guard (openxla/xla#48713) ---------------------------------


def xla_cpu_misread_convs(graph: Graph) -> list[Op]:
    """The convs of a lowered graph that XLA:CPU would compute wrongly (openxla/xla#48713):
    only graphs lowered without cpu-crop-negative-padding (not `--target cpu`) hold any."""
    from .conv_facts import misread_by_xla_cpu

    return [op for op in graph.ops if misread_by_xla_cpu(op)]


def cropped_for_xla_cpu(graph: Graph) -> Graph:
    """A copy of a lowered graph that XLA:CPU computes right: its negative pads cropped
    (exact: a slice of the input), the same inputs and outputs in the same order."""
    from convc.passes import PASSES

    copy = graph.clone()
    with gc_paused():
        PassManager(parse_pipeline(XLA_CPU_SAFE_PIPELINE, PASSES)).run(copy)
    return copy


def needs_xla_cpu_guard(graph: Graph, platform: str) -> list[Op]:
    """The convs of `graph` to crop before running it on PJRT `platform`: those XLA:CPU
    misreads, when the platform is the CPU and the installed XLA:CPU has the bug (measured
    once per process by a probe module); else none."""
    from .xla_probes import xla_cpu_misreads_crop_low_pad_high

    misread = xla_cpu_misread_convs(graph)
    if not misread or platform != "cpu" or not xla_cpu_misreads_crop_low_pad_high():
        return []
    return misread


def _graph_to_run(compiler: Compiler, graph: Graph, platform: str | None, file: str | None, warn: Log) -> Graph:
    """The graph to execute: the lowered one, unless it is headed for an XLA:CPU that
    misreads some of its convs; then a cropped copy, after one warning. Refusing would punish
    a valid module for an XLA bug, and the crop is exact; the emitted output stays as requested."""
    from .runtime import platform_name

    misread = needs_xla_cpu_guard(graph, platform_name(platform))
    if not misread:
        return graph
    warn(_cropped_run_warning(misread, compiler, file))
    return cropped_for_xla_cpu(graph)


def _cropped_run_warning(misread: Sequence[Op], compiler: Compiler, file: str | None) -> str:
    """One located line naming the source nodes (the first three) whose convs get cropped."""
    loc = misread[0].loc
    nodes = list(dict.fromkeys((op.loc.node or op.name, op.loc.op or op.kind) for op in misread))
    named = ", ".join(f"'{node}' ({kind})" for node, kind in nodes[:3])
    more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
    emitted = "-p" if compiler.pipeline is not None else f"--target {compiler.resolved_target()}"
    return one_line(f"{replace(loc, file=loc.file or file).where()}: warning: {named}{more}: running a cropped copy "
                    f"on XLA:CPU, which misreads negative low + positive high padding (openxla/xla#48713); "
                    f"the emitted {emitted} module is unchanged")
