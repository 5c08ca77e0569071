"""cpu-conv-1x1-to-dot: a 1x1 conv is a matrix product over the feature dim; XLA CPU
runs it faster as one `dot_general` (a library GEMM) than as a convolution (figures in
docs/benchmarks.md).

Legal on ungrouped convs whose kernel is 1 in every spatial dim, with no padding and no
lhs dilation, and always taken there (no cost model). Strides become a strided `slice` of
the input first.
"""

from __future__ import annotations

from convc.builders import relayout, reshape, slice_along
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op
from convc.rewrite import Rewriter, pattern_pass


class Conv1x1ToDot(ConvLowering):
    name = "cpu-conv-1x1-to-dot"
    requires = "an ungrouped conv with a kernel of 1 in every spatial dim, no padding and no lhs dilation"

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return (all(k == 1 for k in facts.kernel_spatial)
                and all(lo == hi == 0 for lo, hi in facts.pads)
                and all(d == 1 for d in facts.lhs_dilation)
                and facts.feature_groups == facts.batch_groups == 1)

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        lhs, rhs = op.operands
        dn = facts.dn
        if any(s > 1 for s in facts.strides):
            every = {dim: (0, facts.lhs.shape[dim], stride) for dim, stride in zip(dn.lhs_spec[2:], facts.strides)}
            lhs = slice_along(rewriter, lhs, every, "strided")
        # the kernel as a matrix, its two feature dims in their original order
        out_dim, in_dim = dn.rhs_spec[0], dn.rhs_spec[1]
        matrix_shape = (facts.out_features, facts.in_features) if out_dim < in_dim else (facts.in_features, facts.out_features)
        matrix = reshape(rewriter, rhs, matrix_shape, "matrix")
        product = rewriter.create(
            "dot_general", lhs, matrix, suffix="dot",
            lhs_contracting_dimensions=(dn.lhs_spec[1],), rhs_contracting_dimensions=(1 if out_dim < in_dim else 0,),
            precision=facts.precision, preferred_element_type=facts.preferred_element_type)
        # dot_general's result: the lhs dims but its feature dim, in order, then the out feature
        order = [d for d in range(facts.lhs.rank) if d != dn.lhs_spec[1]] + [dn.lhs_spec[1]]
        rewriter.replace_anchor(relayout(rewriter, product, [order.index(d) for d in dn.lhs_spec], dn.out_spec, "layout"))


CpuConv1x1ToDot = pattern_pass(Conv1x1ToDot, "1x1 ungrouped convs without padding become dot_general (a GEMM on XLA CPU)")
