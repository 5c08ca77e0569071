"""Where a network's time goes (`bench --suite models --profile`, `--suite train-models --profile`):

* **lowerings**: which `cpu-*` rewrite took each conv (the passes run one at a time, the
  convs counted before and after each registered conv lowering), and how many convs are left
  to XLA's own convolution;
* **census**: the ops XLA:CPU's optimized HLO runs (its entry computation, without the free
  ones: parameters, constants, tuples, bitcasts), a fusion named by the heaviest op inside it
  (`fusion(convolution)`, `fusion(dot)`, ... `fusion(elementwise)`), with the library that
  runs it where XLA names one (`fusion(dot, ynn_fusion)`: YNNPACK's), and how many heavy ops
  the fusions compute in all (one YNNPACK fusion may run a whole stage: four convs, a dot and
  the pooling);
* **op times**: a `jax.profiler` trace of a few calls of the compiled executable. XLA:CPU's
  thunk runtime records one event per thunk named as its HLO instruction (jaxlib 0.10.2
  through 0.12 do), so each op's time per call is the sum of its events over the calls. Where
  a jaxlib records none, the profile says so and gives the census alone. An XLA convolution
  that runs asynchronously on the intra-op pool is timed at its launch only; the traced
  calls' wall time is kept beside the events, and printed where the census has a convolution.
* **ONNX Runtime's side** (`--suite models` on the CPU): its own profiler over a few runs of
  the same ONNX bytes (a session like the timed one, with profiling on), each kernel's time
  per run summed by op type as its graph optimizer left them (fused kernels under their own
  names, its layout reorders as ops of their own), and its slowest nodes: what the convc
  categories above compare with.
"""

from __future__ import annotations

import glob
import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

COMPUTATION = re.compile(r"^(ENTRY\s+)?%([\w.\-]+)\s.*\{\s*$")
INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%([\w.\-]+)\s=\s(.*?)\s([a-z][a-z0-9\-]*)\((.*)$")
CALLS = re.compile(r"calls=%([\w.\-]+)")
FUSION_KIND = re.compile(r'"fusion_config":\{"kind":"_*([^"]+)"')  # a library's fusion (XNNPACK's, YNNPACK's)
FREE = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})
HEAVY = ("convolution", "dot", "reduce-window", "reduce", "scatter", "gather", "sort")  # a fusion is named by the first inside it
LAYOUT = re.compile(r"\{[^{}]*\}|/\*.*?\*/")  # layouts and /*index=N*/ comments
ARRAY = re.compile(r"[a-z]+[0-9]*\[[0-9,]*\]")
TRACED_CALLS = 5
ORT_KERNEL = "_kernel_time"  # how ONNX Runtime's profile names a node's kernel event
XLA = "xla"  # the lowerings' key for the convs left to XLA's own convolution


@dataclass(frozen=True)
class Instruction:
    name: str
    category: str  # its opcode, a fusion's as fusion(<heaviest op inside>)
    shape: str  # its result's, without layouts
    fused: tuple[tuple[str, int], ...] = ()  # a fusion's: how many of each HEAVY op it computes, heaviest first

    def describe(self) -> str:
        inside = f" [{', '.join(f'{n} {op}' for op, n in self.fused)}]" if sum(n for _, n in self.fused) > 1 else ""
        return f"{self.name} {self.category}{inside} {self.shape}"


def parse_hlo(hlo: str) -> list[Instruction]:
    """The entry computation's instructions that do work, in order, each with its category."""
    bodies: dict[str, list[tuple[str, str, str, str]]] = {}
    entry, current = None, None
    for line in hlo.splitlines():
        header = COMPUTATION.match(line)
        if header:
            current = header.group(2)
            bodies[current] = []
            entry = current if header.group(1) else entry
            continue
        instruction = INSTRUCTION.match(line)
        if instruction and current is not None:
            bodies[current].append(instruction.groups())  # type: ignore[arg-type]  # four groups
    result = []
    for name, shape, opcode, rest in bodies.get(entry or "", []):
        if opcode in FREE:
            continue
        category = opcode
        fused: tuple[tuple[str, int], ...] = ()
        if opcode == "fusion":
            called = CALLS.search(rest)
            inside = Counter(op for _, _, op, _ in bodies.get(called.group(1), [])) if called else Counter()
            fused = tuple((op, inside[op]) for op in HEAVY if inside[op])
            library = FUSION_KIND.search(rest)
            category = f"fusion({fused[0][0] if fused else 'elementwise'}{', ' + library.group(1) if library else ''})"
        result.append(Instruction(name, category, short_shape(LAYOUT.sub("", shape)), fused))
    return result


def short_shape(shape: str) -> str:
    """A tuple of equal arrays as `(f32[7,384] x9)`; any other shape as it is."""
    parts = ARRAY.findall(shape)
    if shape.startswith("(") and len(parts) > 1 and len(set(parts)) == 1:
        return f"({parts[0]} x{len(parts)})"
    return shape


def convs(graph: Any) -> list[Any]:
    return [op for op in graph.ops if op.kind == "conv"]


def run_passes_counting(compiler: Any, graph: Any) -> dict[str, int]:
    """Run `compiler`'s pipeline on `graph` one pass at a time; return how many convs reached
    the first conv lowering ("convs"), how many each lowering took, and how many are left
    to XLA's conv at the end: of those that reached the lowerings ("xla") and of those the
    rewrites made ("xla_made_by_rewrites")."""
    from convc.conv_lowering import conv_lowerings

    lowerings = set(conv_lowerings())
    counts: Counter[str] = Counter()
    reached: list[Any] | None = None
    for p in compiler.passes():
        before = convs(graph) if p.name in lowerings else None  # held, so no new op reuses their ids
        if before is not None and reached is None:
            reached = before
        compiler.run_passes(graph, [p])
        if before is not None:
            after = {id(op) for op in convs(graph)}
            counts[p.name] += sum(id(op) not in after for op in before)
    left = convs(graph)
    reached = left if reached is None else reached
    original = {id(op) for op in reached}
    kept = sum(id(op) in original for op in left)
    return {"convs": len(reached), **{name: n for name, n in counts.items() if n}, XLA: kept, "xla_made_by_rewrites": len(left) - kept}


@dataclass
class Profile:
    lowerings: dict[str, int]
    census: dict[str, int]  # ops run per category
    fused: dict[str, int] = field(default_factory=dict)  # the HEAVY ops computed inside fusions, in all
    times_ms: dict[str, float] = field(default_factory=dict)  # per call, per category (empty: no thunk events)
    slowest: list[tuple[str, float]] = field(default_factory=list)  # (Instruction.describe(), ms per call)
    traced_calls: int = 0
    wall_ms: float = 0.0  # a traced call's wall time, the mean over the traced calls

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def thunk_times_ns(executable: Any, buffers: Sequence[Any], names: set[str], calls: int = TRACED_CALLS) -> tuple[Counter[str], int]:
    """The total duration of the profiler's events named as one of `names`, over `calls`
    calls of `executable` after an untraced one (empty where the trace has none or cannot be
    taken), and the wall time of those calls in all."""
    import jax

    from . import bench

    totals: Counter[str] = Counter()
    bench.block_until_ready(executable.run_on_device(buffers))  # a first call sets its thunks up: not traced
    with tempfile.TemporaryDirectory() as directory:
        try:
            jax.profiler.start_trace(directory)
        except RuntimeError:  # a trace is already running (the caller's own)
            return totals, 0
        try:
            start = time.perf_counter_ns()
            for _ in range(calls):
                bench.block_until_ready(executable.run_on_device(buffers))
            wall_ns = time.perf_counter_ns() - start
        finally:
            jax.profiler.stop_trace()
        for path in glob.glob(f"{directory}/**/*.xplane.pb", recursive=True):
            for plane in jax.profiler.ProfileData.from_file(path).planes:
                for line in plane.lines:
                    for event in line.events:
                        if event.name in names:
                            totals[event.name] += int(event.duration_ns)
    return totals, wall_ns


def profile_executable(executable: Any, buffers: Sequence[Any], lowerings: dict[str, int], calls: int = TRACED_CALLS,
                       slowest: int = 5) -> Profile:
    """The census of `executable`'s optimized HLO and, where the trace has thunk events, each
    category's time per call and the `slowest` ops."""
    instructions = parse_hlo(executable.hlo_text())
    fused: Counter[str] = Counter()
    for instruction in instructions:
        fused.update(dict(instruction.fused))
    profile = Profile(lowerings, dict(Counter(i.category for i in instructions).most_common()), dict(fused.most_common()))
    totals, wall_ns = thunk_times_ns(executable, buffers, {i.name for i in instructions}, calls)
    if not totals:
        return profile
    profile.wall_ms = wall_ns / calls / 1e6
    by_name = {i.name: i for i in instructions}
    per_category: Counter[str] = Counter()
    for name, ns in totals.items():
        per_category[by_name[name].category] += ns
    profile.times_ms = {category: ns / calls / 1e6 for category, ns in per_category.most_common()}
    profile.slowest = [(by_name[name].describe(), ns / calls / 1e6) for name, ns in totals.most_common(slowest)]
    profile.traced_calls = calls
    return profile


def format_profile(title: str, profile: dict[str, Any]) -> str:
    """A few lines: the lowerings, the census, the time per category and the slowest ops."""
    low = dict(profile["lowerings"])
    reached, left, made = low.pop("convs"), low.pop(XLA), low.pop("xla_made_by_rewrites")
    taken = ", ".join(f"{name} {n}" for name, n in low.items()) or "none"
    lines = [f"  profile of {title}:",
             f"    convs at the cpu lowerings: {reached}; taken by {taken}; left to XLA's conv: {left} (+{made} made by the rewrites)",
             "    optimized HLO runs: " + ", ".join(f"{n} {category}" for category, n in profile["census"].items())
             + (f"; the fusions compute {', '.join(f'{n} {op}' for op, n in profile['fused'].items())}" if profile["fused"] else "")]
    times = profile["times_ms"]
    if not times:
        lines.append("    op times: this jaxlib's profiler trace has no XLA:CPU thunk events")
        return "\n".join(lines)
    total = sum(times.values()) or 1e-12
    lines.append(f"    thunk time per call ({profile['traced_calls']} calls traced, {total:.2f} ms in all): "
                 + ", ".join(f"{category} {ms:.2f} ms ({100 * ms / total:.0f}%)" for category, ms in times.items()))
    lines.append("    slowest: " + "; ".join(f"{what} {ms:.2f} ms" for what, ms in profile["slowest"]))
    if "convolution" in profile["census"]:
        lines.append(f"    a traced call took {profile['wall_ms']:.2f} ms; XLA's own convolutions can run asynchronously on its "
                     "thread pool, and then their events time only the launch: their work is in that wall time, not above")
    return "\n".join(lines)


@dataclass
class OrtProfile:
    """ONNX Runtime's profile of one network: per run, each op type's kernel time and the slowest nodes."""

    runs: int
    times_ms: dict[str, float]  # op type (as ONNX Runtime's optimized graph names it) -> ms per run, most first
    slowest: list[tuple[str, float]]  # ("<op type> <node> <output shape>", ms per run)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ort_kernel_times(events: Sequence[Mapping[str, Any]], slowest: int = 5) -> OrtProfile:
    """ONNX Runtime's profile events (its JSON) summed per run: the kernel events after the first
    `model_run` (a warm-up, untimed), over the `model_run`s that follow it."""
    runs = sorted((e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"), key=lambda e: e["ts"])
    if len(runs) < 2:
        return OrtProfile(0, {}, [])
    warm = runs[0]["ts"] + runs[0]["dur"]
    by_type: Counter[str] = Counter()
    by_node: Counter[str] = Counter()
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") != "Node" or not name.endswith(ORT_KERNEL) or event["ts"] < warm:
            continue
        args = event.get("args", {})
        shapes = [list(shape.values())[0] for shape in args.get("output_type_shape", []) if shape]
        by_type[args.get("op_name", "?")] += event["dur"]
        by_node[f"{args.get('op_name', '?')} {name[:-len(ORT_KERNEL)]} {shapes[0] if len(shapes) == 1 else shapes}"] += event["dur"]
    count = len(runs) - 1
    return OrtProfile(count, {op: us / count / 1e3 for op, us in by_type.most_common()},
                      [(what, us / count / 1e3) for what, us in by_node.most_common(slowest)])


def profile_ort(session_with_profile: Callable[[str], Any], feeds: Mapping[str, Any], runs: int = TRACED_CALLS) -> OrtProfile:
    """Run a session that `session_with_profile(prefix)` makes with ONNX Runtime's profiling on
    (its file under that prefix) once untimed and `runs` times, and sum its kernel events."""
    with tempfile.TemporaryDirectory() as directory:
        session = session_with_profile(f"{directory}/ort")
        for _ in range(runs + 1):
            session.run(None, dict(feeds))
        events = json.loads(Path(session.end_profiling()).read_text())
    return ort_kernel_times(events)


def format_ort_profile(profile: Mapping[str, Any]) -> str:
    """Two lines under convc's profile: ONNX Runtime's time per run by op type, and its slowest nodes."""
    times = profile["times_ms"]
    if not times:
        return "    ONNX Runtime's profile: no kernel events"
    total = sum(times.values()) or 1e-12
    return (f"    ONNX Runtime's kernels per run (its profiler, {profile['runs']} runs, {total:.2f} ms in all): "
            + ", ".join(f"{op} {ms:.2f} ms ({100 * ms / total:.0f}%)" for op, ms in times.items())
            + "\n    its slowest: " + "; ".join(f"{what} {ms:.2f} ms" for what, ms in profile["slowest"]))
