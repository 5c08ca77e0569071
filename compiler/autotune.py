"""Measuring a conv's candidate lowerings on a PJRT device, and the cache of the choices
(what `autotune-conv-lowering` runs).

A candidate is `"xla"` (no rewrite) or a cpu rewrite that is legal on the conv. Each is
measured as a one-conv module (inputs -> conv -> output) with that choice pinned, lowered
by the rest of the cpu pipeline, compiled and run by PJRT on seeded random inputs: one
warm-up call, whose result must agree with the `"xla"` candidate's (else the candidate is
never chosen), then timed rounds, each calling every candidate once in a rotating order,
until the time budget is spent. The median wins. Choices are cached per conv signature
(operand and result types, attributes) and device (PJRT platform and device kind, jax and
jaxlib versions, CPU count), so later compiles measure nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .conv_facts import ConvFacts, conv_facts
from .conv_lowering import LOWERING, XLA
from .diagnostics import ConvcError, one_line
from .fileio import write_atomic
from .ir import Graph, Op, Value
from .ops.attr_kinds import format_dimension_numbers
from .pass_manager import PassManager, PipelineError, parse_pipeline

CACHE_FORMAT = "convc-autotune-cache"
CACHE_VERSION = 1
XLA_MARGIN = 1.03  # a rewrite is chosen only when it beats "xla" by more than 3%
MAX_ROUNDS = 25  # timed calls per candidate at most; a budget of a few ms ends sooner
Log = Callable[[str], None]


def log_to_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def default_cache_path() -> Path:
    """$XDG_CACHE_HOME/convc/autotune.json, else ~/.cache/convc/autotune.json."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "convc" / "autotune.json"


# --- what a choice is keyed by ------------------------------------------------------


def _device(platform: str | None) -> Any:
    from .runtime import PlatformUnavailableError, first_device

    try:
        return first_device(platform)
    except PlatformUnavailableError as err:
        raise PipelineError(f"pass 'autotune-conv-lowering': no PJRT platform '{platform}' here ({err})") from None


def device_key(platform: str | None) -> str:
    """The device a measurement holds for: PJRT platform and device kind, the XLA that
    compiled it (jax, jaxlib), and the CPUs this process may use (XLA:CPU's thread pool)."""
    import jax
    import jaxlib

    device = _device(platform)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{device.platform} {device.device_kind}; jax {jax.__version__}, jaxlib {jaxlib.__version__}; {cpus} cpus"


def signature(facts: ConvFacts) -> str:
    """A canonical conv as what its timing depends on: operand and result types (dtype
    included) and every attribute, defaults filled in; no names, no pin."""
    f = facts
    text = (f"conv({f.lhs}, {f.rhs}) -> {f.out} dims {format_dimension_numbers(f.dn)} strides {list(f.strides)} "
            f"pads {[list(p) for p in f.pads]} lhs_dilation {list(f.lhs_dilation)} rhs_dilation {list(f.rhs_dilation)} "
            f"feature_groups {f.feature_groups} batch_groups {f.batch_groups}")
    if f.precision is not None:
        text += f" precision {f.precision}"
    return text + (f" preferred_element_type {f.preferred_element_type}" if f.preferred_element_type else "")


def candidates(facts: ConvFacts | None) -> list[str]:
    """"xla", then every cpu rewrite that can compute this conv exactly, in pipeline order."""
    from convc.passes import CONV_LOWERINGS

    return [XLA] + [name for name, pattern in CONV_LOWERINGS.items() if pattern.applies(facts)]


# --- measuring ----------------------------------------------------------------------


@dataclass
class Measurement:
    ms: dict[str, float]  # median time per candidate that agreed with "xla"
    rejected: dict[str, str] = field(default_factory=dict)  # candidate -> why it is never chosen

    @property
    def choice(self) -> str:
        """The fastest; a rewrite within XLA_MARGIN of "xla" is noise, and XLA's own conv the simpler program."""
        fastest = min(self.ms, key=lambda name: self.ms[name])
        return XLA if self.ms[XLA] <= self.ms[fastest] * XLA_MARGIN else fastest

    def entry(self) -> dict[str, Any]:
        return {"choice": self.choice, "ms": {name: round(ms, 4) for name, ms in self.ms.items()}, "rejected": self.rejected}


def one_conv_graph(op: Op, lowering: str) -> Graph:
    """inputs -> `op` pinned to `lowering` -> output (at `op`'s location, for any error)."""
    lhs, rhs = Value("lhs", op.operands[0].type), Value("rhs", op.operands[1].type)
    conv = Op("conv", [lhs, rhs], {**op.attrs, LOWERING: lowering}, "conv", op.result.type, op.loc)
    return Graph("autotune", [lhs, rhs], [conv], [conv.result])


def lowered_stablehlo(op: Op, lowering: str) -> str:
    """The one-conv module as the cpu target emits it with `lowering` pinned."""
    from convc.passes import PASSES, default_pipeline

    from .emit import emit_stablehlo

    graph = one_conv_graph(op, lowering)
    PassManager(parse_pipeline(default_pipeline("cpu"), PASSES)).run(graph)
    return emit_stablehlo(graph)


def _block(outputs: list[Any]) -> None:
    for out in outputs:
        out.block_until_ready()


def measure(op: Op, platform: str | None, budget_s: float, log: Log = log_to_stderr, seed: int = 0) -> Measurement | None:
    """Time every candidate of `op`; None when not even "xla" compiles and runs."""
    from .runtime import platform_name
    from .runtime_inputs import compare, random_inputs, tolerance_for

    arrays = random_inputs(one_conv_graph(op, XLA), seed)
    precision = tolerance_for([one_conv_graph(op, XLA)], platform_name(platform))  # what the device computes it in
    runs: dict[str, Callable[[], list[Any]]] = {}
    warm_ms: dict[str, float] = {}
    rejected: dict[str, str] = {}
    reference: np.ndarray | None = None
    for name in candidates(conv_facts(op)):  # "xla" first: the reference
        try:
            runs[name], result, warm_ms[name] = _warm_up(op, name, platform, arrays)
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


def _warm_up(op: Op, lowering: str, platform: str | None, arrays: list[np.ndarray]) -> tuple[Callable[[], list[Any]], np.ndarray, float]:
    """Compile the candidate and call it once: (a runner for timing, its result, that call's ms)."""
    import jax

    from .runtime import compile_stablehlo

    executable = compile_stablehlo(lowered_stablehlo(op, lowering), platform)
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


# --- the cache file -----------------------------------------------------------------


class AutotuneCache:
    """{"format", "version", "devices": {device key: {signature: entry}}}. Read once; on
    save, re-read under a lock and merged, so concurrent compiles keep each other's entries."""

    def __init__(self, path: Path, devices: dict[str, dict[str, Any]]):
        self.path = path
        self.devices = devices
        self.added: dict[tuple[str, str], dict[str, Any]] = {}

    @classmethod
    def load(cls, path: Path, log: Log = log_to_stderr) -> AutotuneCache:
        devices, problem = _read(path)
        if problem is not None:
            log(one_line(f"convc: warning: autotune cache {path} {problem}; rebuilding it"))
        return cls(path, devices)

    def lookup(self, device: str, key: str, legal: list[str]) -> str | None:
        """The cached choice, if it is still one of the legal candidates."""
        entry = self.devices.get(device, {}).get(key)
        choice = entry.get("choice") if isinstance(entry, dict) else None
        return choice if choice in legal else None

    def store(self, device: str, key: str, entry: dict[str, Any]) -> None:
        self.devices.setdefault(device, {})[key] = entry
        self.added[(device, key)] = entry

    def save(self, log: Log = log_to_stderr) -> None:
        if not self.added:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path):
                devices, _ = _read(self.path)  # a broken file was reported at load: replaced
                for (device, key), entry in self.added.items():
                    devices.setdefault(device, {})[key] = entry
                document = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "devices": devices}
                write_atomic(self.path, json.dumps(document, indent=1, sort_keys=True) + "\n")
        except (OSError, ConvcError) as err:
            reason = err.message if isinstance(err, ConvcError) else err.strerror or str(err)
            log(one_line(f"convc: warning: cannot write autotune cache {self.path}: {reason}"))


def _read(path: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The devices table, and what is wrong with the file (None: fine or absent)."""
    try:
        document = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}, None
    except OSError as err:
        return {}, f"cannot be read ({err.strerror})"
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
        return {}, f"is not JSON ({err})"
    if not isinstance(document, dict) or document.get("format") != CACHE_FORMAT:
        return {}, "is not a convc autotune cache"
    if document.get("version") != CACHE_VERSION:
        return {}, f"has version {document.get('version')!r}, not {CACHE_VERSION}"
    devices = document.get("devices")
    if not isinstance(devices, dict) or not all(isinstance(table, dict) for table in devices.values()):
        return {}, "has a malformed 'devices' table"
    return devices, None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside the cache for the read-merge-write (none where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# --- a whole graph ------------------------------------------------------------------


@dataclass
class Report:
    """How each conv without a pin got (or did not get) its lowering."""

    outcomes: Counter[str] = field(default_factory=Counter)  # "measured", "cached", "one candidate", "failed"

    def summary(self) -> str:
        convs = sum(self.outcomes.values())
        failed = self.outcomes["failed"]
        return (f"autotune: {convs} conv{'s' if convs != 1 else ''}: {self.outcomes['measured']} measured, "
                f"{self.outcomes['cached']} cached, {self.outcomes['one candidate']} with one candidate"
                + (f", {failed} failed (left to the cost model)" if failed else ""))


@dataclass
class Autotuner:
    cache_path: Path
    platform: str | None = None  # None: the platform PJRT finds
    budget_s: float = 0.1  # timing per candidate per conv signature
    log: Log = log_to_stderr

    def tune(self, graph: Graph) -> Report:
        """Pin every conv without a `lowering` that has more than one candidate. Identical
        convs are measured once; "cached" counts the convs whose choice was known."""
        report = Report()
        tunable = []
        for op in graph.ops:
            if op.kind == "conv" and LOWERING not in op.attrs:
                facts = conv_facts(op)
                legal = candidates(facts)
                if facts is None or len(legal) == 1:
                    report.outcomes["one candidate"] += 1
                else:
                    tunable.append((op, signature(facts), legal))
        if tunable:  # no device, no cache file for a graph with nothing to choose
            self._tune(tunable, report)
        if report.outcomes:
            self.log(report.summary())
        return report

    def _tune(self, tunable: list[tuple[Op, str, list[str]]], report: Report) -> None:
        cache, device = AutotuneCache.load(self.cache_path, self.log), device_key(self.platform)
        chosen: dict[str, str | None] = {}  # by signature
        for op, key, legal in tunable:
            if key in chosen:
                outcome = "cached" if chosen[key] is not None else "failed"
            else:
                chosen[key], outcome = self._choose(op, legal, device, key, cache)
            report.outcomes[outcome] += 1
            choice = chosen[key]
            if choice is not None:
                op.attrs[LOWERING] = choice
        cache.save(self.log)

    def _choose(self, op: Op, legal: list[str], device: str, key: str, cache: AutotuneCache) -> tuple[str | None, str]:
        """The choice for a new signature and where it came from."""
        choice = cache.lookup(device, key, legal)
        if choice is not None:
            return choice, "cached"
        measurement = measure(op, self.platform, self.budget_s, self.log)
        if measurement is None:
            return None, "failed"
        cache.store(device, key, measurement.entry())
        times = ", ".join(f"{name} {ms:.3g} ms" for name, ms in sorted(measurement.ms.items(), key=lambda item: item[1]))
        self.log(one_line(f"autotune: '{op.name}' ({op.operands[0].type} * {op.operands[1].type}): {times} -> {measurement.choice}"))
        return measurement.choice, "measured"
