"""Conv and ConvTranspose: convc's `conv` and `conv_backprop_input` in ONNX's own layout (NC.../OI...,
convc's default dimension numbers; docs/transposed-convs.md has the ConvTranspose mapping)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ir import TensorType
from ...ops.conv import dilate_dim
from .registry import Context, Node, Operand, converter
from .shared import AUTO_PAD, spatial_attr, unless_ones, window_pads


def _window(node: Node, ctx: Context, x: TensorType, w: TensorType) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """W's spatial dims, and the strides and dilations per spatial dim, of a Conv or ConvTranspose of X and W
    (rank 3 to 5, W's spatial dims as kernel_shape says)."""
    if x.rank < 3 or w.rank != x.rank:
        raise ctx.error(f"X {x} and W {w} must both have rank 3 to 5 (N, C and 1 to 3 spatial dimensions)")
    rank, kernel = x.rank - 2, w.shape[2:]
    if tuple(node.attrs.get("kernel_shape") or kernel) != kernel:
        raise ctx.error(f"kernel_shape {list(node.attrs['kernel_shape'])} differs from W's spatial dimensions {list(kernel)}")
    strides, dilations = spatial_attr(ctx, node, "strides", rank), spatial_attr(ctx, node, "dilations", rank)
    return tuple(kernel), tuple(strides), tuple(dilations)


@converter("Conv", since=11, attrs=AUTO_PAD)
def conv(node: Node, ctx: Context) -> Sequence[Operand]:
    """`conv` (NCHW/OIHW kept, 1-D to 3-D), then `bias_add` on axis 1 for B; group, strides, dilations, pads, auto_pad
    (NOTSET, SAME_UPPER, SAME_LOWER, VALID), kernel_shape."""
    x, w = ctx.operand(node, 0), ctx.operand(node, 1)
    kernel, strides, dilations = _window(node, ctx, x.type, w.type)
    pads = window_pads(ctx, node, x.type.shape[2:], kernel, strides, dilations)
    group = node.attrs["group"]
    y = ctx.op("conv", x, w, window_strides=unless_ones(strides), padding=pads, rhs_dilation=unless_ones(dilations),
               feature_group_count=None if group == 1 else group)
    if node.input(2):
        y = ctx.op("bias_add", y, ctx.operand(node, 2), axis=1)
    return [y]


def transpose_pads(auto_pad: str, total: int) -> tuple[int, int]:
    """How ConvTranspose splits the `total` it crops from its full output (ONNX Runtime's rule):
    nothing when the total is negative; else SAME_UPPER puts the odd element at the end, and
    the other modes at the start."""
    if total < 0:
        return 0, 0
    small = total // 2
    return (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)


def _transpose_geometry(ctx: Context, node: Node, in_spatial: Sequence[int], windows: Sequence[int], strides: Sequence[int],
                        extra: Sequence[int]) -> tuple[list[tuple[int, int]], list[int] | None]:
    """(pads, output_shape or None) per spatial dim. `output_shape` (the spatial sizes, or the
    whole shape) fixes the sizes and the pads follow from them; SAME_UPPER/SAME_LOWER aim at
    `in * stride`; else `pads` (or VALID's zeros) give the sizes."""
    rank = len(in_spatial)
    auto_pad = node.attrs["auto_pad"]
    full = [s * (n - 1) + p + w for n, s, p, w in zip(in_spatial, strides, extra, windows)]  # the scatter's extent
    if node.attrs.get("output_shape"):
        shape = list(node.attrs["output_shape"])
        if len(shape) not in (rank, rank + 2):
            raise ctx.error(f"output_shape has {len(shape)} entries, expected {rank} (one per spatial dimension)")
        sizes = shape[-rank:]
        # A size above the extent leaves zeros at the end (negative high pad), as ONNX Runtime does.
        pads = [(0, f - o) if f < o else transpose_pads(auto_pad, f - o) for f, o in zip(full, sizes)]
        return pads, sizes
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return [transpose_pads(auto_pad, f - n * s) for f, n, s in zip(full, in_spatial, strides)], None
    if auto_pad == "VALID":
        return [(0, 0)] * rank, None
    return window_pads(ctx, node, in_spatial, windows, strides, [1] * rank), None


@converter("ConvTranspose", since=11, attrs=AUTO_PAD)
def conv_transpose(node: Node, ctx: Context) -> Sequence[Operand]:
    """`conv_backprop_input` (the scatter conv whose forward kernel is W as it stands, [C, M / group, *k]; 1-D to 3-D)
    with explicit pads, then `bias_add` on axis 1 for B; group, strides, dilations, pads, output_padding, auto_pad
    (NOTSET, SAME_UPPER, SAME_LOWER, VALID), output_shape (as `input_shape`), kernel_shape."""
    x, w = ctx.operand(node, 0), ctx.operand(node, 1)
    y = ctx.op("conv_backprop_input", x, w, **transpose_attrs(node, ctx, x.type, w.type))
    if node.input(2):
        y = ctx.op("bias_add", y, ctx.operand(node, 2), axis=1)
    return [y]


def transpose_attrs(node: Node, ctx: Context, x: TensorType, w: TensorType) -> dict[str, Any]:
    """The `conv_backprop_input` attributes of a ConvTranspose of X and W of these types (also its QDQ pattern's,
    quantized.py); None for an attribute at its default."""
    kernel, strides, dilations = _window(node, ctx, x, w)
    rank = len(kernel)
    extra = tuple(node.attrs.get("output_padding") or [0] * rank)  # ONNX's schema states no default: its text says 0
    if len(extra) != rank:
        raise ctx.error(f"output_padding has {len(extra)} entries, expected {rank} (one per spatial dimension)")
    windows = [dilate_dim(k, d) for k, d in zip(kernel, dilations)]
    pads, sizes = _transpose_geometry(ctx, node, x.shape[2:], windows, strides, extra)
    group = node.attrs["group"]
    size = {"input_shape": (x.shape[0], w.shape[1] * group, *sizes)} if sizes is not None else {
        "output_padding": extra if any(extra) else None}
    return {"window_strides": unless_ones(strides), "padding": pads, "rhs_dilation": unless_ones(dilations),
            "feature_group_count": None if group == 1 else group, **size}
