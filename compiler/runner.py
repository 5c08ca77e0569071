"""Running a compiled module: inputs, PJRT (one device, or N for a graph with a mesh), the
`--check` against the jax.lax oracle, and the XLA:CPU negative-padding run guard."""

from __future__ import annotations

import argparse
import sys
import zlib
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .compile import Compiler, gc_paused
from .diagnostics import ConvcError, Location, one_line
from .ir import Graph, Op
from .pass_manager import PassManager, parse_pipeline


def _target_platform_warning(compiler: Compiler, args: argparse.Namespace) -> str | None:
    """One line when --run executes a module lowered for one target on another platform
    (e.g. --target gpu on a machine without a GPU): valid, but not what was tuned for."""
    from .runtime import available_platforms, platform_name

    if args.pipeline is not None:
        return None
    target, platform = compiler.resolved_target(), platform_name(args.platform)
    if target == "generic" or target == platform:
        return None
    why = f" (no {target} device here)" if target not in available_platforms() else f" (--platform {platform})"
    return f"convc: warning: --run executes the --target {target} module on PJRT platform {platform}{why}"


def _inputs(graph: Graph, args: argparse.Namespace) -> list[np.ndarray]:
    from .runtime_inputs import load_inputs, random_inputs

    _check_run_sizes(graph, args.max_bytes, args.model)
    if args.inputs:
        return load_inputs(graph, args.inputs, args.max_bytes)
    return random_inputs(graph, 0 if args.seed is None else args.seed, args.max_bytes)


def _check_run_sizes(graph: Graph, max_bytes: int, file: str) -> None:
    """Refuse to --run, before anything is allocated, when the inputs together or any one
    intermediate tensor would need more than --max-bytes."""
    from .dtypes import itemsize

    total = sum(v.type.num_elements() * itemsize(v.type.dtype) for v in graph.inputs)
    if total > max_bytes:
        raise ConvcError(f"the inputs of --run would need {total} bytes, over the limit of {max_bytes} (--max-bytes)",
                         Location(file=file))
    for op in graph.ops:
        nbytes = op.result.type.num_elements() * itemsize(op.result.type.dtype)
        if nbytes > max_bytes:
            raise ConvcError(f"its result {op.result.type} would need {nbytes} bytes to --run, over the limit of "
                             f"{max_bytes} (--max-bytes)", replace(op.loc, file=op.loc.file or file, node=op.name, op=op.kind))


def _checksum(array: np.ndarray) -> str:
    return f"sum={float(np.asarray(array, np.float64).sum()):.6g} crc32={zlib.crc32(np.ascontiguousarray(array).tobytes()):08x}"


XLA_CPU_SAFE_PIPELINE = "cpu-crop-negative-padding,dce"


def xla_cpu_misread_convs(graph: Graph) -> list[Op]:
    """The convs of a lowered graph that XLA:CPU would compute wrongly (openxla/xla#48713):
    only graphs lowered without cpu-crop-negative-padding (not `--target cpu`) hold any."""
    from convc.passes.cpu_crop_negative_padding import misread_by_xla_cpu

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


def _runnable(compiler: Compiler, graph: Graph, stablehlo: str, args: argparse.Namespace) -> str:
    """The module --run executes: the emitted one, unless it is headed for an XLA:CPU that
    misreads some of its convs; then a cropped copy, after one warning. Refusing would punish
    a valid module for an XLA bug, and the crop is exact; the emitted output stays as requested."""
    from .runtime import platform_name

    misread = needs_xla_cpu_guard(graph, platform_name(args.platform))
    if not misread:
        return stablehlo
    print(_cropped_run_warning(misread, compiler, args), file=sys.stderr)
    return compiler.emit(cropped_for_xla_cpu(graph), "stablehlo").decode()


def _cropped_run_warning(misread: Sequence[Op], compiler: Compiler, args: argparse.Namespace) -> str:
    """One located line naming the source nodes (the first three) whose convs get cropped."""
    loc = misread[0].loc
    nodes = list(dict.fromkeys((op.loc.node or op.name, op.loc.op or op.kind) for op in misread))
    named = ", ".join(f"'{node}' ({kind})" for node, kind in nodes[:3])
    more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
    emitted = "-p" if args.pipeline is not None else f"--target {compiler.resolved_target()}"
    return one_line(f"{replace(loc, file=loc.file or args.model).where()}: warning: {named}{more}: running a cropped copy "
                    f"on XLA:CPU, which misreads negative low + positive high padding (openxla/xla#48713); "
                    f"the emitted {emitted} module is unchanged")


def _run(graph: Graph, stablehlo: str, args: argparse.Namespace, source: Graph | None, compiler: Compiler) -> None:
    from .runtime import compile_stablehlo, platform_name
    from .runtime_inputs import save_outputs

    with compiler.timed("inputs"):
        inputs = _inputs(graph, args)
    if graph.mesh is not None:  # --- sharding: N devices ---
        from .runtime_sharded import run_graph

        with compiler.timed("pjrt compile + run on N devices"):
            outputs = run_graph(graph, stablehlo, inputs, args.platform, args.model)
        platform = platform_name(args.platform)
    else:
        with compiler.timed("pjrt compile"):
            executable = compile_stablehlo(stablehlo, args.platform)
        with compiler.timed("pjrt run"):
            outputs = executable(*inputs)
        platform = executable.platform
    for value, out in zip(graph.outputs, outputs):
        print(f"{value.name}: {list(out.shape)} {value.type.dtype} {_checksum(out)}")
    if source is not None:
        with compiler.timed("check (jax.lax reference)"):
            _check(graph, source, inputs, outputs, args.model, platform)
    if args.outputs:  # after --check: a failed check writes nothing
        save_outputs(args.outputs, graph, outputs)


def _check(graph: Graph, source: Graph, inputs: list[np.ndarray], outputs: list[np.ndarray], model: str, platform: str) -> None:
    """Compare with the oracle (exact math, rounded to the output types) within the tolerance
    of the least precise thing the module computes on `platform` (docs/cli.md, --check)."""
    from .reference import evaluate
    from .runtime_inputs import compare, tolerance_for

    expected = evaluate(source, inputs)
    precision = tolerance_for([source, graph], platform)
    ok = True
    for value, got, want in zip(graph.outputs, outputs, expected):
        line, passed = compare(value.name, precision, got, want)
        print(line)
        ok = ok and passed
    if not ok:
        raise ConvcError("--check: outputs differ from jax.lax beyond tolerance", Location(file=model))

