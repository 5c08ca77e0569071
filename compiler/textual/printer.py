"""Graph -> convc text (MLIR generic syntax), read back by `convc.textual.parser`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import from_numpy
from ..emit import sdy
from ..ir import Graph, Op, TensorType, Value, unused_name
from ..literals import is_ssa_id, is_symbol_id, quote
from ..ops import OPS
from ..ops.attr_kinds import TENSOR

ELIDED = "dense_resource<__elided__>"  # MLIR's spelling of an elided elements attribute


class _Namer:
    """SSA names: the value's own name when MLIR allows it, else a safe one plus loc("...")."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()

    def define(self, value: Value) -> tuple[str, str]:
        name = value.name if is_ssa_id(value.name) else "v"
        loc = "" if name == value.name else f" loc({quote(value.name)})"
        name = unused_name(name, self.taken)
        if name != value.name:
            loc = f" loc({quote(value.name)})"
        self.taken.add(name)
        self.names[id(value)] = name
        return f"%{name}", loc

    def use(self, value: Value) -> str:
        return "%" + self.names[id(value)]


def print_graph(graph: Graph, elide_larger: int | None = None) -> str:
    """The graph as convc text. With `elide_larger`, constants of more elements (splats
    excepted) print as `dense_resource<__elided__>`, as `mlir-opt
    --mlir-elide-elementsattrs-if-larger` does: readable, but the parser refuses it."""
    namer = _Namer()
    args = []
    for value in graph.inputs:
        ssa, loc = namer.define(value)
        args.append(f"{ssa}: {value.type}{sdy.argument_attrs(value)}{loc}")
    results = ", ".join(f"{v.type}{sdy.argument_attrs(v)}" for v in graph.outputs)
    if len(graph.outputs) != 1 or any(v.sharding is not None for v in graph.outputs):
        results = f"({results})"
    lines = [f"module @{_symbol(graph.name)} {{", *sdy.mesh_ops(graph.mesh), f"  func.func @main({', '.join(args)}) -> {results} {{"]
    constrained = sdy.constrained_values(graph)
    for op in graph.ops:
        lines.append("    " + _print_op(op, namer, elide_larger, id(op.result) in constrained))
    outs = ", ".join(namer.use(v) for v in graph.outputs)
    out_types = ", ".join(str(v.type) for v in graph.outputs)
    lines += [f"    func.return {outs} : {out_types}", "  }", "}", ""]
    return "\n".join(lines)


def _symbol(name: str) -> str:
    return name if is_symbol_id(name) else quote(name)


def _elided(value: Any, elide_larger: int | None) -> bool:
    if elide_larger is None or not isinstance(value, np.ndarray) or value.size <= elide_larger:
        return False
    return not bool((value == value.flat[0]).all())  # a splat prints short anyway


def _print_attr(op: Op, name: str, elide_larger: int | None) -> str:
    attr, value = OPS[op.kind].attrs[name], op.attrs[name]
    if attr.kind is TENSOR and _elided(value, elide_larger):
        return f"{ELIDED} : {TensorType(tuple(value.shape), from_numpy(value.dtype) or op.result.type.dtype).mlir()}"
    return attr.kind.print(value)


def _print_op(op: Op, namer: _Namer, elide_larger: int | None = None, constrained: bool = False) -> str:
    operands = ", ".join(namer.use(v) for v in op.operands)
    attrs = ", ".join(f"{name} = {_print_attr(op, name, elide_larger)}" for name in sorted(op.attrs))
    if constrained and op.result.sharding is not None:  # a sharding constraint, as Shardy annotates op results
        attrs += f"{', ' if attrs else ''}sdy.sharding = {op.result.sharding.sdy_per_value()}"
    attr_text = f" {{{attrs}}}" if attrs else ""
    operand_types = ", ".join(str(v.type) for v in op.operands)
    ssa, loc = namer.define(op.result)
    return f'{ssa} = "convc.{op.kind}"({operands}){attr_text} : ({operand_types}) -> {op.result.type}{loc}'
