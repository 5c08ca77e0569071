"""The `convc` and `convc-opt` command lines: argument parsers, and mains that turn flags
into `Compiler` and runner calls, write the output and map errors to exit codes."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .compile import DEFAULT_ELIDE_LARGER, DEFAULT_MAX_BYTES, EMIT_KINDS, Compiler, platform_for, target_for
from .diagnostics import ConvcError, InternalError, Location, UsageError, one_line
from .emit import weight_constants
from .fileio import write_atomic
from .frontend.onnx.check import onnxruntime_mismatch, onnxruntime_report
from .ir import Graph
from .literals import INLINE_ELEMENTS
from .runner import check_outputs, prepare_run, run_lowered
from .runtime import PlatformUnavailableError, require_platform
from .verify_diagnostics import split_chunks, verify_diagnostics

EXIT_OK, EXIT_USER_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a tool killed by SIGPIPE (`yes | head -1`)
LARGE_WEIGHTS_MIB = 16  # weights of more, in all, go beside an -o FILE of text by default (docs/cli.md)
_BYTE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


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
    parser.add_argument("--input-shape", action="append", type=input_shape, metavar="NAME=D0,D1,...",
                        help="an ONNX model: the shape of input NAME, sizing its symbolic dims (repeatable; default: "
                             + ("the --inputs arrays' sizes, else " if run_flags else "") + "1, with a note)")
    parser.add_argument("--keep-as-inputs", metavar="NAME,...", type=_initializer_names,
                        help="an ONNX model: keep these initializers as graph inputs (after the model's own), not constants")
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


def _names(text: str) -> list[str]:
    """`--grad` values: comma-separated names (as `convc.grad` and `grad{wrt=...}` split them), at least one."""
    from .autodiff import wrt_names

    names = wrt_names(text, Location(file="--grad"))
    if not names:
        raise argparse.ArgumentTypeError("expected one or more input or constant names, such as x,w")
    return names


def _initializer_names(text: str) -> list[str]:
    """`--keep-as-inputs` values: comma-separated initializer names, at least one."""
    names = [name for name in text.split(",") if name]
    if not names:
        raise argparse.ArgumentTypeError("expected one or more initializer names, such as fc.weight,fc.bias")
    return names


def input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """`--input-shape` values: NAME=D0,D1,... (split at the last '='), one or more non-negative sizes."""
    name, equals, dims = text.rpartition("=")
    sizes = dims.split(",")
    if not equals or not name or not all(size.strip().isdigit() for size in sizes):
        raise argparse.ArgumentTypeError(f"expected NAME=D0,D1,... such as x=8,3,224,224, got '{text}'")
    return name, tuple(int(size) for size in sizes)


def input_shapes(pairs: Sequence[tuple[str, tuple[int, ...]]] | None) -> dict[str, tuple[int, ...]] | None:
    """The `--input-shape` flags by input name; a name given twice is a usage error."""
    if not pairs:
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in pairs:
        if name in shapes:
            raise UsageError(f"--input-shape gives '{name}' twice")
        shapes[name] = shape
    return shapes


def _element_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of elements, got '{text}'")
    return int(text)


def _seed(text: str) -> int:
    """`--seed` values: what numpy's generators take, a non-negative integer."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return int(text)


def convc_parser() -> argparse.ArgumentParser:
    from convc.passes import TARGETS

    parser = argparse.ArgumentParser(prog="convc", description="Compile a convolution graph (JSON model or convc IR) to StableHLO.")
    parser.add_argument("model", help="model .json (or convc IR text); '-' reads stdin")
    parser.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    parser.add_argument("--emit", choices=EMIT_KINDS, default="stablehlo", help="what to write (default: stablehlo)")
    parser.add_argument("--target", choices=TARGETS, help="lowering target (default: --platform's, else the platform PJRT finds)")
    parser.add_argument("--no-verify", action="store_true", help="skip parsing/verifying the emitted module with MLIR")
    parser.add_argument("--elide-constants-larger", type=_element_count, default=DEFAULT_ELIDE_LARGER, metavar="N",
                        help="in printed IR (--emit convc, --print-ir-after-all), write constants of more than N elements "
                             f"as dense_resource<__elided__> (default {DEFAULT_ELIDE_LARGER}; such text cannot be read back)")
    parser.add_argument("--print-constants-whole", action="store_true",
                        help="print every constant whole in printed IR (text that reads back)")
    parser.add_argument("--weights-as-inputs", action="store_true",
                        help="make constants of more than --weights-larger elements leading arguments of @main, and write "
                             "their arrays to an .npz beside the output (--weights-file); --run and --check feed them")
    parser.add_argument("--weights-larger", type=_element_count, metavar="N",
                        help=f"with --weights-as-inputs: which constants become arguments (default {INLINE_ELEMENTS}: every one "
                             "that would be a hex blob; smaller ones and splats stay dense<...>)")
    parser.add_argument("--weights-file", metavar="PATH",
                        help="with --weights-as-inputs: the .npz to write (default: the output's name with .weights.npz "
                             "for its suffix)")
    parser.add_argument("--weights-inline", action="store_true",
                        help=f"keep every weight in the emitted text as a constant, however large (by default, weights of "
                             f"more than {LARGE_WEIGHTS_MIB} MiB in all go beside an -o FILE as with --weights-as-inputs)")
    parser.add_argument("--grad", metavar="NAME,...", type=_names,
                        help="compile the model's gradient step with respect to these inputs or constants (convc.grad): "
                             "inputs gain a cotangent per output (<output>.grad), outputs the gradients (<name>.grad)")
    parser.add_argument("--run", action="store_true", help="compile with PJRT and execute")
    parser.add_argument("--check", action="store_true", help="with --run: compare against jax.lax (implies --run)")
    parser.add_argument("--platform", choices=("cpu", "gpu", "tpu"), help="PJRT platform for --run and --autotune (default: best available)")
    parser.add_argument("--inputs", help="with --run: .npz of input arrays by name (default: random)")
    parser.add_argument("--outputs", help="with --run: write the outputs to this .npz")
    parser.add_argument("--seed", type=_seed, metavar="N", help="with --run: seed for random inputs (default 0)")
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
    except UsageError as err:  # before ConvcError, its base: a malformed request, not a wrong model
        print(one_line(f"{prog}: error: {err.message}"), file=sys.stderr)
        return EXIT_USAGE
    except ConvcError as err:
        print(err, file=sys.stderr)
        return EXIT_USER_ERROR
    except PlatformUnavailableError as err:  # a sound command line on a machine without that device
        print(ConvcError(f"--platform {err.platform}: {err}", Location(file=prog), "R7"), file=sys.stderr)
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


def weights_beside_by_default(args: argparse.Namespace, graph: Graph) -> tuple[str, int] | None:
    """Where the weights of `graph` go when no --weights-* flag says, and their bytes: beside
    an -o FILE of StableHLO text when they are large (more than LARGE_WEIGHTS_MIB in all), as
    hex they would be most of the module and of its compile time; None: they stay constants."""
    if args.weights_as_inputs or args.weights_inline or args.emit != "stablehlo" or graph.mesh is not None:
        return None
    if args.output is None or args.output == "-":
        return None
    size = _weight_bytes(graph)
    return (_beside(args.output), size) if size > LARGE_WEIGHTS_MIB << 20 else None


def _beside(output: str) -> str:
    return str(Path(output).with_name(Path(output).stem + ".weights.npz"))


def weights_path(args: argparse.Namespace) -> str | None:
    """Where --weights-as-inputs writes the weights: --weights-file, else beside -o FILE as
    NAME.weights.npz; None when there is neither and --run needs no file. Usage errors for
    --weights-* flags without --weights-as-inputs, and for weights that have nowhere to go."""
    if not args.weights_as_inputs:
        for flag in ("weights_larger", "weights_file"):
            if getattr(args, flag) is not None:
                raise UsageError(f"--{flag.replace('_', '-')} needs --weights-as-inputs")
        return None
    if args.weights_inline:
        raise UsageError("--weights-inline and --weights-as-inputs contradict each other")
    if args.emit == "convc":
        raise UsageError("--weights-as-inputs applies to emitted StableHLO (--emit stablehlo or bytecode), not convc IR")
    to_file = args.output is not None and args.output != "-"
    path = args.weights_file or (_beside(args.output) if to_file else None)
    if path is None and not (args.run or args.check):
        raise UsageError("--weights-as-inputs writes the weights beside the module: give -o FILE or --weights-file PATH")
    if path is not None and to_file and Path(path).resolve() == Path(args.output).resolve():
        raise UsageError(f"--weights-file {path} is the output file too")
    return path


def _convc_main(args: argparse.Namespace) -> int:
    _check_run_flags(args)
    _check_binary_to_terminal(args)
    weights_file = weights_path(args)
    elide = None if args.print_constants_whole else args.elide_constants_larger
    target = args.target or (target_for(args.platform) if args.pipeline is None else None)
    args.platform = args.platform or platform_for(args.target)  # --target cpu runs and autotunes on the CPU
    compiler = Compiler(pipeline=args.pipeline, target=target, verify=not args.no_verify,
                        print_ir_after_all=args.print_ir_after_all, allow_external_data=args.allow_external_data,
                        max_bytes=args.max_bytes, autotune=args.autotune, autotune_cache=args.autotune_cache,
                        autotune_platform=args.platform, elide_constants_larger=elide, mesh=args.mesh, grad=args.grad,
                        input_shapes=input_shapes(args.input_shape), keep_as_inputs=args.keep_as_inputs or (), inputs=args.inputs,
                        weights_larger=_weights_larger(args))
    model = compiler.load(args.model)
    graph = compiler.differentiate(model, args.model)
    if args.run or args.check:
        prepare_run(graph, args.platform)  # before compiling: host devices for a mesh, before JAX starts
    elif args.platform is not None and args.autotune:
        require_platform(args.platform)  # before compiling: --autotune measures on that device
    source = model.clone() if args.check else None  # with --grad, --check takes jax.vjp of the model
    compiler.run_passes(graph)
    if weights_file is None and (beside := weights_beside_by_default(args, graph)) is not None:
        weights_file, size = beside
        compiler.weights_larger = INLINE_ELEMENTS
        _print_warning(f"{args.model}: note: the weights ({size / 1e6:.0f} MB) go to {weights_file} as @main's leading arguments, "
                       "as with --weights-as-inputs (--weights-inline keeps them in the module)")
    writes = args.output is not None or not (args.run or args.check)
    # a run compiles its own form of the module (Compiler.runnable): emitted here only to be written
    payload = compiler.emit(graph, args.emit) if writes or weights_file is not None else b""
    weights = b""
    if weights_file is not None:  # packed now: the payload's weights (a run may emit a cropped copy)
        with compiler.timed("pack weights (.npz)"):
            weights = compiler.weights_npz()
    if args.run or args.check:  # before writing -o: a failed run or check leaves it untouched
        _run_and_check(compiler, graph, source, args)
    if weights_file is not None:  # first: a module is never left beside weights that are not its own
        with compiler.timed("write weights"):
            write_atomic(weights_file, weights)
    if writes:
        with compiler.timed("write"):
            _write(args.output, payload)
    if args.timing:
        print(compiler.timing_report(), file=sys.stderr)
    return EXIT_OK


def _weights_larger(args: argparse.Namespace) -> int | None:
    if not args.weights_as_inputs:
        return None
    return INLINE_ELEMENTS if args.weights_larger is None else int(args.weights_larger)


def _run_and_check(compiler: Compiler, graph: Graph, source: Graph | None, args: argparse.Namespace) -> None:
    """--run: one line per output; --check: one line per output, exit 1 on a mismatch; then --outputs."""
    from .runtime_inputs import save_outputs

    result = run_lowered(compiler, graph, args.inputs or None, seed=0 if args.seed is None else args.seed,
                         platform=args.platform, file=args.model, log=_print_warning)
    for value, out in zip(graph.outputs, result.outputs):
        print(f"{value.name}: {list(out.shape)} {value.type.dtype} {_checksum(out)}")
    if source is not None:
        with compiler.timed("check (jax.lax reference)"):
            report = check_outputs(result, source, wrt=args.grad)
        onnxruntime = None if args.grad else onnxruntime_report(compiler, result)  # an ONNX model: ONNX Runtime's outputs too
        for line in report.lines + (onnxruntime.lines if onnxruntime else []):
            print(line)
        if not report.passed:
            raise ConvcError("--check: outputs differ from jax.lax beyond tolerance", Location(file=args.model), "R6")
        if onnxruntime is not None and not onnxruntime.passed:
            raise onnxruntime_mismatch(args.model)
    if args.outputs:  # after --check: a failed check writes nothing
        save_outputs(args.outputs, graph, result.outputs)


def _weight_bytes(graph: Graph) -> int:
    """The bytes of the constants --weights-as-inputs would make arguments."""
    return sum(op.attrs["value"].nbytes for op in weight_constants(graph, INLINE_ELEMENTS))


def _print_warning(line: str) -> None:
    print(line, file=sys.stderr)


def _checksum(array: np.ndarray) -> str:
    return f"sum={float(np.asarray(array, np.float64).sum()):.6g} crc32={zlib.crc32(np.ascontiguousarray(array).tobytes()):08x}"


def _parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """argparse's own output (`--help`, `--list-passes`, `--version`) to a pipe its reader
    closed ends as quietly as a command's output does (`_guarded`)."""
    try:
        try:
            return parser.parse_args(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE) from None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(convc_parser(), argv)
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
        raise UsageError("--default-pipeline and -p are exclusive")
    pipeline = None if args.default_pipeline else args.pipeline or ""
    compiler = Compiler(pipeline=pipeline, target=args.default_pipeline or "generic", print_ir_after_all=args.print_ir_after_all,
                        allow_external_data=args.allow_external_data, max_bytes=args.max_bytes,
                        elide_constants_larger=args.elide_constants_larger, mesh=args.mesh, input_shapes=input_shapes(args.input_shape),
                        keep_as_inputs=args.keep_as_inputs or ())
    compiler.passes()  # a bad pipeline is a usage error before anything is read
    if args.input == "-":
        data, base_dir = sys.stdin.buffer.read(), None
    else:
        try:
            data, base_dir = Path(args.input).read_bytes(), Path(args.input).resolve().parent
        except OSError as err:
            raise ConvcError(f"cannot read input: {err.strerror}", Location(file=args.input), "I1") from None
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
    results, status = [], EXIT_OK
    for first_line, chunk in split_chunks(data, file, SPLIT_MARKER):
        padded = "\n" * (first_line - 1) + chunk
        try:
            results.append(_opt_one(compiler, padded.encode(), file, base_dir, args.emit))
        except UsageError:  # the command line's fault, not this chunk's: exit 2, as without splitting
            raise
        except ConvcError as err:
            print(err, file=sys.stderr)
            status = EXIT_USER_ERROR
    with compiler.timed("write"):
        _write(args.output, f"\n{SPLIT_MARKER}\n".join(results).encode())
    return status


def opt_main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(opt_parser(), argv)
    return _guarded(_opt_main, args, "convc-opt")
