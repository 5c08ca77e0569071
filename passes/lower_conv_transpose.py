"""lower-conv-transpose: `conv_transpose` -> an lhs-dilated `conv` (`lhs_dilation = strides`,
unit window strides, the pads lax.conv_transpose computes); with `transpose_kernel`, an explicit
`reverse` of the kernel plus an I/O role swap, and for groups a reshuffle of its group axis.

The plan (what to reverse, which group axis to move, the conv's attributes) is the op's own
(`convc.ops.conv_grad`); convc.plan_lowering turns it into ops, as for the other two
conv-gradient lowerings.
"""

from __future__ import annotations

from convc.plan_lowering import LowerToPlan
from convc.rewrite import pattern_pass


class ConvTransposeToPlan(LowerToPlan):
    kind = "conv_transpose"
    name = "lower-conv-transpose"


LowerConvTranspose = pattern_pass(
    ConvTransposeToPlan, "conv_transpose becomes an lhs-dilated conv (explicit reverse and I/O swap for transpose_kernel)")
