"""Conv: convc's `conv` in ONNX's own layout (NC.../OI..., convc's default dimension numbers)."""

from __future__ import annotations

from collections.abc import Sequence

from .registry import Context, Node, Operand, converter
from .shared import spatial_attr, unless_ones, window_pads


@converter("Conv", since=11)
def conv(node: Node, ctx: Context) -> Sequence[Operand]:
    """`conv` (NCHW/OIHW kept, 1-D to 3-D), then `bias_add` on axis 1 for B; group, strides, dilations, pads, auto_pad
    (NOTSET, SAME_UPPER, SAME_LOWER, VALID), kernel_shape."""
    x, w = ctx.operand(node, 0), ctx.operand(node, 1)
    if x.type.rank < 3 or w.type.rank != x.type.rank:
        raise ctx.error(f"X {x.type} and W {w.type} must both have rank 3 to 5 (N, C and 1 to 3 spatial dimensions)")
    rank, kernel = x.type.rank - 2, w.type.shape[2:]
    if tuple(node.attrs.get("kernel_shape") or kernel) != kernel:
        raise ctx.error(f"kernel_shape {list(node.attrs['kernel_shape'])} differs from W's spatial dimensions {list(kernel)}")
    strides, dilations = spatial_attr(ctx, node, "strides", rank), spatial_attr(ctx, node, "dilations", rank)
    pads = window_pads(ctx, node, x.type.shape[2:], kernel, strides, dilations)
    group = node.attrs["group"]
    y = ctx.op("conv", x, w, window_strides=unless_ones(strides), padding=pads, rhs_dilation=unless_ones(dilations),
               feature_group_count=None if group == 1 else group)
    if node.input(2):
        y = ctx.op("bias_add", y, ctx.operand(node, 2), axis=1)
    return [y]
