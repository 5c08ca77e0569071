"""canonicalize-dimension-numbers: conv layout strings (or the default) -> explicit
dimension numbers, the form StableHLO's `dim_numbers` takes."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.ops import ConvDimensionNumbers, view
from convc.ops.conv import resolve_dimension_numbers
from convc.pass_manager import Pass


@dataclass(frozen=True)
class CanonicalizeDimensionNumbers(Pass):
    name = "canonicalize-dimension-numbers"
    summary = "conv layouts such as NHWC/HWIO/NHWC become explicit dimension numbers"

    def run(self, graph: Graph) -> bool:
        changed = False
        for op in graph.ops:
            if op.kind != "conv":
                continue
            layouts = view(op).dimension_numbers
            if isinstance(layouts, ConvDimensionNumbers):
                continue
            op.attrs["dimension_numbers"] = resolve_dimension_numbers(layouts, op.operands[0].type.rank)
            changed = True
        return changed
