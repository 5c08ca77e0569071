"""fold-constants: replace ops whose operands are all constants by the constants they compute.

What runs on every call but depends only on the weights (a transposed conv's reversed
kernel, a kernel reshaped or transposed, arithmetic on parameters) is computed once at
compile time instead. The values come from the jax.lax oracle (`convc.reference.evaluate`,
exact math rounded once to each result's element type): every foldable op of the graph is
evaluated in one jitted call, and only the results something else still reads become
constants (the ops and constants left without users are `dce`'s).

Never written as a constant: a `broadcast_in_dim` that grows its operand (a broadcast is free
where its user reads it, and materialized it only costs memory; XLA's own folder leaves them
too), and any result with more elements than both `max_elements` and its largest operand, so
that a fold never writes a huge constant into the module. Such an op stays (its operands are
folded); inside a chain, where only the chain's last result is written, it folds away.
"""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph, Op, Value
from convc.pass_manager import Pass


@dataclass(frozen=True)
class FoldConstants(Pass):
    name = "fold-constants"
    summary = "compute ops whose operands are all constants at compile time"

    max_elements: int = 1 << 16  # a result larger than this and than every operand is left alone

    def run(self, graph: Graph) -> bool:
        folded = _foldable(graph)
        kept: set[int] = set()  # folded ops whose results stay computed: too large to write as constants
        while True:
            frontier = _frontier(graph, folded, kept)
            too_large = [op for op in frontier if not self._small_enough(op)]
            if not too_large:
                break
            kept.update(id(op) for op in too_large)
        if not frontier:
            return False
        values = _evaluate(graph, folded, frontier)
        position = {id(op): index for index, op in enumerate(graph.ops)}
        for op, value in zip(frontier, values):
            _replace_with_constant(graph, op, value, position[id(op)])
        return True

    def _small_enough(self, op: Op) -> bool:
        """Whether `op`'s result may be written as a constant: a growing broadcast never is."""
        size = op.result.type.num_elements()
        largest = max(v.type.num_elements() for v in op.operands)
        if op.kind == "broadcast_in_dim":
            return size <= largest
        return size <= max(largest, self.max_elements)


def _foldable(graph: Graph) -> list[Op]:
    """The ops, in program order, whose operands are constants or results of foldable ops."""
    known: set[int] = set()
    folded: list[Op] = []
    for op in graph.ops:
        if op.kind == "constant":
            known.add(id(op.result))
        elif op.operands and all(id(v) in known for v in op.operands):
            known.add(id(op.result))
            folded.append(op)
    return folded


def _frontier(graph: Graph, folded: list[Op], kept: set[int]) -> list[Op]:
    """The folded ops to write as constants: those not `kept` whose results an op outside
    them (a kept one, or one not folded) reads, or that are outputs."""
    inside = {id(op) for op in folded if id(op) not in kept}
    outputs = {id(v) for v in graph.outputs}
    return [op for op in folded if id(op) in inside
            and (id(op.result) in outputs or any(id(user) not in inside for user in op.result.users))]


def _evaluate(graph: Graph, folded: list[Op], frontier: list[Op]) -> list[object]:
    """The frontier's values: the folded ops as one graph of the constants they read, run by
    the oracle (one compile for the whole fold)."""
    from convc.reference import evaluate

    produced = {id(op.result) for op in folded}
    constants: dict[int, Value] = {}
    for op in folded:
        for v in op.operands:
            if id(v) not in produced:
                constants.setdefault(id(v), v)
    region = Graph(f"{graph.name}.folded", inputs=list(constants.values()), ops=folded, outputs=[op.result for op in frontier])
    return list(evaluate(region, [_constant_value(v) for v in region.inputs]))


def _constant_value(value: Value) -> object:
    """The array of a constant op's result (the region's inputs are nothing else)."""
    assert value.producer is not None and value.producer.kind == "constant"
    return value.producer.attrs["value"]


def _replace_with_constant(graph: Graph, op: Op, value: object, index: int) -> None:
    """`op`, at `index` of the graph's ops, becomes a constant of `value`, with its name, type and location."""
    constant = Op("constant", [], {"value": value}, op.name, op.result.type, op.loc)
    graph.ops[index] = constant
    graph.replace_all_uses_with(op.result, constant.result)
    op.drop_operands()
