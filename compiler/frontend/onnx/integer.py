"""ConvInteger, MatMulInteger and QLinearMatMul: integer kernels on 8-bit operands (issue 19).

Each is built from plain integer ops: the operands' stored integers in i32 minus their zero
points (constants folded at import, or a run-time value such as DynamicQuantizeLinear's zero
point, subtracted before the conv, so that padding stays the zero point), then an i32 `conv`
or `dot_general`, which sums the products exactly (XLA:CPU runs integer convs and dots; the
cpu pipeline's lower-quantized makes such a conv f32 convs where f32 holds its sums exactly).
ConvInteger and MatMulInteger return that i32 sum, as ONNX defines them; QLinearMatMul
rescales it by a_scale * b_scale (f64, rounded once to f32) and quantizes to y's type, as
lower-quantized does a quantized conv.

An operand is an initializer (its integers, shifted at import), an int8 graph input, a plain
uint8 value (DynamicQuantizeLinear's y), or a quantized convc value (the output of
QuantizeLinear or QLinearConv): its stored integers are `round(dequantized / scale) +
zero_point`, exact, as |stored - zero_point| < 2^16 is far inside f32's integers and the
dequantized value is within an ulp of that times the scale.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...dtypes import quant_type
from ...ir import Value
from .elementwise import plus
from .gemm import matmul_values
from .quantized import checked_type, quant_params
from .registry import Context, Node, Operand, converter
from .shared import AUTO_PAD, spatial_attr, spread_along, unless_ones, window_pads

_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))


ZeroPoints = np.ndarray | Value  # known at import (i32, one or one per slice), or a run-time 8-bit value


def _zero_points(ctx: Context, node: Node, index: int, size: int, what: str) -> ZeroPoints:
    """Input `index` (absent: 0): a zero point known at import as i32, one or `size` (one per slice); else the
    run-time value (DynamicQuantizeLinear's zero point), int8 or uint8, one element or `size`."""
    if not node.input(index):
        return np.zeros(1, np.int32)
    found = ctx.array(node.input(index))
    if found is not None:
        if found.dtype in _EIGHT_BIT and found.size in (1, size):
            return found.astype(np.int32).reshape(-1)
        raise ctx.error(f"{what} must be int8 or uint8, one value or {size}, got {found.dtype} {list(found.shape)}")
    value = ctx.operand(node, index)
    if value.type.dtype in ("i8", "ui8") and value.type.num_elements() in (1, size):
        return value
    raise ctx.error(f"{what} (computed at run time) must be int8 or uint8, one value or {size}, got {value.type}")


def _along(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """`values` (one, or one per index of dimension `axis`) shaped to broadcast against a rank-`rank` array."""
    if values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[axis] = values.size
    return values.reshape(shape)


def shifted(ctx: Context, node: Node, index: int, zero_points: ZeroPoints, axis: int) -> Value:
    """Input `index`'s stored integers minus `zero_points` (along `axis`), in i32. A run-time zero point is
    subtracted at run time, before the conv pads: the padding stays 0 in the shifted integers, as ONNX defines it."""
    known = ctx.array(node.input(index))
    if known is not None and known.dtype not in _EIGHT_BIT:
        raise ctx.error(f"input {index} must be int8 or uint8, got {known.dtype}")
    if known is not None and isinstance(zero_points, np.ndarray):
        return ctx.constant((known.astype(np.int32) - _along(zero_points, axis, known.ndim)).astype(np.int32), "shifted")
    x = ctx.operand(node, index)
    quant = quant_type(x.type.dtype)
    if quant is None and x.type.dtype not in ("i8", "ui8"):
        raise ctx.error(f"input {index} is {x.type}; it must be int8 or uint8 (or a quantized value)")
    if quant is not None and quant.axis is not None:
        raise ctx.error(f"input {index} is {x.type}: quantized per axis, where this op takes one zero point per tensor")
    stored = ctx.op("convert", x, new_dtype="i32") if quant is None else _stored(ctx, x)
    own = 0 if quant is None else quant.zero_points[0]  # what `stored` has had subtracted already
    if isinstance(zero_points, Value):
        return ctx.op("subtract", stored, spread_along(ctx, _run_time_offset(ctx, zero_points, own), x.type.shape, axis))
    offset = zero_points - own
    if not offset.any():
        return stored
    constant = ctx.constant(offset.astype(np.int32) if offset.size > 1 else offset.astype(np.int32).reshape(()), "zp")
    return ctx.op("subtract", stored, spread_along(ctx, constant, x.type.shape, axis))


def _run_time_offset(ctx: Context, zero_points: Value, own: int) -> Value:
    """A run-time zero point in i32 (a scalar, or 1-D: one per slice), less `own` (what a quantized operand's
    integers already lack)."""
    count = zero_points.type.num_elements()
    shape = () if count == 1 else (count,)
    if zero_points.type.shape != shape:
        zero_points = ctx.op("reshape", zero_points, new_sizes=shape)
    return plus(ctx, ctx.op("convert", zero_points, new_dtype="i32"), -own)


def _stored(ctx: Context, x: Value) -> Value:
    """A per-tensor quantized value's stored integers minus its zero point, in i32 (exact: see the module)."""
    quant = quant_type(x.type.dtype)
    assert quant is not None
    scale = ctx.constant(np.asarray(quant.scales[0], np.float32), "scale")
    steps = ctx.op("divide", ctx.op("uniform_dequantize", x), spread_along(ctx, scale, x.type.shape, 0))
    return ctx.op("convert", ctx.op("round_nearest_even", steps), new_dtype="i32")


@converter("ConvInteger", since=10, attrs=AUTO_PAD)
def conv_integer(node: Node, ctx: Context) -> Sequence[Operand]:
    """`conv` in i32 of (x - x_zero_point) and (w - w_zero_point) (per tensor, or per output channel; x_zero_point
    known at import or computed at run time, as DynamicQuantizeLinear's): the exact integer sums. group, strides,
    dilations, pads (the shifted x padded with 0: x_zero_point), auto_pad."""
    w = ctx.array(node.input(1))
    out = w.shape[0] if w is not None else ctx.operand(node, 1).type.shape[0]
    x = shifted(ctx, node, 0, _zero_points(ctx, node, 2, 1, "x_zero_point"), 1)
    kernel = shifted(ctx, node, 1, _zero_points(ctx, node, 3, out, "w_zero_point"), 0)
    if x.type.rank < 3 or kernel.type.rank != x.type.rank:
        raise ctx.error(f"x {x.type} and w {kernel.type} must both have rank 3 to 5")
    rank = x.type.rank - 2
    strides, dilations = spatial_attr(ctx, node, "strides", rank), spatial_attr(ctx, node, "dilations", rank)
    pads = window_pads(ctx, node, x.type.shape[2:], kernel.type.shape[2:], strides, dilations)
    group = node.attrs["group"]
    return [ctx.op("conv", x, kernel, window_strides=unless_ones(strides), padding=pads, rhs_dilation=unless_ones(dilations),
                   feature_group_count=None if group == 1 else group)]


def _matrix_operands(ctx: Context, node: Node, a: int, a_zero: int, b: int, b_zero: int) -> tuple[Value, Value]:
    """A and B shifted by their zero points: A's per tensor, B's per tensor or per column (its last dimension)."""
    b_known = ctx.array(node.input(b))
    b_shape = b_known.shape if b_known is not None else ctx.operand(node, b).type.shape
    lhs = shifted(ctx, node, a, _zero_points(ctx, node, a_zero, 1, "a_zero_point"), 0)
    rhs = shifted(ctx, node, b, _zero_points(ctx, node, b_zero, b_shape[-1], "b_zero_point"), len(b_shape) - 1)
    return lhs, rhs


@converter("MatMulInteger", since=10)
def matmul_integer(node: Node, ctx: Context) -> Sequence[Operand]:
    """`dot_general` in i32 of (A - a_zero_point) and (B - b_zero_point) (per tensor; B's per column too; known at
    import or computed at run time), as MatMul (numpy's batch broadcasting): the exact integer sums."""
    return [matmul_values(ctx, *_matrix_operands(ctx, node, 0, 2, 1, 3))]


@converter("QLinearMatMul", since=10)
def qlinear_matmul(node: Node, ctx: Context) -> Sequence[Operand]:
    """MatMulInteger's i32 product of the shifted a and b, times a_scale * b_scale (per tensor; b's per column too; in
    f64, rounded once to f32), `uniform_quantize`d to y's type (y_scale, y_zero_point, per tensor)."""
    product = matmul_values(ctx, *_matrix_operands(ctx, node, 0, 2, 3, 5))
    a_scale = np.asarray(ctx.required_array(node, 1, "a_scale"), np.float32).reshape(-1)
    b_scale = np.asarray(ctx.required_array(node, 4, "b_scale"), np.float32).reshape(-1)
    columns = product.type.shape[-1]
    if a_scale.size != 1 or b_scale.size not in (1, columns):
        raise ctx.error(f"a_scale must be one value and b_scale one or {columns} (per column), got {a_scale.size} and {b_scale.size}")
    rank = product.type.rank
    y_type = checked_type(ctx, quant_params(ctx, node, 6, rank, axis=rank - 1), rank)
    if quant_type(y_type).axis is not None:  # type: ignore[union-attr]
        raise ctx.error("y_scale and y_zero_point must be one value each (per tensor)")
    multiplier = a_scale.astype(np.float64) * b_scale.astype(np.float64)
    wide = ctx.op("convert", product, new_dtype="f64")
    factors = ctx.constant(multiplier.reshape(()) if multiplier.size == 1 else multiplier, "multiplier")
    spread = spread_along(ctx, factors, product.type.shape, rank - 1)
    real = ctx.op("convert", ctx.op("multiply", wide, spread), new_dtype="f32")
    return [ctx.op("uniform_quantize", real, new_dtype=y_type)]


__all__ = ["conv_integer", "matmul_integer", "qlinear_matmul", "shifted"]
