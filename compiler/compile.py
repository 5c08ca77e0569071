"""The compiler: load a model (JSON, ONNX or convc IR), run the pass pipeline, emit StableHLO,
convc IR or portable bytecode. `Compiler` is what both command lines (`convc.cli`) and
`convc.run` (`convc.runner`) drive, and what tests drive without a subprocess."""

from __future__ import annotations

import contextlib
import functools
import gc
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .diagnostics import ConvcError, Location, UsageError
from .dtypes import is_integer
from .emit import bindable_constants, emit_stablehlo, emits, weight_constants
from .frontend import load_model_text
from .ir import Graph, Op, unused_name
from .literals import INLINE_ELEMENTS
from .ops import view
from .ops.conv import resolve_dimension_numbers
from .pass_manager import Pass, PassManager, PipelineError, parse_pipeline
from .runtime import Executable
from .textual import parse_ir, print_graph

EMIT_KINDS = ("stablehlo", "convc", "bytecode")
DEFAULT_ELIDE_LARGER = 16  # convc's printed IR: constants beyond the inline size become dense_resource<__elided__>
DEFAULT_MAX_BYTES = 1 << 31
# XLA options convc's own runs of a target's modules compile with (PJRT compile options; for
# other consumers of the module, XLA_FLAGS sets the same). cpu: XLA:CPU hands YNNPACK single
# dots only, not the fusions of convs and elementwise ops it forms by default, which ran the
# models suite's networks slower (docs/benchmarks.md, "YNNPACK's fusions"); and its own loops
# (elementwise fusions, tap sums, requantization) prefer 512-bit vectors to the 256 bits XLA
# prefers by default (docs/benchmarks.md, "Wider vectors for XLA's loops").
WIDE_VECTORS = {"xla_cpu_prefer_vector_width": "512"}
TARGET_XLA_OPTIONS: dict[str, dict[str, str]] = {
    "cpu": {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT", **WIDE_VECTORS}}
# ... and for a module holding an integer conv (what lower-quantized leaves): XLA:CPU runs an
# integer conv that no library takes in its generic loop (tens of times the f32 conv's time),
# so YNNPACK is handed single convs too.
INTEGER_CONV_XLA_OPTIONS: dict[str, dict[str, str]] = {
    "cpu": {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION",
            **WIDE_VECTORS}}
# ... and for a gradient step (a module computing kernel gradients) at a small batch: XLA's
# own defaults, whose YNNPACK convs ran kernel gradients contracting a batch below
# GRADIENT_DOTS_FROM_BATCH faster, and such training steps in about two thirds of the time
# of single dots only; from that batch on, Eigen's conv (single dots only) ran them faster,
# while depthwise ones (tap sums) kept preferring XLA's defaults (docs/benchmarks.md, "The
# training steps' limit", "Kernel gradients and the batch").
GRADIENT_XLA_OPTIONS: dict[str, dict[str, str]] = {"cpu": {}}
GRADIENT_DOTS_FROM_BATCH = 8
# ... and for a forward float module (no kernel gradient, no integer conv or dot) on a host
# whose CPU lacks AVX-512: no YNNPACK fusions at all. There Eigen's dots ran the imported
# networks faster than YNNPACK's (Winograd's batched dots most), and the conv suite as fast
# (docs/benchmarks.md, "YNNPACK's dots on a host without AVX-512"); with AVX-512, single dots
# were measured faster. A module with integer dots (an int8 network's pointwise convs) keeps
# the target's options: XLA's own i8 dots ran slower than YNNPACK's ("The int8 networks on a
# host without AVX-512").
WITHOUT_AVX512_XLA_OPTIONS: dict[str, dict[str, str]] = {"cpu": {"xla_cpu_experimental_ynn_fusion_type": "", **WIDE_VECTORS}}
# Pass options of the cpu target's default pipeline that change with those Eigen dots: on such
# a host Winograd's batched dots paid from 32 features (DenseNet's 128 -> 32 growth convs, the
# ResNets' 64-feature convs), where YNNPACK's single dots lost below 128 (docs/benchmarks.md,
# "Winograd on a host without AVX-512").
WITHOUT_AVX512_PASS_OPTIONS: dict[str, dict[str, object]] = {"cpu-conv-winograd": {"min_features": 32}}
MLIR_BYTECODE_MAGIC = b"ML\xefR"  # how every MLIR bytecode file starts


@functools.cache
def host_has_avx512() -> bool | None:
    """Whether this host's CPU has AVX-512 (the `avx512f` flag /proc/cpuinfo lists, as XLA's
    LLVM sees the CPU); None where that file does not say (not Linux, not x86)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    return None if flags is None else "avx512f" in flags.group(1).split()


def holds_integer(graph: Graph, kind: str) -> bool:
    """Whether an op of `kind` in `graph` takes integer operands (a lowered quantized conv's)."""
    return any(op.kind == kind and is_integer(op.operands[0].type.dtype) for op in graph.ops)


def kernel_gradient_batches(graph: Graph) -> list[int]:
    """The batch each kernel gradient (`conv_backprop_filter`) of `graph` that is not depthwise
    contracts over (the cpu target sums a depthwise one per tap: no conv for YNNPACK to take)."""
    batches = []
    for op in graph.ops:
        if op.kind == "conv_backprop_filter":
            v, lhs = view(op), op.operands[0].type
            dn = resolve_dimension_numbers(v.dimension_numbers, lhs.rank)
            if not 1 < v.feature_group_count == lhs.shape[dn.lhs_spec[1]]:
                batches.append(lhs.shape[dn.lhs_spec[0]])
    return batches


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
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


def weight_arguments(constants: Sequence[Op]) -> dict[str, Op]:
    """The constants emitted as arguments by argument name (each constant's value name,
    made unique), in argument order: the names of the .npz that --weights-as-inputs writes."""
    named: dict[str, Op] = {}
    for op in constants:
        named[unused_name(op.name, named)] = op
    return named


def check_lowered(graph: Graph) -> None:
    """Every op of `graph` has a StableHLO form: an op a pipeline left for a lowering pass
    (`-p` without lower-conv-transpose) is a located error naming that pass (E2), as a
    non-canonical conv is E1. (An op neither emitted nor lowered is the emitter's internal error.)"""
    from convc.passes import LOWERED_BY

    for op in graph.ops:
        lowering = None if emits(op.kind) else LOWERED_BY.get(op.kind)
        if lowering is not None:
            raise ConvcError(f"StableHLO has no {op.kind} op: the pipeline must run {lowering} (as the default pipelines do)",
                             op.loc, "E2")


def target_for(platform: str | None) -> str | None:
    """The default target of a run on `platform` (`--platform`): that platform's own ("cpu",
    "gpu"; "generic" for any other), so a run asked for one platform is lowered for it; None
    when no platform is named (then the target is the platform PJRT finds)."""
    if platform is None:
        return None
    return platform if platform in ("cpu", "gpu") else "generic"


def platform_for(target: str | None) -> str | None:
    """The default platform of a run lowered for `target` (`--target`): the CPU for the cpu
    target, whose module may hold what only XLA:CPU compiles (integer convs, which XLA:GPU
    refuses); None for any other (the platform PJRT finds), since the gpu and generic
    targets' modules compile on every platform."""
    return "cpu" if target == "cpu" else None


def check_runnable(graph: Graph) -> None:
    """A module headed for XLA (`--run`) holds no quantized type, which XLA cannot compile:
    one left by the pipeline (`--target generic`, a `-p` without lower-quantized) is a
    located error naming the pass (E3)."""
    from convc.dtypes import is_quantized
    from convc.passes import LOWERED_FOR_XLA

    for op in graph.ops:
        if any(is_quantized(v.type.dtype) for v in (*op.operands, op.result)):
            lowering = LOWERED_FOR_XLA.get(op.kind, "lower-quantized")
            raise ConvcError(f"XLA runs no quantized type ({op.result.type}): the pipeline must run {lowering} (as the cpu and "
                             "gpu targets' pipelines do; --target generic keeps quantized StableHLO)", op.loc, "E3")
    for value in graph.inputs:
        if is_quantized(value.type.dtype):
            raise ConvcError(f"XLA runs no quantized type: input '{value.name}' is {value.type}; the pipeline must run "
                             "lower-quantized (as the cpu and gpu targets' pipelines do)", graph.input_locs.get(value.name, Location()),
                             "E3")


@dataclass
class Compiler:
    """JSON/text -> passes -> emitted text; what both command lines and `convc.run` share."""

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
    grad: Sequence[str] | None = None  # --grad W1,W2: compile the model's gradient step (convc.grad) instead
    log: Callable[[str], None] = field(default=lambda text: print(text, file=sys.stderr))
    timings: list[tuple[str, float]] = field(default_factory=list)  # the last run_passes's, per pass
    phases: list[tuple[str, float, int]] = field(default_factory=list)  # (phase, seconds, depth), for --timing
    input_shapes: Mapping[str, Sequence[int]] | None = None  # --input-shape: an ONNX model's input shapes (symbolic dims)
    keep_as_inputs: Sequence[str] = ()  # --keep-as-inputs: an ONNX model's initializers kept as graph inputs
    inputs: str | None = None  # --inputs .npz: its arrays' shapes fill an ONNX model's other symbolic dims
    onnx_source: tuple[bytes, str] | None = field(default=None, init=False)  # the ONNX model read (bytes, file): --check's ONNX Runtime run
    weights_larger: int | None = None  # --weights-as-inputs: constants of more than N elements become @main's leading arguments
    weights: dict[str, np.ndarray] = field(default_factory=dict, init=False)  # those arguments' arrays, in order (the last emit's)
    gradient_step: bool = field(default=False, init=False)  # a graph run_passes lowered held a kernel gradient (xla_options)
    gradient_batch: int | None = field(default=None, init=False)  # the smallest batch such a kernel gradient, not depthwise, contracts

    def __post_init__(self) -> None:
        if self.mesh is not None:  # a malformed --mesh is a usage error before anything is read
            from .sharding import parse_mesh_flag

            parse_mesh_flag(self.mesh)

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
            raise ConvcError(f"cannot read input: {err.strerror}", Location(file=path), "I1") from None
        return self.load_bytes(data, path, Path(path).resolve().parent)

    def load_bytes(self, data: bytes, file: str, base_dir: Path | None = None) -> Graph:
        with self.timed("load (parse + verify)"), gc_paused():
            return self._load_bytes(data, file, base_dir)

    def _load_bytes(self, data: bytes, file: str, base_dir: Path | None) -> Graph:
        graph = self._read(data, file, base_dir)
        if self.mesh is not None:  # --- sharding: --mesh sets or resizes the mesh ---
            from .sharding import apply_mesh_override, parse_mesh_flag

            apply_mesh_override(graph, parse_mesh_flag(self.mesh), file)
        return graph

    def _read(self, data: bytes, file: str, base_dir: Path | None) -> Graph:
        if file.lower().endswith(".onnx") or data[:1] == b"\x08":  # an ONNX ModelProto starts with its ir_version field
            from .frontend.onnx import load_onnx
            from .runtime_inputs import input_array_shapes

            self.onnx_source = (data, file)
            return load_onnx(data, file=file, base_dir=base_dir, allow_external_data=self.allow_external_data,
                             max_bytes=self.max_bytes, log=self.log, input_shapes=self.input_shapes,
                             keep_as_inputs=self.keep_as_inputs, array_shapes=input_array_shapes(self.inputs) if self.inputs else None)
        if self.input_shapes:
            raise UsageError("--input-shape applies to ONNX models only (the others have no symbolic dimensions)")
        if self.keep_as_inputs:
            raise UsageError("--keep-as-inputs applies to ONNX models only (the others have no initializers)")
        if file.lower().endswith(".json") or data.lstrip()[:1] in (b"{", b"["):
            return load_model_text(data, file, base_dir=base_dir, allow_external_data=self.allow_external_data,
                                   max_constant_bytes=self.max_bytes)
        if data.startswith(MLIR_BYTECODE_MAGIC):
            raise ConvcError("input is MLIR bytecode (what --emit bytecode writes), not a convc model: convc reads JSON models "
                             "and convc IR text", Location(file=file), "I2")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ConvcError(f"input is not UTF-8 text (byte {err.start})", Location(file=file), "I2") from None
        return parse_ir(text, file)

    def differentiate(self, graph: Graph, file: str) -> Graph:
        """With `grad`, the model's gradient step (`convc.grad`), shown by --print-ir-after-all
        as the `grad` pass would be; else `graph` itself. Before the pipeline, so that --run and
        --check see the step's inputs (the cotangents too) and its outputs."""
        if self.grad is None:
            return graph
        from .autodiff import grad

        with self.timed("grad (reverse-mode autodiff)"), gc_paused():
            step = grad(graph, self.grad, Location(file=file))
        if self.print_ir_after_all:
            from convc.passes.grad import Grad

            self._print_after(Grad(wrt=",".join(self.grad)), step)
        return step

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
        passes = parse_pipeline(default_pipeline(target, self.autotune), PASSES)
        return [self._with_autotune_options(self._tuned_for_host(p, target)) for p in passes]

    def _tuned_for_host(self, p: Pass, target: str) -> Pass:
        """`p` with WITHOUT_AVX512_PASS_OPTIONS where forward float modules get
        WITHOUT_AVX512_XLA_OPTIONS: the cpu target, no gradient step, a host without AVX-512
        (the passes it tunes take no integer conv, so an int8 module's are untouched)."""
        options = WITHOUT_AVX512_PASS_OPTIONS.get(p.name) if target == "cpu" and not self.gradient_step else None
        return replace(p, **options) if options and host_has_avx512() is False else p

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

    def xla_options(self, platform: str, graph: Graph | None = None) -> dict[str, str]:
        """The XLA options to compile this compiler's lowered `graph` with on PJRT `platform`,
        when a target is named and is the platform's: its target's TARGET_XLA_OPTIONS;
        INTEGER_CONV_XLA_OPTIONS where `graph` holds an integer conv; GRADIENT_XLA_OPTIONS
        where the graphs this compiler lowered computed kernel gradients, unless every one
        that is not depthwise contracted a batch of GRADIENT_DOTS_FROM_BATCH or more;
        WITHOUT_AVX512_XLA_OPTIONS for a forward float module (no integer conv or dot) on a CPU
        host without AVX-512: XLA's own integer dots are slower than YNNPACK's."""
        if self.target is None or self.target != platform:
            return {}
        integer_convs, integer_dots = (graph is not None and holds_integer(graph, kind) for kind in ("conv", "dot_general"))
        small_batch_gradients = self.gradient_step and (self.gradient_batch or 0) < GRADIENT_DOTS_FROM_BATCH
        forward = WITHOUT_AVX512_XLA_OPTIONS if platform == "cpu" and host_has_avx512() is False else TARGET_XLA_OPTIONS
        table = (INTEGER_CONV_XLA_OPTIONS if integer_convs else GRADIENT_XLA_OPTIONS if small_batch_gradients
                 else TARGET_XLA_OPTIONS if self.gradient_step or integer_dots else forward)
        return dict(table.get(self.target, {}))

    def run_passes(self, graph: Graph, passes: Sequence[Pass] | None = None) -> Graph:
        from .autotune_pjrt import with_pjrt_measure  # what autotune-conv-lowering times candidates with

        self.gradient_step = self.gradient_step or any(op.kind == "conv_backprop_filter" for op in graph.ops)
        self.gradient_batch = min((b for b in (self.gradient_batch, *kernel_gradient_batches(graph)) if b is not None), default=None)
        hook = self._print_after if self.print_ir_after_all else None
        manager = PassManager([with_pjrt_measure(p, self.xla_options) for p in (self.passes() if passes is None else passes)],
                              print_after=hook)
        start = time.perf_counter()
        with gc_paused():
            manager.run(graph)
        self.timings = manager.timings
        self.phases.append(("passes (with the verifier after each)", time.perf_counter() - start, 0))
        self.phases += [(name, t, 1) for name, t in manager.timings]
        return graph

    def _print_after(self, p: Pass, graph: Graph) -> None:
        self.log(f"// -----// IR Dump After {p.spelling()} //----- //\n{self.print_ir(graph)}")

    def emit(self, graph: Graph, kind: str) -> bytes:
        with gc_paused():
            return self._emit(graph, kind)

    def _emit(self, graph: Graph, kind: str) -> bytes:
        if kind == "convc":
            with self.timed("print"):
                return self.print_ir(graph).encode()
        if kind == "bytecode" and graph.mesh is None:  # raw constants: the weights never go through hex
            text, bound = self.bound_text(graph)
            from . import mlir

            with self.timed("import jaxlib (MLIR, JAX)"):
                mlir.load()
            with self.timed("mlir verify + bind weights + serialize bytecode"):
                return mlir.bound_portable_artifact(text, bound)
        text = self.stablehlo(graph)
        from . import mlir

        if self.verify or kind == "bytecode":
            with self.timed("import jaxlib (MLIR, JAX)"):
                mlir.load()
            with self.timed("mlir verify"):
                mlir.verify_stablehlo(text)
        if kind == "bytecode":
            with self.timed("serialize bytecode"):
                return mlir.portable_artifact(text, sharded=graph.mesh is not None)
        return text.encode()

    def runnable(self, graph: Graph) -> bytes:
        """What PJRT compiles to run the lowered `graph` (without a mesh), verified by MLIR:
        MLIR bytecode whose large constants never went through hex (`bound_text`), or with
        `weights_larger` the module whose weights are arguments (`weights`)."""
        from . import mlir

        with gc_paused():
            text, bound = self.bound_text(graph)
            with self.timed("import jaxlib (MLIR, JAX)"):
                mlir.load()
            with self.timed("mlir verify + bind weights"):
                return mlir.bound_bytecode(text, bound)

    def executable(self, graph: Graph, platform: str | None = None) -> Executable:
        """The lowered `graph` (without a mesh) compiled by PJRT for `platform` (None: the one
        PJRT finds) as convc runs it: `runnable`, with its target's XLA options."""
        from .runtime import compile_stablehlo, platform_name

        module = self.runnable(graph)
        with self.timed("pjrt compile"):
            return compile_stablehlo(module, platform, self.xla_options(platform_name(platform), graph))

    def bound_text(self, graph: Graph) -> tuple[str, dict[str, np.ndarray]]:
        """The module's text with its large constants as placeholders, and their arrays by
        placeholder name (`mlir.bound_module` binds them); with `weights_larger`, the text
        with the weights as arguments instead, and nothing to bind."""
        if self.weights_larger is not None:
            return self.stablehlo(graph), {}
        check_lowered(graph)
        self.weights = {}
        placeholders = weight_arguments(bindable_constants(graph, INLINE_ELEMENTS))
        with self.timed("emit stablehlo"):
            text = emit_stablehlo(graph, bound=placeholders)
        return text, {name: op.attrs["value"] for name, op in placeholders.items()}

    def stablehlo(self, graph: Graph) -> str:
        """The StableHLO text of a lowered graph, not yet verified by MLIR. With
        `weights_larger`, its large constants are arguments instead, and `weights` holds
        their arrays by name in argument order (docs/cli.md, --weights-as-inputs)."""
        check_lowered(graph)
        weights = weight_arguments(self._weight_constants(graph))
        with self.timed("emit stablehlo"):
            self.weights = {name: op.attrs["value"] for name, op in weights.items()}
            return emit_stablehlo(graph, weights)

    def _weight_constants(self, graph: Graph) -> list[Op]:
        if self.weights_larger is None:
            return []
        if graph.mesh is not None:
            raise UsageError("--weights-as-inputs does not apply to a model with a mesh (its arguments would need shardings)")
        return weight_constants(graph, self.weights_larger)

    def weights_npz(self) -> bytes:
        """`weights` as the bytes of an .npz, one array per argument name, in argument order."""
        from .arrayfile import npz_bytes

        return npz_bytes(self.weights)

    def timing_report(self) -> str:
        """`--timing`: every phase in order, passes indented under theirs, as `mlir-opt --mlir-timing`."""
        total = sum(t for _, t, depth in self.phases if depth == 0) or 1e-12
        lines = ["===- Execution timing report -===", f"  Total: {total * 1e3:.3f} ms"]
        lines += [f"  {t * 1e3:9.3f} ms ({100 * t / total:5.1f}%)  {'  ' * depth}{name}" for name, t, depth in self.phases]
        return "\n".join(lines)
