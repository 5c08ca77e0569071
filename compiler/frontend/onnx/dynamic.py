"""DynamicQuantizeLinear: the run-time quantizer of dynamically quantized models (issue 19).

ONNX Runtime's `quantize_dynamic` puts one before each ConvInteger and MatMulInteger: it
finds a uint8 scale and zero point from the range of its float input at run time and
quantizes the input with them. Its scale is no constant, so its result cannot be a convc
`!quant.uniform` value; it is a plain `ui8` tensor (the stored integers), an f32 scale and a
`ui8` zero point, built from plain ops as the ONNX spec defines them, in f32:

    scale = (max(0, max(x)) - min(0, min(x))) / 255
    zero_point = round(clamp(0 - min(0, min(x)) / scale, 0, 255))
    y = clamp(round(x / scale) + zero_point, 0, 255)

rounding half to even (the scale's quotient is taken in f64 and rounded once: `_scale`).
Where the range is 0 (x all zeros) the spec's formula divides 0 by 0; ONNX Runtime's kernel
takes the scale as 1 there (`max == min ? 1.0f : ...`), and so does convc (onnx.reference
takes 1/255): y and the zero point are 0 either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir import Value
from .elementwise import splat
from .registry import Context, Node, Operand, converter
from .shared import broadcast_to

_QMAX = 255.0  # uint8's range, [0, 255]: the only one the op has


def _range_with_zero(ctx: Context, x: Value) -> tuple[Value, Value]:
    """(min(0, min(x)), max(0, max(x))) as f32 scalars."""
    axes = tuple(range(x.type.rank))
    low = ctx.op("reduce_min", x, axes=axes) if axes else x
    high = ctx.op("reduce_max", x, axes=axes) if axes else x
    zero = ctx.constant(np.asarray(0, np.float32), "zero")
    return ctx.op("minimum", low, zero), ctx.op("maximum", high, zero)


def _scale(ctx: Context, low: Value, high: Value) -> Value:
    """(high - low) / 255 rounded once to f32, or 1 where high == low (then both are 0): the range over 255 plus
    1 - relu_grad(1, range), which adds exactly 0 where the range is positive and 1 where it is 0.

    The quotient is taken in f64 and rounded to f32: XLA turns a division by a constant into a
    multiplication by its reciprocal, which in f32 misses the correctly rounded quotient by an
    ulp. In f64 that error (about 2^-52 of it) cannot reach an f32 rounding boundary: an f32
    range over 255 is never within 2^-32 of one (a midpoint times 255 needs 32 bits, an f32 has 24)."""
    spread = ctx.op("subtract", high, low)
    wide = ctx.op("convert", spread, new_dtype="f64")
    scale = ctx.op("convert", ctx.op("divide", wide, splat(ctx, _QMAX, wide, "qmax")), new_dtype="f32")
    one = splat(ctx, 1.0, spread, "one")
    empty = ctx.op("subtract", one, ctx.op("relu_grad", one, spread))
    return ctx.op("add", scale, empty)


@converter("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(node: Node, ctx: Context) -> Sequence[Operand]:
    """y (`ui8`), y_scale and y_zero_point (`ui8`) from x's range at run time, by the spec's formulas in f32 (the
    scale's quotient in f64, rounded once): `reduce_min`/`reduce_max`, `divide`, `round_nearest_even`, `clamp` to
    [0, 255], `convert`; scale 1 for an all-zero x, as ONNX Runtime. Bit for bit ONNX Runtime's."""
    x = ctx.operand(node, 0)  # f32: ONNX's shape inference admits no other type (O2)
    low, high = _range_with_zero(ctx, x)
    scale = _scale(ctx, low, high)
    zero_point = ctx.op("round_nearest_even", ctx.op("clamp", ctx.op("negate", ctx.op("divide", low, scale)), min=0.0, max=_QMAX))
    steps = ctx.op("round_nearest_even", ctx.op("divide", x, broadcast_to(ctx, scale, x.type.shape)))
    y = ctx.op("clamp", ctx.op("add", steps, broadcast_to(ctx, zero_point, x.type.shape)), min=0.0, max=_QMAX)
    return [ctx.op("convert", y, new_dtype="ui8"), scale, ctx.op("convert", zero_point, new_dtype="ui8")]


__all__ = ["dynamic_quantize_linear"]
