"""cpu-crop-negative-padding: negative conv padding becomes a `slice` of the input.

XLA:CPU's Eigen convolution reads outside its input when a spatial dim has negative low
padding and positive high padding (openxla/xla#48713): those results are garbage. A crop
is exact and costs a slice: dropping c elements off the start of the lhs-dilated input
drops the first ceil(c / d) input elements and leaves ceil(c / d) * d - c zeros of low
padding (d the lhs dilation); the high side likewise. A conv whose crops leave a spatial
dim no input element sees padding only: it becomes zeros.
"""

from __future__ import annotations

from convc.builders import slice_along, zeros
from convc.conv_facts import conv_facts, crops
from convc.ir import Op
from convc.ops import view
from convc.ops.conv import spatial
from convc.rewrite import RewritePattern, Rewriter, pattern_pass


def crop(pad: int, dilation: int) -> tuple[int, int]:
    """(input elements to drop, padding left) for one side's `pad` of a `dilation`-dilated input."""
    if pad >= 0:
        return 0, pad
    drop = -(pad // dilation)  # ceil(-pad / dilation)
    return drop, drop * dilation + pad


class CropNegativePadding(RewritePattern):
    kind = "conv"
    name = "cpu-crop-negative-padding"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        facts = conv_facts(op)
        if facts is None or not crops(facts):
            return
        kept, pads = {}, []
        sizes = spatial(facts.lhs.shape, facts.dn.lhs_spec)
        for dim, size, (lo, hi), dilation in zip(facts.dn.lhs_spec[2:], sizes, facts.pads, facts.lhs_dilation):
            (drop_lo, lo), (drop_hi, hi) = crop(lo, dilation), crop(hi, dilation)
            if drop_lo + drop_hi >= size:  # every window sees padding only
                rewriter.replace_anchor(zeros(rewriter, facts.out.shape, facts.out.dtype, "zeros"))
                return
            kept[dim] = (drop_lo, size - drop_hi)
            pads.append((lo, hi))
        cropped = slice_along(rewriter, op.operands[0], kept, "crop")
        # a correctness fix, not a lowering choice: the cropped conv keeps the op's `lowering` pin
        attrs = facts.with_attrs(op, padding=tuple(pads), lowering=view(op).lowering)
        conv = rewriter.create("conv", cropped, op.operands[1], suffix="conv", **attrs)
        rewriter.replace_anchor(conv)


CpuCropNegativePadding = pattern_pass(
    CropNegativePadding, "negative conv pads become a slice of the input (XLA:CPU misreads them, openxla/xla#48713)")
