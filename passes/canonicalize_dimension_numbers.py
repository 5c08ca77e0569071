"""canonicalize-dimension-numbers: conv layout strings (or the default) -> explicit
dimension numbers, the form StableHLO's `dim_numbers` takes."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.ops import ConvDimensionNumbers
from convc.ops.conv import resolve_dimension_numbers
from convc.pass_manager import Pass


@dataclass(frozen=True)
class CanonicalizeDimensionNumbers(Pass):
    name = "canonicalize-dimension-numbers"
    summary = "conv layouts such as NHWC/HWIO/NHWC become explicit dimension numbers"

    def run(self, graph: Graph) -> bool:
        changed = False
        for op in graph.ops:
            if op.kind != "conv" or isinstance(op.attrs.get("dimension_numbers"), ConvDimensionNumbers):
                continue
            rank = op.operands[0].type.rank
            op.attrs["dimension_numbers"] = resolve_dimension_numbers(op.attrs.get("dimension_numbers"), rank)
            changed = True
        return changed
