"""Rewrites as patterns (after xDSL): a pattern matches one op and rewrites it
through a `Rewriter`; `apply_patterns` walks the graph greedily."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ir import Graph, Op, Value
from .verify import coerce_attrs, infer_type


class _Sweep:
    """What one `apply_patterns` sweep shares with its rewriters, so that no rewrite
    scans the whole graph: the names in use, the ops erased, and the anchor's position."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.erased: set[int] = set()
        self.index = 0
        self._names: set[str] | None = None

    @property
    def names(self) -> set[str]:
        """Collected on the first rewrite: most sweeps rewrite nothing."""
        if self._names is None:
            self._names = {value.name for value in self.graph.values()}
        return self._names


class Rewriter:
    """Builds new ops right before an anchor op, located at the anchor."""

    def __init__(self, graph: Graph, anchor: Op, sweep: _Sweep | None = None):
        self.graph = graph
        self.anchor = anchor
        self.changed = False
        self._sweep = sweep

    def create(self, kind: str, *operands: Value, suffix: str, **attrs: Any) -> Value:
        loc = self.anchor.loc
        typed = coerce_attrs(kind, {k: v for k, v in attrs.items() if v is not None}, loc)
        result_type = infer_type(kind, [v.type for v in operands], typed, loc)
        op = Op(kind, list(operands), typed, self._fresh_name(f"{self.anchor.name}.{suffix}"), result_type, loc)
        self.graph.ops.insert(self._anchor_index(), op)
        if self._sweep is not None:
            self._sweep.index += 1
        self.changed = True
        return op.result

    def replace_anchor(self, value: Value) -> None:
        """Make `value` stand for the anchor op (taking its name) and erase the anchor."""
        old = self.anchor
        self.graph.replace_all_uses_with(old.result, value)
        if old.result.users:
            raise ValueError(f"cannot erase '{old.name}': it still has users")
        old.drop_operands()
        del self.graph.ops[self._anchor_index()]
        if self._sweep is not None:
            self._sweep.erased.add(id(old))
        if value.producer is not None and value.producer.loc == old.loc:
            value.name = old.name
        self.changed = True

    def _anchor_index(self) -> int:
        """The anchor's position: the sweep knows it unless a pattern edited `graph.ops` itself."""
        sweep, ops = self._sweep, self.graph.ops
        if sweep is not None and sweep.index < len(ops) and ops[sweep.index] is self.anchor:
            return sweep.index
        index = ops.index(self.anchor)
        if sweep is not None:
            sweep.index = index
        return index

    def _fresh_name(self, base: str) -> str:
        if self._sweep is None:
            return self.graph.fresh_name(base)
        names, name, index = self._sweep.names, base, 0
        while name in names:
            index += 1
            name = f"{base}_{index}"
        names.add(name)
        return name


class RewritePattern:
    """Subclasses set `kind` (the op kind they match) and implement `match_and_rewrite`."""

    kind: str = ""

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        raise NotImplementedError


def _locate(graph: Graph, op: Op, sweep: _Sweep) -> bool:
    """Point the sweep at `op`; False when a pattern removed it from `graph.ops` behind the rewriter's back."""
    if sweep.index < len(graph.ops) and graph.ops[sweep.index] is op:
        return True
    try:
        sweep.index = graph.ops.index(op)
    except ValueError:
        return False
    return True


def apply_patterns(graph: Graph, patterns: Sequence[RewritePattern]) -> bool:
    """One greedy sweep in program order over the ops present when it starts."""
    by_kind: dict[str, list[RewritePattern]] = {}
    for pattern in patterns:
        by_kind.setdefault(pattern.kind, []).append(pattern)
    changed = False
    sweep = _Sweep(graph)
    for op in list(graph.ops):
        for pattern in by_kind.get(op.kind, ()):
            if id(op) in sweep.erased or not _locate(graph, op, sweep):
                break
            rewriter = Rewriter(graph, op, sweep)
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.changed:
                changed = True
                break
        if id(op) not in sweep.erased and sweep.index < len(graph.ops) and graph.ops[sweep.index] is op:
            sweep.index += 1
    return changed
