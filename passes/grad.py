"""grad: the model becomes its gradient step, `convc.grad(model, wrt)` (compiler/autodiff.py):
inputs, then one cotangent per output (`<output>.grad`); outputs, then the gradient of each
`wrt` value (`<name>.grad`). `wrt` lists inputs or constants, comma-separated as MLIR's
list options are (inside the braces a comma does not end the pipeline entry): `grad{wrt=x,w}`.
Run it first: the passes after it lower the gradient convs it builds as any other."""

from __future__ import annotations

from dataclasses import dataclass

from convc.autodiff import grad
from convc.ir import Graph
from convc.pass_manager import Pass


@dataclass(frozen=True)
class Grad(Pass):
    name = "grad"
    summary = "the model becomes its reverse-mode gradient step (wrt: comma-separated inputs or constants)"

    wrt: str = ""

    def run(self, graph: Graph) -> bool:
        step = grad(graph, self.wrt)
        graph.inputs, graph.ops, graph.outputs, graph.input_locs = step.inputs, step.ops, step.outputs, step.input_locs
        return True
