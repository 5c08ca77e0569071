"""What several converters share: numpy broadcasting, axes, scaling, and the window pads
ONNX spells as `pads` or `auto_pad`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...dtypes import numpy_dtype
from ...ir import Value
from ...ops.conv import dilate_dim, same_pads
from .registry import Context, Node, one_of

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
AUTO_PAD = one_of(auto_pad=AUTO_PADS)  # the attribute check of every windowed op


def normalized_axis(ctx: Context, axis: int, rank: int, attr: str = "axis") -> int:
    """An ONNX axis (negative counts from the end) as an index in [0, rank)."""
    if not -rank <= axis < rank:
        raise ctx.error(f"{attr} {axis} is out of range for rank {rank}")
    return axis % rank


def broadcast_to(ctx: Context, value: Value, shape: Sequence[int]) -> Value:
    """`value` spread to `shape` by numpy's rule (dims aligned at the end; size 1 spreads)."""
    shape = tuple(shape)
    if value.type.shape == shape:
        return value
    offset = len(shape) - value.type.rank
    return ctx.op("broadcast_in_dim", value, shape=shape, broadcast_dimensions=tuple(range(offset, len(shape))))


def spread_along(ctx: Context, value: Value, shape: Sequence[int], axis: int) -> Value:
    """`value` (a scalar, or 1-D: one per index of dimension `axis`) broadcast to `shape`."""
    return ctx.op("broadcast_in_dim", value, shape=tuple(shape), broadcast_dimensions=() if value.type.rank == 0 else (axis,))


def broadcast_pair(ctx: Context, lhs: Value, rhs: Value) -> tuple[Value, Value]:
    """Both operands spread to their common numpy broadcast shape."""
    try:
        shape = np.broadcast_shapes(lhs.type.shape, rhs.type.shape)
    except ValueError:
        raise ctx.error(f"shapes {list(lhs.type.shape)} and {list(rhs.type.shape)} do not broadcast") from None
    return broadcast_to(ctx, lhs, shape), broadcast_to(ctx, rhs, shape)


def scaled(ctx: Context, value: Value, factor: float) -> Value:
    """`value * factor` (a scalar constant spread over it); `value` itself when the factor is 1."""
    if factor == 1:
        return value
    scalar = ctx.constant(np.asarray(factor, numpy_dtype(value.type.dtype)), "scale")
    return ctx.op("multiply", value, broadcast_to(ctx, scalar, value.type.shape))


def window_pads(ctx: Context, node: Node, in_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                dilations: Sequence[int]) -> list[tuple[int, int]]:
    """The [lo, hi] pads of each spatial dim from `auto_pad` (SAME_UPPER puts the odd one
    high, SAME_LOWER low, as lax's SAME and SAME_LOWER) or from `pads` (begins, then ends)."""
    auto_pad = node.attrs["auto_pad"]  # one of AUTO_PADS (the converters declare AUTO_PAD)
    rank = len(in_spatial)
    if auto_pad == "VALID":
        return [(0, 0)] * rank
    if auto_pad != "NOTSET":
        return [same_pads(size, dilate_dim(k, d), s, auto_pad == "SAME_LOWER")
                for size, k, d, s in zip(in_spatial, kernel, dilations, strides)]
    pads = list(node.attrs.get("pads") or [0] * 2 * rank)  # ONNX's schema states no default: its text says 0
    if len(pads) != 2 * rank:
        raise ctx.error(f"pads has {len(pads)} entries, expected {2 * rank} (a begin and an end per spatial dimension)")
    return list(zip(pads[:rank], pads[rank:]))


def unless_ones(values: Sequence[int]) -> tuple[int, ...] | None:
    """`values`, or None (the op's declared default) when all are 1."""
    return None if all(v == 1 for v in values) else tuple(values)


def spatial_attr(ctx: Context, node: Node, name: str, rank: int) -> tuple[int, ...]:
    """A per-spatial-dim attribute (strides, dilations), all 1 when absent."""
    value = tuple(node.attrs.get(name, (1,) * rank))
    if len(value) != rank:
        raise ctx.error(f"{name} has {len(value)} entries, expected {rank} (one per spatial dimension)")
    return value


# The element types convc has, by their onnx.TensorProto.DataType numbers (fixed by onnx.proto).
ONNX_DTYPES = {1: "f32", 2: "ui8", 3: "i8", 6: "i32", 10: "f16", 11: "f64", 16: "bf16"}
