"""ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd: `reduce_sum` / `reduce_max` /
`reduce_min` / `reduce_prod` over the axes, a scale for the mean, a `reshape` for keepdims;
ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum and ReduceLogSumExp: a `reduce_sum` with
elementwise steps around it. The axes are an attribute before opset 18 (ReduceSum: 13)
and an input known at import from then on."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...dtypes import is_float
from ...ir import Value
from .registry import Context, Node, Operand, converter
from .shared import normalized_axis, scaled


def reduced_axes(ctx: Context, node: Node, rank: int, from_input: bool) -> list[int] | None:
    """The axes to reduce, each in [0, rank) and sorted; None for no reduction at all
    (empty axes with noop_with_empty_axes); every axis when the axes are empty or absent."""
    if from_input:
        given = [] if not node.input(1) else [int(a) for a in ctx.required_array(node, 1, "axes").reshape(-1)]
    else:
        given = [int(a) for a in node.attrs.get("axes") or ()]
    if not given:
        return None if node.attrs.get("noop_with_empty_axes") else list(range(rank))
    axes = sorted(normalized_axis(ctx, a, rank, "axes") for a in given)
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {given} repeat a dimension")
    return axes


# ONNX reduction kind -> (the elementwise step before it, the convc reduction, the step after);
# "square" is x * x. Mean is a sum times 1/N; log_sum_exp is `_log_sum_exp`.
_FORMS = {"sum": ("", "reduce_sum", ""), "mean": ("", "reduce_sum", ""), "max": ("", "reduce_max", ""),
          "min": ("", "reduce_min", ""), "prod": ("", "reduce_prod", ""), "sum_square": ("square", "reduce_sum", ""),
          "l1": ("abs", "reduce_sum", ""), "l2": ("square", "reduce_sum", "sqrt"), "log_sum": ("", "reduce_sum", "log")}
_FLOATING = frozenset({"mean", "l2", "log_sum", "log_sum_exp"})  # a mean, sqrt, log or exp takes floating tensors
_PLAIN = frozenset({"sum", "mean", "max", "min", "prod"})  # no elementwise step: noop_with_empty_axes is x itself


def reduce(node: Node, ctx: Context, kind: str, from_input: bool) -> Sequence[Operand]:
    """x reduced by `kind` (a key of `_FORMS`, or "log_sum_exp") over the node's axes, keepdims as a
    reshape. With noop_with_empty_axes and no axes the elementwise steps still apply (ReduceL2 is
    |x|, ReduceLogSum log(x)), as in ONNX Runtime and the reference implementation."""
    x = ctx.operand(node, 0)
    if kind in _FLOATING and not is_float(x.type.dtype):
        raise ctx.error(f"data has element type {x.type.dtype}; {node.op_type} takes floating tensors")
    axes = reduced_axes(ctx, node, x.type.rank, from_input)
    if axes is None and kind in _PLAIN:
        return [x]
    axes = axes or []
    out = _log_sum_exp(ctx, x, axes) if kind == "log_sum_exp" else _reduced(ctx, x, axes, kind)
    if node.attrs["keepdims"] and axes:
        out = ctx.op("reshape", out, new_sizes=tuple(1 if d in axes else size for d, size in enumerate(x.type.shape)))
    return [out]


def _reduced(ctx: Context, x: Value, axes: Sequence[int], kind: str) -> Value:
    """x through `_FORMS[kind]`: the step before, the reduction over `axes` (none: skipped), the step after."""
    before, reduction, after = _FORMS[kind]
    out = ctx.op("multiply", x, x) if before == "square" else ctx.op(before, x) if before else x
    if axes:
        out = ctx.op(reduction, out, axes=tuple(axes))
    if kind == "mean":
        out = scaled(ctx, out, 1 / math.prod(x.type.shape[a] for a in axes))
    return ctx.op(after, out) if after else out


def _log_sum_exp(ctx: Context, x: Value, axes: Sequence[int]) -> Value:
    """log(sum(exp(x - max))) + max over `axes`, the max a `reduce_max` spread back by
    `broadcast_in_dim`, so exp cannot overflow; x itself over no axes."""
    if not axes:
        return x
    top = ctx.op("reduce_max", x, axes=tuple(axes))
    kept = tuple(d for d in range(x.type.rank) if d not in axes)
    shifted = ctx.op("subtract", x, ctx.op("broadcast_in_dim", top, shape=x.type.shape, broadcast_dimensions=kept))
    total = ctx.op("reduce_sum", ctx.op("exp", shifted), axes=tuple(axes))
    return ctx.op("add", ctx.op("log", total), top)


@converter("ReduceSum", since=13)
def reduce_sum(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reduce_sum` over axes (input 1, known at import; none: all, or no op with noop_with_empty_axes), then
    `reshape` keeping them as 1s with keepdims."""
    return reduce(node, ctx, "sum", from_input=True)


@converter("ReduceMean", since=13)
def reduce_mean_13(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reduce_sum` over the axes attribute (none: all), `multiply` by 1/(their size), `reshape` with keepdims."""
    return reduce(node, ctx, "mean", from_input=False)


@converter("ReduceMean", since=18)
def reduce_mean(node: Node, ctx: Context) -> Sequence[Operand]:
    """As opset 13's, the axes an input known at import; noop_with_empty_axes."""
    return reduce(node, ctx, "mean", from_input=True)


@converter("ReduceMax", since=13)
def reduce_max_13(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reduce_max` over the axes attribute (none: all), `reshape` with keepdims. Its gradient shares ties equally."""
    return reduce(node, ctx, "max", from_input=False)


@converter("ReduceMax", since=18)
def reduce_max(node: Node, ctx: Context) -> Sequence[Operand]:
    """As opset 13's, the axes an input known at import; noop_with_empty_axes."""
    return reduce(node, ctx, "max", from_input=True)


@converter("ReduceMin", since=13)
def reduce_min_13(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reduce_min` over the axes attribute (none: all), `reshape` with keepdims. Its gradient shares ties equally."""
    return reduce(node, ctx, "min", from_input=False)


@converter("ReduceMin", since=18)
def reduce_min(node: Node, ctx: Context) -> Sequence[Operand]:
    """As opset 13's, the axes an input known at import; noop_with_empty_axes."""
    return reduce(node, ctx, "min", from_input=True)


@converter("ReduceProd", since=13)
def reduce_prod_13(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reduce_prod` over the axes attribute (none: all), `reshape` with keepdims. Its gradient is exact at zeros."""
    return reduce(node, ctx, "prod", from_input=False)


@converter("ReduceProd", since=18)
def reduce_prod(node: Node, ctx: Context) -> Sequence[Operand]:
    """As opset 13's, the axes an input known at import; noop_with_empty_axes."""
    return reduce(node, ctx, "prod", from_input=True)


# The reductions with an elementwise step, each at opset 13 (axes an attribute) and 18 (an input).
_COMPOSED = {
    "ReduceSumSquare": ("sum_square", "`reduce_sum` of `multiply(x, x)`"),
    "ReduceL1": ("l1", "`reduce_sum` of `abs(x)`"),
    "ReduceL2": ("l2", "`sqrt` of a `reduce_sum` of `multiply(x, x)` (floating x)"),
    "ReduceLogSum": ("log_sum", "`log` of a `reduce_sum` (floating x)"),
    "ReduceLogSumExp": ("log_sum_exp", "`log(reduce_sum(exp(x - max))) + max`, the max a `reduce_max` (floating x)"),
}


def _composed(op_type: str, kind: str, summary: str) -> None:
    """Register `op_type`'s two converters (axes as attribute, then as input)."""
    def from_attribute(node: Node, ctx: Context) -> Sequence[Operand]:
        return reduce(node, ctx, kind, from_input=False)

    def from_input(node: Node, ctx: Context) -> Sequence[Operand]:
        return reduce(node, ctx, kind, from_input=True)

    from_attribute.__doc__ = f"{summary} over the axes attribute (none: all), `reshape` with keepdims."
    from_input.__doc__ = "As opset 13's, the axes an input known at import; noop_with_empty_axes (the elementwise steps only)."
    converter(op_type, since=13)(from_attribute)
    converter(op_type, since=18)(from_input)


for _op_type, (_kind, _summary) in _COMPOSED.items():
    _composed(_op_type, _kind, _summary)
