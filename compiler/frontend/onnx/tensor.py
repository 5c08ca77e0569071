"""Tensor plumbing: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Gather, Cast, CastLike,
Identity, Dropout, Constant and Shape. Shapes, axes and indices come from values known at import."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...dtypes import from_numpy
from .registry import Context, Node, Operand, converter
from .shared import ONNX_DTYPES, normalized_axis


@converter("Reshape", since=13)
def reshape(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reshape`; the shape must be known at import (0 copies the input's dim unless allowzero, -1 is inferred)."""
    x = ctx.operand(node, 0)
    shape = [int(d) for d in ctx.required_array(node, 1, "the shape").reshape(-1)]
    allow_zero = node.attrs.get("allowzero")
    sizes = [x.type.shape[i] if d == 0 and not allow_zero and i < x.type.rank else d for i, d in enumerate(shape)]
    if sizes.count(-1) > 1 or any(d < -1 for d in sizes):
        raise ctx.error(f"shape {shape} has more than one -1 or a size below -1")
    if -1 in sizes:
        known = math.prod(d for d in sizes if d != -1)
        if known == 0 or x.type.num_elements() % known:
            raise ctx.error(f"cannot reshape {x.type} to {shape}")
        sizes[sizes.index(-1)] = x.type.num_elements() // known
    return [ctx.op("reshape", x, new_sizes=sizes)]


@converter("Flatten", since=13)
def flatten(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reshape` to 2-D: the dims before axis, and those from it."""
    x = ctx.operand(node, 0)
    axis = node.attrs["axis"]
    axis = x.type.rank if axis == x.type.rank else normalized_axis(ctx, axis, x.type.rank)
    return [ctx.op("reshape", x, new_sizes=(math.prod(x.type.shape[:axis]), math.prod(x.type.shape[axis:])))]


@converter("Transpose", since=13)
def transpose(node: Node, ctx: Context) -> Sequence[Operand]:
    """`transpose` by perm (default: the dims reversed)."""
    x = ctx.operand(node, 0)
    return [ctx.op("transpose", x, permutation=tuple(node.attrs.get("perm") or range(x.type.rank - 1, -1, -1)))]


def _axes(ctx: Context, node: Node, rank: int) -> list[int]:
    """Squeeze's and Unsqueeze's axes (input 1, known at import), each in [0, rank)."""
    axes = [normalized_axis(ctx, int(a), rank, "axes") for a in ctx.required_array(node, 1, "axes").reshape(-1)]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {axes} repeat a dimension")
    return axes


@converter("Unsqueeze", since=13)
def unsqueeze(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reshape` inserting size-1 dims at axes (known at import)."""
    x = ctx.operand(node, 0)
    axes = _axes(ctx, node, x.type.rank + ctx.required_array(node, 1, "axes").size)
    sizes = iter(x.type.shape)
    return [ctx.op("reshape", x, new_sizes=[1 if d in axes else next(sizes) for d in range(x.type.rank + len(axes))])]


@converter("Squeeze", since=13)
def squeeze(node: Node, ctx: Context) -> Sequence[Operand]:
    """`reshape` dropping size-1 dims: those at axes (known at import), else all."""
    x = ctx.operand(node, 0)
    axes = _axes(ctx, node, x.type.rank) if node.input(1) else [d for d, size in enumerate(x.type.shape) if size == 1]
    if any(x.type.shape[d] != 1 for d in axes):
        raise ctx.error(f"cannot squeeze dimensions {axes} of {x.type}: not all have size 1")
    return [ctx.op("reshape", x, new_sizes=[size for d, size in enumerate(x.type.shape) if d not in axes])]


@converter("Concat", since=13)
def concat(node: Node, ctx: Context) -> Sequence[Operand]:
    """`concatenate` along axis."""
    inputs = [ctx.value(name) for name in node.inputs if name]
    axis = normalized_axis(ctx, node.attrs["axis"], inputs[0].type.rank)
    return [ctx.op("concatenate", *inputs, dimension=axis)]


@converter("Gather", since=13)
def gather(node: Node, ctx: Context) -> Sequence[Operand]:
    """`slice` per index (indices known at import), `concatenate`d and `reshape`d to the indices' shape."""
    x = ctx.operand(node, 0)
    axis = normalized_axis(ctx, node.attrs["axis"], x.type.rank)
    indices = ctx.required_array(node, 1, "indices")
    size = x.type.shape[axis]
    if indices.size == 0 or np.any(indices < -size) or np.any(indices >= size):
        raise ctx.error(f"indices {indices.tolist()} are empty or out of range for dimension {axis} of size {size}")
    parts = []
    for index in (int(i) % size for i in indices.reshape(-1)):
        start = tuple(index if d == axis else 0 for d in range(x.type.rank))
        limit = tuple(index + 1 if d == axis else n for d, n in enumerate(x.type.shape))
        parts.append(ctx.op("slice", x, start_indices=start, limit_indices=limit))
    joined = parts[0] if len(parts) == 1 else ctx.op("concatenate", *parts, dimension=axis)
    return [ctx.op("reshape", joined, new_sizes=(*x.type.shape[:axis], *indices.shape, *x.type.shape[axis + 1:]))]


def _cast_to(node: Node) -> str | None:
    to = node.attrs.get("to")
    return None if to in ONNX_DTYPES else f"to={to} is an element type convc lacks (it has {', '.join(ONNX_DTYPES.values())})"


@converter("Cast", since=13, attrs=_cast_to)
def cast(node: Node, ctx: Context) -> Sequence[Operand]:
    """`convert` to `to` (an element type convc has: float, float16, bfloat16, double, int8, int32)."""
    return [ctx.op("convert", ctx.operand(node, 0), new_dtype=ONNX_DTYPES[node.attrs["to"]])]


@converter("CastLike", since=15)
def cast_like(node: Node, ctx: Context) -> Sequence[Operand]:
    """`convert` to the element type of `target_type` (only its type is read; one convc has), as Cast."""
    x = ctx.operand(node, 0)
    known = ctx.array(node.input(1))
    target = from_numpy(known.dtype) if known is not None else ctx.operand(node, 1).type.dtype
    if target not in ONNX_DTYPES.values():
        shown = known.dtype if known is not None else target
        raise ctx.error(f"target_type has element type {shown}, one convc lacks (it has {', '.join(ONNX_DTYPES.values())})")
    return [ctx.op("convert", x, new_dtype=target)]


@converter("Identity", since=13)
def identity(node: Node, ctx: Context) -> Sequence[Operand]:
    """Its input, unchanged (no op)."""
    return [ctx.operand(node, 0)]


@converter("Dropout", since=13)
def dropout(node: Node, ctx: Context) -> Sequence[Operand]:
    """Inference: its input, unchanged (no op). Not training_mode, nor the mask output."""
    if node.input(2) and bool(ctx.required_array(node, 2, "training_mode")):
        raise ctx.error("training_mode=true is not supported (inference only)")
    ctx.refuse_outputs(node, 1, "the mask output")
    return [ctx.operand(node, 0)]


_CONSTANT_ATTRS = {"value": None, "value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                   "value_ints": np.int64}


def _constant_value(node: Node) -> str | None:
    if any(name in node.attrs for name in _CONSTANT_ATTRS):
        return None
    return f"a Constant with {', '.join(node.attrs) or 'no value'} is not supported (value, value_float(s), value_int(s) are)"


@converter("Constant", since=13, known_output=True, attrs=_constant_value)
def constant(node: Node, ctx: Context) -> Sequence[Operand]:
    """A value known at import (value, value_float(s), value_int(s)); a `constant` where an op reads it."""
    name = next(name for name in _CONSTANT_ATTRS if name in node.attrs)
    return [np.asarray(node.attrs[name], _CONSTANT_ATTRS[name])]


@converter("Shape", since=13, known_output=True)
def shape(node: Node, ctx: Context) -> Sequence[Operand]:
    """The input's static shape (start, end), known at import."""
    dims = ctx.operand(node, 0).type.shape
    return [np.asarray(dims[slice(node.attrs.get("start"), node.attrs.get("end"))], np.int64)]
