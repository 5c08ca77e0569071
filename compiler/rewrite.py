"""Rewrites as patterns (after xDSL): a pattern matches one op and rewrites it
through a `Rewriter`; `apply_patterns` walks the graph greedily."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ir import Graph, Op, Value
from .verify import coerce_attrs, infer_type


class Rewriter:
    """Builds new ops right before an anchor op, located at the anchor."""

    def __init__(self, graph: Graph, anchor: Op):
        self.graph = graph
        self.anchor = anchor
        self.changed = False

    def create(self, kind: str, *operands: Value, suffix: str, **attrs: Any) -> Value:
        loc = self.anchor.loc
        typed = coerce_attrs(kind, {k: v for k, v in attrs.items() if v is not None}, loc)
        result_type = infer_type(kind, [v.type for v in operands], typed, loc)
        name = self.graph.fresh_name(f"{self.anchor.name}.{suffix}")
        op = Op(kind, list(operands), typed, name, result_type, loc)
        self.graph.ops.insert(self.graph.ops.index(self.anchor), op)
        self.changed = True
        return op.result

    def replace_anchor(self, value: Value) -> None:
        """Make `value` stand for the anchor op (taking its name) and erase the anchor."""
        old = self.anchor
        self.graph.replace_all_uses_with(old.result, value)
        self.graph.erase_op(old)
        if value.producer is not None and value.producer.loc == old.loc:
            value.name = old.name
        self.changed = True


class RewritePattern:
    """Subclasses set `kind` (the op kind they match) and implement `match_and_rewrite`."""

    kind: str = ""

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        raise NotImplementedError


def apply_patterns(graph: Graph, patterns: Sequence[RewritePattern]) -> bool:
    """One greedy sweep in program order; new ops are visited too if they match."""
    by_kind: dict[str, list[RewritePattern]] = {}
    for pattern in patterns:
        by_kind.setdefault(pattern.kind, []).append(pattern)
    changed = False
    for op in list(graph.ops):
        for pattern in by_kind.get(op.kind, ()):
            if op not in graph.ops:
                break
            rewriter = Rewriter(graph, op)
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.changed:
                changed = True
                break
    return changed
