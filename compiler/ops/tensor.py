"""The plain tensor ops conv networks need between convs, and that rewrites produce.

Constraint ids are those of the StableHLO op each one emits, namespaced by the op
(`slice.C3`); `bias_add` (no StableHLO op of its own) and `constant` number convc's rules.

Attribute names follow jax.lax (`new_sizes`, `permutation`, `dimensions`,
`padding_config`, `start_indices`/`limit_indices`/`strides`, `dimension`, `new_dtype`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..diagnostics import VerifyError
from ..dtypes import from_numpy, is_float, quant_type
from ..ir import TensorType, Value
from .base import (
    DTYPE,
    FLOAT,
    INT,
    INTS,
    TENSOR,
    Attr,
    IntRowsKind,
    OpDef,
    OpFactory,
    OpView,
    check_axes,
    check_permutation,
    ones_per_dim,
    operand_type,
    same_types,
)
from .quantized import moved_axis_dtype, reshaped_axis


def _constant(v: OpView) -> TensorType:
    value = v.attr("value")
    dtype = from_numpy(value.dtype)
    if dtype is None:
        raise VerifyError(f"constant has unsupported element type {value.dtype}", "constant.C1", attr="value")
    return TensorType(tuple(int(d) for d in value.shape), dtype)


def _normalize_axis(axis: int, rank: int, attr: str, constraint: str) -> int:
    if not -rank <= axis < rank:
        raise VerifyError(f"{attr} {axis} is out of range for rank {rank}", constraint, attr=attr)
    return axis % rank


def _bias_axis_hint(v: OpView, x: TensorType, bias: TensorType, axis: int) -> str:
    """A bias that fits another dimension of x: most likely channels-first data (an NCHW
    conv's result) given without `axis`, whose default is the last dimension."""
    fits = [d for d in range(x.rank) if d != axis and bias.rank == 1 and x.shape[d] == bias.shape[0]]
    if not fits:
        return ""
    default = "" if v.has("axis") else f" (the default, {v.axis}, is the last dimension: channels last)"
    return f"; it fits dimension {fits[0]}: give axis={fits[0]}{default}"


def _bias_add(v: OpView) -> TensorType:
    x, bias = v.operand(0), v.operand(1)
    axis = _normalize_axis(v.attr("axis"), x.rank, "axis", "bias_add.C1")
    if bias.rank != 1 or bias.shape[0] != x.shape[axis]:
        raise VerifyError(f"bias must have shape [{x.shape[axis]}] (dimension {axis} of {x}), got {bias}"
                          f"{_bias_axis_hint(v, x, bias, axis)}", "bias_add.C2", operand=1)
    if bias.dtype != x.dtype:
        raise VerifyError(f"bias element type {bias.dtype} differs from input element type {x.dtype}", "bias_add.C3", operand=1)
    return x


def _reshape(v: OpView) -> TensorType:
    x, sizes = v.operand(0), v.attr("new_sizes")
    if any(d < 0 for d in sizes):
        raise VerifyError(f"new_sizes must be non-negative, got {list(sizes)}", "reshape.M1", attr="new_sizes")
    if int(np.prod(sizes, dtype=object)) != x.num_elements():
        raise VerifyError(f"cannot reshape {x} ({x.num_elements()} elements) to {list(sizes)}", "reshape.C2", attr="new_sizes")
    dtype = moved_axis_dtype(x.dtype, reshaped_axis(x.shape, sizes))
    if dtype is None:
        raise VerifyError(f"a reshape of a per-axis quantized tensor must keep its quantization dimension whole, with the same "
                          f"number of elements before it: {x} to {list(sizes)}", "reshape.C3", attr="new_sizes")
    return TensorType(tuple(sizes), dtype)


def _transpose(v: OpView) -> TensorType:
    x, perm = v.operand(0), v.attr("permutation")
    check_permutation(perm, x.rank, "permutation", "transpose.C2")
    dtype = moved_axis_dtype(x.dtype, perm.index)  # the quantization dimension goes where the permutation puts it
    assert dtype is not None
    return TensorType(tuple(x.shape[d] for d in perm), dtype)


def _reverse(v: OpView) -> TensorType:
    x = v.operand(0)
    quant = quant_type(x.dtype)
    if quant is not None and quant.axis is not None:
        raise VerifyError(f"reverse takes a tensor or a per-tensor quantized tensor, got {x}", "reverse.I1", operand=0)
    check_axes(v.attr("dimensions"), x.rank, "dimensions", "reverse.C3", "reverse.C2")
    return x


def _pad(v: OpView) -> TensorType:
    x, config = v.operand(0), v.attr("padding_config")
    if len(config) != x.rank:
        raise VerifyError(f"padding_config has {len(config)} rows, expected {x.rank} (one per dimension)", "pad.C2",
                          attr="padding_config")
    shape = []
    for dim, (size, (lo, hi, interior)) in enumerate(zip(x.shape, config)):
        if interior < 0:
            raise VerifyError(f"interior padding must be non-negative, got {interior} for dimension {dim}", "pad.C3",
                              attr="padding_config")
        padded = lo + hi + size + max(size - 1, 0) * interior
        if padded < 0:
            raise VerifyError(f"padding {[lo, hi, interior]} makes dimension {dim} (size {size}) negative", "pad.C4",
                              attr="padding_config")
        shape.append(padded)
    return TensorType(tuple(shape), x.dtype)


def _slice(v: OpView) -> TensorType:
    x, start, limit = v.operand(0), v.attr("start_indices"), v.attr("limit_indices")
    strides = v.attr("strides")  # only an absent attribute defaults: `[]` is a wrong length, as lax.slice says
    for name, values in (("start_indices", start), ("limit_indices", limit), ("strides", strides)):
        if len(values) != x.rank:
            raise VerifyError(f"{name} has {len(values)} entries, expected {x.rank}", "slice.C2", attr=name)
    shape = []
    for dim, (size, lo, hi, step) in enumerate(zip(x.shape, start, limit, strides)):
        if step <= 0:
            raise VerifyError(f"strides must be positive, got {list(strides)}", "slice.C4", attr="strides")
        if not 0 <= lo <= hi <= size:
            raise VerifyError(f"slice [{lo}, {hi}) is out of bounds for dimension {dim} of size {size}", "slice.C3", attr="limit_indices")
        shape.append(-(-(hi - lo) // step))
    return TensorType(tuple(shape), x.dtype)


def _concatenate(v: OpView) -> TensorType:
    first = v.operand(0)
    dim = v.attr("dimension")
    if not 0 <= dim < first.rank:
        raise VerifyError(f"dimension {dim} is out of range for rank {first.rank}", "concatenate.C4",
                          attr="dimension")
    total = 0
    for index, t in enumerate(v.types):
        others = [s for d, s in enumerate(t.shape) if d != dim]
        if t.rank != first.rank or t.dtype != first.dtype or others != [s for d, s in enumerate(first.shape) if d != dim]:
            constraint = "concatenate.C1" if t.dtype != first.dtype else "concatenate.C2"
            raise VerifyError(f"operand {index} of type {t} does not match {first} outside dimension {dim}", constraint,
                              operand=index)
        total += t.shape[dim]
    return TensorType(first.shape[:dim] + (total,) + first.shape[dim + 1:], first.dtype)


def _convert(v: OpView) -> TensorType:
    return TensorType(v.operand(0).shape, v.attr("new_dtype"))


# --- gradient rules (reverse mode; JAX's transpose rules of the same lax ops) -------------

Cotangents = Sequence[Value | None]


def _bias_add_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `g`; bias: `reduce_sum(g)` over every dim but `axis`."""
    axis = v.axis % g.type.rank
    others = tuple(d for d in range(g.type.rank) if d != axis)
    return g, b.create("reduce_sum", g, suffix="d_bias", axes=others)


def _add_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """`g` for both operands."""
    return g, g


def _multiply_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """lhs: `g * rhs`; rhs: `lhs * g`."""
    lhs, rhs = operands
    return b.create("multiply", g, rhs, suffix="d_lhs"), b.create("multiply", lhs, g, suffix="d_rhs")


def _relu_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `relu_grad(g, x)`, `g` where `x > 0` and 0 elsewhere (`jax.nn.relu`'s derivative, 0 at 0, as PyTorch's)."""
    return (b.create("relu_grad", g, operands[0], suffix="d_x"),)


def _reshape_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `reshape(g)` to x's shape."""
    return (b.create("reshape", g, suffix="d_x", new_sizes=operands[0].type.shape),)


def _transpose_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `transpose(g)` by the inverse permutation."""
    inverse = tuple(int(d) for d in np.argsort(v.permutation))
    return (b.create("transpose", g, suffix="d_x", permutation=inverse),)


def _reverse_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `reverse(g)` over the same dimensions."""
    return (b.create("reverse", g, suffix="d_x", dimensions=v.dimensions),)


def _pad_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `pad(g)` by the negated edge pads, then a `slice` with stride `interior + 1`.

    Undoing the edge pads crops where they padded and puts zeros where they cropped."""
    config = v.padding_config
    unpadded = g
    if any((lo, hi) != (0, 0) for lo, hi, _ in config):
        unpadded = b.create("pad", g, suffix="d_x_edges", padding_config=tuple((-lo, -hi, 0) for lo, hi, _ in config))
    if all(interior == 0 for _, _, interior in config):
        return (unpadded,)
    return (b.create("slice", unpadded, suffix="d_x", start_indices=(0,) * g.type.rank, limit_indices=unpadded.type.shape,
                     strides=tuple(interior + 1 for _, _, interior in config)),)


def _slice_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `pad(g)` with zeros, `start` low, the rest high, `stride - 1` interior."""
    config = []
    for size, start, stride, out in zip(operands[0].type.shape, v.start_indices, v.strides, g.type.shape):
        end = start + (0 if out == 0 else (out - 1) * stride + 1)
        config.append((start, size - end, stride - 1))
    return (b.create("pad", g, suffix="d_x", padding_config=tuple(config)),)


def _concatenate_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """each input: its `slice` of `g`."""
    dim, offset, parts = v.dimension, 0, []
    for index, operand in enumerate(operands):
        size = operand.type.shape[dim]
        start = tuple(offset if d == dim else 0 for d in range(g.type.rank))
        limit = tuple(offset + size if d == dim else g.type.shape[d] for d in range(g.type.rank))
        parts.append(b.create("slice", g, suffix=f"d_{index}", start_indices=start, limit_indices=limit))
        offset += size
    return parts


def _convert_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Cotangents:
    """x: `convert(g)` back to x's type; none for an integer x."""
    source = operands[0].type.dtype
    if not is_float(source):
        return (None,)
    return (g if g.type.dtype == source else b.create("convert", g, suffix="d_x", new_dtype=source),)


TENSOR_OPS: tuple[OpDef, ...] = (
    OpDef("constant", (), _constant, {"value": Attr(TENSOR, required=True, doc="the array")}, doc="a literal tensor"),
    OpDef("bias_add", ("x", "bias"), _bias_add, {"axis": Attr(INT, -1, doc="the dimension of x the bias runs along; negative counts from the end")}, doc="x + bias broadcast along `axis`", vjp=_bias_add_vjp),
    OpDef("add", ("lhs", "rhs"), same_types, doc="elementwise sum of equal types", vjp=_add_vjp),
    OpDef("multiply", ("lhs", "rhs"), same_types, doc="elementwise product of equal types", vjp=_multiply_vjp),
    OpDef("relu", ("x",), operand_type, doc="max(x, 0)", vjp=_relu_vjp),
    OpDef("reshape", ("x",), _reshape, {"new_sizes": Attr(INTS, required=True, doc="the result shape")}, doc="lax.reshape", vjp=_reshape_vjp, quantized=True),
    OpDef("transpose", ("x",), _transpose, {"permutation": Attr(INTS, required=True, doc="result dim i is operand dim permutation[i]")}, doc="lax.transpose", vjp=_transpose_vjp, quantized=True),
    OpDef("reverse", ("x",), _reverse, {"dimensions": Attr(INTS, required=True, doc="the dims reversed")}, doc="lax.rev", vjp=_reverse_vjp, quantized=True),
    OpDef("pad", ("x",), _pad, {
        "padding_config": Attr(IntRowsKind(3), required=True, doc="one [lo, hi, interior] row per dimension"),
        "padding_value": Attr(FLOAT, 0.0, doc="the value padded in"),
    }, doc="lax.pad with a scalar padding value; negative lo/hi crop", vjp=_pad_vjp),
    OpDef("slice", ("x",), _slice, {
        "start_indices": Attr(INTS, required=True, doc="the first index per dimension"),
        "limit_indices": Attr(INTS, required=True, doc="one past the last index per dimension"),
        "strides": Attr(INTS, ones_per_dim, doc="the step per dimension"),
    }, doc="lax.slice", vjp=_slice_vjp),
    OpDef("concatenate", ("inputs",), _concatenate, {"dimension": Attr(INT, required=True, doc="the dim joined along")}, variadic=True, doc="lax.concatenate",
          vjp=_concatenate_vjp),
    OpDef("convert", ("x",), _convert, {"new_dtype": Attr(DTYPE, required=True, doc="the result element type")}, doc="lax.convert_element_type", vjp=_convert_vjp),
)
