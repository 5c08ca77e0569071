"""Elementwise arithmetic: Add, Sub, Mul, Div, Pow, Max and Min with numpy broadcasting
(`broadcast_in_dim`), and the one-op unary functions (Relu, Exp, Log, Tanh, Sigmoid, Sqrt,
Neg, Abs, Erf, Reciprocal), and Clip."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...dtypes import is_float, numpy_dtype
from ...ir import Value
from .registry import Context, ConvertFn, Node, Operand, converter
from .shared import broadcast_pair, broadcast_to


def splat(ctx: Context, number: float, like: Value, hint: str = "constant") -> Value:
    """A scalar constant of `like`'s element type, spread to its shape."""
    scalar = ctx.constant(np.asarray(number, numpy_dtype(like.type.dtype)), hint)
    return broadcast_to(ctx, scalar, like.type.shape)


def plus(ctx: Context, value: Value, number: float) -> Value:
    """`value + number`; `value` itself for 0."""
    return value if number == 0 else ctx.op("add", value, splat(ctx, number, value, "offset"))


@converter("Relu", since=13)
def relu(node: Node, ctx: Context) -> Sequence[Operand]:
    """`relu`."""
    return [ctx.op("relu", ctx.operand(node, 0))]


def _binary(kind: str) -> ConvertFn:
    def convert(node: Node, ctx: Context) -> Sequence[Operand]:
        lhs, rhs = broadcast_pair(ctx, ctx.operand(node, 0), ctx.operand(node, 1))
        return [ctx.op(kind, lhs, rhs)]
    convert.__doc__ = f"`{kind}`, each operand spread to the common shape by `broadcast_in_dim` (numpy broadcasting)."
    return convert


add = converter("Add", since=13)(_binary("add"))
mul = converter("Mul", since=13)(_binary("multiply"))
sub = converter("Sub", since=7)(_binary("subtract"))
div = converter("Div", since=7)(_binary("divide"))


@converter("Pow", since=7)
def power(node: Node, ctx: Context) -> Sequence[Operand]:
    """`power` with numpy broadcasting, the exponent `convert`ed to the base's type; an exponent of 2 known at
    import is `multiply` of the base by itself. Floating bases only."""
    base = ctx.operand(node, 0)
    if not is_float(base.type.dtype):
        raise ctx.error(f"an integer base ({base.type.dtype}) is not supported")
    known = ctx.array(node.input(1))
    if known is not None and known.size and bool(np.all(known == 2)):
        spread = broadcast_to(ctx, base, np.broadcast_shapes(base.type.shape, known.shape))
        return [ctx.op("multiply", spread, spread)]
    exponent = ctx.operand(node, 1)
    if exponent.type.dtype != base.type.dtype:
        exponent = ctx.op("convert", exponent, new_dtype=base.type.dtype)
    return [ctx.op("power", *broadcast_pair(ctx, base, exponent))]


def _variadic(kind: str) -> ConvertFn:
    def convert(node: Node, ctx: Context) -> Sequence[Operand]:
        names = [name for name in node.inputs if name]
        result = ctx.value(names[0])
        for name in names[1:]:
            result = ctx.op(kind, *broadcast_pair(ctx, result, ctx.value(name)))
        return [result]
    convert.__doc__ = f"`{kind}` of each input in turn, spread to the common shape (numpy broadcasting); one input is itself."
    return convert


maximum = converter("Max", since=8)(_variadic("maximum"))
minimum = converter("Min", since=8)(_variadic("minimum"))


def _unary(kind: str, since: int, op_type: str) -> ConvertFn:
    def convert(node: Node, ctx: Context) -> Sequence[Operand]:
        return [ctx.op(kind, ctx.operand(node, 0))]
    convert.__doc__ = f"`{kind}`."
    return converter(op_type, since=since)(convert)


exp = _unary("exp", 6, "Exp")
log = _unary("log", 6, "Log")
tanh = _unary("tanh", 6, "Tanh")
sigmoid = _unary("logistic", 6, "Sigmoid")
sqrt = _unary("sqrt", 6, "Sqrt")
neg = _unary("negate", 6, "Neg")
absolute = _unary("abs", 6, "Abs")
erf = _unary("erf", 9, "Erf")


@converter("Reciprocal", since=6)
def reciprocal(node: Node, ctx: Context) -> Sequence[Operand]:
    """`divide` of 1 by the input."""
    x = ctx.operand(node, 0)
    return [ctx.op("divide", splat(ctx, 1.0, x, "one"), x)]


def _bound(ctx: Context, node: Node, index: int) -> Operand | None:
    """Clip's min (input 1) or max (input 2): an array when known at import, None when absent."""
    name = node.input(index)
    if not name:
        return None
    found = ctx.array(name)
    bound: Operand = found if found is not None else ctx.value(name)
    size = bound.size if isinstance(bound, np.ndarray) else bound.type.num_elements()
    if size != 1:
        raise ctx.error(f"{('min', 'max')[index - 1]} (input {index}) must be a scalar, got {size} elements")
    return bound


@converter("Clip", since=11)
def clip(node: Node, ctx: Context) -> Sequence[Operand]:
    """`clamp` between min and max (inputs 1 and 2; an absent one is unbounded) when they are known at import and
    the input is floating; else `maximum` with min, then `minimum` with max, spread by `broadcast_in_dim`."""
    x = ctx.operand(node, 0)
    bounds = {"min": _bound(ctx, node, 1), "max": _bound(ctx, node, 2)}
    if is_float(x.type.dtype) and not any(isinstance(b, Value) for b in bounds.values()):
        limits = {name: float(b.reshape(-1)[0]) for name, b in bounds.items() if isinstance(b, np.ndarray)}
        return [ctx.op("clamp", x, **limits)]
    result = x
    for index, (name, kind) in enumerate((("min", "maximum"), ("max", "minimum")), start=1):
        if bounds[name] is not None:
            scalar = ctx.op("reshape", ctx.value(node.input(index)), new_sizes=())
            result = ctx.op(kind, result, broadcast_to(ctx, scalar, x.type.shape))
    return [result]
