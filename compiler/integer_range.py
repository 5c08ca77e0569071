"""What a plain integer value's producers prove about its elements' range, and what that allows: an f32
computation of integer sums is exact while every partial sum stays below 2^24 in magnitude. The cpu
pipeline's passes use it to move integer work XLA:CPU runs slowly into f32 ops that give the same
integers (`lower-quantized`'s exact f32 convs and dots, `cpu-integer-sum-as-dot`)."""

from __future__ import annotations

import numpy as np

from .dtypes import is_integer, numpy_dtype
from .ir import Op, Value

F32_EXACT = 2**24  # every integer of smaller magnitude is an f32, and so is every partial sum of such
RANGE_DEPTH = 16  # how many producers back `integer_range` looks
LAYOUT_MOVES = ("transpose", "reshape", "reverse")  # ops that only move elements


def integer_range(value: Value, depth: int = RANGE_DEPTH) -> tuple[int, int] | None:
    """[low, high] holding every element of a plain integer `value`, as its producers prove it:
    a constant's own values; a `convert` of an integer value, a layout move, a broadcast or
    an `optimization_barrier` keeps its operand's range; `add` and `subtract` combine theirs;
    anything else (and a range the element type cannot hold: the op wrapped) gives the
    element type's range. None for a value of another type."""
    if not is_integer(value.type.dtype):
        return None
    info = np.iinfo(numpy_dtype(value.type.dtype))
    full = (int(info.min), int(info.max))
    found = _produced_range(value.producer, depth - 1) if value.producer is not None and depth > 0 else None
    return found if found is not None and full[0] <= found[0] and found[1] <= full[1] else full


def _produced_range(op: Op, depth: int) -> tuple[int, int] | None:
    """The range `integer_range` reads from the op producing a value; None where it proves none."""
    if op.kind == "constant":
        values = np.asarray(op.attrs["value"])
        return (int(values.min()), int(values.max())) if values.size and values.dtype.kind in "iu" else None
    if op.kind in ("convert", "broadcast_in_dim", "optimization_barrier", *LAYOUT_MOVES):
        return integer_range(op.operands[0], depth)
    if op.kind in ("add", "subtract"):
        a, b = (integer_range(v, depth) for v in op.operands)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if op.kind == "add" else (a[0] - b[1], a[1] - b[0])
    return None


def largest_magnitude(bounds: tuple[int, int] | None) -> int:
    """The largest magnitude in a range `integer_range` proved (an integer value's always is one)."""
    assert bounds is not None
    return max(-bounds[0], bounds[1])
