"""MaxPool, AveragePool, LpPool and the global pools: `max_pool` and `sum_pool` windows (an
average is a sum times each window's reciprocal count, known at import; an Lp norm the p-th
root of a sum of p-th powers), and spatial sums."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...dtypes import numpy_dtype
from ...ir import Value
from ...ops.conv import dilate_dim
from .registry import Context, Node, Operand, converter
from .shared import AUTO_PAD, scaled, spatial_attr, unless_ones, window_pads


def ceil_mode_pads(size: int, pads: tuple[int, int], window: int, stride: int) -> tuple[int, int]:
    """The pads that give ceil_mode's output size: high padding grows to fit one more window,
    unless that window would start in the high padding (ONNX's rule, and PyTorch's)."""
    lo, hi = pads
    span = size + lo + hi - window
    count = -(-span // stride) + 1
    if (count - 1) * stride >= size + lo:
        count -= 1
    return lo, hi + max(0, (count - 1) * stride + window - (size + lo + hi))


@converter("MaxPool", since=12, attrs=AUTO_PAD)
def max_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """`max_pool` over the spatial dims (padding is -inf); kernel_shape, strides, dilations, pads, auto_pad, ceil_mode
    (as extra high padding). Not the Indices output."""
    ctx.refuse_outputs(node, 1, "the Indices output")
    x = ctx.operand(node, 0)
    window = pool_window(node, ctx, x)
    return [ctx.op("max_pool", x, **window.attrs())]


class PoolWindow:
    """An ONNX pool's window over the spatial dims: kernel, strides, dilations, the pads the
    model asks for (`pads` or `auto_pad`) and those with ceil_mode's extra high padding."""

    def __init__(self, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                 pads: Sequence[tuple[int, int]], ceil_pads: Sequence[tuple[int, int]]):
        self.kernel, self.strides, self.dilations = tuple(kernel), tuple(strides), tuple(dilations)
        self.pads, self.ceil_pads = list(pads), list(ceil_pads)

    def attrs(self) -> dict[str, object]:
        """The convc pool's attributes (batch and channel dims get windows of 1)."""
        return {"window_dimensions": (1, 1, *self.kernel), "window_strides": unless_ones((1, 1, *self.strides)),
                "window_dilation": unless_ones((1, 1, *self.dilations)), "padding": ((0, 0), (0, 0), *self.ceil_pads)}

    def counts(self, spatial: Sequence[int], out_spatial: Sequence[int], include_pad: bool) -> np.ndarray:
        """How many elements each output window averages: those of x, and with `include_pad`
        those of the model's pads too (never ceil_mode's extra padding), as ONNX Runtime counts."""
        per_dim = []
        for size, out, k, s, d, (lo, hi) in zip(spatial, out_spatial, self.kernel, self.strides, self.dilations, self.pads):
            taps = np.arange(out)[:, None] * s - lo + np.arange(k)[None, :] * d  # each window's positions in x
            low, high = (-lo, size + hi) if include_pad else (0, size)
            per_dim.append(((taps >= low) & (taps < high)).sum(axis=1))
        counts = np.ones((), np.int64)
        for dim in per_dim:
            counts = np.multiply.outer(counts, dim)
        return counts


def pool_window(node: Node, ctx: Context, x: Value) -> PoolWindow:
    """The window a MaxPool or AveragePool node describes, checked against x's spatial rank."""
    rank = x.type.rank - 2
    if "kernel_shape" not in node.attrs:
        raise ctx.error("kernel_shape is required")
    kernel = tuple(node.attrs["kernel_shape"])
    strides, dilations = spatial_attr(ctx, node, "strides", rank), spatial_attr(ctx, node, "dilations", rank)
    if len(kernel) != rank:
        raise ctx.error(f"kernel_shape has {len(kernel)} entries, expected {rank} (one per spatial dimension)")
    pads = window_pads(ctx, node, x.type.shape[2:], kernel, strides, dilations)
    ceil_pads = pads
    if node.attrs.get("ceil_mode"):  # LpPool has it from opset 18 on
        ceil_pads = [ceil_mode_pads(size, p, dilate_dim(k, d), s)
                     for size, p, k, d, s in zip(x.type.shape[2:], pads, kernel, dilations, strides)]
    return PoolWindow(kernel, strides, dilations, pads, ceil_pads)


@converter("AveragePool", since=11, attrs=AUTO_PAD)
def average_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """`sum_pool` over the spatial dims (padding adds 0), `multiply` by 1/count per window (computed at import:
    count_include_pad counts the pads, never ceil_mode's extra ones); kernel_shape, strides, pads, auto_pad,
    ceil_mode, dilations (opset 19)."""
    x = ctx.operand(node, 0)  # floating: onnx.checker holds AveragePool to its type constraint
    window = pool_window(node, ctx, x)
    summed = ctx.op("sum_pool", x, **window.attrs())
    counts = window.counts(x.type.shape[2:], summed.type.shape[2:], bool(node.attrs["count_include_pad"]))
    return [divided(ctx, summed, counts, axes_from=2)]


def divided(ctx: Context, value: Value, counts: np.ndarray, axes_from: int) -> Value:
    """`value` divided by `counts` (known at import, shaped as value's dims from `axes_from`
    on): one scalar multiply when all counts agree, else a multiply by their reciprocals."""
    if counts.size and np.all(counts == counts.flat[0]):
        return scaled(ctx, value, 1 / float(counts.flat[0]))
    reciprocal = ctx.constant((1 / np.maximum(counts, 1)).astype(numpy_dtype(value.type.dtype)), "reciprocal_count")
    spread = ctx.op("broadcast_in_dim", reciprocal, shape=value.type.shape,
                    broadcast_dimensions=tuple(range(axes_from, value.type.rank)))
    return ctx.op("multiply", value, spread)


def _positive_p(node: Node) -> str | None:
    """GlobalLpPool's attribute check: p is a positive order (0 would be a count, not a norm)."""
    return None if node.attrs["p"] >= 1 else f"p {node.attrs['p']} is not a positive order"


def _lp_attrs(node: Node) -> str | None:
    """LpPool's attribute check: auto_pad as every pool's, and p a positive order."""
    return AUTO_PAD(node) or _positive_p(node)


def _powered(ctx: Context, x: Value, p: int) -> Value:
    """|x|^p: `abs` for 1, `multiply` by itself for 2, else `power` of `abs` by a constant p."""
    if p == 2:
        return ctx.op("multiply", x, x)
    size = ctx.op("abs", x)
    if p == 1:
        return size
    exponent = ctx.constant(np.asarray(p, numpy_dtype(x.type.dtype)), "p")
    return ctx.op("power", size, ctx.op("broadcast_in_dim", exponent, shape=x.type.shape, broadcast_dimensions=()))


def _root(ctx: Context, total: Value, p: int) -> Value:
    """total^(1/p): itself for 1, `sqrt` for 2, else `power` by a constant 1/p."""
    if p == 1:
        return total
    if p == 2:
        return ctx.op("sqrt", total)
    exponent = ctx.constant(np.asarray(1 / p, numpy_dtype(total.type.dtype)), "inverse_p")
    return ctx.op("power", total, ctx.op("broadcast_in_dim", exponent, shape=total.type.shape, broadcast_dimensions=()))


@converter("LpPool", since=11, attrs=_lp_attrs)
def lp_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """The p-th root of a `sum_pool` of |x|^p over the spatial dims (padding adds 0): p 1 is a sum of `abs`, p 2
    the `sqrt` of a sum of squares, others `power`s; kernel_shape, strides, pads, auto_pad, ceil_mode and dilations
    (opset 18)."""
    x = ctx.operand(node, 0)  # floating: onnx.checker holds LpPool to its type constraint
    p = node.attrs["p"]
    window = pool_window(node, ctx, x)
    return [_root(ctx, ctx.op("sum_pool", _powered(ctx, x, p), **window.attrs()), p)]


@converter("GlobalLpPool", since=2, attrs=_positive_p)
def global_lp_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """The p-th root of a `reduce_sum` of |x|^p over the spatial dims (as LpPool's), `reshape`d to keep them as 1s."""
    x = ctx.operand(node, 0)
    p = node.attrs["p"]
    total = ctx.op("reduce_sum", _powered(ctx, x, p), axes=tuple(range(2, x.type.rank)))
    kept = ctx.op("reshape", total, new_sizes=(*x.type.shape[:2], *(1 for _ in x.type.shape[2:])))
    return [_root(ctx, kept, p)]


@converter("GlobalMaxPool", since=1)
def global_max_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """`max_pool` with one window over all spatial dims."""
    x = ctx.operand(node, 0)
    return [ctx.op("max_pool", x, window_dimensions=(1, 1, *x.type.shape[2:]))]


@converter("GlobalAveragePool", since=1)
def global_average_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reduce_sum` over the spatial dims, `reshape` to keep them as 1s, `multiply` by 1/(their size)."""
    x = ctx.operand(node, 0)
    spatial = x.type.shape[2:]
    total = ctx.op("reduce_sum", x, axes=tuple(range(2, x.type.rank)))
    kept = ctx.op("reshape", total, new_sizes=(*x.type.shape[:2], *(1 for _ in spatial)))
    return [scaled(ctx, kept, 1 / math.prod(spatial))]
