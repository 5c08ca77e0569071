"""infer-shapes: recompute every op's result type from its declared rule, and verify."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.pass_manager import Pass
from convc.verify import infer_type


@dataclass(frozen=True)
class InferShapes(Pass):
    name = "infer-shapes"
    summary = "recompute result types from each op's shape rule; fail on any broken constraint"

    def run(self, graph: Graph) -> bool:
        changed = False
        for op in graph.ops:
            inferred = infer_type(op.kind, op.operand_types(), op.attrs, op.loc)
            if inferred != op.result.type:
                op.result.type = inferred
                changed = True
        return changed
