"""The `convc` and `convc-opt` command lines. Thin wrappers over `Compiler`, which
tests drive directly."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
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
from .verify_diagnostics import verify_diagnostics

EXIT_OK, EXIT_USER_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a tool killed by SIGPIPE (`yes | head -1`)
EMIT_KINDS = ("stablehlo", "convc", "bytecode")
DEFAULT_ELIDE_LARGER = 16  # convc's printed IR: constants beyond the inline size become dense_resource<__elided__>
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
    elide_constants_larger: int | None = None  # printed IR: elide constants with more elements (None: whole)
    mesh: str | None = None  # --mesh AXIS=SIZE,...: the mesh to partition over (convc.sharding)
    log: Callable[[str], None] = field(default=lambda text: print(text, file=sys.stderr))
    timings: list[tuple[str, float]] = field(default_factory=list)  # the last run_passes's, per pass
    phases: list[tuple[str, float, int]] = field(default_factory=list)  # (phase, seconds, depth), for --timing

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Record the wall time of one phase (load, emit, PJRT compile, ...) for --timing."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases.append((phase, time.perf_counter() - start, 0))

    def print_ir(self, graph: Graph) -> str:
        return print_graph(graph, elide_larger=self.elide_constants_larger)

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
        with self.timed("load (parse + verify)"), _gc_paused():
            return self._load_bytes(data, file, base_dir)

    def _load_bytes(self, data: bytes, file: str, base_dir: Path | None) -> Graph:
        graph = self._read(data, file, base_dir)
        if self.mesh is not None:  # --- sharding: --mesh sets or resizes the mesh ---
            from .sharding import apply_mesh_override, parse_mesh_flag

            apply_mesh_override(graph, parse_mesh_flag(self.mesh), file)
        return graph

    def _read(self, data: bytes, file: str, base_dir: Path | None) -> Graph:
        if file.lower().endswith(".json") or data.lstrip()[:1] in (b"{", b"["):
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
        """`target`, else the platform PJRT finds ("cpu" or "gpu"; "generic" otherwise)."""
        if self.target is not None:
            return self.target
        from .runtime import default_platform

        with self.timed("find the platform (import jax, start PJRT)"):
            platform = default_platform()
        self.target = platform if platform in ("cpu", "gpu") else "generic"
        return self.target

    def run_passes(self, graph: Graph, passes: Sequence[Pass] | None = None) -> Graph:
        hook = self._print_after if self.print_ir_after_all else None
        manager = PassManager(self.passes() if passes is None else passes, print_after=hook)
        start = time.perf_counter()
        with _gc_paused():
            manager.run(graph)
        self.timings = manager.timings
        self.phases.append(("passes (with the verifier after each)", time.perf_counter() - start, 0))
        self.phases += [(name, t, 1) for name, t in manager.timings]
        return graph

    def _print_after(self, p: Pass, graph: Graph) -> None:
        self.log(f"// -----// IR Dump After {p.spelling()} //----- //\n{self.print_ir(graph)}")

    def emit(self, graph: Graph, kind: str) -> bytes:
        with _gc_paused():
            return self._emit(graph, kind)

    def _emit(self, graph: Graph, kind: str) -> bytes:
        if kind == "convc":
            with self.timed("print"):
                return self.print_ir(graph).encode()
        with self.timed("emit stablehlo"):
            text = emit_stablehlo(graph)
        from . import mlir

        if self.verify or kind == "bytecode":
            with self.timed("mlir verify"):
                mlir.verify_stablehlo(text)
        if kind == "bytecode":
            with self.timed("serialize bytecode"):
                return mlir.portable_artifact(text, sharded=graph.mesh is not None)
        return text.encode()

    def timing_report(self) -> str:
        """`--timing`: every phase in order, passes indented under theirs, as `mlir-opt --mlir-timing`."""
        total = sum(t for _, t, depth in self.phases if depth == 0) or 1e-12
        lines = ["===- Execution timing report -===", f"  Total: {total * 1e3:.3f} ms"]
        lines += [f"  {t * 1e3:9.3f} ms ({100 * t / total:5.1f}%)  {'  ' * depth}{name}" for name, t, depth in self.phases]
        return "\n".join(lines)


class UsageError(PipelineError):
    """A command line whose flags do not fit together (exit 2, as argparse's errors)."""


def _common_arguments(parser: argparse.ArgumentParser, run_flags: bool) -> None:
    parser.add_argument("-p", "--pipeline", help='pass pipeline, e.g. "infer-shapes,resolve-padding" (see --list-passes)')
    parser.add_argument("--list-passes", action=_ListPasses, help="list every pass with its options and summary, then exit")
    parser.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    parser.add_argument("--timing", action="store_true", help="print the wall time of every phase and pass (stderr)")
    parser.add_argument("--allow-external-data", action="store_true", help="let constants load files outside the model's directory")
    also = " (and with --run: inputs or any intermediate tensor)" if run_flags else ""
    parser.add_argument("--max-bytes", type=byte_count, default=DEFAULT_MAX_BYTES, metavar="N[K|M|G]",
                        help=f"refuse, before allocating, models whose constants{also} need more than this many "
                             "bytes (default 2G)")
    parser.add_argument("--mesh", metavar="AXIS=SIZE,...", help="device mesh, e.g. data=4,space=2: sets the mesh of a model "
                        "without one, or resizes the model's (same axes, same order); see docs/sharding.md")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    parser.add_argument("--version", action="version", version=version_line())


def version_line() -> str:
    """`convc X.Y.Z (jax A, jaxlib B)`: read from package metadata, so nothing is imported."""
    from importlib.metadata import PackageNotFoundError, version

    from . import __version__

    found = []
    for name in ("jax", "jaxlib"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} not installed")
    return f"convc {__version__} ({', '.join(found)})"


def pass_listing() -> str:
    """Every registered pass in pipeline order: name, summary, options with their defaults."""
    import dataclasses

    from convc.passes import ALL_PASSES

    lines = ["Passes (-p NAME{OPTION=VALUE ...}, comma-separated):"]
    for cls in ALL_PASSES:
        lines.append(f"  {cls.name:34} {cls.summary}")
        lines += [f"      {f.name}={_type_name(f.type)} (default {_default_text(f.default)})" for f in dataclasses.fields(cls)]
    return "\n".join(lines)


def _type_name(kind: object) -> str:
    return kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))


def _default_text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else repr(value) if isinstance(value, str) else str(value)


class _ListPasses(argparse.Action):
    """`--list-passes`: like --version, answered before the positional arguments are required."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(pass_listing())
        parser.exit()


def byte_count(text: str) -> int:
    """`--max-bytes` values: a non-negative integer with an optional K/M/G/T (binary) suffix."""
    number, suffix = (text[:-1], text[-1].upper()) if text[-1:].isalpha() else (text, "")
    if suffix not in _BYTE_SUFFIXES or not number.isdigit():
        raise argparse.ArgumentTypeError(f"expected a byte count such as 512M or 2G, got '{text}'")
    return int(number) * _BYTE_SUFFIXES[suffix]


def _element_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of elements, got '{text}'")
    return int(text)


def convc_parser() -> argparse.ArgumentParser:
    from convc.passes import TARGETS

    parser = argparse.ArgumentParser(prog="convc", description="Compile a convolution graph (JSON model or convc IR) to StableHLO.")
    parser.add_argument("model", help="model .json (or convc IR text); '-' reads stdin")
    parser.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    parser.add_argument("--emit", choices=EMIT_KINDS, default="stablehlo", help="what to write (default: stablehlo)")
    parser.add_argument("--target", choices=TARGETS, help="lowering target (default: the platform PJRT finds)")
    parser.add_argument("--no-verify", action="store_true", help="skip parsing/verifying the emitted module with MLIR")
    parser.add_argument("--elide-constants-larger", type=_element_count, default=DEFAULT_ELIDE_LARGER, metavar="N",
                        help="in printed IR (--emit convc, --print-ir-after-all), write constants of more than N elements "
                             f"as dense_resource<__elided__> (default {DEFAULT_ELIDE_LARGER}; such text cannot be read back)")
    parser.add_argument("--print-constants-whole", action="store_true",
                        help="print every constant whole in printed IR (text that reads back)")
    parser.add_argument("--run", action="store_true", help="compile with PJRT and execute")
    parser.add_argument("--check", action="store_true", help="with --run: compare against jax.lax (implies --run)")
    parser.add_argument("--platform", choices=("cpu", "gpu", "tpu"), help="PJRT platform for --run and --autotune (default: best available)")
    parser.add_argument("--inputs", help="with --run: .npz of input arrays by name (default: random)")
    parser.add_argument("--outputs", help="with --run: write the outputs to this .npz")
    parser.add_argument("--seed", type=int, help="with --run: seed for random inputs (default 0)")
    parser.add_argument("--autotune", action="store_true",
                        help="target cpu: choose each conv's lowering by measuring the candidates on the PJRT device "
                             "(--platform's), cached per conv signature and device")
    parser.add_argument("--autotune-cache", metavar="PATH", help="the autotune cache file (default: $XDG_CACHE_HOME/convc/autotune.json)")
    _common_arguments(parser, run_flags=True)
    return parser


def _guarded(main: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str) -> int:
    """Exit codes: 0 ok, 1 user error (one line), 2 usage, 3 internal error; a reader that
    closed the pipe early (`| head`) ends the command quietly, as it ends other Unix tools."""
    try:
        status = main(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
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


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of what is still
    buffered cannot raise BrokenPipeError again on its way out."""
    try:
        target = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (a test's StringIO): nothing will flush to a pipe
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, target)
    finally:
        os.close(devnull)


def _write(output: str | None, data: bytes) -> None:
    if output is None or output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_atomic(output, data)


def _check_run_flags(args: argparse.Namespace) -> None:
    """Flags that only --run reads are an error without it, as --autotune-cache is without --autotune."""
    if args.run or args.check:
        return
    for flag in ("inputs", "outputs", "seed", "platform"):
        if getattr(args, flag) is not None and not (flag == "platform" and args.autotune):
            raise UsageError(f"--{flag} needs --run (or --check)")


def _writes_stdout(args: argparse.Namespace) -> bool:
    return args.output == "-" or (args.output is None and not (args.run or args.check))


def _check_binary_to_terminal(args: argparse.Namespace) -> None:
    """Bytecode is binary: not to a terminal (as gzip refuses), to a file or pipe as asked."""
    if args.emit == "bytecode" and _writes_stdout(args) and sys.stdout.isatty():
        raise UsageError("--emit bytecode: refusing to write binary to a terminal; use -o FILE or redirect stdout")


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


def _convc_main(args: argparse.Namespace) -> int:
    _check_run_flags(args)
    _check_binary_to_terminal(args)
    elide = None if args.print_constants_whole else args.elide_constants_larger
    compiler = Compiler(pipeline=args.pipeline, target=args.target, verify=not args.no_verify,
                        print_ir_after_all=args.print_ir_after_all, allow_external_data=args.allow_external_data,
                        max_bytes=args.max_bytes, autotune=args.autotune, autotune_cache=args.autotune_cache,
                        autotune_platform=args.platform, elide_constants_larger=elide, mesh=args.mesh)
    graph = compiler.load(args.model)
    if graph.mesh is not None and (args.run or args.check):  # --- sharding: host devices, before JAX starts ---
        from .runtime_sharded import request_host_devices

        request_host_devices(graph.mesh.size)
    if args.platform is not None and (args.run or args.check or args.autotune):
        require_platform(args.platform)  # before compiling: --run and --autotune need that device
    source = graph.clone() if args.check else None
    compiler.run_passes(graph)
    payload = compiler.emit(graph, args.emit)
    if args.run or args.check:  # before writing -o: a failed run or check leaves it untouched
        warning = _target_platform_warning(compiler, args)
        if warning is not None:
            print(warning, file=sys.stderr)
        with compiler.timed("emit stablehlo") if args.emit != "stablehlo" else contextlib.nullcontext():
            stablehlo = payload.decode() if args.emit == "stablehlo" else emit_stablehlo(graph)
        _run(graph, _runnable(compiler, graph, stablehlo, args), args, source, compiler)
    if args.output is not None or not (args.run or args.check):
        with compiler.timed("write"):
            _write(args.output, payload)
    if args.timing:
        print(compiler.timing_report(), file=sys.stderr)
    return EXIT_OK


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
    with _gc_paused():
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


def _run(graph: Graph, stablehlo: str, args: argparse.Namespace, source: Graph | None, compiler: Compiler) -> int:
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
    return EXIT_OK


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


def main(argv: Sequence[str] | None = None) -> int:
    args = convc_parser().parse_args(argv)
    return _guarded(_convc_main, args, "convc")


# --- convc-opt ------------------------------------------------------------------

SPLIT_MARKER = "// -----"


def opt_parser() -> argparse.ArgumentParser:
    from convc.passes import TARGETS

    parser = argparse.ArgumentParser(prog="convc-opt", description="Run named passes on convc IR or a JSON model and print the IR.",
                                     epilog=pass_listing(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="convc IR text or JSON model; '-' reads stdin")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument("--emit", choices=("convc", "stablehlo"), default="convc", help="print convc IR (default) or StableHLO")
    parser.add_argument("--split-input-file", action="store_true", help="treat '// -----' separated chunks as separate inputs")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check the errors against the input's `// expected-error@+1 {{...}}` comments instead of printing IR")
    parser.add_argument("--default-pipeline", metavar="TARGET", choices=TARGETS,
                        help="run the pipeline `convc --target TARGET` runs (instead of -p)")
    parser.add_argument("--elide-constants-larger", type=_element_count, metavar="N",
                        help="write constants of more than N elements as dense_resource<__elided__> "
                             "(default: every constant whole, as mlir-opt)")
    _common_arguments(parser, run_flags=False)
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
                        allow_external_data=args.allow_external_data, max_bytes=args.max_bytes,
                        elide_constants_larger=args.elide_constants_larger, mesh=args.mesh)
    compiler.passes()  # a bad pipeline is a usage error before anything is read
    if args.input == "-":
        data, base_dir = sys.stdin.buffer.read(), None
    else:
        try:
            data, base_dir = Path(args.input).read_bytes(), Path(args.input).resolve().parent
        except OSError as err:
            raise ConvcError(f"cannot read input: {err.strerror}", Location(file=args.input)) from None
    file = "<stdin>" if args.input == "-" else args.input
    if args.verify_diagnostics:
        return verify_diagnostics(data, file, SPLIT_MARKER if args.split_input_file else None,
                                  lambda chunk: _opt_one(compiler, chunk, file, base_dir, args.emit))
    if not args.split_input_file:
        text = _opt_one(compiler, data, file, base_dir, args.emit)
        with compiler.timed("write"):
            _write(args.output, text.encode())
        status = EXIT_OK
    else:
        status = _opt_split(compiler, data, file, base_dir, args)
    if args.timing:
        print(compiler.timing_report(), file=sys.stderr)
    return status


def _opt_split(compiler: Compiler, data: bytes, file: str, base_dir: Path | None, args: argparse.Namespace) -> int:
    """Each chunk alone; line numbers stay those of the whole file. Errors do not stop later chunks."""
    results, status, line_offset = [], EXIT_OK, 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:  # as without --split-input-file, not silently replaced
        raise ConvcError(f"input is not UTF-8 text (byte {err.start})", Location(file=file)) from None
    for chunk in text.split(SPLIT_MARKER):
        padded = "\n" * line_offset + chunk
        line_offset += chunk.count("\n")
        try:
            results.append(_opt_one(compiler, padded.encode(), file, base_dir, args.emit))
        except ConvcError as err:
            print(err, file=sys.stderr)
            status = EXIT_USER_ERROR
    with compiler.timed("write"):
        _write(args.output, f"\n{SPLIT_MARKER}\n".join(results).encode())
    return status


def opt_main(argv: Sequence[str] | None = None) -> int:
    args = opt_parser().parse_args(argv)
    return _guarded(_opt_main, args, "convc-opt")
