"""cpu-float-sum-as-dot: a float `reduce_sum` over the middle dims of its operand (a pool's sum
over each image's spatial dims, channels-last) becomes a `dot_general` of ones with it.

XLA:CPU runs such a reduce as a loop over the kept elements that reads the summed dims with a
stride (the feature count), and splits large ones into a `reduce-window` of 32x32 blocks and a
second reduce (its tree reduction): a network's squeeze-excite pools took several times ONNX
Runtime's GlobalAveragePool. As a dot (ones [N, H, W] batched over N against x [N, H, W, C])
the sum is a matrix-vector product per image, read once in order (figures in
docs/benchmarks.md).

The same sums in another order: XLA's dot adds the terms in blocks along the summed dims where
its reduce adds them in a tree, so a result may differ in its last bits, more often the more
terms it sums (measured against an f64 sum: docs/passes.md). Taken where a kept dim comes
before the summed ones (the dot's batch dims: each image's own sum) and another after them (the
free dims, so the ones are smaller than the operand by their size); sums over the batch (a
gradient's bias or kernel sums) are left.
"""

from __future__ import annotations

from convc.builders import sum_as_dot
from convc.conv_facts import WIDE_FLOATS
from convc.ir import Op
from convc.ops import view
from convc.rewrite import RewritePattern, Rewriter, pattern_pass


def _per_item_sum(op: Op) -> bool:
    """An f32/f64 sum over middle dims only: some kept dim before the first summed one and some after the last."""
    x = op.operands[0]
    axes = sorted(view(op).axes)
    return (x.type.dtype in WIDE_FLOATS and bool(axes) and x.type.num_elements() > 0
            and axes[0] > 0 and axes[-1] < x.type.rank - 1)


class FloatSumAsDot(RewritePattern):
    kind = "reduce_sum"
    name = "cpu-float-sum-as-dot"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        if _per_item_sum(op):
            rewriter.replace_anchor(sum_as_dot(rewriter, op.operands[0], view(op).axes, "sums"))


CpuFloatSumAsDot = pattern_pass(FloatSumAsDot, "float reduce_sums over an operand's middle dims (a pool's spatial sums) become a "
                                "dot_general of ones (a matrix-vector product per item on XLA CPU)")
