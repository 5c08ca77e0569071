"""Choosing each conv's lowering by measurement, and the cache of the choices (what
`autotune-conv-lowering` runs).

A candidate is `"xla"` (no rewrite) or a registered cpu rewrite that is legal on the conv.
How candidates are timed is not decided here: the pass is given a `Measure` by whoever
builds the pipeline (convc's `Compiler`: convc.autotune_pjrt, on a PJRT device). Choices
are cached per conv signature (operand and result types, attributes, and whether the kernel
is known at compile time, as an imported network's weights are: XLA folds weight-only work
into such a kernel, so it is timed as a constant) and device (the measure's key for it), so
later compiles measure nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .conv_facts import ConvFacts, conv_facts
from .conv_lowering import LOWERING, candidates
from .diagnostics import ConvcError, one_line
from .fileio import write_atomic
from .ir import Graph, Op
from .lowering_pins import XLA
from .ops.attr_kinds import format_dimension_numbers
from .pass_manager import PipelineError

CACHE_FORMAT = "convc-autotune-cache"
CACHE_VERSION = 1
XLA_MARGIN = 1.03  # a rewrite is chosen only when it beats "xla" by more than 3%
Log = Callable[[str], None]


def log_to_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def default_cache_path() -> Path:
    """$XDG_CACHE_HOME/convc/autotune.json, else ~/.cache/convc/autotune.json."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "convc" / "autotune.json"


# --- what a choice is keyed by ------------------------------------------------------


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


KNOWN_KERNEL_DEPTH = 8  # producers followed back from a kernel to the constants it is computed from


def kernel_is_constant(op: Op) -> bool:
    """Whether `op`'s kernel (operand 1) is computed from constants alone (a constant, or a
    relayout of one that XLA folds when it compiles), within KNOWN_KERNEL_DEPTH producers."""
    return _computed_from_constants(op.operands[1], KNOWN_KERNEL_DEPTH)


def _computed_from_constants(value: Any, depth: int) -> bool:
    producer = value.producer
    if producer is None or depth == 0:
        return False
    return producer.kind == "constant" or all(_computed_from_constants(v, depth - 1) for v in producer.operands)


def tuning_key(op: Op, facts: ConvFacts) -> str:
    """What a measurement of `op` is cached under: its signature, and whether its kernel is a
    constant (timed as one)."""
    return signature(facts) + ("; kernel a constant" if kernel_is_constant(op) else "")


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


class Measure(Protocol):
    """How candidates are timed: `device()` names what the timings hold for (the cache key),
    and a call times `candidates` ("xla" first) of one conv, None when "xla" itself fails."""

    def device(self) -> str: ...

    def __call__(self, op: Op, candidates: list[str], log: Log) -> Measurement | None: ...


@dataclass
class Autotuner:
    cache_path: Path
    measure: Measure | None  # None: nothing to measure with (an error once a conv needs it)
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
                    tunable.append((op, tuning_key(op, facts), legal))
        if tunable:  # no device, no cache file for a graph with nothing to choose
            self._tune(tunable, report)
        if report.outcomes:
            self.log(report.summary())
        return report

    def _tune(self, tunable: list[tuple[Op, str, list[str]]], report: Report) -> None:
        measure = self.measure
        if measure is None:
            raise PipelineError("pass 'autotune-conv-lowering' was given no measure (convc's Compiler gives it "
                                "one that times on PJRT: convc.autotune_pjrt.with_pjrt_measure)")
        cache, device = AutotuneCache.load(self.cache_path, self.log), measure.device()
        chosen: dict[str, str | None] = {}  # by signature
        for op, key, legal in tunable:
            if key in chosen:
                outcome = "cached" if chosen[key] is not None else "failed"
            else:
                chosen[key], outcome = self._choose(op, legal, measure, (device, key), cache)
            report.outcomes[outcome] += 1
            choice = chosen[key]
            if choice is not None:
                op.attrs[LOWERING] = choice
        cache.save(self.log)

    def _choose(self, op: Op, legal: list[str], measure: Measure, where: tuple[str, str],
                cache: AutotuneCache) -> tuple[str | None, str]:
        """The choice for a new signature (`where`: device and signature) and where it came from."""
        choice = cache.lookup(*where, legal)
        if choice is not None:
            return choice, "cached"
        measurement = measure(op, legal, self.log)
        if measurement is None:
            return None, "failed"
        cache.store(*where, measurement.entry())
        times = ", ".join(f"{name} {ms:.3g} ms" for name, ms in sorted(measurement.ms.items(), key=lambda item: item[1]))
        self.log(one_line(f"autotune: '{op.name}' ({op.operands[0].type} * {op.operands[1].type}): {times} -> {measurement.choice}"))
        return measurement.choice, "measured"
