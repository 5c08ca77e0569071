"""Graph -> convc text (MLIR generic syntax), read back by `convc.textual.parser`."""

from __future__ import annotations

from ..emit import sdy
from ..ir import Graph, Op, Value
from ..ops import OPS
from .attrs import format_attr, is_ssa_id, is_symbol_id, quote


class _Namer:
    """SSA names: the value's own name when MLIR allows it, else a safe one plus loc("...")."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.taken: set[str] = set()

    def define(self, value: Value) -> tuple[str, str]:
        name = value.name if is_ssa_id(value.name) else "v"
        loc = "" if name == value.name else f" loc({quote(value.name)})"
        base, index = name, 0
        while name in self.taken:
            index += 1
            name = f"{base}_{index}"
        if name != value.name:
            loc = f" loc({quote(value.name)})"
        self.taken.add(name)
        self.names[id(value)] = name
        return f"%{name}", loc

    def use(self, value: Value) -> str:
        return "%" + self.names[id(value)]


def print_graph(graph: Graph) -> str:
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
        lines.append("    " + _print_op(op, namer, id(op.result) in constrained))
    outs = ", ".join(namer.use(v) for v in graph.outputs)
    out_types = ", ".join(str(v.type) for v in graph.outputs)
    lines += [f"    func.return {outs} : {out_types}", "  }", "}", ""]
    return "\n".join(lines)


def _symbol(name: str) -> str:
    return name if is_symbol_id(name) else quote(name)


def _print_op(op: Op, namer: _Namer, constrained: bool = False) -> str:
    opdef = OPS[op.kind]
    operands = ", ".join(namer.use(v) for v in op.operands)
    attrs = ", ".join(
        f"{name} = {format_attr(opdef.attrs[name].kind, op.attrs[name], opdef.attrs[name].row_width)}"
        for name in sorted(op.attrs))
    if constrained and op.result.sharding is not None:  # a sharding constraint, as Shardy annotates op results
        attrs += f"{', ' if attrs else ''}sdy.sharding = {op.result.sharding.sdy_per_value()}"
    attr_text = f" {{{attrs}}}" if attrs else ""
    operand_types = ", ".join(str(v.type) for v in op.operands)
    ssa, loc = namer.define(op.result)
    return f'{ssa} = "convc.{op.kind}"({operands}){attr_text} : ({operand_types}) -> {op.result.type}{loc}'
