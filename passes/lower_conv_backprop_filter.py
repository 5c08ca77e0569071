"""lower-conv-backprop-filter: `conv_backprop_filter` -> a `conv` whose lhs is the forward input
with batch and feature roles swapped (dimension numbers, no transposes) and whose kernel is
out_grad: `window_strides = rhs_dilation`, `rhs_dilation = window_strides`, `lhs_dilation` kept;
feature_group_count G becomes batch_group_count G and batch groups become feature groups; the
result's dimension numbers put it straight into the forward kernel's layout
(JAX's `_conv_general_dilated_transpose_rhs`)."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.pass_manager import Pass
from convc.rewrite import apply_patterns

from .lower_conv_transpose import LowerToPlan


@dataclass(frozen=True)
class LowerConvBackpropFilter(Pass):
    name = "lower-conv-backprop-filter"
    summary = "conv_backprop_filter becomes a batch-grouped conv of the input with out_grad"

    def run(self, graph: Graph) -> bool:
        return apply_patterns(graph, [LowerToPlan("conv_backprop_filter")])
