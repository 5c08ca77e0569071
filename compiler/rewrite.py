"""Rewrites as patterns (after xDSL): a pattern matches one op and rewrites it
through a `Rewriter`; `apply_patterns` walks the graph greedily; `pattern_pass` makes
the pass that applies one pattern, its name and options taken from the pattern."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar, get_type_hints

from .ir import Graph, Op, Value, unused_name
from .pass_manager import Pass
from .verify import coerce_attrs, infer_type

# The ops XLA:CPU fuses no producer into (library calls): a value only they read is computed
# once whatever its producer, which the rewrites that keep XLA from copying a producer into
# every reader rely on.
UNFUSED_READERS = frozenset({"conv", "dot_general"})


class _Sweep:
    """What one `apply_patterns` sweep shares with its rewriters, so that no rewrite
    scans the whole graph: the names in use, the ops erased, and where the anchor sits
    (its place in the sweep's snapshot, shifted by the ops inserted and erased so far)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.erased: set[int] = set()
        self.shift = 0
        self._names: set[str] | None = None

    @property
    def names(self) -> set[str]:
        """Collected on the first rewrite: most sweeps rewrite nothing."""
        if self._names is None:
            self._names = {value.name for value in self.graph.values()}
        return self._names

    def locate(self, op: Op, position: int) -> int | None:
        """The index of `op` in `graph.ops` (None once removed); O(1) unless a pattern
        edited `graph.ops` behind the rewriter's back."""
        ops, index = self.graph.ops, position + self.shift
        if not (index < len(ops) and ops[index] is op):
            if op not in ops:
                return None
            index = ops.index(op)
            self.shift = index - position
        return index


class Rewriter:
    """Builds new ops right before an anchor op, located at the anchor."""

    def __init__(self, graph: Graph, anchor: Op, sweep: _Sweep | None = None, position: int = 0):
        self.graph = graph
        self.anchor = anchor
        self.changed = False
        self._sweep = sweep
        self._position = position  # the anchor's place in the sweep's snapshot

    def create(self, kind: str, *operands: Value, suffix: str, **attrs: Any) -> Value:
        loc = self.anchor.loc
        typed = coerce_attrs(kind, {k: v for k, v in attrs.items() if v is not None}, loc)
        result_type = infer_type(kind, [v.type for v in operands], typed, loc)
        op = Op(kind, list(operands), typed, self._fresh_name(f"{self.anchor.name}.{suffix}"), result_type, loc)
        self.graph.ops.insert(self._anchor_index(), op)
        if self._sweep is not None:
            self._sweep.shift += 1
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
            self._sweep.shift -= 1
            self._sweep.erased.add(id(old))
        if value.producer is not None and value.producer.loc == old.loc:
            value.name = old.name
        self.changed = True

    def erase(self, op: Op) -> None:
        """Erase `op`, an op the rewrite left unread (not the anchor: `replace_anchor` erases that)."""
        self.graph.erase_op(op)
        if self._sweep is not None:
            self._sweep.erased.add(id(op))
        self.changed = True

    def _anchor_index(self) -> int:
        if self._sweep is None:
            return self.graph.ops.index(self.anchor)
        index = self._sweep.locate(self.anchor, self._position)
        if index is None:
            raise ValueError(f"'{self.anchor.name}' is no longer in the graph")
        return index

    def _fresh_name(self, base: str) -> str:
        if self._sweep is None:
            return self.graph.fresh_name(base)
        name = unused_name(base, self._sweep.names)
        self._sweep.names.add(name)
        return name


class RewritePattern:
    """Subclasses set `kind` (the op kind they match) and implement `match_and_rewrite`;
    `name` is the name of the pass that applies them (see `pattern_pass`)."""

    kind: str = ""
    name: ClassVar[str] = ""

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        raise NotImplementedError


def apply_patterns(graph: Graph, patterns: Sequence[RewritePattern]) -> bool:
    """One greedy sweep in program order over the ops present when it starts."""
    by_kind: dict[str, list[RewritePattern]] = {}
    for pattern in patterns:
        by_kind.setdefault(pattern.kind, []).append(pattern)
    changed = False
    sweep = _Sweep(graph)
    for position, op in enumerate(list(graph.ops)):
        for pattern in by_kind.get(op.kind, ()):
            if id(op) in sweep.erased or sweep.locate(op, position) is None:
                break
            rewriter = Rewriter(graph, op, sweep, position)
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.changed:
                changed = True
                break
    return changed


def pattern_pass(pattern: type[RewritePattern], summary: str, *, until_stable: bool = False) -> type[Pass]:
    """The pass that applies `pattern`, named `pattern.name` (the class is that name in
    CamelCase), whose options are the pattern's dataclass fields with their defaults. A run
    is one greedy sweep; `until_stable`: sweeps until one changes nothing, for a pattern
    that matches what it builds."""
    hints = get_type_hints(pattern)
    fields: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(pattern) if dataclasses.is_dataclass(pattern) else ()
    options = [(f.name, hints[f.name], dataclasses.field(default=f.default)) for f in fields]

    def run(self: Pass, graph: Graph) -> bool:
        rewrite = pattern(**{f.name: getattr(self, f.name) for f in fields})
        changed = apply_patterns(graph, [rewrite])
        while until_stable and changed and apply_patterns(graph, [rewrite]):
            pass
        return changed

    class_name = "".join(word[:1].upper() + word[1:] for word in pattern.name.split("-"))
    namespace = {"name": pattern.name, "summary": summary, "pattern": pattern, "run": run, "__doc__": summary}
    cls = dataclasses.make_dataclass(class_name, options, bases=(Pass,), frozen=True, namespace=namespace)
    cls.__module__ = pattern.__module__  # the pass's home is its pattern's file
    return cls
