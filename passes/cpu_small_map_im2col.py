"""cpu-small-map-im2col: a conv whose window is larger than its input becomes im2col, one
dot_general of the padded input's slices (one per tap, joined along the feature dim) with
the kernel as one matrix.

XLA:CPU swaps the operands of a conv whose window is larger than its input in some spatial
dim, a form YNNPACK declines, and runs it in its generic loop (an 8-bit conv upcast to i32):
ResNet's stride-1 3x3 convs over the 2x2 maps of a 32x32 input, every tap of which meets the
input (so `drop-padding-taps` keeps them), took 82% of the int8 ResNet-18's time at batch 8.
Such maps are small, and so is their im2col matrix (taps x features columns per output
position): one GEMM. Taken for ungrouped channels-last convs without lhs dilation whose
im2col matrix has at most `max_elements` elements.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from convc.builders import pad_along, reshape, slice_along, transpose
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op
from convc.rewrite import Rewriter, pattern_pass


def _window_larger_than_input(facts: ConvFacts) -> bool:
    sizes = [facts.lhs.shape[d] for d in facts.dn.lhs_spec[2:]]
    return any((k - 1) * r + 1 > size for k, r, size in zip(facts.kernel_spatial, facts.rhs_dilation, sizes))


@dataclass(frozen=True)
class SmallMapIm2col(ConvLowering):
    name = "cpu-small-map-im2col"
    requires = ("an ungrouped channels-last conv without lhs dilation or negative padding whose window is larger "
                "than its input in some spatial dim")
    max_elements: int = 1 << 22  # the im2col matrix's (output positions x taps x features) largest size

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return (facts.feature_groups == facts.batch_groups == 1
                and all(d == 1 for d in facts.lhs_dilation)
                and all(lo >= 0 and hi >= 0 for lo, hi in facts.pads)
                and facts.channels_last()
                and _window_larger_than_input(facts))

    def profitable(self, facts: ConvFacts) -> bool:
        columns = prod(facts.out.shape[:-1]) * len(facts.taps()) * facts.in_features
        return columns <= self.max_elements

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        lhs, rhs = op.operands
        dn = facts.dn
        spatial = dn.lhs_spec[2:]
        padded = pad_along(rewriter, lhs, {dim: (lo, hi, 0) for dim, (lo, hi) in zip(spatial, facts.pads)}, "padded")
        columns = []
        for tap in facts.taps():  # row-major over the kernel's spatial dims: the matrix's row blocks below
            window = {dim: (t * r, t * r + (o - 1) * s + 1, s) if s > 1 else (t * r, t * r + o)
                      for dim, t, r, o, s in zip(spatial, tap, facts.rhs_dilation, facts.out_spatial, facts.strides)}
            columns.append(slice_along(rewriter, padded, window, "tap"))
        feature = dn.lhs_spec[1]
        joined = columns[0] if len(columns) == 1 else rewriter.create("concatenate", *columns, suffix="im2col", dimension=feature)
        # the kernel as [taps x in features, out features]: its spatial dims in spec order, then in, then out
        ordered = transpose(rewriter, rhs, (*dn.rhs_spec[2:], dn.rhs_spec[1], dn.rhs_spec[0]), "taps_first")
        matrix = reshape(rewriter, ordered, (len(columns) * facts.in_features, facts.out_features), "matrix")
        product = rewriter.create(
            "dot_general", joined, matrix, suffix="dot", lhs_contracting_dimensions=(feature,), rhs_contracting_dimensions=(0,),
            precision=facts.precision, preferred_element_type=facts.preferred_element_type)
        rewriter.replace_anchor(product)


CpuSmallMapIm2col = pattern_pass(
    SmallMapIm2col, "channels-last convs whose window is larger than their input become im2col: one dot_general (a GEMM on XLA CPU)")
