"""The quantized ops: `uniform_quantize`, `uniform_dequantize` (StableHLO's, with the
spec's constraints), and the quantized rules of `conv` (the spec's C28-C34).

Quantized values are `!quant.uniform` element types (convc.dtypes.QuantType); the ids
`<op>.I1` name the spec's input type of the op (its table's label), `C<n>` its constraints.
Neither op has a gradient: quantization is a step function (a quantization-aware training
graph would use a straight-through estimator, which is a modelling choice, not a derivative).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..diagnostics import VerifyError
from ..dtypes import QuantType, is_float, itemsize, quant_type
from ..ir import TensorType, Value
from .attr_kinds import ELEMENT_TYPE
from .base import Attr, ConvDimensionNumbers, NoGradientRule, OpDef, OpFactory, OpView


def _expressed(t: TensorType) -> str:
    """A float type's own name, a quantized type's expressed type."""
    quant = quant_type(t.dtype)
    return t.dtype if quant is None else quant.expressed


def _uniform_quantize(v: OpView) -> TensorType:
    x = v.operand(0)
    if not (is_float(x.dtype) or quant_type(x.dtype) is not None):
        raise VerifyError(f"uniform_quantize takes a floating-point or quantized tensor, got {x}", "uniform_quantize.I1",
                          operand=0)
    result = quant_type(v.new_dtype)
    if result is None:
        raise VerifyError(f"new_dtype must be a quantized type (!quant.uniform<...>), got {v.new_dtype}", "uniform_quantize.O1",
                          attr="new_dtype")
    if result.expressed != _expressed(x):
        raise VerifyError(f"the result's expressed type {result.expressed} must be the operand's "
                          f"{'element' if is_float(x.dtype) else 'expressed'} type {_expressed(x)}", "uniform_quantize.C2",
                          attr="new_dtype")
    return TensorType(x.shape, v.new_dtype)


def _uniform_dequantize(v: OpView) -> TensorType:
    x = v.operand(0)
    quant = quant_type(x.dtype)
    if quant is None:
        raise VerifyError(f"uniform_dequantize takes a quantized tensor, got {x}", "uniform_dequantize.I1", operand=0)
    return TensorType(x.shape, quant.expressed)


def _bitcast_convert(v: OpView) -> TensorType:
    x = v.operand(0)
    if itemsize(x.dtype) != itemsize(v.new_dtype):
        raise VerifyError(f"bitcast_convert keeps the element width: {x.dtype} has {8 * itemsize(x.dtype)} bits, "
                          f"{v.new_dtype} {8 * itemsize(v.new_dtype)} (a quantized type counts its storage's)",
                          "bitcast_convert.C1", attr="new_dtype")
    return TensorType(x.shape, v.new_dtype)


def _no_gradient(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """None: refused (quantization is a step function; its derivative is zero almost everywhere)."""
    raise NoGradientRule(f"{v.opdef.name} has no gradient: rounding to a quantized type is a step function, whose derivative "
                         "is zero almost everywhere (quantization-aware training picks an estimator; convc does not)")


UNIFORM_QUANTIZE = OpDef(
    "uniform_quantize", ("x",), _uniform_quantize,
    {"new_dtype": Attr(ELEMENT_TYPE, required=True, doc="the result's quantized element type (!quant.uniform<...>)")},
    doc="stablehlo.uniform_quantize: x / scale + zero_point, clamped to the storage range, rounded half to even "
        "(a quantized x is dequantized first)",
    vjp=_no_gradient, quantized=True)

UNIFORM_DEQUANTIZE = OpDef(
    "uniform_dequantize", ("x",), _uniform_dequantize,
    doc="stablehlo.uniform_dequantize: (stored - zero_point) * scale, in the expressed type",
    vjp=_no_gradient, quantized=True)

def _round_nearest_even(v: OpView) -> TensorType:
    x = v.operand(0)
    if not is_float(x.dtype):
        raise VerifyError(f"round_nearest_even needs a floating element type, got {x.dtype}", "round_nearest_even.C1", operand=0)
    return x


def _round_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """None: the derivative of rounding is zero almost everywhere (JAX's rule gives zeros)."""
    return (None,)


# What `lower-quantized` rounds with (StableHLO's op of the same name; the spec's quantize).
ROUND_NEAREST_EVEN = OpDef(
    "round_nearest_even", ("x",), _round_nearest_even,
    doc="stablehlo.round_nearest_even: to the nearest integer, ties to even (floating)", vjp=_round_vjp)

# The stored integers of a quantized value as a plain tensor, or a plain tensor's elements as
# a quantized type's stored integers: what an importer spells its own integer arithmetic
# with (ONNX Runtime's requantization of QLinearConv's accumulator). No gradient: the bits.
BITCAST_CONVERT = OpDef(
    "bitcast_convert", ("x",), _bitcast_convert,
    {"new_dtype": Attr(ELEMENT_TYPE, required=True, doc="the result element type, of the operand's bit width")},
    doc="stablehlo.bitcast_convert of elements of one width: the same bits read as new_dtype (a quantized type's "
        "stored integers)", quantized=True)

QUANTIZED_OPS: tuple[OpDef, ...] = (UNIFORM_QUANTIZE, UNIFORM_DEQUANTIZE, ROUND_NEAREST_EVEN, BITCAST_CONVERT)


# --- conv on quantized operands (spec "convolution", C28-C34) ------------------------------


def quantized_conv_dtype(lhs: TensorType, rhs: TensorType, preferred: str | None, dn: ConvDimensionNumbers) -> str | None:
    """The result element type of a conv with a quantized operand or result, checked by the
    spec's C28-C34; None when no type is quantized (the plain rules apply)."""
    ql, qr, qo = quant_type(lhs.dtype), quant_type(rhs.dtype), None if preferred is None else quant_type(preferred)
    if ql is None and qr is None and qo is None:
        return None
    if ql is not None and ql.axis is not None:
        raise VerifyError(f"lhs must be a tensor or a per-tensor quantized tensor, got {lhs}", "I1", operand=0)
    if ql is not None:
        return _quantized_lhs(ql, qr, qo, preferred, dn)
    if qr is None or qo is not None:  # a float lhs: the hybrid (weight-only) form, a float result
        raise VerifyError(f"a conv with a float lhs and a quantized {'result' if qo else 'lhs or result'} is no form the spec "
                          "has: quantize lhs, rhs and result, or only rhs (weights)", "C28", operand=1 if qr is None else None,
                          attr="preferred_element_type" if qo is not None else None)
    _check_rhs_axis(qr, dn)
    if not (lhs.dtype == qr.expressed and (preferred is None or preferred == lhs.dtype)):
        raise VerifyError(f"a float lhs ({lhs.dtype}), the rhs's expressed type ({qr.expressed}) and the result "
                          f"({preferred or lhs.dtype}) must agree", "C34", operand=1)
    return lhs.dtype


def _quantized_lhs(ql: QuantType, qr: QuantType | None, qo: QuantType | None, preferred: str | None,
                   dn: ConvDimensionNumbers) -> str:
    if qr is None or qo is None:
        missing = "rhs" if qr is None else "result (preferred_element_type, a !quant.uniform type)"
        raise VerifyError(f"a quantized lhs needs a quantized rhs and result; the {missing} is not", "C28",
                          operand=1 if qr is None else None, attr=None if qr is None else "preferred_element_type")
    _check_rhs_axis(qr, dn)
    if qo.axis is not None and qo.axis != dn.out_spec[1]:
        raise VerifyError(f"a per-axis result is quantized along its feature dimension {dn.out_spec[1]}, not {qo.axis}", "C30",
                          attr="preferred_element_type")
    if ql.storage != qr.storage:
        raise VerifyError(f"lhs and rhs storage types differ: {ql.storage} and {qr.storage}", "C31", operand=1)
    if not ql.expressed == qr.expressed == qo.expressed:
        raise VerifyError(f"expressed types differ: lhs {ql.expressed}, rhs {qr.expressed}, result {qo.expressed}", "C32", operand=1)
    if qr.axis is None and qo.axis is not None:
        raise VerifyError("a per-tensor rhs gives a per-tensor result, not a per-axis one", "C33", attr="preferred_element_type")
    assert preferred is not None
    return preferred


def _check_rhs_axis(qr: QuantType, dn: ConvDimensionNumbers) -> None:
    if qr.axis is not None and qr.axis != dn.rhs_spec[0]:
        raise VerifyError(f"a per-axis rhs is quantized along its output feature dimension {dn.rhs_spec[0]}, not {qr.axis}", "C29",
                          operand=1)


# --- data movement on quantized values (the spec's transpose, reshape, reverse) -------------


def moved_axis_dtype(dtype: str, axis_of: Callable[[int], int | None]) -> str | None:
    """The element type of a transpose/reshape result: a per-tensor type as it is, a per-axis
    one with its quantization dimension where `axis_of` maps it; None where it maps it nowhere."""
    quant = quant_type(dtype)
    if quant is None or quant.axis is None:
        return dtype
    moved = axis_of(quant.axis)
    return None if moved is None else replace(quant, axis=moved).spelling()


def reshaped_axis(before: Sequence[int], after: Sequence[int]) -> Callable[[int], int | None]:
    """Where a reshape puts dimension `axis` of `before`: the dimension of `after` of the same
    size with as many elements before it (the spec's reshape C3), else None."""

    def find(axis: int) -> int | None:
        leading = math.prod(before[:axis])
        return next((d for d in range(len(after)) if after[d] == before[axis] and math.prod(after[:d]) == leading), None)

    return find


__all__ = ["BITCAST_CONVERT", "QUANTIZED_OPS", "ROUND_NEAREST_EVEN", "UNIFORM_DEQUANTIZE", "UNIFORM_QUANTIZE", "moved_axis_dtype", "quantized_conv_dtype", "reshaped_axis"]
