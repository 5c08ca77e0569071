"""dce: drop ops whose results nothing uses (outputs count as uses)."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph
from convc.pass_manager import Pass


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    name = "dce"
    summary = "remove ops whose results are unused"

    def run(self, graph: Graph) -> bool:
        live = {id(v) for v in graph.outputs}
        kept = []
        for op in reversed(graph.ops):
            if id(op.result) in live:
                kept.append(op)
                for operand in op.operands:
                    live.add(id(operand))
            else:
                op.drop_operands()
        changed = len(kept) != len(graph.ops)
        graph.ops = kept[::-1]
        return changed
