"""Activations that are compositions of convc's elementwise ops, written once each: LeakyRelu,
PRelu, HardSigmoid, HardSwish, Gelu, Elu, Selu, Softplus, Softsign, Softmax and LogSoftmax."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...dtypes import is_float
from ...ir import Value
from .elementwise import plus, splat
from .registry import Context, Node, Operand, converter, one_of
from .shared import broadcast_pair, normalized_axis, scaled


def _floating(ctx: Context, node: Node) -> Value:
    """Input 0, which these activations need floating."""
    x = ctx.operand(node, 0)
    if not is_float(x.type.dtype):
        raise ctx.error(f"X has element type {x.type.dtype}; {node.op_type} needs a floating one")
    return x


def _negative_part(ctx: Context, x: Value) -> Value:
    """relu(-x): |x| where x < 0, else 0."""
    return ctx.op("relu", ctx.op("negate", x))


@converter("LeakyRelu", since=6)
def leaky_relu(node: Node, ctx: Context) -> Sequence[Operand]:
    """`relu(x) - alpha * relu(-x)` (`relu`, `negate`, `multiply`, `subtract`): exact on both sides of 0."""
    x = _floating(ctx, node)
    return [ctx.op("subtract", ctx.op("relu", x), scaled(ctx, _negative_part(ctx, x), node.attrs["alpha"]))]


@converter("PRelu", since=9)
def prelu(node: Node, ctx: Context) -> Sequence[Operand]:
    """`relu(x) - slope * relu(-x)`, the slope spread to X's shape by numpy broadcasting (`broadcast_in_dim`)."""
    x, slope = _floating(ctx, node), ctx.operand(node, 1)
    negative, spread = broadcast_pair(ctx, _negative_part(ctx, x), slope)
    if negative.type.shape != x.type.shape:
        raise ctx.error(f"slope {slope.type} does not broadcast to X's shape {list(x.type.shape)}")
    return [ctx.op("subtract", ctx.op("relu", x), ctx.op("multiply", spread, negative))]


def _hard_sigmoid(ctx: Context, x: Value, alpha: float, beta: float) -> Value:
    return ctx.op("clamp", plus(ctx, scaled(ctx, x, alpha), beta), min=0.0, max=1.0)


@converter("HardSigmoid", since=6)
def hard_sigmoid(node: Node, ctx: Context) -> Sequence[Operand]:
    """`clamp(alpha * x + beta, 0, 1)`."""
    return [_hard_sigmoid(ctx, _floating(ctx, node), node.attrs["alpha"], node.attrs["beta"])]


@converter("HardSwish", since=14)
def hard_swish(node: Node, ctx: Context) -> Sequence[Operand]:
    """`x * clamp(x / 6 + 1/2, 0, 1)`."""
    x = _floating(ctx, node)
    return [ctx.op("multiply", x, _hard_sigmoid(ctx, x, 1 / 6, 0.5))]


@converter("Gelu", since=20, attrs=one_of(approximate=("none", "tanh")))
def gelu(node: Node, ctx: Context) -> Sequence[Operand]:
    """approximate none: `x/2 * (1 + erf(x / sqrt(2)))`; tanh: `x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`."""
    x = _floating(ctx, node)
    if node.attrs["approximate"] == "tanh":
        cube = ctx.op("multiply", ctx.op("multiply", x, x), x)
        inner = ctx.op("tanh", scaled(ctx, ctx.op("add", x, scaled(ctx, cube, 0.044715)), math.sqrt(2 / math.pi)))
    else:
        inner = ctx.op("erf", scaled(ctx, x, 1 / math.sqrt(2)))
    return [ctx.op("multiply", scaled(ctx, x, 0.5), plus(ctx, inner, 1.0))]


def _elu(ctx: Context, x: Value, alpha: float) -> Value:
    """relu(x) + alpha * (exp(-relu(-x)) - 1): x above 0, alpha * (exp(x) - 1) below."""
    below = plus(ctx, ctx.op("exp", ctx.op("negate", _negative_part(ctx, x))), -1.0)
    return ctx.op("add", ctx.op("relu", x), scaled(ctx, below, alpha))


@converter("Elu", since=6)
def elu(node: Node, ctx: Context) -> Sequence[Operand]:
    """`relu(x) + alpha * (exp(-relu(-x)) - 1)`."""
    return [_elu(ctx, _floating(ctx, node), node.attrs["alpha"])]


@converter("Selu", since=6)
def selu(node: Node, ctx: Context) -> Sequence[Operand]:
    """`gamma * (relu(x) + alpha * (exp(-relu(-x)) - 1))`."""
    return [scaled(ctx, _elu(ctx, _floating(ctx, node), node.attrs["alpha"]), node.attrs["gamma"])]


def _log1p(ctx: Context, u: Value) -> Value:
    """log(1 + u) for u >= 0 to full precision where u is small (convc has no log1p): with
    w = 1 + u rounded, `log(w) - ((max(w, 1) - 1) - u) / w` takes off the rounding, and where w
    rounds to 1 gives u. The `maximum` (w >= 1 already) keeps XLA from folding (u + 1) - 1 to u,
    which would make the correction 0."""
    w = plus(ctx, u, 1.0)
    rounding = ctx.op("subtract", plus(ctx, ctx.op("maximum", w, splat(ctx, 1.0, w, "one")), -1.0), u)
    return ctx.op("subtract", ctx.op("log", w), ctx.op("divide", rounding, w))


@converter("Softplus", since=1)
def softplus(node: Node, ctx: Context) -> Sequence[Operand]:
    """`relu(x) + log1p(exp(-abs(x)))`, log1p as `log(w) - ((max(w, 1) - 1) - u) / w` with `w = 1 + u`:
    exp cannot overflow, and the small values far below 0 keep their precision."""
    x = _floating(ctx, node)
    return [ctx.op("add", ctx.op("relu", x), _log1p(ctx, ctx.op("exp", ctx.op("negate", ctx.op("abs", x)))))]


@converter("Softsign", since=1)
def softsign(node: Node, ctx: Context) -> Sequence[Operand]:
    """`x / (1 + abs(x))`."""
    x = _floating(ctx, node)
    return [ctx.op("divide", x, plus(ctx, ctx.op("abs", x), 1.0))]


def _shifted(ctx: Context, node: Node) -> tuple[Value, Value, Value]:
    """x minus its maximum along `axis` (a `reduce_max`, spread back by `broadcast_in_dim`), so
    exp cannot overflow; its exp; the sum of that along the axis, spread back."""
    x = _floating(ctx, node)
    axis = normalized_axis(ctx, node.attrs["axis"], x.type.rank)
    others = tuple(d for d in range(x.type.rank) if d != axis)
    top = ctx.op("reduce_max", x, axes=(axis,))
    shifted = ctx.op("subtract", x, ctx.op("broadcast_in_dim", top, shape=x.type.shape, broadcast_dimensions=others))
    exps = ctx.op("exp", shifted)
    total = ctx.op("reduce_sum", exps, axes=(axis,))
    spread = ctx.op("broadcast_in_dim", total, shape=x.type.shape, broadcast_dimensions=others)
    return shifted, exps, spread


@converter("Softmax", since=13)
def softmax(node: Node, ctx: Context) -> Sequence[Operand]:
    """Along axis: `exp(x - max) / sum(exp(x - max))`; the max a `reduce_max`, the sum a `reduce_sum`, each
    spread back by `broadcast_in_dim`."""
    _, exps, total = _shifted(ctx, node)
    return [ctx.op("divide", exps, total)]


@converter("LogSoftmax", since=13)
def log_softmax(node: Node, ctx: Context) -> Sequence[Operand]:
    """Along axis: `(x - max) - log(sum(exp(x - max)))`, built as Softmax's."""
    shifted, _, total = _shifted(ctx, node)
    return [ctx.op("subtract", shifted, ctx.op("log", total))]
