"""The elementwise primitives the ONNX importer's activations and arithmetic are made of:
binary ops on operands of one type (`subtract`, `divide`, `maximum`, `minimum`, `power`;
numpy broadcasting is the frontend's `broadcast_in_dim`, as for `add`), unary ops
(`exp`, `log`, `tanh`, `logistic`, `sqrt`, `rsqrt`, `negate`, `abs`, `erf`), `clamp`
between two constant bounds, and `optimization_barrier` (the identity, which XLA fuses no
work across: what a pass uses to have a value computed once and stored).

Each is one row of `ELEMENTWISE`: the op's declaration, the StableHLO op it emits and the
`jax.lax` function that is its oracle (compiler/emit/stablehlo.py and compiler/reference.py
read both from here). Gradient rules are JAX's JVP rules of the same lax functions,
transposed; where JAX selects on a comparison (max/min, abs, clamp), the mask is a
`relu_grad` of a difference (`g` where it is positive), so no boolean type is needed.

Constraint ids: `name.C1` for a binary op's operand types that differ (as `add.C1`), and for
a floating-only op given another element type (`power.C2` for `power`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..diagnostics import VerifyError
from ..dtypes import is_float, numpy_dtype
from ..ir import TensorType, Value
from .base import FLOAT, Attr, ForeignAttr, OpDef, OpFactory, OpView, VjpRule, operand_type, same_types

Cotangents = Sequence[Value | None]


# --- shape rules --------------------------------------------------------------------------


def _check_float(v: OpView, t: TensorType, constraint: str, allowed: tuple[str, ...] = ()) -> None:
    if not is_float(t.dtype) or allowed and t.dtype not in allowed:
        kinds = ", ".join(allowed) if allowed else "a floating element type"
        raise VerifyError(f"{v.opdef.name} needs {kinds}, got {t.dtype}", constraint, operand=0)


def _float_unary(v: OpView) -> TensorType:
    _check_float(v, v.operand(0), f"{v.opdef.name}.C1")
    return v.operand(0)


def _float_binary(v: OpView) -> TensorType:
    t = same_types(v)
    _check_float(v, t, f"{v.opdef.name}.C2")
    return t




# --- gradient rules (JAX's JVP rules of the same lax functions, transposed) ---------------


def _fill(b: OpFactory, like: Value, value: float, suffix: str) -> Value:
    """A constant of `like`'s type, every element `value` (a splat)."""
    t = like.type
    return b.create("constant", suffix=suffix, value=np.broadcast_to(np.array(value, numpy_dtype(t.dtype)), t.shape))


def _floating(value: Value) -> bool:
    return is_float(value.type.dtype)


def _subtract_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """lhs: `g`; rhs: `negate(g)`."""
    return g, b.create("negate", g, suffix="d_rhs")


def _divide_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """lhs: `g / rhs`; rhs: `-(g / rhs) * (lhs / rhs)`; none for integers."""
    lhs, rhs = operands
    if not _floating(lhs):
        return None, None
    d_lhs = b.create("divide", g, rhs, suffix="d_lhs")
    ratio = b.create("divide", lhs, rhs, suffix="ratio")
    return d_lhs, b.create("negate", b.create("multiply", d_lhs, ratio, suffix="d_rhs_neg"), suffix="d_rhs")


def _chooser_vjp(name: str) -> VjpRule:
    """maximum/minimum: the winner gets `g`, a tie gives each half (lax.max's balanced rule)."""
    def vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
        lhs, rhs = operands
        if not _floating(lhs):
            return None, None
        ahead, behind = (lhs, rhs) if name == "maximum" else (rhs, lhs)
        wins = b.create("relu_grad", g, b.create("subtract", ahead, behind, suffix="lead"), suffix="lhs_wins")
        loses = b.create("relu_grad", g, b.create("subtract", behind, ahead, suffix="trail"), suffix="rhs_wins")
        twice = b.create("subtract", b.create("add", g, wins, suffix="lhs_share"), loses, suffix="lhs_twice")
        d_lhs = b.create("multiply", twice, _fill(b, g, 0.5, "half"), suffix="d_lhs")
        return d_lhs, b.create("subtract", g, d_lhs, suffix="d_rhs")
    vjp.__doc__ = (f"lhs: `g` where lhs {'>' if name == 'maximum' else '<'} rhs, `g / 2` at a tie (lax's balanced rule), "
                   "from `relu_grad` of both differences; rhs: `g - d_lhs`.")
    return vjp


def _power_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """lhs: `g * rhs * lhs^(rhs - 1)`; rhs: `g * log(lhs) * lhs^rhs` (NaN at lhs = 0, where jax replaces log(0) by 0)."""
    lhs, rhs = operands
    lowered = b.create("subtract", rhs, _fill(b, rhs, 1.0, "one"), suffix="rhs_minus_one")
    slope = b.create("multiply", rhs, b.create("power", lhs, lowered, suffix="lhs_pow"), suffix="slope")
    out = b.create("power", lhs, rhs, suffix="out")
    d_rhs = b.create("multiply", g, b.create("multiply", b.create("log", lhs, suffix="log_lhs"), out, suffix="rhs_slope"),
                     suffix="d_rhs")
    return b.create("multiply", g, slope, suffix="d_lhs"), d_rhs


def _exp_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g * exp(x)`."""
    return (b.create("multiply", g, b.create("exp", operands[0], suffix="out"), suffix="d_x"),)


def _log_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g / x`."""
    return (b.create("divide", g, operands[0], suffix="d_x"),)


def _tanh_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `(g + g * y) * (1 - y)` with `y = tanh(x)`."""
    y = b.create("tanh", operands[0], suffix="out")
    grown = b.create("add", g, b.create("multiply", g, y, suffix="g_y"), suffix="g_plus")
    return (b.create("multiply", grown, b.create("subtract", _fill(b, y, 1.0, "one"), y, suffix="one_minus"), suffix="d_x"),)


def _logistic_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g * (y * (1 - y))` with `y = logistic(x)`."""
    y = b.create("logistic", operands[0], suffix="out")
    slope = b.create("multiply", y, b.create("subtract", _fill(b, y, 1.0, "one"), y, suffix="one_minus"), suffix="slope")
    return (b.create("multiply", g, slope, suffix="d_x"),)


def _sqrt_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g * (0.5 / sqrt(x))`."""
    y = b.create("sqrt", operands[0], suffix="out")
    return (b.create("multiply", g, b.create("divide", _fill(b, y, 0.5, "half"), y, suffix="slope"), suffix="d_x"),)


def _rsqrt_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g * (-0.5 * (rsqrt(x) / x))`."""
    x = operands[0]
    ratio = b.create("divide", b.create("rsqrt", x, suffix="out"), x, suffix="ratio")
    return (b.create("multiply", g, b.create("multiply", _fill(b, x, -0.5, "minus_half"), ratio, suffix="slope"), suffix="d_x"),)


def _negate_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `negate(g)`; none for an integer x."""
    return (b.create("negate", g, suffix="d_x") if _floating(g) else None,)


def _abs_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g` where x >= 0, `-g` where x < 0 (lax.abs's rule): `g - 2 * relu_grad(g, -x)`; none for an integer x."""
    if not _floating(g):
        return (None,)
    below = b.create("relu_grad", g, b.create("negate", operands[0], suffix="minus_x"), suffix="below")
    return (b.create("subtract", g, b.create("add", below, below, suffix="twice_below"), suffix="d_x"),)


def _erf_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `2 / sqrt(pi) * (g * exp(-x^2))`."""
    x = operands[0]
    bell = b.create("exp", b.create("negate", b.create("multiply", x, x, suffix="square"), suffix="minus_square"), suffix="bell")
    scaled = b.create("multiply", g, bell, suffix="g_bell")
    return (b.create("multiply", _fill(b, x, 2.0 / np.sqrt(np.pi), "two_over_sqrt_pi"), scaled, suffix="d_x"),)


def _barrier_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g` (the op is the identity; the barrier bounds the forward computation's fusion only)."""
    return (g,)


def _clamp_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g` where min < x < max, else 0 (lax.clamp's rule): two `relu_grad` masks, of `x - min` and `max - x`."""
    x = operands[0]
    above = b.create("relu_grad", g, b.create("subtract", x, _fill(b, x, v.min, "min"), suffix="over_min"), suffix="above_min")
    headroom = b.create("subtract", _fill(b, x, v.max, "max"), x, suffix="under_max")
    return (b.create("relu_grad", above, headroom, suffix="d_x"),)


# --- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Elementwise:
    """One elementwise op: its declaration, the StableHLO op it emits (`stablehlo.<hlo>`
    with the operands as they are; '' for erf, which has no StableHLO op, and clamp, whose
    bounds are attributes: each has an emitter rule of its own) and its `jax.lax` oracle function."""

    opdef: OpDef
    hlo: str
    lax: str


def _op(name: str, operands: tuple[str, ...], infer: Callable[[OpView], TensorType], hlo: str, lax: str, doc: str,
        vjp: VjpRule) -> Elementwise:
    return Elementwise(OpDef(name, operands, infer, doc=doc, vjp=vjp), hlo, lax)


_BINARY, _UNARY = ("lhs", "rhs"), ("x",)

ELEMENTWISE: tuple[Elementwise, ...] = (
    _op("subtract", _BINARY, same_types, "subtract", "sub", "lhs - rhs, of equal types", _subtract_vjp),
    _op("divide", _BINARY, same_types, "divide", "div", "lhs / rhs, of equal types (integers round toward zero)", _divide_vjp),
    _op("maximum", _BINARY, same_types, "maximum", "max", "the larger of lhs and rhs, of equal types", _chooser_vjp("maximum")),
    _op("minimum", _BINARY, same_types, "minimum", "min", "the smaller of lhs and rhs, of equal types", _chooser_vjp("minimum")),
    _op("power", _BINARY, _float_binary, "power", "pow", "lhs ** rhs, of one floating type", _power_vjp),
    _op("exp", _UNARY, _float_unary, "exponential", "exp", "e ** x (floating)", _exp_vjp),
    _op("log", _UNARY, _float_unary, "log", "log", "the natural logarithm (floating)", _log_vjp),
    _op("tanh", _UNARY, _float_unary, "tanh", "tanh", "the hyperbolic tangent (floating)", _tanh_vjp),
    _op("logistic", _UNARY, _float_unary, "logistic", "logistic", "1 / (1 + e ** -x), the sigmoid (floating)", _logistic_vjp),
    _op("sqrt", _UNARY, _float_unary, "sqrt", "sqrt", "the square root (floating)", _sqrt_vjp),
    _op("rsqrt", _UNARY, _float_unary, "rsqrt", "rsqrt", "1 / sqrt(x) (floating)", _rsqrt_vjp),
    _op("negate", _UNARY, operand_type, "negate", "neg", "-x", _negate_vjp),
    _op("abs", _UNARY, operand_type, "abs", "abs", "|x|", _abs_vjp),
    _op("optimization_barrier", _UNARY, operand_type, "optimization_barrier", "optimization_barrier",
        "x, which the compiler computes before any op that reads it (XLA fuses no work across it)", _barrier_vjp),
    _op("erf", _UNARY, _float_unary, "", "erf", "the error function: XLA's rational approximation in f32 (f16 and bf16 "
        "through it), Cephes' expansion in f64", _erf_vjp),
    Elementwise(OpDef("clamp", _UNARY, _float_unary, {
        "min": Attr(FLOAT, float("-inf"), doc="the lower bound"),
        "max": Attr(FLOAT, float("inf"), doc="the upper bound (below min, every element becomes max)"),
    }, doc="min(max(x, min), max), floating", vjp=_clamp_vjp, foreign={
        "a_min": ForeignAttr("min", source="numpy.clip"), "a_max": ForeignAttr("max", source="numpy.clip"),
        "min_val": ForeignAttr("min", source="PyTorch's hardtanh"), "max_val": ForeignAttr("max", source="PyTorch's hardtanh"),
    }), "", "clamp"),
)

ELEMENTWISE_OPS: tuple[OpDef, ...] = tuple(e.opdef for e in ELEMENTWISE)
