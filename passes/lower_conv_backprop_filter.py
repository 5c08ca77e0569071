"""lower-conv-backprop-filter: `conv_backprop_filter` -> a `conv` whose lhs is the forward input
with batch and feature roles swapped (dimension numbers, no transposes) and whose kernel is
out_grad: `window_strides = rhs_dilation`, `rhs_dilation = window_strides`, `lhs_dilation` kept;
feature_group_count G becomes batch_group_count G and batch groups become feature groups; the
result's dimension numbers put it straight into the forward kernel's layout
(JAX's `_conv_general_dilated_transpose_rhs`)."""

from __future__ import annotations

from convc.plan_lowering import LowerToPlan
from convc.rewrite import pattern_pass


class BackpropFilterToPlan(LowerToPlan):
    kind = "conv_backprop_filter"
    name = "lower-conv-backprop-filter"


LowerConvBackpropFilter = pattern_pass(BackpropFilterToPlan, "conv_backprop_filter becomes a batch-grouped conv of the input with out_grad")
