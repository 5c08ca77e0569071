"""lower-quantized: quantized types and ops become integer and float StableHLO that XLA runs.

XLA compiles no `!quant.uniform` type (jaxlib's PJRT refuses `stablehlo.uniform_quantize`),
so every quantized value becomes its stored integers (the storage type: i8, ui8, i16, i32;
graph inputs and outputs too, which is what `--inputs` feeds and `--outputs` writes) and:

- `uniform_dequantize` is the spec's `dequantize`: (stored - zero_point), exact in i32,
  converted to the expressed type, times the scale (per axis: the slice's);
- `uniform_quantize` is the spec's `quantize`: x / scale + zero_point, clamped to
  [storage_min, storage_max], `round_nearest_even`, converted to the storage type (a
  quantized operand is dequantized first);
- a quantized `conv` with 8-bit storage (the `cpu` pipeline) is an i8 x i8 conv accumulated
  in i32 of the stored integers themselves (u8 storage moved into i8 by subtracting 128, its
  zero point with it), which XLA:CPU runs about as fast as the f32 conv, with the zero points
  applied outside it. Over the valid taps of each window (padding and the holes of lhs
  dilation are real zeros, which the conv's own zero padding of the stored values skips):
  sum((l - z_l)(r - z_r)) = conv(l, r) - z_r[o] * windowsum(l) - z_l * sum(r - z_r[o]),
  the last a constant per output position and feature, exact at the borders, computed here
  when the kernel is a constant (else by a conv of ones over the input's valid positions).
  A zero zero point (symmetric weights: the usual case) emits no term.
- a quantized conv the `cpu` pipeline's XLA runs slowly as an integer conv (`exact_f32`):
  a grouped one (feature or batch groups, depthwise included), which XLA:CPU runs as a dense
  conv over a block-diagonal kernel it builds on every call, and one YNNPACK does not take
  (few features, a window larger than the input, a channels-first first conv; a 3-D conv is
  judged by the 2-D convs the cpu pipeline makes of it), which XLA upcasts to an i32 conv
  in its generic loop, is the f32 conv of the zero-point-shifted operands where every
  partial sum f32 holds exactly (below 2^24 in magnitude: the largest
  shifted input times the largest per-window sum of |r - z_r[o]|, the kernel's own values
  when it is a constant); a grouped one then becomes a tap sum (`cpu-depthwise-tap-sum`).
  A grouped one's padding and lhs dilation's holes go on lhs's stored integers, as the zero
  point the shift makes the real 0, so that the tap sum reads 8-bit values, not a padded
  f32 copy (`padded_storage`). Each 8-bit value quantized from such a tap sum within
  TAP_SUM_DEPTH producers (the conv's own requantized result, whether the spec's quantize
  or an importer's dequantize-quantize of the accumulator, and the quantized activations
  computed from it) is an `optimization_barrier`'s (`stored_once`): XLA fuses a tap sum,
  cheap-looking adds, into every fusion that reads what is computed from it, and computes
  it once only behind a barrier (jaxlib 0.12; 0.10.2 drops barriers before fusing).
- otherwise (16- and 32-bit storage, or `integer_conv=false`: the gpu pipeline, as XLA:GPU
  compiles no integer conv, cuDNN offering none of this form) it is the conv of the
  zero-point-shifted operands, (lhs - z_lhs) and (rhs - z_rhs[o]), in i64 (f64 without
  integer convs, which holds every such sum exactly); its zero padding is the real value 0.
- either sum times s_lhs * s_rhs[o] (in f64, rounded once to the expressed type) is the
  spec's float conv wherever the dequantized operands are exact in the expressed type (and
  within an ulp otherwise); it is then quantized as above.
- with `integer_conv=false`, a plain integer conv into at most 32 bits (ONNX's ConvInteger)
  is the f64 conv of its operands converted back: XLA:GPU compiles no integer conv;
- with `exact_f32` (the cpu pipeline), a plain i32 conv (ONNX's ConvInteger), which XLA:CPU
  runs in its generic loop, is the f32 conv of its operands converted back to i32 where the
  operands' producers bound every partial sum below 2^24 (`integer_range`: 8-bit values
  converted, less a constant or run-time 8-bit zero point; a constant kernel's own values);
  past that bound, with a constant kernel, f32 convs over ranges of its input features that
  each stay below it, converted to i32 and added; a plain i32 `dot_general` (ONNX's
  MatMulInteger) likewise becomes the f32 one where its sums stay below 2^24. The same
  integers either way;
- a hybrid conv (float lhs, quantized rhs) is the float conv of the dequantized rhs, as
  the spec's `hybrid_dequantize_then_op`;
- a conv whose result type is its accumulator's (i32, zero point 0, the product of the
  operands' scales per output feature: the ONNX frontend's QLinearConv) is the exact sums,
  as i32; `bitcast_convert` between a quantized type and a plain one is no op on the stored
  integers (the frontend's requantization, ONNX Runtime's arithmetic, then runs on them);
- `transpose`, `reshape` and `reverse` of a quantized value (the layout changes of the JAX
  export path, and the kernel moves `lower-conv-transpose` builds) are the same op on the
  stored integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from convc.dtypes import QuantType, is_integer, is_quantized, itemsize, numpy_dtype, quant_type
from convc.integer_range import F32_EXACT, LAYOUT_MOVES, integer_range, largest_magnitude
from convc.ir import Graph, Op, TensorType, Value
from convc.ops import view
from convc.ops.base import OpFactory
from convc.ops.conv import Forward, assemble, explicit_padding, read_forward, resolve_dimension_numbers, spatial
from convc.pass_manager import Pass
from convc.rewrite import Rewriter

# Ops that only move a quantized value's elements: the same op on its stored integers.
MOVES = LAYOUT_MOVES
QUANTIZED_KINDS = ("uniform_quantize", "uniform_dequantize", "conv", "bitcast_convert", *MOVES)


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
    """stored - zero_point, exact in `wide` (an integer type, f32 or f64: at most 2^17 in magnitude)."""
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
    of `x`: divide, add the zero point, clamp, round half to even, convert. XLA makes the
    division a product with the scale's rounded reciprocal, one ulp off the quotient for some
    x, which rounds a value within that ulp of a half step to the other integer (rare in real
    data; `rounded_quotient` divides exactly, at a cost measured too high for every
    activation of an int8 network: docs/benchmarks.md)."""
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


EIGHT_BITS = ("i8", "u8")


def bitcast_stored(b: OpFactory, source: Value, dtype: str) -> Value:
    """`bitcast_convert` on stored integers: `source` (a plain tensor, or a quantized value's
    stored integers) read as `dtype`'s storage; no op where the element types already agree."""
    found = quant_type(dtype)
    target = dtype if found is None else found.storage_dtype()
    return source if source.type.dtype == target else b.create("bitcast_convert", source, suffix="stored", new_dtype=target)


def is_accumulator(q_lhs: QuantType, q_rhs: QuantType, q_out: QuantType) -> bool:
    """Whether a conv's result type is its accumulator's: i32 storage, zero point 0, and the
    scale (per output feature where the rhs is per axis) the product of the operands' scales
    as the expressed type computes it. The exact sum quantized to that type is the sum itself
    (what an i32 accumulator holds; the spec's dequantize-conv-quantize in f32 rounds its way
    to an approximation of it)."""
    if q_out.storage != "i32" or any(q_out.zero_points) or (q_out.axis is None) != (q_rhs.axis is None):
        return False
    dtype = numpy_dtype(q_out.expressed)
    products = np.asarray(q_lhs.scales[0], np.float64).astype(dtype) * np.asarray(q_rhs.scales, np.float64).astype(dtype)
    return bool(np.array_equal(products, np.asarray(q_out.scales, np.float64).astype(dtype)))


def exact_sums_i32(b: OpFactory, acc: Value) -> Value:
    """The exact sums `acc` (i32; f32 below 2^24; f64 or i64) as i32, saturated as the spec's
    quantize to an i32 type saturates."""
    if acc.type.dtype == "i32":
        return acc
    if acc.type.dtype == "i64":
        acc = b.create("convert", acc, suffix="acc_f64", new_dtype="f64")  # exact: 8- and 16-bit sums stay below 2^53
    low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    if acc.type.dtype == "f64":
        acc = b.create("clamp", acc, suffix="acc_saturated", min=float(low), max=float(high))
    return b.create("convert", acc, suffix="acc_i32", new_dtype="i32")


def _wrap_i32(values: np.ndarray) -> np.ndarray:
    """int64 values as i32 modulo 2^32: i32 adds wrap the same way, so a sum whose total fits
    in i32 comes out exact whatever its terms."""
    return ((values.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def _as_i8(b: OpFactory, stored: Value, quant: QuantType, suffix: str) -> tuple[Value, np.ndarray]:
    """8-bit stored integers as i8 and their zero points (int64): u8 storage moves down by
    128 (exact: 0..255 becomes -128..127), its zero points with it, so x - z is unchanged."""
    zero_points = np.asarray(quant.zero_points, np.int64)
    if quant.storage == "i8":
        return stored, zero_points
    wide = b.create("convert", stored, suffix=f"{suffix}_i32", new_dtype="i32")
    offset = _per_slice(b, np.asarray(128, np.int32), None, wide.type, f"{suffix}_offset")
    moved = b.create("subtract", wide, offset, suffix=f"{suffix}_moved")
    return b.create("convert", moved, suffix=f"{suffix}_i8", new_dtype="i8"), zero_points - 128


def constant_storage(value: Value) -> np.ndarray | None:
    """The stored integers of a quantized value known at compile time (a float constant
    quantized, through layout moves), computed as the lowered `quantize` computes them; else None."""
    op = value.producer
    if op is None:
        return None
    if op.kind in MOVES:
        inner = constant_storage(op.operands[0])
        return None if inner is None else _moved(op, inner)
    source = op.operands[0].producer if op.kind == "uniform_quantize" else None
    if source is None or source.kind != "constant" or is_quantized(op.operands[0].type.dtype):
        return None
    quant = _quant(value.type)
    if quant.expressed not in ("f32", "f64"):
        return None
    dtype = numpy_dtype(quant.expressed)
    x = np.asarray(source.attrs["value"], dtype)

    def along(values: tuple[float, ...] | tuple[int, ...]) -> np.ndarray:
        array = np.asarray(values, np.float64).astype(dtype)
        if quant.axis is None:
            return array.reshape(())
        return array.reshape([-1 if d == quant.axis else 1 for d in range(x.ndim)])

    real = x / along(quant.scales)
    if any(quant.zero_points):
        real = real + along(quant.zero_points)
    low, high = quant.limits()
    return np.rint(np.clip(real, dtype.type(low), dtype.type(high))).astype(quant.storage_numpy())


def _moved(op: Op, inner: np.ndarray) -> np.ndarray:
    """What the layout move `op` (one of MOVES) makes of its operand's known values `inner`."""
    if op.kind == "transpose":
        return np.transpose(inner, op.attrs["permutation"])
    if op.kind == "reshape":
        return inner.reshape(op.attrs["new_sizes"])
    return np.flip(inner, tuple(op.attrs["dimensions"]))


def valid_taps(lhs: TensorType, rhs: TensorType, fwd: Forward, pads: tuple[tuple[int, int], ...],
               out_spatial: tuple[int, ...]) -> list[np.ndarray]:
    """Per spatial dim, the (output position, kernel tap) matrix of 0/1: 1 where the tap lands
    on an input element, 0 on padding or a hole of lhs dilation."""
    masks = []
    for n, k, out, s, (lo, _), a, r in zip(spatial(lhs.shape, fwd.dn.lhs_spec), spatial(rhs.shape, fwd.dn.rhs_spec),
                                          out_spatial, fwd.strides, pads, fwd.lhs_dilation, fwd.rhs_dilation):
        u = np.arange(out)[:, None] * s + np.arange(k)[None, :] * r - lo
        masks.append(((u >= 0) & (u <= (n - 1) * a) & (u % a == 0)).astype(np.int64))
    return masks


def valid_sums(kernel: np.ndarray, rhs_spec: tuple[int, ...], masks: list[np.ndarray]) -> np.ndarray:
    """[o, out positions...]: the sum of `kernel` over the valid taps of each output position
    (and over its input features), exact in int64."""
    summed = np.moveaxis(kernel.astype(np.int64), [rhs_spec[0], rhs_spec[1], *rhs_spec[2:]], range(kernel.ndim)).sum(axis=1)
    for d, mask in enumerate(masks):
        summed = np.moveaxis(np.tensordot(summed, mask, axes=([1 + d], [1])), -1, 1 + d)
    return summed


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
    exact_f32: bool
    tap_sums: set[int] = field(default_factory=set)  # ids of the f32 grouped convs' accumulators

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
        if op.kind == "bitcast_convert":
            stored = bitcast_stored(b, self.storage(x) if is_quantized(x.type.dtype) else x, op.result.type.dtype)
            return self.stored_once(stored, b) if is_quantized(op.result.type.dtype) else stored
        if op.kind == "uniform_quantize":
            real = dequantize(b, self.storage(x), _quant(x.type), "real") if is_quantized(x.type.dtype) else x
            result = _quant(op.result.type)
            return self.stored_once(quantize(b, real, result, result.axis, "stored"), b)
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
        known = constant_storage(rhs) if self.integer_conv else None  # only the cpu forms read it
        wide = self.sum_type(op, q_lhs, q_rhs, known)
        if wide == "i8":
            wide, acc = "i32", self.conv8(op, b, attrs, known)
        else:
            stored_lhs, attrs = self.padded_storage(op, b, attrs, q_lhs, wide)
            shifted_lhs = _shifted(b, stored_lhs, q_lhs, None, wide, "lhs")
            shifted_rhs = _shifted(b, self.storage(rhs), q_rhs, None if q_rhs.axis is None else dn.rhs_spec[0], wide, "rhs")
            exact = {"precision": "HIGHEST"} if wide == "f32" else {}  # no regrouping of the exact sums (cpu-conv-winograd)
            acc = b.create("conv", shifted_lhs, shifted_rhs, suffix="acc", **{**attrs, **exact})
            if wide == "f32" and _is_grouped(op):
                self.tap_sums.add(id(acc))
        if is_accumulator(q_lhs, q_rhs, q_out):
            return exact_sums_i32(b, acc)
        expressed = numpy_dtype(q_out.expressed)
        multipliers = (np.float64(np.asarray(q_lhs.scales[0]).astype(expressed))
                       * np.asarray(q_rhs.scales, np.float64).astype(expressed).astype(np.float64))
        wide_acc = acc if wide == "f64" else b.create("convert", acc, suffix="acc_f64", new_dtype="f64")
        axis = None if q_rhs.axis is None else dn.out_spec[1]
        scaled = b.create("multiply", wide_acc, _per_slice(b, multipliers, axis, wide_acc.type, "multiplier"), suffix="real_f64")
        real = b.create("convert", scaled, suffix="real", new_dtype=q_out.expressed)
        return self.stored_once(quantize(b, real, q_out, None if q_out.axis is None else dn.out_spec[1], "stored"), b)

    def stored_once(self, stored: Value, b: OpFactory) -> Value:
        """8-bit stored integers computed from a tap sum's accumulator (a grouped conv's f32
        form, which cpu-depthwise-tap-sum makes a sum of taps) within TAP_SUM_DEPTH producers,
        behind an optimization_barrier: XLA fuses such a sum, cheap-looking adds, into every
        fusion that reads what is computed from it (an int8 SiLU's sigmoid and its product,
        each a fusion of its own), and computes it once only behind a barrier. The 8-bit
        values are the narrowest points after the sum. (Barriers on the 8-bit results of
        every quantize instead ran an int8 MobileNet v2 1.44x slower.)"""
        if itemsize(stored.type.dtype) != 1 or not _computed_from(stored, self.tap_sums, TAP_SUM_DEPTH):
            return stored
        return b.create("optimization_barrier", stored, suffix="once")

    def padded_storage(self, op: Op, b: Rewriter, attrs: dict[str, object], q_lhs: QuantType,
                       wide: str) -> tuple[Value, dict[str, object]]:
        """lhs's stored integers and the conv's attributes, for the float conv of the shifted
        operands. A grouped one (a depthwise tap sum on the cpu target) gets its padding and its
        lhs dilation's holes on the stored integers, as the zero point, which the shift makes
        the real 0 the conv pads with: a pad of 8-bit values rather than of the f32 ones (a
        quarter of the bytes), and the conversion can fuse into the taps that read it."""
        lhs, rhs = op.operands
        stored = self.storage(lhs)
        if wide not in ("f32", "f64") or not _is_grouped(op):
            return stored, attrs
        fwd = read_forward(view(op), lhs.type.rank)
        pads = explicit_padding(view(op).padding, spatial(lhs.type.shape, fwd.dn.lhs_spec),
                                spatial(rhs.type.shape, fwd.dn.rhs_spec), fwd.strides, fwd.rhs_dilation)
        if any(lo < 0 or hi < 0 for lo, hi in pads) or all(lo == hi == 0 for lo, hi in pads) and all(d == 1 for d in fwd.lhs_dilation):
            return stored, attrs
        config = [(0, 0, 0)] * lhs.type.rank
        for dim, (lo, hi), dilation in zip(fwd.dn.lhs_spec[2:], pads, fwd.lhs_dilation):
            config[dim] = (lo, hi, dilation - 1)
        padded = b.create("pad", stored, suffix="lhs_padded", padding_config=tuple(config),
                          padding_value=float(q_lhs.zero_points[0]))
        return padded, {name: value for name, value in attrs.items() if name not in ("padding", "lhs_dilation")}

    def sum_type(self, op: Op, q_lhs: QuantType, q_rhs: QuantType, known: np.ndarray | None) -> str:
        """How the conv's integer sums are computed: "i8" (the i8 x i8 -> i32 conv of the stored
        integers and its zero-point terms), else the type of the shifted operands' conv. XLA:CPU
        runs a grouped integer conv as a dense one over a block-diagonal kernel it builds on
        every call, and an integer conv YNNPACK does not take in its generic loop, so such a
        conv whose sums f32 holds exactly is an f32 conv (a grouped one becomes a tap sum).
        `known`: the kernel's stored integers where it is a constant."""
        if (self.integer_conv and self.exact_f32 and (_is_grouped(op) or _few_input_features(op) or not _ynnpack_takes_i8(op))
                and _sums_fit_f32(op, q_lhs, q_rhs, known)):
            return "f32"
        if self.integer_conv and q_lhs.storage in EIGHT_BITS and q_rhs.storage in EIGHT_BITS:
            return "i8"
        return _accumulator(q_lhs, self.integer_conv)

    def conv8(self, op: Op, b: Rewriter, attrs: dict[str, object], known: np.ndarray | None) -> Value:
        """sum((l - z_l)(r - z_r)) over each window's valid taps, in i32: the i8 x i8 -> i32 conv
        of the stored integers, less z_r[o] * windowsum(l), less z_l * sum(r - z_r[o]); a zero
        zero point adds no term."""
        lhs, rhs = op.operands
        q_lhs, q_rhs = _quant(lhs.type), _quant(rhs.type)
        x, zx = _as_i8(b, self.storage(lhs), q_lhs, "lhs")
        if known is None:
            w, zw = _as_i8(b, self.storage(rhs), q_rhs, "rhs")
        else:  # the kernel's integers, here: its constant, and its valid-tap sums computed now
            offset = 128 if q_rhs.storage == "u8" else 0
            known = known.astype(np.int64) - offset
            w, zw = b.create("constant", suffix="rhs_i8", value=known.astype(np.int8)), np.asarray(q_rhs.zero_points, np.int64) - offset
        conv_attrs = {**attrs, "preferred_element_type": "i32"}
        acc = b.create("conv", x, w, suffix="acc", **conv_attrs)
        fwd = read_forward(view(op), lhs.type.rank)
        if any(zw):
            acc = b.create("subtract", acc, self.window_term(b, x, w.type, zw, fwd, conv_attrs, acc.type), suffix="acc_zr")
        if zx[0]:
            pads = explicit_padding(view(op).padding, spatial(lhs.type.shape, fwd.dn.lhs_spec),
                                    spatial(rhs.type.shape, fwd.dn.rhs_spec), fwd.strides, fwd.rhs_dilation)
            masks = valid_taps(lhs.type, rhs.type, fwd, pads, spatial(acc.type.shape, fwd.dn.out_spec))
            term = self.kernel_term(b, x.type, w, known, int(zx[0]), zw, fwd, masks, conv_attrs)
            if term.type.shape != acc.type.shape:  # the same for every batch
                term = b.create("broadcast_in_dim", term, suffix="zl_term_b", shape=acc.type.shape,
                                broadcast_dimensions=tuple(range(acc.type.rank)))
            acc = b.create("subtract", acc, term, suffix="acc_zl")
        return acc

    @staticmethod
    def window_term(b: Rewriter, x: Value, kernel: TensorType, zw: np.ndarray, fwd: Forward, conv_attrs: dict[str, object],
                    out: TensorType) -> Value:
        """z_r[o] * (the sum of l over each window's taps and its group's input features): a conv
        with a ones kernel of one output feature per group, spread over the group's features."""
        dn = fwd.dn
        groups = fwd.feature_groups * fwd.batch_groups
        ones_shape = assemble(dn.rhs_spec, groups, kernel.shape[dn.rhs_spec[1]], spatial(kernel.shape, dn.rhs_spec))
        ones = b.create("constant", suffix="ones", value=np.ones(ones_shape, np.int8))
        sums = b.create("conv", x, ones, suffix="window_sums", **conv_attrs)
        feature, features = dn.out_spec[1], out.shape[dn.out_spec[1]]
        if groups != features:  # feature o is group o // (features / groups): split, broadcast, merge
            split = (*out.shape[:feature], groups, features // groups, *out.shape[feature + 1:])
            dims = tuple(d if d <= feature else d + 1 for d in range(out.rank))
            spread = b.create("broadcast_in_dim", sums, suffix="window_sums_b", shape=split, broadcast_dimensions=dims)
            sums = b.create("reshape", spread, suffix="window_sums_spread", new_sizes=out.shape)
        factor = _per_slice(b, _wrap_i32(zw), feature if len(zw) > 1 else None, out, "zr")
        return b.create("multiply", sums, factor, suffix="zr_term")

    @staticmethod
    def kernel_term(b: Rewriter, lhs: TensorType, w: Value, known: np.ndarray | None, zx: int, zw: np.ndarray, fwd: Forward,
                    masks: list[np.ndarray], conv_attrs: dict[str, object]) -> Value:
        """z_l * sum(r - z_r[o]) over each output position's valid taps and input features, for
        batch 1 (it is the same for every batch): a constant when the kernel is one, else a conv
        of ones over the input's positions (a stored 0 on padding and holes) less z_r[o] times
        the valid tap count."""
        dn = fwd.dn
        kernel = w.type
        if known is not None:
            shifted = known - zw.reshape([-1 if d == dn.rhs_spec[0] else 1 for d in range(kernel.rank)])
            sums = valid_sums(shifted, dn.rhs_spec, masks)[None]
            return b.create("constant", suffix="zl_term", value=_wrap_i32(_to_layout(zx * sums, dn.out_spec)))
        ones_shape = assemble(dn.lhs_spec, fwd.batch_groups, lhs.shape[dn.lhs_spec[1]], spatial(lhs.shape, dn.lhs_spec))
        ones = b.create("constant", suffix="valid", value=np.ones(ones_shape, np.int8))
        sums = b.create("conv", ones, w, suffix="kernel_sums", **conv_attrs)
        if any(zw):
            taps = np.ones((), np.int64) * kernel.shape[dn.rhs_spec[1]]
            for mask in masks:
                taps = np.multiply.outer(taps, mask.sum(axis=1))
            features = kernel.shape[dn.rhs_spec[0]]
            counts = np.broadcast_to(zw.reshape([-1] + [1] * len(masks)) * taps[None], (features, *taps.shape))
            sums = b.create("subtract", sums, b.create("constant", suffix="zr_counts", value=_wrap_i32(_to_layout(counts[None], dn.out_spec))),
                            suffix="kernel_sums_shifted")
        factor = _per_slice(b, np.asarray(zx, np.int32), None, sums.type, "zl")
        return b.create("multiply", sums, factor, suffix="zl_term")


TAP_SUM_DEPTH = 24  # how many producers back `stored_once` looks for a tap sum: a dequantize, bias and quantize's steps


def _computed_from(value: Value, sources: set[int], depth: int) -> bool:
    """Whether `value` is one of `sources` (by id), or computed from one within `depth` producers."""
    frontier, seen = [value], {id(value)}
    for _ in range(depth + 1):
        if any(id(v) in sources for v in frontier):
            return True
        frontier = [v for f in frontier if f.producer is not None for v in f.producer.operands if id(v) not in seen]
        seen.update(id(v) for v in frontier)
    return False


def _is_grouped(op: Op) -> bool:
    fwd = read_forward(view(op), op.operands[0].type.rank)
    return fwd.feature_groups > 1 or fwd.batch_groups > 1


YNNPACK_FEW_FEATURES = 16  # XLA:CPU hands YNNPACK no conv of at most this many input and output features


def _few_input_features(op: Op) -> bool:
    """At most YNNPACK_FEW_FEATURES input features per group: an image network's first conv (3), which reads
    the channels-first input through the transpose cpu-layout-nhwc puts before it. XLA folds
    that transpose into the conv, whose channels-first i8 form YNNPACK then declines; its
    f32 form, over so short a contraction, costs about what the i8 one would."""
    lhs, rhs = op.operands
    dn = resolve_dimension_numbers(view(op).dimension_numbers, lhs.type.rank)
    return rhs.type.shape[dn.rhs_spec[1]] <= YNNPACK_FEW_FEATURES


def _ynnpack_takes_i8(op: Op) -> bool:
    """Whether XLA:CPU hands YNNPACK this conv's i8 form (jaxlib 0.10.2 to 0.12 decide so): 2-D,
    no lhs dilation, more than 16 input or output features, and neither its kernel window
    nor its output larger than its input, per spatial dim. (The layout is channels-last by
    then: cpu-layout-nhwc runs later.) Else XLA runs it as an i32 conv in its generic loop.
    A conv of 3 or more spatial dims is judged as the 2-D convs the cpu pipeline's
    cpu-conv3d-as-conv2d-sum makes of it later (one per tap of a dim folded into the batch;
    the window and output test holds for whichever dim that is): YNNPACK takes those."""
    lhs, rhs = op.operands
    fwd = read_forward(view(op), lhs.type.rank)
    dn = fwd.dn
    inputs, kernel = spatial(lhs.type.shape, dn.lhs_spec), spatial(rhs.type.shape, dn.rhs_spec)
    outputs = spatial(op.result.type.shape, dn.out_spec)
    features = (lhs.type.shape[dn.lhs_spec[1]], op.result.type.shape[dn.out_spec[1]])
    return (len(inputs) >= 2 and all(d == 1 for d in fwd.lhs_dilation) and max(features) > YNNPACK_FEW_FEATURES
            and all(k <= n and o <= n for k, o, n in zip(kernel, outputs, inputs)))


def _largest_shift(quant: QuantType) -> np.ndarray:
    """max |stored - zero_point| over the storage type's every value, per zero point."""
    info = np.iinfo(quant.storage_numpy())
    zero_points = np.asarray(quant.zero_points, np.int64)
    return np.maximum(int(info.max) - zero_points, zero_points - int(info.min))


def _sums_fit_f32(op: Op, q_lhs: QuantType, q_rhs: QuantType, known: np.ndarray | None) -> bool:
    """Whether every partial sum of (l - z_l)(r - z_r[o]) over a window is below 2^24 in
    magnitude, whatever the order: then the f32 conv of the shifted operands is exact. A
    constant kernel bounds it by its own values, another by its storage type's."""
    lhs, rhs = op.operands
    dn = resolve_dimension_numbers(view(op).dimension_numbers, lhs.type.rank)
    largest_lhs = int(_largest_shift(q_lhs).max())
    if known is None:
        per_window = int(_largest_shift(q_rhs).max()) * (rhs.type.num_elements() // rhs.type.shape[dn.rhs_spec[0]])
    else:
        zero_points = np.asarray(q_rhs.zero_points, np.int64)
        if q_rhs.axis is not None:
            zero_points = zero_points.reshape([-1 if d == dn.rhs_spec[0] else 1 for d in range(known.ndim)])
        magnitudes = np.abs(known.astype(np.int64) - zero_points)
        per_window = _largest_window_sum(magnitudes, dn.rhs_spec[0])
    return largest_lhs * per_window < F32_EXACT


def _largest_window_sum(magnitudes: np.ndarray, out_dim: int) -> int:
    """The largest sum of a kernel's `magnitudes` over one output feature (dimension `out_dim`):
    its input features and taps, what one output element sums products over."""
    return int(np.moveaxis(magnitudes, out_dim, 0).reshape(magnitudes.shape[out_dim], -1).sum(axis=1).max())


def _float_conv(graph: Graph, op: Op, dtype: str, kernel: np.ndarray | None = None) -> None:
    """Replace the integer conv or dot_general `op` by the same op of its operands converted to
    `dtype` (the rhs `kernel` as a `dtype` constant where it is known), converted back to its
    result type."""
    b = Rewriter(graph, op)
    lhs, rhs = op.operands
    lhs = b.create("convert", lhs, suffix=f"lhs_{dtype}", new_dtype=dtype)
    rhs = (b.create("convert", rhs, suffix=f"rhs_{dtype}", new_dtype=dtype) if kernel is None
           else b.create("constant", suffix=f"rhs_{dtype}", value=kernel.astype(numpy_dtype(dtype))))
    attrs = {name: value for name, value in op.attrs.items() if name != "preferred_element_type"}
    if op.kind == "conv" and dtype == "f32":  # the direct sums, exact, not a regrouping of them (cpu-conv-winograd)
        attrs["precision"] = "HIGHEST"
    sums = b.create(op.kind, lhs, rhs, suffix=f"sums_{dtype}", **attrs)
    b.replace_anchor(b.create("convert", sums, suffix="sums", new_dtype=op.result.type.dtype))


def _float_integer_convs(graph: Graph) -> bool:
    """Without integer convs (XLA:GPU compiles none), each plain integer conv into at most 32
    bits (ONNX's ConvInteger: i32 sums of shifted 8-bit operands) becomes the f64 conv of its
    operands converted back to its type: exact wherever the integer conv does not overflow
    (its true sums below 2^31 for i32: f64 holds every integer below 2^53)."""
    convs = [op for op in graph.ops if op.kind == "conv" and all(is_integer(v.type.dtype) for v in (*op.operands, op.result))
             and op.result.type.dtype != "i64"]
    for op in convs:
        _float_conv(graph, op, "f64")
    return bool(convs)


# --- plain i32 convs of 8-bit values (ONNX's ConvInteger) on the cpu pipeline ---------------

def _constant_integers(value: Value) -> np.ndarray | None:
    """The values of a constant, through layout moves; None for any other value."""
    op = value.producer
    if op is None:
        return None
    if op.kind == "constant":
        return np.asarray(op.attrs["value"])
    inner = _constant_integers(op.operands[0]) if op.kind in MOVES else None
    return None if inner is None else _moved(op, inner)


def _is_i32(op: Op, kind: str) -> bool:
    """A plain `kind` op (conv, dot_general) of i32 operands into i32, none of them empty: the
    form ConvInteger and MatMulInteger import as, which XLA:CPU runs in its generic loop (tens
    of times the f32 op's time)."""
    return op.kind == kind and all(v.type.dtype == "i32" and v.type.num_elements() > 0 for v in (*op.operands, op.result))


def _dot_sums_fit_f32(op: Op, rhs_values: np.ndarray | None) -> bool:
    """Whether every partial sum of a plain integer dot_general's products is below 2^24 in
    magnitude: the largest |lhs| its producers prove times the largest sum of |rhs| over the
    contracting dims for one output element (`rhs_values`: its values where it is a constant;
    else its proven largest |rhs| times the contracting size)."""
    lhs, rhs = op.operands
    contracting = tuple(view(op).attr("rhs_contracting_dimensions"))
    size = int(np.prod([rhs.type.shape[d] for d in contracting], dtype=np.int64))
    if rhs_values is not None:
        others = [d for d in range(rhs_values.ndim) if d not in contracting]
        magnitudes = np.abs(np.transpose(rhs_values.astype(np.int64), [*others, *contracting]))
        per_output = int(magnitudes.reshape(-1, size).sum(axis=1).max())
    else:
        per_output = largest_magnitude(integer_range(rhs)) * size
    return largest_magnitude(integer_range(lhs)) * per_output < F32_EXACT


def _integer_sums_fit_f32(op: Op, kernel: np.ndarray | None) -> bool:
    """Whether every partial sum of a plain integer conv's products is below 2^24 in magnitude:
    the largest |lhs| its producers prove (`integer_range`) times the largest per-output-feature
    sum of |kernel| (`kernel`: its values where it is a constant; else its proven largest |rhs|
    times the window size)."""
    lhs, rhs = op.operands
    out_dim = resolve_dimension_numbers(view(op).dimension_numbers, lhs.type.rank).rhs_spec[0]
    if kernel is not None:
        per_window = _largest_window_sum(np.abs(kernel.astype(np.int64)), out_dim)
    else:
        per_window = largest_magnitude(integer_range(rhs)) * (rhs.type.num_elements() // max(rhs.type.shape[out_dim], 1))
    return largest_magnitude(integer_range(lhs)) * per_window < F32_EXACT


def _feature_chunks(op: Op, kernel: np.ndarray) -> list[tuple[int, int]] | None:
    """Contiguous ranges of an ungrouped conv's input features, greedily as long as each keeps
    every partial sum over its features below 2^24 (the largest |lhs| its producers prove times
    the largest per-output-feature sum of |kernel| over the range); None for a grouped conv or
    where one feature alone may pass the bound."""
    if _is_grouped(op):
        return None
    lhs = op.operands[0]
    largest_lhs = largest_magnitude(integer_range(lhs))
    dn = resolve_dimension_numbers(view(op).dimension_numbers, lhs.type.rank)
    per_feature = np.moveaxis(np.abs(kernel.astype(np.int64)), [dn.rhs_spec[0], dn.rhs_spec[1]], [0, 1])
    per_feature = per_feature.reshape(*per_feature.shape[:2], -1).sum(axis=2)  # [output feature, input feature]
    chunks, start, running = [], 0, np.zeros(per_feature.shape[0], np.int64)
    for feature in range(per_feature.shape[1]):
        column = per_feature[:, feature]
        if largest_lhs * int(column.max()) >= F32_EXACT:
            return None
        if largest_lhs * int((running + column).max()) >= F32_EXACT:
            chunks.append((start, feature))
            start, running = feature, np.zeros_like(running)
        running = running + column
    return [*chunks, (start, per_feature.shape[1])]


def _chunked_f32_conv(graph: Graph, op: Op, kernel: np.ndarray, chunks: list[tuple[int, int]]) -> None:
    """Replace the i32 conv `op` by one f32 conv per range of input features in `chunks` (each
    exact: `_feature_chunks`), converted to i32 and added: i32 adds wrap as the i32 conv's
    sums do, so the total is the same integers, bit for bit."""
    b = Rewriter(graph, op)
    lhs = op.operands[0]
    dn = resolve_dimension_numbers(view(op).dimension_numbers, lhs.type.rank)
    attrs = {name: value for name, value in op.attrs.items() if name != "preferred_element_type"}
    total: Value | None = None
    for index, (start, stop) in enumerate(chunks):
        begin, end = [0] * lhs.type.rank, list(lhs.type.shape)
        begin[dn.lhs_spec[1]], end[dn.lhs_spec[1]] = start, stop
        part = b.create("slice", lhs, suffix=f"lhs_{index}", start_indices=tuple(begin), limit_indices=tuple(end))
        part = b.create("convert", part, suffix=f"lhs_{index}_f32", new_dtype="f32")
        weights = np.take(kernel, np.arange(start, stop), axis=dn.rhs_spec[1]).astype(np.float32)
        sums = b.create("conv", part, b.create("constant", suffix=f"rhs_{index}_f32", value=weights), suffix=f"sums_{index}_f32", **attrs)
        sums = b.create("convert", sums, suffix=f"sums_{index}", new_dtype=op.result.type.dtype)
        total = sums if total is None else b.create("add", total, sums, suffix=f"total_{index}")
    assert total is not None
    b.replace_anchor(total)


def _exact_f32_integer_convs(graph: Graph) -> bool:
    """Each plain i32 dot_general whose sums f32 holds exactly (`_dot_sums_fit_f32`: ONNX's
    MatMulInteger) becomes the f32 dot_general of its operands converted back to i32. Each
    plain i32 conv whose sums f32 holds exactly (`_integer_sums_fit_f32`: ONNX's ConvInteger of
    8-bit values less their zero points, with a constant kernel) becomes the f32 conv of its
    operands converted back to i32; one whose sums may not, with a constant kernel, the sum of
    such f32 convs over ranges of its input features (`_feature_chunks`). Either way the same
    integers, bit for bit; else it stays the i32 op."""
    changed = False
    for op in [op for op in graph.ops if _is_i32(op, "dot_general")]:
        rhs_values = _constant_integers(op.operands[1])
        if _dot_sums_fit_f32(op, rhs_values):
            _float_conv(graph, op, "f32", rhs_values)
            changed = True
    for op in [op for op in graph.ops if _is_i32(op, "conv")]:
        kernel = _constant_integers(op.operands[1])
        if _integer_sums_fit_f32(op, kernel):
            _float_conv(graph, op, "f32", kernel)
        elif kernel is not None and (chunks := _feature_chunks(op, kernel)) is not None:
            _chunked_f32_conv(graph, op, kernel, chunks)
        else:
            continue
        changed = True
    return changed


def _to_layout(array: np.ndarray, spec: tuple[int, ...]) -> np.ndarray:
    """An array ordered (batch, feature, spatial...) moved to the dims `spec` names."""
    return np.moveaxis(array, range(array.ndim), spec)


def _involves_quantized(op: Op) -> bool:
    return any(is_quantized(v.type.dtype) for v in (*op.operands, op.result))


def _keep_output_names(graph: Graph, names: dict[int, str]) -> None:
    """A graph output that now stands for another value (a passed-on stored integer, as a
    `bitcast_convert` to a quantized type leaves) takes the output's name, which is the
    graph's interface (the ONNX output a `--check` asks ONNX Runtime for); unless it is a
    graph input or another output too, whose name it keeps."""
    inputs = {id(v) for v in graph.inputs}
    for value in graph.outputs:
        name = names.get(id(value))
        if name is not None and id(value) not in inputs and sum(v is value for v in graph.outputs) == 1:
            value.name = name


@dataclass(frozen=True)
class LowerQuantized(Pass):
    name = "lower-quantized"
    summary = "quantized types and ops become integer and float ops on the stored integers (XLA runs no !quant type)"
    integer_conv: bool = True  # false: the shifted operands' conv in f64 (exact), for XLA:GPU, which has no integer conv
    exact_f32: bool = True  # with integer_conv: a conv XLA:CPU runs slowly as an integer one (quantized, or plain i32) is an f32 conv where that is exact

    def run(self, graph: Graph) -> bool:
        # plain integer convs first: the quantized convs' lowering builds integer convs of its own
        changed = _float_integer_convs(graph) if not self.integer_conv else self.exact_f32 and _exact_f32_integer_convs(graph)
        quantized_inputs = [v for v in graph.inputs if is_quantized(v.type.dtype)]
        ops = [op for op in graph.ops if op.kind in QUANTIZED_KINDS and _involves_quantized(op)]
        if not ops and not quantized_inputs:
            return changed
        lowering = _Lowering(graph, {}, self.integer_conv, self.exact_f32)
        for index, value in enumerate(graph.inputs):
            if is_quantized(value.type.dtype):
                stored = Value(value.name, TensorType(value.type.shape, _quant(value.type).storage_dtype()))
                stored.sharding = value.sharding
                graph.inputs[index] = stored
                lowering.stored[id(value)] = stored
        existing = {id(v) for v in graph.inputs} | {id(op.result) for op in graph.ops}
        replaced = []
        for op in ops:
            replacement = lowering.lower(op)
            replaced.append((op, replacement))
            if is_quantized(op.result.type.dtype):
                lowering.stored[id(op.result)] = replacement
            else:
                graph.replace_all_uses_with(op.result, replacement)
        outputs = [lowering.stored.get(id(v), v) for v in graph.outputs]
        output_names = {id(new): old.name for old, new in zip(graph.outputs, outputs, strict=True) if new is not old}
        graph.outputs = outputs
        for op in reversed(ops):  # users first: every user of a quantized result is a quantized op
            op.drop_operands()
            graph.ops.remove(op)
        named = set(existing)  # what stands for an op takes its name (outputs keep theirs); a value passed on keeps its own
        for op, replacement in replaced:
            if id(replacement) not in named:
                replacement.name = op.name
                named.add(id(replacement))
        _keep_output_names(graph, output_names)
        return True
