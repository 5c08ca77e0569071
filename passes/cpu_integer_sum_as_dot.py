"""cpu-integer-sum-as-dot: an integer `reduce_sum` whose sums f32 holds exactly becomes a `dot_general` of f32 ones
with the operand converted to f32, converted back: the same integers, bit for bit.

ONNX Runtime's QLinearGlobalAveragePool, which convc imports for a quantized network's global
average pools (the squeeze-excite blocks of EfficientNet and MobileNet v3), sums 8-bit values
less their zero point in i32. XLA:CPU fuses the elementwise chain producing such a reduce's
operand (a depthwise conv's tap sum and requantization) into the reduce's own loop, which it
runs over the reduced dims in an order that visits the chain's inputs with a stride, unvectorized;
a dot's operand is computed by a plain elementwise loop instead, and the sum runs as a
matrix-vector product (figures in docs/benchmarks.md).

The rewrite needs every partial sum below 2^24 in magnitude: the largest |x| the operand's producers prove
(`integer_range`) times the number of elements summed into one result. The kept dims before the first summed
one are batch dims of the dot (ones of their sizes too), so that the operand needs no transpose: for NHWC
summed over H and W, the ones are [N, H, W] and the result [N, C] as the reduce's.
"""

from __future__ import annotations

import numpy as np
from convc.builders import sum_as_dot
from convc.dtypes import is_integer
from convc.integer_range import F32_EXACT, integer_range, largest_magnitude
from convc.ir import Op
from convc.ops import view
from convc.rewrite import RewritePattern, Rewriter, pattern_pass


def exact_in_f32(op: Op) -> bool:
    """Whether the integer `reduce_sum` `op`'s partial sums all stay below 2^24 in magnitude, as its operand's
    producers prove."""
    x = op.operands[0]
    if not is_integer(x.type.dtype) or x.type.num_elements() == 0 or not view(op).axes:
        return False
    summed = int(np.prod([x.type.shape[axis] for axis in view(op).axes], dtype=np.int64))
    return largest_magnitude(integer_range(x)) * summed < F32_EXACT


class IntegerSumAsDot(RewritePattern):
    kind = "reduce_sum"
    name = "cpu-integer-sum-as-dot"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        if not exact_in_f32(op):
            return
        real = rewriter.create("convert", op.operands[0], suffix="f32", new_dtype="f32")
        sums = sum_as_dot(rewriter, real, view(op).axes, "sums")
        rewriter.replace_anchor(rewriter.create("convert", sums, suffix="sum", new_dtype=op.result.type.dtype))


CpuIntegerSumAsDot = pattern_pass(IntegerSumAsDot, "integer reduce_sums whose sums f32 holds exactly become a dot_general of ones (a "
                                  "matrix-vector product on XLA CPU), the same integers")
