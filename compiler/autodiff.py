"""Reverse-mode autodiff over convc's IR: `grad(graph, wrt)` is `jax.vjp(f, *wrt)` as a graph.

The gradient graph takes the model's inputs, in order, then one cotangent per model output
(`<output>.grad`); it returns the model's outputs, in order, then the gradient of each `wrt`
value (`<name>.grad`), in `wrt` order. It keeps the forward ops and appends, walking them
backwards, the ops each op's declared gradient rule (`OpDef.vjp`) builds. Cotangents of a
value used several times are summed; a `wrt` value the outputs do not depend on gets zeros.
The result is an ordinary model: the same passes lower its gradient convs.

Constraint ids (docs/diagnostics.md): G1 unknown `wrt` name, G2 a `wrt` name that is a node
(not an input or constant), G3 an integer `wrt` value, G4 a name listed twice, G5 a `.grad`
name that clashes with another, G6 an op the gradient needs that has no rule, G7 an op whose
rule does not cover its attributes (a window-dilated max_pool).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .builders import sum_values
from .diagnostics import ConvcError, Location, suggest
from .dtypes import is_float, numpy_dtype
from .ir import Graph, Op, TensorType, Value, unused_name
from .ops import OPS, view
from .ops.base import NoGradientRule, VjpRule
from .verify import coerce_attrs, infer_type

GRAD_SUFFIX = ".grad"


def grad(graph: Graph, wrt: str | Sequence[str], loc: Location | None = None) -> Graph:
    """The gradient graph of `graph` with respect to the inputs or constants named in `wrt`
    (module doc): a list of names, or one string holding a name or comma-separated names,
    as `--grad` and `grad{wrt=...}` take them. `loc` locates errors about names that are no
    value (default: the model)."""
    forward = graph.clone()
    where = loc if loc is not None else _model_location(forward)
    targets = _wrt_values(forward, wrt_names(wrt, where), where)
    cotangents = [Value(_grad_name(out.name), out.type) for out in forward.outputs]
    _check_new_names(forward, [v.name for v in cotangents] + [_grad_name(t.name) for t in targets])
    for out, cotangent in zip(forward.outputs, cotangents):
        cotangent.sharding = out.sharding  # a cotangent is laid out as its output
    result = Graph(forward.name, inputs=[*forward.inputs, *cotangents], ops=list(forward.ops),
                   input_locs=dict(forward.input_locs), mesh=forward.mesh)
    tape = _Tape(result, reserved=[_grad_name(t.name) for t in targets])
    grads = _backpropagate(forward, targets, cotangents, tape)
    result.outputs = [*forward.outputs, *(tape.named_result(g, t, _grad_name(t.name)) for g, t in zip(grads, targets))]
    for target, gradient in zip(targets, result.outputs[len(forward.outputs):]):
        if gradient.sharding is None:
            gradient.sharding = target.sharding  # a gradient is laid out as its value (a replicated kernel: replicated)
    tape.prune()
    return result


def _grad_name(name: str) -> str:
    return f"{name}{GRAD_SUFFIX}"


# --- checking `wrt` ---------------------------------------------------------------------


def wrt_names(wrt: str | Sequence[str], where: Location) -> list[str]:
    """`wrt` as a list of names: a string is split at commas (not iterated by character); an
    entry that is not a string (a builder's Value, say) is refused by name [G1]."""
    if isinstance(wrt, str):
        return [name.strip() for name in wrt.split(",") if name.strip()]
    names = list(wrt)
    for entry in names:
        if not isinstance(entry, str):
            what = f"the Value '{entry.name}' (pass its name)" if isinstance(entry, Value) else f"an object of type {type(entry).__name__}"
            raise ConvcError(f"grad: wrt takes the names of inputs or constants, got {what}", where, "G1")
    return names


def _model_location(graph: Graph) -> Location:
    """The model's file, taken from where its inputs came from (None: unknown)."""
    files = [loc.file for loc in graph.input_locs.values() if loc.file is not None]
    return Location(file=files[0] if files else None)


def _value_location(graph: Graph, value: Value) -> Location:
    if value.producer is not None:
        return value.producer.loc
    return graph.input_locs.get(value.name, Location())


def _wrt_values(graph: Graph, wrt: Sequence[str], where: Location) -> list[Value]:
    by_name = {value.name: value for value in graph.values()}
    targets: list[Value] = []
    for name in wrt:
        value = by_name.get(name)
        if value is None:
            raise ConvcError(f"grad: wrt names '{name}', which is no value of '{graph.name}'{_hint(name, by_name)}", where, "G1")
        here = _value_location(graph, value)
        if value.producer is not None and value.producer.kind != "constant":
            raise ConvcError(f"grad: wrt names '{name}', the result of a {value.producer.kind} node: wrt takes inputs and constants",
                             here, "G2")
        if not is_float(value.type.dtype):
            raise ConvcError(f"grad: wrt names '{name}' of integer type {value.type}, which has no gradient", here, "G3")
        if any(t is value for t in targets):
            raise ConvcError(f"grad: wrt lists '{name}' twice", here, "G4")
        targets.append(value)
    return targets


def _hint(name: str, values: dict[str, Value]) -> str:
    """`x:w` where `x,w` was meant (`:` once separated them): say so; else the closest name."""
    parts = name.split(":")
    if len(parts) > 1 and all(part in values for part in parts):
        return f"; names are separated by ',': {','.join(parts)}"
    return suggest(name, values)


def _check_new_names(graph: Graph, names: Sequence[str]) -> None:
    """The cotangent inputs' and gradient results' names are new, and each is given once."""
    existing = {value.name: value for value in graph.values()}
    seen: set[str] = set()
    for name in names:
        if name in existing:
            raise ConvcError(f"grad: the gradient name '{name}' clashes with an existing value",
                             _value_location(graph, existing[name]), "G5")
        if name in seen:
            raise ConvcError(f"grad: the gradient name '{name}' would be given twice (an output that is also a wrt value, "
                             "or an output listed twice)", _model_location(graph), "G5")
        seen.add(name)


# --- the backward sweep -------------------------------------------------------------------


def _active(graph: Graph, targets: Sequence[Value]) -> set[int]:
    """The floating values that depend on a target (integers carry no gradient)."""
    active = {id(t) for t in targets}
    for op in graph.ops:
        if is_float(op.result.type.dtype) and any(id(v) in active for v in op.operands):
            active.add(id(op.result))
    return active


def _backpropagate(forward: Graph, targets: Sequence[Value], cotangents: Sequence[Value], tape: _Tape) -> list[Value | None]:
    """Each target's cotangent (None: no output depends on it), ops visited in reverse."""
    active = _active(forward, targets)
    pending: dict[int, list[Value]] = {}
    for out, cotangent in zip(forward.outputs, cotangents):
        if id(out) in active:
            pending.setdefault(id(out), []).append(cotangent)
    sources = {id(t) for t in targets}
    for op in reversed(forward.ops):
        if id(op.result) in sources:  # a wrt constant: its cotangent is the answer
            continue
        terms = pending.pop(id(op.result), None)
        if terms is None:
            continue
        tape.anchor = op
        g = tape.sum(terms)
        for operand, flowing in zip(op.operands, _cotangents(op, tape, g)):
            if flowing is not None and id(operand) in active:
                pending.setdefault(id(operand), []).append(flowing)
    sums: list[Value | None] = []
    for target in targets:
        terms = pending.get(id(target))
        if terms is not None and target.producer is not None:
            tape.anchor = target.producer
        sums.append(None if terms is None else tape.sum(terms))
    return sums


def _cotangents(op: Op, tape: _Tape, g: Value) -> Sequence[Value | None]:
    """What `op`'s rule builds from its result's cotangent `g`; a refusal located at the op (G7)."""
    try:
        return _rule(op)(tape, view(op), op.operands, g)
    except NoGradientRule as err:
        where = op.loc.child(err.attr) if err.attr is not None else op.loc
        raise ConvcError(f"grad: {err.message}", where, "G7") from None


def _rule(op: Op) -> VjpRule:
    rule = OPS[op.kind].vjp
    if rule is None:
        raise ConvcError(f"grad: op '{op.kind}' has no gradient rule, and the gradient flows through this node", op.loc, "G6")
    return rule


class _Tape:
    """Appends the gradient ops to the graph, checked and typed as any op, each located at
    the forward op it differentiates and named after it (`<node>.<suffix>`)."""

    def __init__(self, graph: Graph, reserved: Sequence[str]):
        self.graph = graph
        self.anchor: Op | None = None
        self.created: list[Op] = []
        self._created_ids: set[int] = set()
        self._names = {value.name for value in graph.values()} | set(reserved)  # reserved: the results' names

    def create(self, kind: str, *operands: Value, suffix: str, **attrs: Any) -> Value:
        loc = self.anchor.loc if self.anchor is not None else Location()
        base = f"{self.anchor.name}.{suffix}" if self.anchor is not None else suffix
        typed = coerce_attrs(kind, {k: v for k, v in attrs.items() if v is not None}, loc)
        result_type = infer_type(kind, [v.type for v in operands], typed, loc)
        op = Op(kind, list(operands), typed, self._fresh(base), result_type, loc)
        self.graph.ops.append(op)
        self.created.append(op)
        self._created_ids.add(id(op))
        return op.result

    def sum(self, terms: Sequence[Value]) -> Value:
        return sum_values(self, terms, "cotangent_sum")

    def zeros(self, type: TensorType, name: str) -> Value:
        self.anchor = None
        return self.create("constant", suffix=name, value=np.zeros(type.shape, numpy_dtype(type.dtype)))

    def named_result(self, value: Value | None, target: Value, name: str) -> Value:
        """`value` (None: zeros of the target's type) as a result named `name`: renamed when the
        tape made it for this result alone, else given its own op (a same-shape reshape)."""
        if value is None:
            return self._renamed(self.zeros(target.type, f"{name}.zeros"), name)
        owned = value.producer is not None and id(value.producer) in self._created_ids and not value.users
        if owned and not any(value is out for out in self.graph.outputs):
            return self._renamed(value, name)
        self.anchor = target.producer
        return self._renamed(self.create("reshape", value, suffix=f"{name}.copy", new_sizes=value.type.shape), name)

    def _renamed(self, value: Value, name: str) -> Value:
        self._names.discard(value.name)
        value.name = name
        return value

    def prune(self) -> None:
        """Drop the gradient ops no result uses (a rule builds both operands' cotangents)."""
        live = {id(v) for v in self.graph.outputs}
        dead: set[int] = set()
        for op in reversed(self.graph.ops):
            if id(op.result) in live or id(op) not in self._created_ids:
                live.update(id(v) for v in op.operands)
            else:
                dead.add(id(op))
                op.drop_operands()
        self.graph.ops = [op for op in self.graph.ops if id(op) not in dead]

    def _fresh(self, base: str) -> str:
        name = unused_name(base, self._names)
        self._names.add(name)
        return name


__all__ = ["GRAD_SUFFIX", "grad", "wrt_names"]
