"""Value-building steps the rewrites share, each one op (or none: a step that would do
nothing returns its input). Dims are addressed by number and only the dims a step changes
are named, so a rewrite reads as the op it builds: `slice_along(x, {h: (1, 5, 2)})`. Each
takes what creates ops (an `OpFactory`): a pass's `Rewriter`, or the gradient builder's tape."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from .dtypes import numpy_dtype
from .ir import Value
from .ops.base import OpFactory

# What a slice keeps of one dim: (start, limit) or (start, limit, stride).
DimRange = tuple[int, int] | tuple[int, int, int]


def slice_along(rewriter: OpFactory, value: Value, ranges: Mapping[int, DimRange], suffix: str) -> Value:
    """`value` sliced along the dims `ranges` names, every other dim whole. The slice
    carries `strides` exactly when some range gives one."""
    rank = value.type.rank
    start, limit, strides = [0] * rank, list(value.type.shape), [1] * rank
    for dim, bounds in ranges.items():
        start[dim], limit[dim] = bounds[0], bounds[1]
        if len(bounds) == 3:
            strides[dim] = bounds[2]
    strided = any(len(bounds) == 3 for bounds in ranges.values())
    return rewriter.create("slice", value, suffix=suffix, start_indices=tuple(start), limit_indices=tuple(limit),
                           strides=tuple(strides) if strided else None)


def constant_array(value: Value) -> np.ndarray | None:
    """The array of `value` when a constant op produces it, else None."""
    op = value.producer
    return np.asarray(op.attrs["value"]) if op is not None and op.kind == "constant" else None


def tap_range(tap: int, dilation: int, stride: int, out: int) -> tuple[int, int, int]:
    """The (start, limit, stride) of the input positions a window's `tap`-th position reads, `dilation`
    apart within the window, for `out` outputs `stride` apart: what a conv's or a pool's tap slices."""
    return tap * dilation, tap * dilation + (out - 1) * stride + 1, stride


def leading(rewriter: OpFactory, value: Value, shape: Sequence[int], suffix: str) -> Value:
    """The first `shape[d]` elements of `value` along every dim d (none when that is all of it)."""
    if tuple(shape) == value.type.shape:
        return value
    return slice_along(rewriter, value, {dim: (0, size) for dim, size in enumerate(shape)}, suffix)


def pad_along(rewriter: OpFactory, value: Value, pads: Mapping[int, tuple[int, int, int]], suffix: str) -> Value:
    """`value` padded with zeros along the dims `pads` names, each (low, high, interior)."""""
    config = [(0, 0, 0)] * value.type.rank
    for dim, row in pads.items():
        config[dim] = row
    return pad(rewriter, value, config, suffix)


def pad(rewriter: OpFactory, value: Value, config: Sequence[tuple[int, int, int]], suffix: str, padding_value: float = 0.0) -> Value:
    """`value` padded with `padding_value` (zeros; -0.0 counts as the default 0.0) as `config` says."""
    if all(row == (0, 0, 0) for row in config):
        return value
    fill = {"padding_value": padding_value} if padding_value != 0.0 else {}
    return rewriter.create("pad", value, suffix=suffix, padding_config=tuple(config), **fill)


def zeros(rewriter: OpFactory, shape: Sequence[int], dtype: str, suffix: str) -> Value:
    """A tensor of zeros: one scalar constant broadcast to `shape`."""
    zero = rewriter.create("constant", suffix="zero", value=np.zeros((), numpy_dtype(dtype)))
    return rewriter.create("broadcast_in_dim", zero, suffix=suffix, shape=tuple(shape), broadcast_dimensions=())


def reshape(rewriter: OpFactory, value: Value, shape: Sequence[int], suffix: str) -> Value:
    if tuple(shape) == value.type.shape:
        return value
    return rewriter.create("reshape", value, suffix=suffix, new_sizes=tuple(shape))


def transpose(rewriter: OpFactory, value: Value, permutation: Sequence[int], suffix: str) -> Value:
    if list(permutation) == list(range(len(permutation))):
        return value
    return rewriter.create("transpose", value, suffix=suffix, permutation=tuple(permutation))


def relayout(rewriter: OpFactory, value: Value, source: Sequence[int], target: Sequence[int], suffix: str) -> Value:
    """Move dims between two dimension-number specs: the dim `source[role]` of `value`
    (role 0 batch, 1 feature, then spatial) becomes dim `target[role]` of the result."""
    permutation = [0] * len(target)
    for role, dim in enumerate(target):
        permutation[dim] = source[role]
    return transpose(rewriter, value, permutation, suffix)


def split_dim(shape: Sequence[int], dim: int, sizes: Sequence[int]) -> tuple[int, ...]:
    """`shape` with dimension `dim` replaced by `sizes` (whose product it must be)."""
    return tuple(shape[:dim]) + tuple(sizes) + tuple(shape[dim + 1:])


def permutation_between(source: Sequence[Hashable], target: Sequence[Hashable]) -> list[int]:
    """The transpose permutation that moves dims labelled `source` (by position) into the
    order `target` gives: result dim i is source dim `source.index(target[i])`."""
    return [list(source).index(label) for label in target]


def sum_values(rewriter: OpFactory, terms: Sequence[Value], suffix: str) -> Value:
    return combine_values(rewriter, terms, "add", suffix)


def combine_values(rewriter: OpFactory, terms: Sequence[Value], kind: str, suffix: str) -> Value:
    """`terms` folded left to right by the binary op `kind` (add, maximum)."""
    total = terms[0]
    for term in terms[1:]:
        total = rewriter.create(kind, total, term, suffix=suffix)
    return total


def sum_as_dot(rewriter: OpFactory, x: Value, axes: Sequence[int], suffix: str) -> Value:
    """`reduce_sum(x, axes)` as a `dot_general` of ones (x's float type) with `x`: the kept dims
    before the first summed one are batch dims (ones of their sizes too), so a channels-last
    operand summed over its spatial dims needs no transpose (ones [N, H, W], result [N, C]); the
    result's dims are the reduce's, in order."""
    summed = sorted(axes)
    batch = [dim for dim in range(summed[0]) if dim not in summed]
    ones = np.ones([x.type.shape[dim] for dim in (*batch, *summed)], numpy_dtype(x.type.dtype))
    return rewriter.create(
        "dot_general", rewriter.create("constant", suffix=f"{suffix}_ones", value=ones), x, suffix=suffix,
        lhs_batching_dimensions=tuple(range(len(batch))), rhs_batching_dimensions=tuple(batch),
        lhs_contracting_dimensions=tuple(range(len(batch), ones.ndim)), rhs_contracting_dimensions=tuple(summed),
        precision="HIGHEST")


def rounded_quotient(rewriter: OpFactory, x: Value, divisor: Value, suffix: str) -> Value:
    """`x / divisor` rounded once to x's type (f32, f16 or bf16), as IEEE division rounds it,
    whatever XLA does to a division: it makes one by a constant a product with the constant's
    rounded reciprocal, and two in a row one division by a product, each of which rounds some
    quotients the other way. Divided in f64 and rounded back: the f64 quotient, exact or from
    a reciprocal, is within 2^-52 of the true one, and no quotient of two values of at most 24
    significant bits that is not itself a tie between two of them lies that close to one (a
    tie needs one bit more than a product of two such values holds), so it rounds as the true
    quotient. An f64 `x` is divided as it is."""
    if x.type.dtype == "f64":
        return rewriter.create("divide", x, divisor, suffix=suffix)
    wide_x = rewriter.create("convert", x, suffix=f"{suffix}_f64", new_dtype="f64")
    wide_divisor = rewriter.create("convert", divisor, suffix=f"{suffix}_divisor_f64", new_dtype="f64")
    quotient = rewriter.create("divide", wide_x, wide_divisor, suffix=f"{suffix}_quotient_f64")
    return rewriter.create("convert", quotient, suffix=suffix, new_dtype=x.type.dtype)
