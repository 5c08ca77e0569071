"""The `convc` and `convc-opt` command lines. Thin wrappers over `Compiler`, which
tests drive directly."""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
import traceback
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .diagnostics import ConvcError, InternalError, Location, one_line
from .emit import emit_stablehlo
from .fileio import write_atomic
from .frontend import load_model_text
from .ir import Graph, Op
from .pass_manager import Pass, PassManager, PipelineError, parse_pipeline
from .runtime import PlatformUnavailableError, require_platform
from .textual import parse_ir, print_graph

EXIT_OK, EXIT_USER_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EMIT_KINDS = ("stablehlo", "convc", "bytecode")
DEFAULT_MAX_BYTES = 1 << 31
_BYTE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a graph is built, rewritten or emitted.

    Those phases allocate many long-lived objects and free almost nothing, so the
    collector's passes over the growing heap are pure cost: a third of the time of a
    10,000-conv model, and what made time per node grow with size. (mypy raises its GC
    thresholds for the same reason.) Cycles are collected as usual afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class Compiler:
    """JSON/text -> passes -> emitted text; what both command lines share."""

    pipeline: str | None = None  # None: the target's default pipeline
    target: str | None = None  # None: the platform PJRT finds
    verify: bool = True
    print_ir_after_all: bool = False
    allow_external_data: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES  # constants, and with --run inputs and every intermediate tensor
    autotune: bool = False  # target cpu: measured choices of each conv's lowering (autotune-conv-lowering)
    autotune_cache: str | None = None  # None: $XDG_CACHE_HOME/convc/autotune.json
    autotune_platform: str | None = None  # the PJRT platform to measure on; None: the one PJRT finds
    mesh: str | None = None  # --mesh AXIS=SIZE,...: the mesh to partition over (convc.sharding)
    log: Callable[[str], None] = field(default=lambda text: print(text, file=sys.stderr))
    timings: list[tuple[str, float]] = field(default_factory=list)

    def load(self, path: str) -> Graph:
        if path == "-":
            data = sys.stdin.buffer.read()
            return self.load_bytes(data, "<stdin>")
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise ConvcError(f"cannot read input: {err.strerror}", Location(file=path)) from None
        return self.load_bytes(data, path, Path(path).resolve().parent)

    def load_bytes(self, data: bytes, file: str, base_dir: Path | None = None) -> Graph:
        with _gc_paused():
            return self._load_bytes(data, file, base_dir)

    def _load_bytes(self, data: bytes, file: str, base_dir: Path | None) -> Graph:
        graph = self._read(data, file, base_dir)
        if self.mesh is not None:  # --- sharding: --mesh sets or resizes the mesh ---
            from .sharding import apply_mesh_override, parse_mesh_flag

            apply_mesh_override(graph, parse_mesh_flag(self.mesh), file)
        return graph

    def _read(self, data: bytes, file: str, base_dir: Path | None) -> Graph:
        if data.lstrip()[:1] in (b"{", b"["):
            return load_model_text(data, file, base_dir=base_dir, allow_external_data=self.allow_external_data,
                                   max_constant_bytes=self.max_bytes)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ConvcError(f"input is not UTF-8 text (byte {err.start})", Location(file=file)) from None
        return parse_ir(text, file)

    def passes(self) -> list[Pass]:
        from convc.passes import PASSES, default_pipeline

        if self.pipeline is not None:
            if self.autotune or self.autotune_cache is not None:
                raise PipelineError("--autotune tunes the default pipeline; with -p, name autotune-conv-lowering{cache=PATH} in it")
            return parse_pipeline(self.pipeline, PASSES)
        target = self.resolved_target()
        if self.autotune_cache is not None and not self.autotune:
            raise PipelineError("--autotune-cache needs --autotune")
        if self.autotune and target != "cpu":
            raise PipelineError(f"--autotune chooses among the cpu target's conv lowerings; the target is '{target}' (use --target cpu)")
        return [self._with_autotune_options(p) for p in parse_pipeline(default_pipeline(target, self.autotune), PASSES)]

    def _with_autotune_options(self, p: Pass) -> Pass:
        """Options set here rather than in pipeline text, which cannot spell every path."""
        from convc.passes.autotune_conv_lowering import AutotuneConvLowering

        if not isinstance(p, AutotuneConvLowering):
            return p
        return replace(p, cache=self.autotune_cache or "", platform=self.autotune_platform or "")

    def resolved_target(self) -> str:
        if self.target is not None:
            return self.target
        from .runtime import default_platform

        platform = default_platform()
        return platform if platform in ("cpu", "gpu") else "generic"

    def run_passes(self, graph: Graph, passes: Sequence[Pass] | None = None) -> Graph:
        hook = self._print_after if self.print_ir_after_all else None
        manager = PassManager(self.passes() if passes is None else passes, print_after=hook)
        with _gc_paused():
            manager.run(graph)
        self.timings = manager.timings
        return graph

    def _print_after(self, p: Pass, graph: Graph) -> None:
        self.log(f"// -----// IR Dump After {p.spelling()} //----- //\n{print_graph(graph)}")

    def emit(self, graph: Graph, kind: str) -> bytes:
        with _gc_paused():
            return self._emit(graph, kind)

    def _emit(self, graph: Graph, kind: str) -> bytes:
        if kind == "convc":
            return print_graph(graph).encode()
        text = emit_stablehlo(graph)
        from . import mlir

        if self.verify or kind == "bytecode":
            mlir.verify_stablehlo(text)
        if kind == "bytecode":
            return mlir.portable_artifact(text, sharded=graph.mesh is not None)
        return text.encode()


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--pipeline", help='pass pipeline, e.g. "infer-shapes,resolve-padding"')
    parser.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    parser.add_argument("--timing", action="store_true", help="print per-pass wall time (stderr)")
    parser.add_argument("--allow-external-data", action="store_true", help="let constants load files outside the model's directory")
    parser.add_argument("--max-bytes", type=byte_count, default=DEFAULT_MAX_BYTES, metavar="N[K|M|G]",
                        help="refuse, before allocating, models whose constants (and with --run: inputs or any "
                             "intermediate tensor) need more than this many bytes (default 2G)")
    parser.add_argument("--mesh", metavar="AXIS=SIZE,...", help="device mesh, e.g. data=4,space=2: sets the mesh of a model "
                        "without one, or resizes the model's (same axes, same order); see docs/sharding.md")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")


def byte_count(text: str) -> int:
    """`--max-bytes` values: a non-negative integer with an optional K/M/G/T (binary) suffix."""
    number, suffix = (text[:-1], text[-1].upper()) if text[-1:].isalpha() else (text, "")
    if suffix not in _BYTE_SUFFIXES or not number.isdigit():
        raise argparse.ArgumentTypeError(f"expected a byte count such as 512M or 2G, got '{text}'")
    return int(number) * _BYTE_SUFFIXES[suffix]


def convc_parser() -> argparse.ArgumentParser:
    from convc.passes import TARGETS

    parser = argparse.ArgumentParser(prog="convc", description="Compile a convolution graph (JSON model or convc IR) to StableHLO.")
    parser.add_argument("model", help="model .json (or convc IR text); '-' reads stdin")
    parser.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    parser.add_argument("--emit", choices=EMIT_KINDS, default="stablehlo", help="what to write (default: stablehlo)")
    parser.add_argument("--target", choices=TARGETS, help="lowering target (default: the platform PJRT finds)")
    parser.add_argument("--no-verify", action="store_true", help="skip parsing/verifying the emitted module with MLIR")
    parser.add_argument("--run", action="store_true", help="compile with PJRT and execute")
    parser.add_argument("--check", action="store_true", help="with --run: compare against jax.lax (implies --run)")
    parser.add_argument("--platform", choices=("cpu", "gpu", "tpu"), help="PJRT platform for --run (default: best available)")
    parser.add_argument("--inputs", help=".npz of input arrays by name (default: random)")
    parser.add_argument("--outputs", help="write the outputs to this .npz")
    parser.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    parser.add_argument("--autotune", action="store_true",
                        help="target cpu: choose each conv's lowering by measuring the candidates on the PJRT device "
                             "(--platform's), cached per conv signature and device")
    parser.add_argument("--autotune-cache", metavar="PATH", help="the autotune cache file (default: $XDG_CACHE_HOME/convc/autotune.json)")
    _common_arguments(parser)
    return parser


def _guarded(main: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str) -> int:
    """Exit codes: 0 ok, 1 user error (one line), 2 usage, 3 internal error."""
    try:
        return main(args)
    except ConvcError as err:
        print(err, file=sys.stderr)
        return EXIT_USER_ERROR
    except PipelineError as err:
        print(one_line(f"{prog}: error: {err}"), file=sys.stderr)
        return EXIT_USAGE
    except PlatformUnavailableError as err:  # a sound command line on a machine without that device
        print(one_line(f"{prog}: error: --platform {err.platform}: {err}"), file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 - the last line of defence against tracebacks
        if args.debug:
            traceback.print_exc()
        kind = "" if isinstance(err, InternalError) else f"{type(err).__name__}: "
        print(one_line(f"{prog}: internal error: {kind}{err} (this is a convc bug; rerun with --debug for a traceback)"), file=sys.stderr)
        return EXIT_INTERNAL


def _print_timing(timings: list[tuple[str, float]]) -> None:
    print(PassManager([], timings=timings).timing_report(), file=sys.stderr)


def _write(output: str | None, data: bytes) -> None:
    if output is None or output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_atomic(output, data)


def _convc_main(args: argparse.Namespace) -> int:
    compiler = Compiler(pipeline=args.pipeline, target=args.target, verify=not args.no_verify,
                        print_ir_after_all=args.print_ir_after_all, allow_external_data=args.allow_external_data,
                        max_bytes=args.max_bytes, autotune=args.autotune, autotune_cache=args.autotune_cache,
                        autotune_platform=args.platform, mesh=args.mesh)
    graph = compiler.load(args.model)
    if graph.mesh is not None and (args.run or args.check):  # --- sharding: host devices, before JAX starts ---
        from .runtime_sharded import request_host_devices

        request_host_devices(graph.mesh.size)
    if args.platform is not None and (args.run or args.check or args.autotune):
        require_platform(args.platform)  # before compiling: --run and --autotune need that device
    source = graph.clone() if args.check else None
    compiler.run_passes(graph)
    if args.timing:
        _print_timing(compiler.timings)
    payload = compiler.emit(graph, args.emit)
    if args.run or args.check:  # before writing -o: a failed run or check leaves it untouched
        stablehlo = payload.decode() if args.emit == "stablehlo" else emit_stablehlo(graph)
        _run(graph, _runnable(compiler, graph, stablehlo, args), args, source)
    if args.output is not None or not (args.run or args.check):
        _write(args.output, payload)
    return EXIT_OK


def _inputs(graph: Graph, args: argparse.Namespace) -> list[np.ndarray]:
    from .runtime_inputs import load_inputs, random_inputs

    _check_run_sizes(graph, args.max_bytes, args.model)
    if args.inputs:
        return load_inputs(graph, args.inputs, args.max_bytes)
    return random_inputs(graph, args.seed, args.max_bytes)


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
    with _gc_paused():
        PassManager(parse_pipeline(XLA_CPU_SAFE_PIPELINE, PASSES)).run(copy)
    return copy


def _runnable(compiler: Compiler, graph: Graph, stablehlo: str, args: argparse.Namespace) -> str:
    """The module --run executes: the emitted one, unless it is headed for XLA:CPU with convs
    XLA:CPU misreads; then a cropped copy, after one warning. Refusing would punish a valid
    module for an XLA bug, and the crop is exact; the emitted output stays as requested."""
    from .runtime import platform_name

    misread = xla_cpu_misread_convs(graph)
    if not misread or platform_name(args.platform) != "cpu":
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


def _run(graph: Graph, stablehlo: str, args: argparse.Namespace, source: Graph | None) -> int:
    from .runtime import compile_stablehlo
    from .runtime_inputs import save_outputs

    inputs = _inputs(graph, args)
    if graph.mesh is not None:  # --- sharding: N devices ---
        from .runtime_sharded import run_graph

        outputs = run_graph(graph, stablehlo, inputs, args.platform, args.model)
    else:
        outputs = compile_stablehlo(stablehlo, args.platform)(*inputs)
    for value, out in zip(graph.outputs, outputs):
        print(f"{value.name}: {list(out.shape)} {value.type.dtype} {_checksum(out)}")
    if source is not None:
        _check(graph, source, inputs, outputs, args.model)
    if args.outputs:  # after --check: a failed check writes nothing
        save_outputs(args.outputs, graph, outputs)
    return EXIT_OK


def _check(graph: Graph, source: Graph, inputs: list[np.ndarray], outputs: list[np.ndarray], model: str) -> None:
    from .reference import evaluate
    from .runtime_inputs import TOLERANCE, compare

    expected = evaluate(source, inputs)
    # a bf16 step anywhere rounds what follows it, even into an f32 output
    weakest = max((v.type.dtype for v in source.values()), key=lambda dtype: TOLERANCE.get(dtype, 0.0))
    ok = True
    for value, got, want in zip(graph.outputs, outputs, expected):
        dtype = max(value.type.dtype, weakest, key=lambda d: TOLERANCE.get(d, 0.0))
        line, passed = compare(value.name, dtype, got, want)
        print(line)
        ok = ok and passed
    if not ok:
        raise ConvcError("--check: outputs differ from jax.lax beyond tolerance", Location(file=model))


def main(argv: Sequence[str] | None = None) -> int:
    args = convc_parser().parse_args(argv)
    return _guarded(_convc_main, args, "convc")


# --- convc-opt ------------------------------------------------------------------

SPLIT_MARKER = "// -----"


def opt_parser() -> argparse.ArgumentParser:
    from convc.passes import TARGETS

    parser = argparse.ArgumentParser(prog="convc-opt", description="Run named passes on convc IR or a JSON model and print the IR.")
    parser.add_argument("input", help="convc IR text or JSON model; '-' reads stdin")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument("--emit", choices=("convc", "stablehlo"), default="convc", help="print convc IR (default) or StableHLO")
    parser.add_argument("--split-input-file", action="store_true", help="treat '// -----' separated chunks as separate inputs")
    parser.add_argument("--default-pipeline", metavar="TARGET", choices=TARGETS,
                        help="run the pipeline `convc --target TARGET` runs (instead of -p)")
    _common_arguments(parser)
    return parser


def _opt_one(compiler: Compiler, data: bytes, file: str, base_dir: Path | None, emit: str) -> str:
    graph = compiler.load_bytes(data, file, base_dir)
    compiler.run_passes(graph)
    return compiler.emit(graph, emit).decode()


def _opt_main(args: argparse.Namespace) -> int:
    if args.default_pipeline and args.pipeline:
        raise PipelineError("--default-pipeline and -p are exclusive")
    pipeline = None if args.default_pipeline else args.pipeline or ""
    compiler = Compiler(pipeline=pipeline, target=args.default_pipeline or "generic", print_ir_after_all=args.print_ir_after_all,
                        allow_external_data=args.allow_external_data, max_bytes=args.max_bytes, mesh=args.mesh)
    compiler.passes()  # a bad pipeline is a usage error before anything is read
    if args.input == "-":
        data, base_dir = sys.stdin.buffer.read(), None
    else:
        try:
            data, base_dir = Path(args.input).read_bytes(), Path(args.input).resolve().parent
        except OSError as err:
            raise ConvcError(f"cannot read input: {err.strerror}", Location(file=args.input)) from None
    file = "<stdin>" if args.input == "-" else args.input
    if not args.split_input_file:
        _write(args.output, _opt_one(compiler, data, file, base_dir, args.emit).encode())
        if args.timing:
            _print_timing(compiler.timings)
        return EXIT_OK
    return _opt_split(compiler, data, file, base_dir, args)


def _opt_split(compiler: Compiler, data: bytes, file: str, base_dir: Path | None, args: argparse.Namespace) -> int:
    """Each chunk alone; line numbers stay those of the whole file. Errors do not stop later chunks."""
    results, status, line_offset = [], EXIT_OK, 0
    timings: list[tuple[str, float]] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:  # as without --split-input-file, not silently replaced
        raise ConvcError(f"input is not UTF-8 text (byte {err.start})", Location(file=file)) from None
    for chunk in text.split(SPLIT_MARKER):
        padded = "\n" * line_offset + chunk
        line_offset += chunk.count("\n")
        try:
            results.append(_opt_one(compiler, padded.encode(), file, base_dir, args.emit))
            timings += compiler.timings
        except ConvcError as err:
            print(err, file=sys.stderr)
            status = EXIT_USER_ERROR
    _write(args.output, f"\n{SPLIT_MARKER}\n".join(results).encode())
    if args.timing:
        _print_timing(timings)
    return status


def opt_main(argv: Sequence[str] | None = None) -> int:
    args = opt_parser().parse_args(argv)
    return _guarded(_opt_main, args, "convc-opt")
