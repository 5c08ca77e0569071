"""resolve-padding: SAME / SAME_LOWER / VALID on convs become explicit [lo, hi] pads,
computed on the dilated kernel exactly as lax.padtype_to_pads does."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.ops.conv import explicit_padding, resolve_dimension_numbers, spatial
from convc.pass_manager import Pass


@dataclass(frozen=True)
class ResolvePadding(Pass):
    name = "resolve-padding"
    summary = "padding modes become explicit per-dimension (lo, hi) pairs"

    def run(self, graph: Graph) -> bool:
        changed = False
        for op in graph.ops:
            padding = op.attrs.get("padding", "VALID")
            if op.kind != "conv" or not isinstance(padding, str):
                continue
            lhs, rhs = (v.type for v in op.operands)
            dn = resolve_dimension_numbers(op.attrs.get("dimension_numbers"), lhs.rank)
            n = lhs.rank - 2
            op.attrs["padding"] = explicit_padding(
                padding, spatial(lhs.shape, dn.lhs_spec), spatial(rhs.shape, dn.rhs_spec),
                op.attrs.get("window_strides") or (1,) * n, op.attrs.get("rhs_dilation") or (1,) * n)
            changed = True
        return changed
