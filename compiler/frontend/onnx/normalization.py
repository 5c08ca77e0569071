"""BatchNormalization in inference mode, folded at import into one scale and one shift per channel;
InstanceNormalization, LayerNormalization and GroupNormalization, decompositions sharing one
mean/variance helper (`standardized`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...dtypes import is_float, numpy_dtype
from ...ir import Value
from .elementwise import plus
from .registry import Context, Node, Operand, converter, one_of
from .shared import broadcast_pair, normalized_axis, scaled


@converter("BatchNormalization", since=9, attrs=one_of(training_mode=(0,)))
def batch_normalization(node: Node, ctx: Context) -> Sequence[Operand]:
    """Inference mode: `multiply` by scale / sqrt(var + epsilon) and `bias_add` of B - mean * that, per channel
    (axis 1), computed at import; scale, B, mean and var must be known at import. Not training_mode."""
    ctx.refuse_outputs(node, 1, "the running mean and variance outputs (training mode)")
    x = ctx.operand(node, 0)
    if x.type.rank < 2:
        raise ctx.error(f"X {x.type} needs a channel dimension (rank 2 or more)")
    channels = x.type.shape[1]
    params = [ctx.required_array(node, i, what).astype(np.float64) for i, what in enumerate(("scale", "B", "mean", "var"), start=1)]
    for (i, what), param in zip(enumerate(("scale", "B", "mean", "var"), start=1), params):
        if param.shape != (channels,):
            raise ctx.error(f"{what} (input {i}) has shape {list(param.shape)}, expected [{channels}] (one per channel)")
    scale, bias, mean, var = params
    variance = var + node.attrs["epsilon"]
    if not np.all(variance > 0):
        raise ctx.error("var + epsilon must be positive in every channel")
    factor = scale / np.sqrt(variance)
    dtype = numpy_dtype(x.type.dtype)
    spread = ctx.op("broadcast_in_dim", ctx.constant(factor.astype(dtype), "scale"), shape=x.type.shape, broadcast_dimensions=(1,))
    scaled = ctx.op("multiply", x, spread)
    return [ctx.op("bias_add", scaled, ctx.constant((bias - mean * factor).astype(dtype), "shift"), axis=1)]


# --- normalizations computed from the tensor itself: one mean/variance helper for all three ---------


def _floating(ctx: Context, x: Value) -> Value:
    """`x` widened to f32 when it is f16/bf16 (stash_type 1: statistics in float), else itself."""
    if not is_float(x.type.dtype):
        raise ctx.error(f"X has element type {x.type.dtype}; normalization needs a floating one")
    return ctx.op("convert", x, new_dtype="f32") if x.type.dtype in ("f16", "bf16") else x


# stash_type 1 (float) is the only precision these converters compute statistics in.
STASH_TYPE = one_of(stash_type=(1,))


def spread_back(ctx: Context, reduced: Value, shape: Sequence[int], axes: Sequence[int]) -> Value:
    """A value reduced over `axes`, spread back to `shape` by `broadcast_in_dim`."""
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return ctx.op("broadcast_in_dim", reduced, shape=tuple(shape), broadcast_dimensions=kept)


def statistics(ctx: Context, x: Value, axes: Sequence[int], epsilon: float) -> tuple[Value, Value, Value]:
    """Over `axes`: `x - mean`, the mean, and `rsqrt(var + epsilon)` (the biased variance); the
    mean and variance are `reduce_sum`s times 1/N, the statistics reduced (without `axes`)."""
    axes = tuple(axes)
    count = math.prod(x.type.shape[a] for a in axes)
    mean = scaled(ctx, ctx.op("reduce_sum", x, axes=axes), 1 / count)
    centered = ctx.op("subtract", x, spread_back(ctx, mean, x.type.shape, axes))
    variance = scaled(ctx, ctx.op("reduce_sum", ctx.op("multiply", centered, centered), axes=axes), 1 / count)
    return centered, mean, ctx.op("rsqrt", plus(ctx, variance, epsilon))


def standardized(ctx: Context, x: Value, axes: Sequence[int], epsilon: float) -> Value:
    """`(x - mean) * rsqrt(var + epsilon)` over `axes`, the statistics spread back by `broadcast_in_dim`."""
    centered, _, inverse = statistics(ctx, x, axes, epsilon)
    return ctx.op("multiply", centered, spread_back(ctx, inverse, x.type.shape, tuple(axes)))


def _affine(ctx: Context, y: Value, scale: Value, bias: Value | None, dims: tuple[int, ...], what: str) -> Value:
    """`y * scale + bias`, each parameter laid along `dims` of `y` by `broadcast_in_dim`
    (converted to y's element type first)."""
    expected = tuple(y.type.shape[d] for d in dims)
    out = y
    for parameter, combine in ((scale, "multiply"), (bias, "add")):
        if parameter is None:
            continue
        if parameter.type.shape != expected:
            raise ctx.error(f"{what} parameter {parameter.type} has shape {list(parameter.type.shape)}, expected {list(expected)}")
        if parameter.type.dtype != y.type.dtype:
            parameter = ctx.op("convert", parameter, new_dtype=y.type.dtype)
        out = ctx.op(combine, out, ctx.op("broadcast_in_dim", parameter, shape=y.type.shape, broadcast_dimensions=dims))
    return out


def _narrowed(ctx: Context, y: Value, like: Value) -> Value:
    """`y` converted back to `like`'s element type when the statistics were widened."""
    return y if y.type.dtype == like.type.dtype else ctx.op("convert", y, new_dtype=like.type.dtype)


def _optional(ctx: Context, node: Node, index: int) -> Value | None:
    return ctx.operand(node, index) if node.input(index) else None


@converter("InstanceNormalization", since=6)
def instance_normalization(node: Node, ctx: Context) -> Sequence[Operand]:
    """Over the spatial dims of each (sample, channel): mean and variance as `reduce_sum` times 1/N,
    `subtract`, `multiply` by `rsqrt(var + epsilon)`, then scale and B per channel (`broadcast_in_dim`)."""
    x = ctx.operand(node, 0)
    if x.type.rank < 3:
        raise ctx.error(f"input {x.type} needs a channel and at least one spatial dimension (rank 3 or more)")
    wide = _floating(ctx, x)
    y = standardized(ctx, wide, range(2, x.type.rank), node.attrs["epsilon"])
    return [_narrowed(ctx, _affine(ctx, y, ctx.operand(node, 1), ctx.operand(node, 2), (1,), "a per-channel"), x)]


@converter("LayerNormalization", since=17, attrs=STASH_TYPE)
def layer_normalization(node: Node, ctx: Context) -> Sequence[Operand]:
    """Over the dims from axis on: mean and variance as `reduce_sum` times 1/N, `subtract`, `multiply` by
    `rsqrt(var + epsilon)`, then Scale and optional B spread over X (numpy broadcasting). stash_type 1 (f16 and
    bf16 computed in f32). The Mean and InvStdDev outputs are those statistics, `reshape`d to keep the axes as 1s."""
    x = ctx.operand(node, 0)
    axis = normalized_axis(ctx, node.attrs["axis"], x.type.rank)
    wide = _floating(ctx, x)
    axes = tuple(range(axis, x.type.rank))
    centered, mean, inverse = statistics(ctx, wide, axes, node.attrs["epsilon"])
    y = ctx.op("multiply", centered, spread_back(ctx, inverse, x.type.shape, axes))
    for index in (1, 2):
        parameter = _optional(ctx, node, index)
        if parameter is None:
            continue
        if parameter.type.dtype != y.type.dtype:
            parameter = ctx.op("convert", parameter, new_dtype=y.type.dtype)
        spread, y = broadcast_pair(ctx, parameter, y)
        if y.type.shape != x.type.shape:
            raise ctx.error(f"{'Scale' if index == 1 else 'B'} {parameter.type} does not broadcast to X's shape {list(x.type.shape)}")
        y = ctx.op("multiply" if index == 1 else "add", y, spread)
    kept = x.type.shape[:axis] + (1,) * len(axes)
    return [_narrowed(ctx, y, x)] + [ctx.op("reshape", s, new_sizes=kept) for s, name in zip((mean, inverse), node.outputs[1:]) if name]


def _group_normalization(node: Node, ctx: Context, per_group: bool) -> Value:
    """X reshaped to (N, num_groups, rest), standardized over its last dim, reshaped back, then
    scale and bias per channel (`per_group`: given per group, each spread over its group's channels)."""
    x = ctx.operand(node, 0)
    groups = node.attrs["num_groups"]
    if x.type.rank < 2 or groups < 1 or x.type.shape[1] % groups:
        raise ctx.error(f"num_groups {groups} must divide the channel count of X {x.type}")
    wide = _floating(ctx, x)
    grouped = ctx.op("reshape", wide, new_sizes=(x.type.shape[0], groups, math.prod(x.type.shape[1:]) // groups))
    y = ctx.op("reshape", standardized(ctx, grouped, (2,), node.attrs["epsilon"]), new_sizes=x.type.shape)
    scale, bias = ctx.operand(node, 1), ctx.operand(node, 2)
    if per_group:
        scale, bias = (_per_channel(ctx, p, groups, x.type.shape[1]) for p in (scale, bias))
    return _narrowed(ctx, _affine(ctx, y, scale, bias, (1,), "a per-channel"), x)


def _per_channel(ctx: Context, parameter: Value, groups: int, channels: int) -> Value:
    """A per-group parameter ([num_groups]) repeated over each group's channels: `broadcast_in_dim`
    to [num_groups, channels / num_groups], `reshape` to [channels]."""
    if parameter.type.shape != (groups,):
        raise ctx.error(f"a per-group parameter {parameter.type} has shape {list(parameter.type.shape)}, expected [{groups}]")
    spread = ctx.op("broadcast_in_dim", parameter, shape=(groups, channels // groups), broadcast_dimensions=(0,))
    return ctx.op("reshape", spread, new_sizes=(channels,))


def _group_attrs(node: Node) -> str | None:
    """stash_type 1, and num_groups given (the checker, which does not see an opset-18 node, would require it)."""
    return STASH_TYPE(node) or (None if "num_groups" in node.attrs else "num_groups is required")


# Opset 18's GroupNormalization is deprecated in onnx (its checker refuses it; model.py checks
# the model with an Identity in its place), but exporters of opsets 18-20 still write it.
@converter("GroupNormalization", since=18, attrs=_group_attrs)
def group_normalization_18(node: Node, ctx: Context) -> Sequence[Operand]:
    """As opset 21's, with scale and bias one per group (each `broadcast_in_dim` over its group's channels and
    `reshape`d to one per channel)."""
    return [_group_normalization(node, ctx, per_group=True)]


@converter("GroupNormalization", since=21, attrs=_group_attrs)
def group_normalization(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reshape` to (N, num_groups, rest), mean and variance over rest (`reduce_sum` times 1/N), `subtract`,
    `multiply` by `rsqrt(var + epsilon)`, `reshape` back, then scale and bias per channel; stash_type 1."""
    return [_group_normalization(node, ctx, per_group=False)]
