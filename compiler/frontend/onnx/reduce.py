"""ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd: `reduce_sum` / `reduce_max` /
`reduce_min` / `reduce_prod` over the axes, a scale for the mean, a `reshape` for keepdims. The axes are an attribute before opset 18 (ReduceSum: 13)
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


def reduce(node: Node, ctx: Context, kind: str, from_input: bool) -> Sequence[Operand]:
    """x reduced by `kind` ("sum", "mean", "max", "min" or "prod") over the node's axes, keepdims as a reshape."""
    x = ctx.operand(node, 0)
    if kind == "mean" and not is_float(x.type.dtype):
        raise ctx.error(f"data has element type {x.type.dtype}; ReduceMean averages floating tensors")
    axes = reduced_axes(ctx, node, x.type.rank, from_input)
    if axes is None:
        return [x]
    out: Value = ctx.op("reduce_sum" if kind == "mean" else f"reduce_{kind}", x, axes=tuple(axes))
    if kind == "mean":
        out = scaled(ctx, out, 1 / math.prod(x.type.shape[a] for a in axes))
    if node.attrs["keepdims"]:
        out = ctx.op("reshape", out, new_sizes=tuple(1 if d in axes else size for d, size in enumerate(x.type.shape)))
    return [out]


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
