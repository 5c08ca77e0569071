"""Pad, Slice, Split, Expand and Tile: slices, reverses, pads, concatenations and broadcasts of
convc's own ops. Pads, starts, ends, axes, steps, split sizes, shapes and repeats come from
values known at import."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...builders import DimRange, pad, slice_along
from ...ir import Value
from .registry import Context, Node, Operand, converter, one_of
from .shared import broadcast_to, normalized_axis

PAD_MODES = ("constant", "reflect", "edge", "wrap")


def known_ints(ctx: Context, node: Node, index: int, what: str) -> list[int]:
    """Input `index`, known at import, as a flat list of Python ints."""
    return [int(v) for v in ctx.required_array(node, index, what).reshape(-1)]


def known_axes(ctx: Context, node: Node, index: int, rank: int, count: int) -> list[int]:
    """The axes input `index` (each in [0, rank), none repeated), else 0..count-1."""
    if not node.input(index):
        return list(range(count))
    axes = [normalized_axis(ctx, a, rank, "axes") for a in known_ints(ctx, node, index, "axes")]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {axes} repeat a dimension")
    return axes


def concatenated(ctx: Context, parts: Sequence[Value], axis: int) -> Value:
    """`parts` joined along `axis` (the one part itself when alone)."""
    return parts[0] if len(parts) == 1 else ctx.op("concatenate", *parts, dimension=axis)


# --- Pad --------------------------------------------------------------------------------


def _edge_pad(ctx: Context, x: Value, axis: int, lo: int, hi: int) -> Value:
    """`lo` copies of the first element along `axis`, x, `hi` copies of the last."""
    size = x.type.shape[axis]

    def spread(index: int, count: int) -> Value:
        edge = slice_along(ctx, x, {axis: (index, index + 1)}, "edge")
        return broadcast_to(ctx, edge, tuple(count if d == axis else n for d, n in enumerate(x.type.shape)))

    return concatenated(ctx, [*([spread(0, lo)] if lo else []), x, *([spread(size - 1, hi)] if hi else [])], axis)


def _reflect_pad(ctx: Context, x: Value, axis: int, lo: int, hi: int) -> Value:
    """x mirrored about its first and last elements (which are not repeated): x[lo:0:-1], x, x[-2:-2-hi:-1]."""
    size = x.type.shape[axis]
    if lo >= size or hi >= size:
        raise ctx.error(f"reflect pads ({lo}, {hi}) must be below the size {size} of axis {axis} (after any crop)")

    def mirrored(start: int, limit: int) -> list[Value]:
        if start == limit:
            return []
        return [ctx.create("reverse", slice_along(ctx, x, {axis: (start, limit)}, "reflect"), suffix="reverse", dimensions=(axis,))]

    return concatenated(ctx, [*mirrored(1, lo + 1), x, *mirrored(size - 1 - hi, size - 1)], axis)


def _wrap_pad(ctx: Context, x: Value, axis: int, lo: int, hi: int) -> Value:
    """x repeated around itself (as many whole copies as the pads need), then cut to lo + size + hi."""
    size = x.type.shape[axis]
    before, after = -(-lo // size), -(-hi // size)
    tiled = concatenated(ctx, [x] * (before + 1 + after), axis)
    return slice_along(ctx, tiled, {axis: (before * size - lo, (before + 1) * size + hi)}, "wrap")


_MODE_PADS = {"edge": _edge_pad, "reflect": _reflect_pad, "wrap": _wrap_pad}


@converter("Pad", since=13, attrs=one_of(mode=PAD_MODES))
def pad_op(node: Node, ctx: Context) -> Sequence[Operand]:
    """constant: `pad` with constant_value (negative pads crop); reflect, edge, wrap: a crop (`pad` by the negative
    pads), then per padded axis `slice`s (and `reverse`s for reflect, `broadcast_in_dim` for edge) `concatenate`d
    around it. pads, constant_value and axes (opset 18) must be known at import."""
    x = ctx.operand(node, 0)
    rank, mode = x.type.rank, node.attrs["mode"]
    pads = known_ints(ctx, node, 1, "pads")
    axes = known_axes(ctx, node, 3, rank, len(pads) // 2)
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads has {len(pads)} entries, expected {2 * len(axes)} (a begin and an end per axis)")
    rows = {axis: (pads[i], pads[i + len(axes)]) for i, axis in enumerate(axes)}
    for axis, (lo, hi) in rows.items():
        if x.type.shape[axis] + lo + hi < 0:
            raise ctx.error(f"pads ({lo}, {hi}) crop more than the {x.type.shape[axis]} elements of axis {axis}")
    if mode == "constant":
        value = ctx.array(node.input(2)) if node.input(2) else None
        if node.input(2) and value is None:
            raise ctx.error(f"constant_value (input 2, '{node.input(2)}') must be known at import")
        config = [(*rows.get(d, (0, 0)), 0) for d in range(rank)]
        fill = None if value is None or value.size == 0 else float(value.reshape(-1)[0])
        if all(row == (0, 0, 0) for row in config):
            return [x]
        return [ctx.op("pad", x, padding_config=config, padding_value=fill or None)]
    y = pad(ctx, x, [(min(lo, 0), min(hi, 0), 0) for lo, hi in (rows.get(d, (0, 0)) for d in range(rank))], "crop")
    for axis, (lo, hi) in rows.items():
        lo, hi = max(lo, 0), max(hi, 0)
        if lo or hi:
            if y.type.shape[axis] == 0:
                raise ctx.error(f"cannot pad axis {axis} in mode '{mode}': it has no elements (after any crop)")
            y = _MODE_PADS[mode](ctx, y, axis, lo, hi)
    return [y]


# --- Slice ------------------------------------------------------------------------------


def slice_range(start: int, end: int, step: int, size: int) -> tuple[int, int]:
    """ONNX Slice's first index and element count along an axis of `size`: a negative start or
    end counts from the end; both are clamped to [0, size] (step > 0) or start to [0, size - 1]
    and end to [-1, size - 1] (step < 0)."""
    start, end = (start + size if start < 0 else start), (end + size if end < 0 else end)
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        return start, max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return start, max(0, -(-(start - end) // -step))


@converter("Slice", since=13)
def slice_op(node: Node, ctx: Context) -> Sequence[Operand]:
    """`slice` (one, strided where steps are); a negative step is a `reverse` of that axis first. starts, ends, axes,
    steps must be known at import (negative indices count from the end; out-of-range ones are clamped)."""
    x = ctx.operand(node, 0)
    starts, ends = known_ints(ctx, node, 1, "starts"), known_ints(ctx, node, 2, "ends")
    axes = known_axes(ctx, node, 3, x.type.rank, len(starts))
    steps = known_ints(ctx, node, 4, "steps") if node.input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts, ends, axes and steps have {len(starts)}, {len(ends)}, {len(axes)} and {len(steps)} entries, "
                        "expected one each per sliced axis")
    if 0 in steps:
        raise ctx.error(f"steps {steps} hold a 0")
    ranges: dict[int, DimRange] = {}
    reversed_axes = []
    for axis, start, end, step in zip(axes, starts, ends, steps):
        size = x.type.shape[axis]
        first, count = slice_range(start, end, step, size)
        if step < 0:  # in the reversed axis, index i is size - 1 - i and the step is positive
            reversed_axes.append(axis)
            first, step = size - 1 - first, -step
        limit = first + (count - 1) * step + 1 if count else first
        ranges[axis] = (first, limit, step) if step != 1 else (first, limit)
    y = ctx.create("reverse", x, suffix="reverse", dimensions=tuple(reversed_axes)) if reversed_axes else x
    if all(bounds[:2] == (0, y.type.shape[axis]) and len(bounds) == 2 for axis, bounds in ranges.items()):
        return [y]
    return [slice_along(ctx, y, ranges, "slice")]


# --- Split, Expand, Tile --------------------------------------------------------------------


def split_sizes(ctx: Context, node: Node, size: int) -> list[int]:
    """The sizes of the parts: the split input (known at import); else num_outputs parts of
    ceil(size / num_outputs), the last smaller (opset 18); else equal parts, one per output."""
    parts = len(node.outputs)
    if node.input(1):
        sizes = known_ints(ctx, node, 1, "split")
    elif node.attrs.get("num_outputs") is not None:
        count = int(node.attrs["num_outputs"])
        chunk = -(-size // count) if count > 0 else 0
        sizes = [chunk] * (count - 1) + [size - chunk * (count - 1)]
    else:
        if size % parts:
            raise ctx.error(f"cannot split {size} elements into {parts} equal parts (give split)")
        sizes = [size // parts] * parts
    if len(sizes) != parts or any(s < 0 for s in sizes) or sum(sizes) != size:
        raise ctx.error(f"split sizes {sizes} do not cut {size} elements into {parts} outputs")
    return sizes


@converter("Split", since=13)
def split(node: Node, ctx: Context) -> Sequence[Operand]:
    """One `slice` per output along axis; sizes from split (known at import), num_outputs (opset 18; the last part
    smaller) or equal parts."""
    x = ctx.operand(node, 0)
    axis = normalized_axis(ctx, node.attrs["axis"], x.type.rank)
    results, offset = [], 0
    for size in split_sizes(ctx, node, x.type.shape[axis]):
        results.append(slice_along(ctx, x, {axis: (offset, offset + size)}, "slice") if size != x.type.shape[axis] else x)
        offset += size
    return results


@converter("Expand", since=13)
def expand(node: Node, ctx: Context) -> Sequence[Operand]:
    """`broadcast_in_dim` to the numpy broadcast of the input's shape and shape (known at import)."""
    x = ctx.operand(node, 0)
    shape = known_ints(ctx, node, 1, "the shape")
    try:
        target = np.broadcast_shapes(x.type.shape, tuple(shape))
    except ValueError:
        raise ctx.error(f"{x.type} does not broadcast to shape {shape}") from None
    return [broadcast_to(ctx, x, target)]


@converter("Tile", since=13)
def tile(node: Node, ctx: Context) -> Sequence[Operand]:
    """`broadcast_in_dim` adding a repeat dim before each dim, then `reshape` merging each pair; repeats must be known at
    import."""
    x = ctx.operand(node, 0)
    repeats = known_ints(ctx, node, 1, "repeats")
    if len(repeats) != x.type.rank or any(r < 0 for r in repeats):
        raise ctx.error(f"repeats {repeats} must hold one non-negative count per dimension of {x.type}")
    if all(r == 1 for r in repeats):
        return [x]
    spread = ctx.op("broadcast_in_dim", x, shape=tuple(n for pair in zip(repeats, x.type.shape) for n in pair),
                    broadcast_dimensions=tuple(range(1, 2 * x.type.rank, 2)))
    return [ctx.op("reshape", spread, new_sizes=tuple(r * n for r, n in zip(repeats, x.type.shape)))]
