"""MaxPool, GlobalMaxPool and GlobalAveragePool: `max_pool` windows and spatial sums."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ops.conv import dilate_dim
from .registry import Context, Node, Operand, converter
from .shared import scaled, spatial_attr, unless_ones, window_pads


def ceil_mode_pads(size: int, pads: tuple[int, int], window: int, stride: int) -> tuple[int, int]:
    """The pads that give ceil_mode's output size: high padding grows to fit one more window,
    unless that window would start in the high padding (ONNX's rule, and PyTorch's)."""
    lo, hi = pads
    span = size + lo + hi - window
    count = -(-span // stride) + 1
    if (count - 1) * stride >= size + lo:
        count -= 1
    return lo, hi + max(0, (count - 1) * stride + window - (size + lo + hi))


@converter("MaxPool", since=12)
def max_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """`max_pool` over the spatial dims (padding is -inf); kernel_shape, strides, dilations, pads, auto_pad, ceil_mode
    (as extra high padding). Not the Indices output."""
    ctx.refuse_outputs(node, 1, "the Indices output")
    x = ctx.operand(node, 0)
    rank = x.type.rank - 2
    if "kernel_shape" not in node.attrs:
        raise ctx.error("kernel_shape is required")
    kernel = tuple(node.attrs["kernel_shape"])
    strides, dilations = spatial_attr(ctx, node, "strides", rank), spatial_attr(ctx, node, "dilations", rank)
    if len(kernel) != rank:
        raise ctx.error(f"kernel_shape has {len(kernel)} entries, expected {rank} (one per spatial dimension)")
    pads = window_pads(ctx, node, x.type.shape[2:], kernel, strides, dilations)
    if node.attrs["ceil_mode"]:
        pads = [ceil_mode_pads(size, p, dilate_dim(k, d), s) for size, p, k, d, s in zip(x.type.shape[2:], pads, kernel, dilations, strides)]
    return [ctx.op("max_pool", x, window_dimensions=(1, 1, *kernel), window_strides=unless_ones((1, 1, *strides)),
                   window_dilation=unless_ones((1, 1, *dilations)), padding=((0, 0), (0, 0), *pads))]


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
