"""lower-conv-backprop-input: `conv_backprop_input` -> a `conv` of out_grad over the spatially
reversed kernel (explicit `reverse`) with its I/O roles swapped: `lhs_dilation = window_strides`,
`window_strides = lhs_dilation`, `rhs_dilation` kept, pads `window - 1 - lo` low and whatever
reaches the requested size high. Feature groups move the kernel's group axis from its output-
into its input-feature dim; batch groups become feature groups whose result groups move into
the batch dim (JAX's `_conv_general_dilated_transpose_lhs`)."""

from __future__ import annotations

from convc.plan_lowering import LowerToPlan
from convc.rewrite import pattern_pass


class BackpropInputToPlan(LowerToPlan):
    kind = "conv_backprop_input"
    name = "lower-conv-backprop-input"


LowerConvBackpropInput = pattern_pass(BackpropInputToPlan, "conv_backprop_input becomes an lhs-dilated conv over the reversed, regrouped kernel")
