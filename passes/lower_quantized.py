"""lower-quantized: quantized types and ops become integer and float StableHLO that XLA runs.

XLA compiles no `!quant.uniform` type (jaxlib's PJRT refuses `stablehlo.uniform_quantize`),
so every quantized value becomes its stored integers (the storage type: i8, ui8, i16, i32;
graph inputs and outputs too, which is what `--inputs` feeds and `--outputs` writes) and:

- `uniform_dequantize` is the spec's `dequantize`: (stored - zero_point), exact in i32,
  converted to the expressed type, times the scale (per axis: the slice's);
- `uniform_quantize` is the spec's `quantize`: x / scale + zero_point, clamped to
  [storage_min, storage_max], `round_nearest_even`, converted to the storage type (a
  quantized operand is dequantized first);
- a quantized `conv` is an integer conv of the zero-point-shifted operands, (lhs - z_lhs) and
  (rhs - z_rhs[o]), in i32 (8-bit storage; i64 for wider, whose products i32 cannot hold);
  with `integer_conv=false` (the gpu pipeline: XLA:GPU compiles no integer conv, as cuDNN
  offers none of this form) in f64, which holds those integer sums exactly.
  Its padding pads the shifted operand with 0, which is the real value 0, as the spec's
  dequantized conv pads; so every window, at the border too, sums exactly
  sum((l - z_l) * (r - z_r)). The sum times s_lhs * s_rhs[o] (in f64, rounded once to the
  expressed type) is the spec's float conv wherever the dequantized operands are exact in the
  expressed type (and within an ulp otherwise); it is then quantized as above.
- a hybrid conv (float lhs, quantized rhs) is the float conv of the dequantized rhs, as
  the spec's `hybrid_dequantize_then_op`;
- `transpose`, `reshape` and `reverse` of a quantized value (the layout changes of the JAX
  export path, and the kernel moves `lower-conv-transpose` builds) are the same op on the
  stored integers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from convc.dtypes import QuantType, is_quantized, numpy_dtype, quant_type
from convc.ir import Graph, Op, TensorType, Value
from convc.ops import view
from convc.ops.base import OpFactory
from convc.ops.conv import resolve_dimension_numbers
from convc.pass_manager import Pass
from convc.rewrite import Rewriter

# Ops that only move a quantized value's elements: the same op on its stored integers.
MOVES = ("transpose", "reshape", "reverse")
QUANTIZED_KINDS = ("uniform_quantize", "uniform_dequantize", "conv", *MOVES)


def _quant(t: TensorType) -> QuantType:
    found = quant_type(t.dtype)
    assert found is not None
    return found


def _per_slice(b: OpFactory, values: np.ndarray, axis: int | None, like: TensorType, suffix: str) -> Value:
    """`values` (one, or one per slice of dimension `axis`) broadcast to the shape of `like`."""
    if axis is None:
        constant = b.create("constant", suffix=suffix, value=values.reshape(()))
        dims: tuple[int, ...] = ()
    else:
        constant = b.create("constant", suffix=suffix, value=values)
        dims = (axis,)
    return b.create("broadcast_in_dim", constant, suffix=f"{suffix}_b", shape=like.shape, broadcast_dimensions=dims)


def _shifted(b: OpFactory, stored: Value, quant: QuantType, axis: int | None, wide: str, suffix: str) -> Value:
    """stored - zero_point, exact in the integer type `wide`."""
    value = b.create("convert", stored, suffix=f"{suffix}_wide", new_dtype=wide)
    if not any(quant.zero_points):
        return value
    zero_points = np.asarray(quant.zero_points, numpy_dtype(wide))
    return b.create("subtract", value, _per_slice(b, zero_points, axis, value.type, f"{suffix}_zp"), suffix=f"{suffix}_shifted")


def dequantize(b: OpFactory, stored: Value, quant: QuantType, suffix: str) -> Value:
    """The spec's `dequantize` of the stored integers `stored` of type `quant`."""
    shifted = _shifted(b, stored, quant, quant.axis, "i32", suffix)
    real = b.create("convert", shifted, suffix=f"{suffix}_real", new_dtype=quant.expressed)
    scales = np.asarray(quant.scales, np.float64).astype(numpy_dtype(quant.expressed))
    return b.create("multiply", real, _per_slice(b, scales, quant.axis, real.type, f"{suffix}_scale"), suffix=suffix)


def quantize(b: OpFactory, x: Value, quant: QuantType, axis: int | None, suffix: str) -> Value:
    """The spec's `quantize` of `x` (expressed type) to `quant`, its per-axis dimension `axis`
    of `x`: divide, add the zero point, clamp, round half to even, convert."""
    dtype = numpy_dtype(quant.expressed)
    scales = np.asarray(quant.scales, np.float64).astype(dtype)
    value = b.create("divide", x, _per_slice(b, scales, axis, x.type, f"{suffix}_scale"), suffix=f"{suffix}_scaled")
    if any(quant.zero_points):
        zero_points = np.asarray(quant.zero_points, np.float64).astype(dtype)
        value = b.create("add", value, _per_slice(b, zero_points, axis, x.type, f"{suffix}_zp"), suffix=f"{suffix}_shifted")
    low, high = quant.limits()
    value = b.create("clamp", value, suffix=f"{suffix}_clamped", min=float(low), max=float(high))
    value = b.create("round_nearest_even", value, suffix=f"{suffix}_rounded")
    return b.create("convert", value, suffix=suffix, new_dtype=quant.storage_dtype())


def _accumulator(quant: QuantType, integer_conv: bool) -> str:
    """i32 holds the sums of 8-bit products (each below 2^16 in magnitude); wider storage, i64.
    Without integer convs (XLA:GPU has none: cuDNN's integer convs take no such form), f64,
    which holds every such sum below 2^53 exactly."""
    if not integer_conv:
        return "f64"
    return "i32" if quant.storage in ("i8", "u8") else "i64"


@dataclass
class _Lowering:
    """One run: the stored-integer value standing for each quantized value (by id)."""

    graph: Graph
    stored: dict[int, Value]
    integer_conv: bool

    def storage(self, value: Value) -> Value:
        return self.stored[id(value)]

    def lower(self, op: Op) -> Value:
        """The op's replacement: stored integers for a quantized result, else its float value."""
        b = Rewriter(self.graph, op)
        x = op.operands[0]
        if op.kind == "uniform_dequantize":
            return dequantize(b, self.storage(x), _quant(x.type), "real")
        if op.kind in MOVES:
            return b.create(op.kind, self.storage(x), suffix="stored", **op.attrs)
        if op.kind == "uniform_quantize":
            real = dequantize(b, self.storage(x), _quant(x.type), "real") if is_quantized(x.type.dtype) else x
            result = _quant(op.result.type)
            return quantize(b, real, result, result.axis, "stored")
        return self.conv(op, b)

    def conv(self, op: Op, b: Rewriter) -> Value:
        lhs, rhs = op.operands
        dn = resolve_dimension_numbers(view(op).dimension_numbers, lhs.type.rank)  # any spelling: the pass runs anywhere
        attrs = {name: value for name, value in op.attrs.items() if name != "preferred_element_type"}
        q_rhs = _quant(rhs.type)
        if not is_quantized(lhs.type.dtype):  # hybrid: the float conv of the dequantized kernel
            kernel = dequantize(b, self.storage(rhs), q_rhs, "rhs_real")
            return b.create("conv", lhs, kernel, suffix="conv", **attrs)
        q_lhs, q_out = _quant(lhs.type), _quant(op.result.type)
        wide = _accumulator(q_lhs, self.integer_conv)
        shifted_lhs = _shifted(b, self.storage(lhs), q_lhs, None, wide, "lhs")
        shifted_rhs = _shifted(b, self.storage(rhs), q_rhs, None if q_rhs.axis is None else dn.rhs_spec[0], wide, "rhs")
        acc = b.create("conv", shifted_lhs, shifted_rhs, suffix="acc", **attrs)
        expressed = numpy_dtype(q_out.expressed)
        multipliers = (np.float64(np.asarray(q_lhs.scales[0]).astype(expressed))
                       * np.asarray(q_rhs.scales, np.float64).astype(expressed).astype(np.float64))
        wide_acc = acc if wide == "f64" else b.create("convert", acc, suffix="acc_f64", new_dtype="f64")
        axis = None if q_rhs.axis is None else dn.out_spec[1]
        scaled = b.create("multiply", wide_acc, _per_slice(b, multipliers, axis, wide_acc.type, "multiplier"), suffix="real_f64")
        real = b.create("convert", scaled, suffix="real", new_dtype=q_out.expressed)
        return quantize(b, real, q_out, None if q_out.axis is None else dn.out_spec[1], "stored")


def _involves_quantized(op: Op) -> bool:
    return any(is_quantized(v.type.dtype) for v in (*op.operands, op.result))


@dataclass(frozen=True)
class LowerQuantized(Pass):
    name = "lower-quantized"
    summary = "quantized types and ops become integer and float ops on the stored integers (XLA runs no !quant type)"
    integer_conv: bool = True  # false: the shifted operands' conv in f64 (exact), for XLA:GPU, which has no integer conv

    def run(self, graph: Graph) -> bool:
        quantized_inputs = [v for v in graph.inputs if is_quantized(v.type.dtype)]
        ops = [op for op in graph.ops if op.kind in QUANTIZED_KINDS and _involves_quantized(op)]
        if not ops and not quantized_inputs:
            return False
        lowering = _Lowering(graph, {}, self.integer_conv)
        for index, value in enumerate(graph.inputs):
            if is_quantized(value.type.dtype):
                stored = Value(value.name, TensorType(value.type.shape, _quant(value.type).storage_dtype()))
                stored.sharding = value.sharding
                graph.inputs[index] = stored
                lowering.stored[id(value)] = stored
        replaced = []
        for op in ops:
            replacement = lowering.lower(op)
            replaced.append((op, replacement))
            if is_quantized(op.result.type.dtype):
                lowering.stored[id(op.result)] = replacement
            else:
                graph.replace_all_uses_with(op.result, replacement)
        graph.outputs = [lowering.stored.get(id(v), v) for v in graph.outputs]
        for op in reversed(ops):  # users first: every user of a quantized result is a quantized op
            op.drop_operands()
            graph.ops.remove(op)
        for op, replacement in replaced:  # what stands for an op takes its name (outputs keep theirs)
            replacement.name = op.name
        return True
