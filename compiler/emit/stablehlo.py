"""Graph -> StableHLO MLIR text: one rule per op kind, in StableHLO's pretty syntax.

Expects the canonical form the default pipeline produces (explicit dimension
numbers and pads); anything else is an internal error, not a user error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..diagnostics import ConvcError, InternalError
from ..dtypes import from_numpy, is_float, numpy_dtype
from ..ir import Graph, Op, TensorType, Value, attrs_key
from ..literals import dense_literal, int_list, is_splat, is_ssa_id, is_symbol_id, quote
from ..memo import memoized
from ..ops import ConvDimensionNumbers, view
from ..ops.attr_kinds import format_dimension_numbers
from ..ops.elementwise import ELEMENTWISE
from ..ops.pool import pool_padding
from ..ops.pool_grad import grad_padding
from . import sdy


class EmitContext:
    """SSA naming for one function: user names where MLIR allows them, fresh temporaries."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._taken: set[str] = set()
        self._next_index: dict[str, int] = {}  # per base, the first suffix not yet tried: naming stays linear
        self.lines: list[str] = []
        self.loc = ""

    def define(self, value: Value) -> str:
        name = self.fresh(value.name if is_ssa_id(value.name) else "v")
        self._names[id(value)] = name
        return name

    def fresh(self, base: str) -> str:
        """`base`, else `base_1`, `base_2`, ...: the first name not taken (every suffix tried
        before stays taken, so the search resumes where it last stopped)."""
        index = self._next_index.get(base, 0)
        name = f"{base}_{index}" if index else base
        while name in self._taken or name.isdigit():
            index += 1
            name = f"{base}_{index}"
        self._next_index[base] = index + 1
        self._taken.add(name)
        return f"%{name}"

    def use(self, value: Value) -> str:
        return self._names[id(value)]

    def emit(self, result: str, text: str) -> str:
        self.lines.append(f"    {result} = {text}{self.loc}")
        return result


EmitRule = Callable[[Op, EmitContext, str], None]
RULES: dict[str, EmitRule] = {}


def rule(*kinds: str) -> Callable[[EmitRule], EmitRule]:
    def register(fn: EmitRule) -> EmitRule:
        for kind in kinds:
            RULES[kind] = fn
        return fn
    return register


def emits(kind: str) -> bool:
    """Whether the emitter has a StableHLO form of op `kind` (others must be lowered first)."""
    return kind in RULES


def _scalar_constant(ctx: EmitContext, value: float, dtype: str, base: str) -> str:
    literal = dense_literal(np.array(value, dtype=numpy_dtype(dtype)))
    return ctx.emit(ctx.fresh(base), f"stablehlo.constant {literal}")


def _broadcast(ctx: EmitContext, operand: str, source: TensorType, dims: Sequence[int], target: TensorType, base: str) -> str:
    return ctx.emit(ctx.fresh(base), f"stablehlo.broadcast_in_dim {operand}, dims = {int_list(dims)} : ({source}) -> {target}")


@rule("constant")
def _constant(op: Op, ctx: EmitContext, result: str) -> None:
    ctx.emit(result, f"stablehlo.constant {dense_literal(op.attrs['value'])}")


@rule("add", "multiply")
def _binary(op: Op, ctx: EmitContext, result: str) -> None:
    lhs, rhs = (ctx.use(v) for v in op.operands)
    ctx.emit(result, f"stablehlo.{op.kind} {lhs}, {rhs} : {op.result.type}")


@rule("bias_add")
def _bias_add(op: Op, ctx: EmitContext, result: str) -> None:
    x, bias = op.operands
    axis = view(op).axis % x.type.rank
    wide = _broadcast(ctx, ctx.use(bias), bias.type, [axis], x.type, f"{result[1:]}_bias")
    ctx.emit(result, f"stablehlo.add {ctx.use(x)}, {wide} : {x.type}")


@rule("relu")
def _relu(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    zero = _scalar_constant(ctx, 0, x.type.dtype, f"{result[1:]}_zero")
    wide = _broadcast(ctx, zero, TensorType((), x.type.dtype), [], x.type, f"{result[1:]}_zeros")
    ctx.emit(result, f"stablehlo.maximum {ctx.use(x)}, {wide} : {x.type}")


@rule("relu_grad")
def _relu_grad(op: Op, ctx: EmitContext, result: str) -> None:
    out_grad, x = op.operands
    t = x.type
    zero = _scalar_constant(ctx, 0, t.dtype, f"{result[1:]}_zero")
    wide = _broadcast(ctx, zero, TensorType((), t.dtype), [], t, f"{result[1:]}_zeros")
    mask_type = TensorType(t.shape, "i1")
    mask = ctx.emit(ctx.fresh(f"{result[1:]}_positive"), f"stablehlo.compare GT, {ctx.use(x)}, {wide}, FLOAT : ({t}, {t}) -> {mask_type}")
    ctx.emit(result, f"stablehlo.select {mask}, {ctx.use(out_grad)}, {wide} : ({mask_type}, {t}, {t}) -> {t}")


# --- elementwise ops (compiler/ops/elementwise.py names each one's StableHLO op) ------------


def _elementwise(op: Op, ctx: EmitContext, result: str) -> None:
    names = ", ".join(ctx.use(v) for v in op.operands)
    ctx.emit(result, f"stablehlo.{ELEMENTWISE_HLO[op.kind]} {names} : {op.result.type}")


ELEMENTWISE_HLO = {e.opdef.name: e.hlo for e in ELEMENTWISE if e.hlo}
rule(*ELEMENTWISE_HLO)(_elementwise)


def _splat(ctx: EmitContext, value: float, t: TensorType, base: str) -> str:
    """A scalar constant broadcast to `t`."""
    return _broadcast(ctx, _scalar_constant(ctx, value, t.dtype, base), TensorType((), t.dtype), [], t, f"{base}s")


@rule("clamp")
def _clamp(op: Op, ctx: EmitContext, result: str) -> None:
    v, t = view(op), op.result.type
    low, high = _splat(ctx, v.min, t, f"{result[1:]}_min"), _splat(ctx, v.max, t, f"{result[1:]}_max")
    ctx.emit(result, f"stablehlo.clamp {low}, {ctx.use(op.operands[0])}, {high} : {t}")


# XLA's f32 erf on the CPU (Eigen's generic_fast_erf, what jax.lax.erf computes there):
# x * P(x^2) / Q(x^2), and sign(x) where |x| >= erfinv(1 - ulp/2). Coefficients from the
# highest degree down. XLA fuses each Horner step into an FMA, so results may differ by an ulp.
_ERF_P = (0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861, 0.18520832239976145, 1.128379143519084)
_ERF_Q = (-1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885, 0.014070470171167667,
          0.11098505178285362, 0.49746925110067538, 1.0)
_ERF_SATURATES = 3.832506856900711


# f64: Cephes' erf (ndtr.c), within 2 ulps of jax.lax.erf's f64 (as exact as libm's erf on
# XLA:CPU; a test measures it): x * T(x^2) / U(x^2) where |x| < 1,
# else 1 - erfc(x), erfc(|x|) = exp(-x^2) P(|x|) / Q(|x|) below 8 and exp(-x^2) R(|x|) / S(|x|)
# from 8 (0 once x^2 passes the largest log), 2 - that for negative x. Highest degree first.
_ERF64_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3, 7.00332514112805075473e3,
            5.55923013010394962768e4)
_ERF64_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3, 2.26290000613890934246e4,
            4.92673942608635921086e4)
_ERFC64_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0, 4.86371970985681366614e1,
             1.96520832956077098242e2, 5.26445194995477358631e2, 9.34528527171957607540e2, 1.02755188689515710272e3,
             5.57535335369399327526e2)
_ERFC64_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2, 9.75708501743205489753e2,
             1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3, 5.57535340817727675546e2)
_ERFC64_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0, 6.16021097993053585195e0,
             7.40974269950448939160e0, 2.97886665372100240670e0)
_ERFC64_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1, 1.70814450747565897222e1,
             9.60896809063285878198e0, 3.36907645100081516050e0)
_MAX_LOG64 = 7.09782712893383996843e2


@rule("erf")
def _erf(op: Op, ctx: EmitContext, result: str) -> None:
    """f16 and bf16 go through f32 (as XLA does), then back; f64 has its own expansion."""
    x, base = op.operands[0], result[1:]
    if x.type.dtype == "f64":
        _erf64(ctx, result, ctx.use(x), x.type, base)
        return
    t = TensorType(x.type.shape, "f32")
    arg = ctx.use(x)
    if x.type.dtype != "f32":
        arg = ctx.emit(ctx.fresh(f"{base}_f32"), f"stablehlo.convert {arg} : ({x.type}) -> {t}")
    square = ctx.emit(ctx.fresh(f"{base}_x2"), f"stablehlo.multiply {arg}, {arg} : {t}")
    p, q = (_horner(ctx, square, coefficients, t, f"{base}_{name}") for name, coefficients in (("p", _ERF_P), ("q", _ERF_Q)))
    odd = ctx.emit(ctx.fresh(f"{base}_xp"), f"stablehlo.multiply {arg}, {p} : {t}")
    ratio = ctx.emit(ctx.fresh(f"{base}_ratio"), f"stablehlo.divide {odd}, {q} : {t}")
    size = ctx.emit(ctx.fresh(f"{base}_abs"), f"stablehlo.abs {arg} : {t}")
    mask_type = TensorType(t.shape, "i1")
    limit = _splat(ctx, _ERF_SATURATES, t, f"{base}_limit")
    saturated = ctx.emit(ctx.fresh(f"{base}_saturated"), f"stablehlo.compare GE, {size}, {limit}, FLOAT : ({t}, {t}) -> {mask_type}")
    sign = ctx.emit(ctx.fresh(f"{base}_sign"), f"stablehlo.sign {arg} : {t}")
    chosen = f"stablehlo.select {saturated}, {sign}, {ratio} : ({mask_type}, {t}, {t}) -> {t}"
    if x.type.dtype == "f32":
        ctx.emit(result, chosen)
        return
    wide = ctx.emit(ctx.fresh(f"{base}_wide"), chosen)
    ctx.emit(result, f"stablehlo.convert {wide} : ({t}) -> {x.type}")


def _erf64(ctx: EmitContext, result: str, x: str, t: TensorType, base: str) -> None:
    """erf of an f64 tensor by Cephes' expansion (see `_ERF64_T`): each branch computed, one kept by `select`s."""
    mask_type = TensorType(t.shape, "i1")

    def emit(name: str, text: str) -> str:
        return ctx.emit(ctx.fresh(f"{base}_{name}"), text)

    def ratio(name: str, arg: str, top: Sequence[float], bottom: Sequence[float]) -> str:
        p, q = (_horner(ctx, arg, c, t, f"{base}_{name}{side}") for side, c in (("p", top), ("q", bottom)))
        return emit(name, f"stablehlo.divide {p}, {q} : {t}")

    def less(name: str, lhs: str, rhs: str) -> str:
        return emit(name, f"stablehlo.compare LT, {lhs}, {rhs}, FLOAT : ({t}, {t}) -> {mask_type}")

    def select(name: str, mask: str, yes: str, no: str) -> str:
        return emit(name, f"stablehlo.select {mask}, {yes}, {no} : ({mask_type}, {t}, {t}) -> {t}")

    square = emit("x2", f"stablehlo.multiply {x}, {x} : {t}")
    near = emit("near", f"stablehlo.multiply {x}, {ratio('t', square, _ERF64_T, _ERF64_U)} : {t}")
    size = emit("abs", f"stablehlo.abs {x} : {t}")
    decay = emit("decay", f"stablehlo.exponential {emit('negx2', f'stablehlo.negate {square} : {t}')} : {t}")
    middle = emit("middle", f"stablehlo.multiply {decay}, {ratio('pq', size, _ERFC64_P, _ERFC64_Q)} : {t}")
    tail = emit("tail", f"stablehlo.multiply {decay}, {ratio('rs', size, _ERFC64_R, _ERFC64_S)} : {t}")
    erfc = select("erfc_abs", less("below8", size, _splat(ctx, 8.0, t, f"{base}_eight")), middle, tail)
    zero = _splat(ctx, 0.0, t, f"{base}_zero")
    erfc = select("erfc_under", less("underflows", _splat(ctx, _MAX_LOG64, t, f"{base}_maxlog"), square), zero, erfc)
    two, one = _splat(ctx, 2.0, t, f"{base}_two"), _splat(ctx, 1.0, t, f"{base}_one")
    reflected = emit("reflected", f"stablehlo.subtract {two}, {erfc} : {t}")
    erfc = select("erfc", less("negative", x, zero), reflected, erfc)
    far = emit("far", f"stablehlo.subtract {one}, {erfc} : {t}")
    ctx.emit(result, f"stablehlo.select {less('below1', size, one)}, {near}, {far} : ({mask_type}, {t}, {t}) -> {t}")


def _horner(ctx: EmitContext, x: str, coefficients: Sequence[float], t: TensorType, base: str) -> str:
    """sum(c_i * x^(n-i)) as ((c_0 * x + c_1) * x + ...), each step a multiply and an add."""
    acc = _splat(ctx, coefficients[0], t, f"{base}0")
    for index, c in enumerate(coefficients[1:], start=1):
        scaled = ctx.emit(ctx.fresh(f"{base}_mul{index}"), f"stablehlo.multiply {acc}, {x} : {t}")
        acc = ctx.emit(ctx.fresh(f"{base}_add{index}"), f"stablehlo.add {scaled}, {_splat(ctx, c, t, f'{base}{index}')} : {t}")
    return acc


@rule("reshape")
def _reshape(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    ctx.emit(result, f"stablehlo.reshape {ctx.use(x)} : ({x.type}) -> {op.result.type}")


@rule("transpose")
def _transpose(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    ctx.emit(result, f"stablehlo.transpose {ctx.use(x)}, dims = {int_list(op.attrs['permutation'])} : ({x.type}) -> {op.result.type}")


@rule("reverse")
def _reverse(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    ctx.emit(result, f"stablehlo.reverse {ctx.use(x)}, dims = {int_list(op.attrs['dimensions'])} : {x.type}")


@rule("pad")
def _pad(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    config = op.attrs["padding_config"]
    fill = _scalar_constant(ctx, view(op).padding_value, x.type.dtype, f"{result[1:]}_fill")
    lows, highs, interiors = ([row[i] for row in config] for i in range(3))
    ctx.emit(result, f"stablehlo.pad {ctx.use(x)}, {fill}, low = {int_list(lows)}, high = {int_list(highs)}, "
                     f"interior = {int_list(interiors)} : ({x.type}, {TensorType((), x.type.dtype)}) -> {op.result.type}")


@rule("slice")
def _slice(op: Op, ctx: EmitContext, result: str) -> None:
    x, v = op.operands[0], view(op)
    ranges = ", ".join(f"{lo}:{hi}" + (f":{s}" if s != 1 else "") for lo, hi, s in zip(v.start_indices, v.limit_indices, v.strides))
    ctx.emit(result, f"stablehlo.slice {ctx.use(x)} [{ranges}] : ({x.type}) -> {op.result.type}")


@rule("concatenate")
def _concatenate(op: Op, ctx: EmitContext, result: str) -> None:
    operands = ", ".join(ctx.use(v) for v in op.operands)
    types = ", ".join(str(v.type) for v in op.operands)
    ctx.emit(result, f"stablehlo.concatenate {operands}, dim = {op.attrs['dimension']} : ({types}) -> {op.result.type}")


@rule("convert")
def _convert(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    ctx.emit(result, f"stablehlo.convert {ctx.use(x)} : ({x.type}) -> {op.result.type}")


def _precision_config(precision: str | tuple[str, str] | None) -> str:
    pair = (precision, precision) if isinstance(precision, str) else precision or ("DEFAULT", "DEFAULT")
    return "[" + ", ".join(f"#stablehlo<precision {p}>" for p in pair) + "]"


@rule("conv")
def _conv(op: Op, ctx: EmitContext, result: str) -> None:
    lhs, rhs = op.operands
    ctx.emit(result, f"stablehlo.convolution({ctx.use(lhs)}, {ctx.use(rhs)}) {_conv_tail(op)}")


def _signature(op: Op) -> object:
    return op.operand_types(), op.result.type, attrs_key(op.attrs)


@memoized(1024, key=_signature)
def _conv_tail(op: Op) -> str:
    """Everything after the operands; memoized, as a network's convs share a few signatures."""
    v = view(op)
    dn, padding = v.dimension_numbers, v.padding
    if not isinstance(dn, ConvDimensionNumbers) or isinstance(padding, str) and padding != "VALID":
        # reachable from the command line (`convc-opt --emit=stablehlo`, `convc -p ...`): a user error
        raise ConvcError("StableHLO needs explicit dimension numbers and padding; "
                         "run -p canonicalize-dimension-numbers,resolve-padding first", op.loc, "E1")
    lhs, rhs = v.types
    pads = ((0, 0),) * (lhs.rank - 2) if padding == "VALID" else padding
    window = (f"stride = {int_list(v.window_strides)}, "
              f"pad = [{', '.join(int_list(p) for p in pads)}], "
              f"lhs_dilate = {int_list(v.lhs_dilation)}, "
              f"rhs_dilate = {int_list(v.rhs_dilation)}")
    flags = (f"batch_group_count = {v.batch_group_count} : i64, "
             f"feature_group_count = {v.feature_group_count} : i64, "
             f"precision_config = {_precision_config(v.precision)}")
    return (f"dim_numbers = {format_dimension_numbers(dn)}, window = {{{window}}} {{{flags}}} : "
            f"({lhs}, {rhs}) -> {op.result.type}")


@rule("dot_general")
def _dot_general(op: Op, ctx: EmitContext, result: str) -> None:
    lhs, rhs = op.operands
    v = view(op)
    batching = f"batching_dims = {int_list(v.lhs_batching_dimensions)} x {int_list(v.rhs_batching_dimensions)}, "
    contracting = f"contracting_dims = {int_list(v.lhs_contracting_dimensions)} x {int_list(v.rhs_contracting_dimensions)}"
    precision = v.precision or "DEFAULT"
    pair = (precision, precision) if isinstance(precision, str) else precision
    ctx.emit(result, f"stablehlo.dot_general {ctx.use(lhs)}, {ctx.use(rhs)}, "
                     f"{batching if v.lhs_batching_dimensions else ''}{contracting}, precision = [{', '.join(pair)}] : "
                     f"({lhs.type}, {rhs.type}) -> {op.result.type}")


@rule("broadcast_in_dim")
def _broadcast_in_dim(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    ctx.emit(result, f"stablehlo.broadcast_in_dim {ctx.use(x)}, dims = {int_list(op.attrs['broadcast_dimensions'])} : "
                     f"({x.type}) -> {op.result.type}")


@rule("reduce_sum")
def _reduce_sum(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    zero = _scalar_constant(ctx, 0, x.type.dtype, f"{result[1:]}_zero")
    ctx.emit(result, f"stablehlo.reduce({ctx.use(x)} init: {zero}) applies stablehlo.add across dimensions = "
                     f"{int_list(op.attrs['axes'])} : ({x.type}, {TensorType((), x.type.dtype)}) -> {op.result.type}")


@rule("reduce_max")
def _reduce_max(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    _reduce(ctx, result, "maximum", ctx.use(x), x.type, op.attrs["axes"], op.result.type)


@rule("reduce_min")
def _reduce_min(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    _reduce(ctx, result, "minimum", ctx.use(x), x.type, op.attrs["axes"], op.result.type)


@rule("reduce_prod")
def _reduce_prod(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    _reduce(ctx, result, "multiply", ctx.use(x), x.type, op.attrs["axes"], op.result.type)


def _reduce(ctx: EmitContext, result: str, kind: str, x: str, x_type: TensorType, axes: Sequence[int], out: TensorType) -> str:
    """A `stablehlo.reduce` of `x` over `axes` by `stablehlo.<kind>` (add from 0, multiply from 1,
    maximum from the lowest value, minimum from the highest)."""
    start = {"add": 0, "multiply": 1, "maximum": _lowest(x_type.dtype), "minimum": _highest(x_type.dtype)}[kind]
    init = _scalar_constant(ctx, start, x_type.dtype, f"{result[1:]}_init")
    return ctx.emit(result, f"stablehlo.reduce({x} init: {init}) applies stablehlo.{kind} across dimensions = "
                            f"{int_list(axes)} : ({x_type}, {TensorType((), x_type.dtype)}) -> {out}")


@rule("reduce_max_grad")
def _reduce_max_grad(op: Op, ctx: EmitContext, result: str) -> None:
    """JAX's rule for a max reduction: the maxima of x (`compare EQ` with the spread max) as
    1s and 0s, out_grad divided by their count per reduced element, spread back and kept
    at the maxima (`multiply` by the 1s and 0s)."""
    (x, out_grad), axes = op.operands, op.attrs["axes"]
    t, reduced, base = x.type, out_grad.type, result[1:]
    kept = [d for d in range(t.rank) if d not in axes]
    top = _reduce(ctx, ctx.fresh(f"{base}_max"), "maximum", ctx.use(x), t, axes, reduced)
    top_wide = _broadcast(ctx, top, reduced, kept, t, f"{base}_max_wide")
    mask_type = TensorType(t.shape, "i1")
    mask = ctx.emit(ctx.fresh(f"{base}_at_max"), f"stablehlo.compare EQ, {ctx.use(x)}, {top_wide}, FLOAT : ({t}, {t}) -> {mask_type}")
    ones = ctx.emit(ctx.fresh(f"{base}_indicator"), f"stablehlo.convert {mask} : ({mask_type}) -> {t}")
    count = _reduce(ctx, ctx.fresh(f"{base}_count"), "add", ones, t, axes, reduced)
    share = ctx.emit(ctx.fresh(f"{base}_share"), f"stablehlo.divide {ctx.use(out_grad)}, {count} : {reduced}")
    share_wide = _broadcast(ctx, share, reduced, kept, t, f"{base}_share_wide")
    ctx.emit(result, f"stablehlo.multiply {share_wide}, {ones} : {t}")


@rule("reduce_prod_grad")
def _reduce_prod_grad(op: Op, ctx: EmitContext, result: str) -> None:
    """The product of the other reduced elements, without dividing by a zero: the product p of
    the non-zero elements (zeros as 1s) and the count of zeros; an element's cotangent is
    out_grad times p / x (x non-zero) or p (x zero) where no other element is zero, else 0."""
    (x, out_grad), axes = op.operands, op.attrs["axes"]
    t, reduced, base = x.type, out_grad.type, result[1:]
    kept = [d for d in range(t.rank) if d not in axes]
    mask_type = TensorType(t.shape, "i1")

    def emit(name: str, text: str) -> str:
        return ctx.emit(ctx.fresh(f"{base}_{name}"), text)

    zeros, ones = _splat(ctx, 0.0, t, f"{base}_zero"), _splat(ctx, 1.0, t, f"{base}_one")
    is_zero = emit("is_zero", f"stablehlo.compare EQ, {ctx.use(x)}, {zeros}, FLOAT : ({t}, {t}) -> {mask_type}")
    indicator = emit("indicator", f"stablehlo.convert {is_zero} : ({mask_type}) -> {t}")
    nonzero = emit("nonzero", f"stablehlo.select {is_zero}, {ones}, {ctx.use(x)} : ({mask_type}, {t}, {t}) -> {t}")
    product = _reduce(ctx, ctx.fresh(f"{base}_product"), "multiply", nonzero, t, axes, reduced)
    count = _reduce(ctx, ctx.fresh(f"{base}_count"), "add", indicator, t, axes, reduced)
    product_wide = _broadcast(ctx, product, reduced, kept, t, f"{base}_product_wide")
    others_zero = emit("others_zero", f"stablehlo.subtract {_broadcast(ctx, count, reduced, kept, t, f'{base}_count_wide')}, "
                                      f"{indicator} : {t}")
    quotient = emit("quotient", f"stablehlo.divide {product_wide}, {nonzero} : {t}")
    others = emit("others", f"stablehlo.select {is_zero}, {product_wide}, {quotient} : ({mask_type}, {t}, {t}) -> {t}")
    scaled = emit("scaled", f"stablehlo.multiply {_broadcast(ctx, ctx.use(out_grad), reduced, kept, t, f'{base}_grad_wide')}, "
                            f"{others} : {t}")
    alone = emit("alone", f"stablehlo.compare EQ, {others_zero}, {zeros}, FLOAT : ({t}, {t}) -> {mask_type}")
    ctx.emit(result, f"stablehlo.select {alone}, {scaled}, {zeros} : ({mask_type}, {t}, {t}) -> {t}")


@rule("stacked_reduce_sum")
def _stacked_reduce_sum(op: Op, ctx: EmitContext, result: str) -> None:
    """One variadic `stablehlo.reduce` (generic syntax: the pretty form has no room for a
    multi-add body), its results reshaped to [1, ...] and concatenated."""
    inputs, count = op.operands, len(op.operands)
    scalar = TensorType((), inputs[0].type.dtype)
    zero = _scalar_constant(ctx, 0, scalar.dtype, f"{result[1:]}_zero")
    summed = TensorType(op.result.type.shape[1:], scalar.dtype)
    sums = ctx.fresh(f"{result[1:]}_sums")
    # Region values share the function's namespace (the region is not isolated from above).
    accumulators = [ctx.fresh("acc") for _ in range(count)]
    values = [ctx.fresh("val") for _ in range(count)]
    totals = [ctx.fresh("total") for _ in range(count)]
    block_args = ", ".join(f"{name}: {scalar}" for name in accumulators + values)
    body = [f"      ^bb0({block_args}):"]
    body += [f"        {t} = stablehlo.add {a}, {v} : {scalar}" for t, a, v in zip(totals, accumulators, values)]
    body.append(f"        stablehlo.return {', '.join(totals)} : {', '.join([str(scalar)] * count)}")
    operand_types = ", ".join([str(x.type) for x in inputs] + [str(scalar)] * count)
    ctx.lines.append(f'    {sums}:{count} = "stablehlo.reduce"({", ".join(ctx.use(x) for x in inputs)}, '
                     f'{", ".join([zero] * count)}) ({{')
    ctx.lines.extend(body)
    ctx.lines.append(f"    }}) {{dimensions = array<i64{': ' if op.attrs['axes'] else ''}{', '.join(map(str, op.attrs['axes']))}>}} : "
                     f"({operand_types}) -> ({', '.join([str(summed)] * count)}){ctx.loc}")
    if count == 1:
        ctx.emit(result, f"stablehlo.reshape {sums}#0 : ({summed}) -> {op.result.type}")
        return
    row = TensorType((1, *summed.shape), scalar.dtype)
    rows = [ctx.emit(ctx.fresh(f"{result[1:]}_row"), f"stablehlo.reshape {sums}#{i} : ({summed}) -> {row}") for i in range(count)]
    ctx.emit(result, f"stablehlo.concatenate {', '.join(rows)}, dim = 0 : ({', '.join([str(row)] * count)}) -> {op.result.type}")


@rule("max_pool", "sum_pool")
def _pool(op: Op, ctx: EmitContext, result: str) -> None:
    """A `stablehlo.reduce_window`: a max body from the lowest value of the type (max_pool), or
    an add body from 0 (sum_pool) (generic syntax: the pretty form has no room for the window
    attributes)."""
    x, v = op.operands[0], view(op)
    scalar = TensorType((), x.type.dtype)
    body, start, base = ("maximum", _lowest(x.type.dtype), "lowest") if op.kind == "max_pool" else ("add", 0, "zero")
    init = _scalar_constant(ctx, start, scalar.dtype, f"{result[1:]}_{base}")
    pads = pool_padding(v)
    attrs = (f"window_dimensions = {_i64_array(v.window_dimensions)}, window_strides = {_i64_array(v.window_strides)}, "
             f"base_dilations = {_i64_array(v.base_dilation)}, window_dilations = {_i64_array(v.window_dilation)}, "
             f"padding = {_i64_rows(pads)}")
    ctx.lines += [f'    {result} = "stablehlo.reduce_window"({ctx.use(x)}, {init}) ({{',
                  *_binary_body(ctx, body, scalar),
                  f"    }}) {{{attrs}}} : ({x.type}, {scalar}) -> {op.result.type}{ctx.loc}"]


def _binary_body(ctx: EmitContext, kind: str, scalar: TensorType) -> list[str]:
    """A reducer region's block: `stablehlo.<kind>` of its two scalar arguments (the region shares the function's names)."""
    acc, val, out = ctx.fresh("acc"), ctx.fresh("val"), ctx.fresh("max" if kind == "maximum" else "sum")
    return [f"      ^bb0({acc}: {scalar}, {val}: {scalar}):",
            f"        {out} = stablehlo.{kind} {acc}, {val} : {scalar}",
            f"        stablehlo.return {out} : {scalar}"]


@rule("max_pool_grad")
def _max_pool_grad(op: Op, ctx: EmitContext, result: str) -> None:
    """A `stablehlo.select_and_scatter` of out_grad over x: a GE select (the first maximum of
    a window wins), an add scatter, 0 as the initial value (generic syntax: two regions)."""
    (x, out_grad), v = op.operands, view(op)
    scalar = TensorType((), x.type.dtype)
    zero = _scalar_constant(ctx, 0, scalar.dtype, f"{result[1:]}_zero")
    lhs, rhs, ge = ctx.fresh("lhs"), ctx.fresh("rhs"), ctx.fresh("ge")  # the regions share the function's names
    acc, val, total = ctx.fresh("acc"), ctx.fresh("val"), ctx.fresh("total")
    attrs = (f"window_dimensions = {_i64_array(v.window_dimensions)}, window_strides = {_i64_array(v.window_strides)}, "
             f"padding = {_i64_rows(grad_padding(v))}")
    ctx.lines += [f'    {result} = "stablehlo.select_and_scatter"({ctx.use(x)}, {ctx.use(out_grad)}, {zero}) ({{',
                  f"      ^bb0({lhs}: {scalar}, {rhs}: {scalar}):",
                  f"        {ge} = stablehlo.compare GE, {lhs}, {rhs}, FLOAT : ({scalar}, {scalar}) -> tensor<i1>",
                  f"        stablehlo.return {ge} : tensor<i1>",
                  "    }, {",
                  f"      ^bb0({acc}: {scalar}, {val}: {scalar}):",
                  f"        {total} = stablehlo.add {acc}, {val} : {scalar}",
                  f"        stablehlo.return {total} : {scalar}",
                  f"    }}) {{{attrs}}} : ({x.type}, {out_grad.type}, {scalar}) -> {op.result.type}{ctx.loc}"]


def _lowest(dtype: str) -> float:
    """max's identity: -inf for a float type, the smallest value of an integer type."""
    return float("-inf") if is_float(dtype) else int(np.iinfo(numpy_dtype(dtype)).min)


def _highest(dtype: str) -> float:
    """min's identity: inf for a float type, the largest value of an integer type."""
    return float("inf") if is_float(dtype) else int(np.iinfo(numpy_dtype(dtype)).max)


def _i64_array(values: Sequence[int]) -> str:
    return f"array<i64{': ' if values else ''}{', '.join(map(str, values))}>"


def _i64_rows(rows: Sequence[tuple[int, int]]) -> str:
    body = f"[{', '.join(int_list(row) for row in rows)}]" if rows else ""
    return f"dense<{body}> : tensor<{len(rows)}x2xi64>"


def _sharding_constraint(value: Value, ctx: EmitContext) -> None:
    """Later uses of `value` read it through `sdy.sharding_constraint` (convc.sharding)."""
    constrained = ctx.emit(ctx.fresh(f"{ctx.use(value)[1:]}_sharded"), sdy.constraint(ctx.use(value), value))
    ctx._names[id(value)] = constrained


def weight_constants(graph: Graph, larger: int) -> list[Op]:
    """The constants `--weights-as-inputs` turns into leading function arguments: those with
    more than `larger` elements that are not one repeated value (a splat stays `dense<v>`,
    short in any size and worth more to XLA as a constant)."""
    return [op for op in graph.ops if op.kind == "constant" and op.attrs["value"].size > larger and not is_splat(op.attrs["value"])]


def _bound_placeholder(op: Op, name: str, ctx: EmitContext) -> None:
    zeros = np.broadcast_to(np.zeros((), op.attrs["value"].dtype), op.attrs["value"].shape)  # a splat, spelled `dense<0>`
    ctx.emit(ctx.define(op.result), f"stablehlo.constant {{convc.bound = {quote(name)}}} {dense_literal(zeros)}")


def bindable_constants(graph: Graph, larger: int) -> list[Op]:
    """The `weight_constants` whose arrays MLIR's Python bindings can hand over as they are
    (float and signed integer storage that is the constant's own element type): the ones a
    run binds after parsing instead of spelling them in hex (`emit_stablehlo`'s `bound`)."""
    return [op for op in weight_constants(graph, larger)
            if op.attrs["value"].dtype.kind in "fi" and from_numpy(op.attrs["value"].dtype) == op.result.type.dtype]


def emit_stablehlo(graph: Graph, weights: Mapping[str, Op] | None = None, bound: Mapping[str, Op] | None = None) -> str:
    """The whole module: `module @<name>` with a public `@main` over the graph's inputs.
    The constants in `weights` (see `weight_constants`) are instead arguments of `@main`,
    before the graph's inputs, in the mapping's order, each located by its key; their
    arrays are the caller's to supply. Those in `bound` (see `bindable_constants`) stay
    constants, spelled as a zero splat marked `{convc.bound = "<key>"}`: the module's text
    without their hex, for `mlir.bound_module` to give them their values after parsing."""
    ctx = EmitContext()
    weights = weights or {}
    as_arguments = {id(op) for op in weights.values()}
    bound_names = {id(op): name for name, op in (bound or {}).items()}
    params = [f"{ctx.define(op.result)}: {op.result.type} loc({quote(name)})" for name, op in weights.items()]
    params += [f"{ctx.define(v)}: {v.type}{sdy.argument_attrs(v)} loc({quote(v.name)})" for v in graph.inputs]
    results = ", ".join(f"{v.type} {{jax.result_info = {quote(v.name)}{sdy.result_attr(v)}}}" for v in graph.outputs)
    constrained = sdy.constrained_values(graph)
    for op in graph.ops:
        if id(op) in as_arguments:
            continue
        if id(op) in bound_names:
            ctx.loc = f" loc({quote(op.name)})"
            _bound_placeholder(op, bound_names[id(op)], ctx)
            continue
        emit_rule = RULES.get(op.kind)
        if emit_rule is None:
            raise InternalError(f"no StableHLO rule for op '{op.kind}' ('{op.name}'); is a lowering pass missing?")
        ctx.loc = f" loc({quote(op.name)})"
        emit_rule(op, ctx, ctx.define(op.result))
        if id(op.result) in constrained:
            _sharding_constraint(op.result, ctx)
    module_name = graph.name if is_symbol_id(graph.name) else quote(graph.name)
    returned = ", ".join(ctx.use(v) for v in graph.outputs)
    types = ", ".join(str(v.type) for v in graph.outputs)
    head = [f"module @{module_name}{sdy.module_attributes(graph.mesh)} {{", *sdy.mesh_ops(graph.mesh),
            f"  func.func public @main({', '.join(params)}) -> ({results}) {{"]
    tail = [f"    return {returned} : {types}", "  }", "}", ""]
    return "\n".join(head + ctx.lines + tail)
