"""Graph -> convc text (MLIR generic syntax), read back by `convc.textual.parser`."""

from __future__ import annotations

from ..ir import Graph, Op, Value
from ..literals import is_ssa_id, is_symbol_id, quote
from ..ops import OPS


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
        args.append(f"{ssa}: {value.type}{loc}")
    results = ", ".join(str(v.type) for v in graph.outputs)
    if len(graph.outputs) != 1:
        results = f"({results})"
    lines = [f"module @{_symbol(graph.name)} {{", f"  func.func @main({', '.join(args)}) -> {results} {{"]
    for op in graph.ops:
        lines.append("    " + _print_op(op, namer))
    outs = ", ".join(namer.use(v) for v in graph.outputs)
    out_types = ", ".join(str(v.type) for v in graph.outputs)
    lines += [f"    func.return {outs} : {out_types}", "  }", "}", ""]
    return "\n".join(lines)


def _symbol(name: str) -> str:
    return name if is_symbol_id(name) else quote(name)


def _print_op(op: Op, namer: _Namer) -> str:
    opdef = OPS[op.kind]
    operands = ", ".join(namer.use(v) for v in op.operands)
    attrs = ", ".join(f"{name} = {opdef.attrs[name].kind.print(op.attrs[name])}" for name in sorted(op.attrs))
    attr_text = f" {{{attrs}}}" if attrs else ""
    operand_types = ", ".join(str(v.type) for v in op.operands)
    ssa, loc = namer.define(op.result)
    return f'{ssa} = "convc.{op.kind}"({operands}){attr_text} : ({operand_types}) -> {op.result.type}{loc}'
