"""resolve-padding: SAME / SAME_LOWER / VALID on convs become explicit [lo, hi] pads,
computed on the dilated kernel exactly as lax.padtype_to_pads does."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.ops import view
from convc.ops.conv import explicit_padding, resolve_dimension_numbers, spatial
from convc.pass_manager import Pass


@dataclass(frozen=True)
class ResolvePadding(Pass):
    name = "resolve-padding"
    summary = "padding modes become explicit per-dimension (lo, hi) pairs"

    def run(self, graph: Graph) -> bool:
        changed = False
        for op in graph.ops:
            if op.kind != "conv":
                continue
            v = view(op)
            if not isinstance(v.padding, str):
                continue
            lhs, rhs = v.types
            dn = resolve_dimension_numbers(v.dimension_numbers, lhs.rank)
            op.attrs["padding"] = explicit_padding(
                v.padding, spatial(lhs.shape, dn.lhs_spec), spatial(rhs.shape, dn.rhs_spec), v.window_strides, v.rhs_dilation)
            changed = True
        return changed
