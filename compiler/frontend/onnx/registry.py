"""The converter registry: (ONNX op type, since-opset) -> a small function building convc ops.

A converter is registered with `@converter("Conv", since=11)`; its docstring's first line
says what the op becomes (docs/onnx.md's table is written from it, `op_table`). A model's
opset picks, per op type, the newest converter whose `since` is not above it (`lookup`),
as onnx2torch's registry does. Converters read the node's attributes (decoded at import,
`Node.attrs`), take operands from the `Context` (convc values, or numpy arrays for values
known at import) and return one convc value or numpy array per ONNX output.

Nothing here imports `onnx`: the registry, the converters and the doc writer work without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...builder import Builder
from ...diagnostics import ConvcError, Location
from ...ir import Value, unused_name

# The ids of the ONNX frontend's rules (docs/diagnostics.md, "ONNX models").
NOT_ONNX = "O1"  # the input parses as an ONNX ModelProto
INVALID_MODEL = "O2"  # onnx.checker and strict shape inference accept the model
OPSET = "O3"  # the default domain's opset is 13 or newer (older ones converted), and one onnx knows
DOMAIN = "O4"  # every node is in the default domain
UNSUPPORTED_OP = "O5"  # every node has a converter (or is evaluated at import)
UNSUPPORTED_ATTR = "O6"  # an attribute value, or an input's form, is one the converter handles
INPUT_SPEC = "O7"  # input_shapes and keep_as_inputs name graph inputs and initializers, with fitting shapes
NO_ONNX_PACKAGE = "O8"  # the `onnx` package is installed
CONSTANT_BYTES = "O9"  # the initializers fit --max-bytes
EXTERNAL_DATA = "O10"  # an initializer's external data file is inside the model's directory, and readable
# "O11", --check's comparison with ONNX Runtime, is check.py's.

Operand = Value | np.ndarray  # a convc value, or an array known at import


@dataclass(frozen=True)
class Node:
    """One ONNX node with its attributes decoded (`onnx.helper.get_attribute_value`; strings
    as `str`, tensors as numpy arrays). An absent optional input or output is ''."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]
    index: int  # its position in the graph's node list
    domain: str = ""
    written_as: str = ""  # a node the importer made from a pattern (qdq.py): the op type it stands for in the file

    @property
    def shown_op(self) -> str:
        """The op type diagnostics name: the file's (`written_as` for a fused node)."""
        return self.written_as or self.op_type

    @property
    def label(self) -> str:
        """What diagnostics call it: its name, else its first output."""
        return self.name or self.outputs[0]

    def input(self, index: int) -> str:
        """The name of input `index`, '' when absent."""
        return self.inputs[index] if index < len(self.inputs) else ""


ConvertFn = Callable[[Node, "Context"], Sequence[Operand]]
# The first attribute value a converter does not handle, as a message; None when it handles them all.
AttrCheck = Callable[[Node], str | None]


def one_of(**choices: Sequence[Any]) -> AttrCheck:
    """An `AttrCheck`: each named attribute the node has (given, or its schema's default) takes
    one of its listed values; checked in the order given."""
    def check(node: Node) -> str | None:
        for name, allowed in choices.items():
            if name in node.attrs and node.attrs[name] not in allowed:
                return f"{name} {_shown(node.attrs[name])} is {_choices(allowed)}"
        return None
    return check


def _shown(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def _choices(allowed: Sequence[Any]) -> str:
    if len(allowed) == 1:
        return f"not supported (only {allowed[0]})"
    return f"not one of {', '.join(map(str, allowed))}"


@dataclass(frozen=True)
class Converter:
    op_type: str
    since: int  # the opset from which this converter applies
    convert: ConvertFn
    known_output: bool  # its outputs are known at import whatever its inputs (Shape, Constant)
    attrs: AttrCheck | None = None  # run on every node before anything is built (importer._check_supported)

    def refusal(self, node: Node) -> str | None:
        """The first of the node's attribute values this converter does not handle, as a message; else None."""
        return None if self.attrs is None else self.attrs(node)

    @property
    def summary(self) -> str:
        return " ".join((self.convert.__doc__ or "").strip().split("\n\n")[0].split())


CONVERTERS: dict[str, list[Converter]] = {}


def converter(op_type: str, since: int, *, known_output: bool = False,
              attrs: AttrCheck | None = None) -> Callable[[ConvertFn], ConvertFn]:
    """Register a converter for `op_type` from opset `since` on. `attrs` refuses the attribute
    values it does not handle; the importer runs it on every node up front, so the converter
    itself can take them as handled."""
    def register(function: ConvertFn) -> ConvertFn:
        entries = CONVERTERS.setdefault(op_type, [])
        entries.append(Converter(op_type, since, function, known_output, attrs))
        entries.sort(key=lambda entry: entry.since)
        return function
    return register


def lookup(op_type: str, opset: int) -> Converter | None:
    """The newest converter for `op_type` whose `since` is not above `opset`."""
    fitting = [entry for entry in CONVERTERS.get(op_type, ()) if entry.since <= opset]
    return fitting[-1] if fitting else None


def op_table() -> str:
    """docs/onnx.md's table of supported ops, one row per converter (tools/gen_docs.py). The
    package's `__init__` imports every converter module, so the registry is full here."""
    rows = ["| ONNX op | from opset | becomes |", "|---|---|---|"]
    for op_type in sorted(CONVERTERS):
        rows += [f"| {entry.op_type} | {entry.since} | {entry.summary} |" for entry in CONVERTERS[op_type]]
    return "\n".join(rows) + "\n"


class Context:
    """What converters build with: the Builder, the values by ONNX name (convc values, or
    numpy arrays for values known at import), and the node being converted, which every
    error names."""

    def __init__(self, builder: Builder, file: str, reserved: set[str], used: set[str]):
        self.builder = builder
        self.file = file
        self.used = used  # the names some node or the graph's outputs read
        self.values: dict[str, Value] = {}
        self.known: dict[str, np.ndarray] = {}
        self.taken = set(reserved)  # every ONNX value name, and every name given to an op
        self.node: Node | None = None

    # --- operands ---------------------------------------------------------------------

    def array(self, name: str) -> np.ndarray | None:
        """The value `name` when it is known at import (an initializer, a folded result), else None."""
        return self.known.get(name)

    def value(self, name: str) -> Value:
        """The value `name` as a convc value: a known array becomes a constant named `name`."""
        found = self.values.get(name)
        if found is None:
            found = self.values[name] = self.builder.constant(name, self.known[name])
        return found

    def operand(self, node: Node, index: int) -> Value:
        return self.value(node.inputs[index])

    def required_array(self, node: Node, index: int, what: str) -> np.ndarray:
        """Input `index` as an array, which the converter needs at import (a Reshape's shape)."""
        found = self.array(node.input(index))
        if found is None:
            raise self.error(f"{what} (input {index}, '{node.input(index)}') must be known at import "
                             "(an initializer, a Constant or shape arithmetic on them)")
        return found

    def refuse_outputs(self, node: Node, first: int, what: str) -> None:
        """Outputs from index `first` on are ones the converter does not produce: an error if any is read."""
        if any(name in self.used for name in node.outputs[first:]):
            raise self.error(f"{what} is not supported")

    # --- building ---------------------------------------------------------------------

    def op(self, kind: str, *operands: Value, **attrs: Any) -> Value:
        """Append a convc op, named after the node."""
        return self.builder.op(kind, *operands, name=self.fresh(kind), **attrs)

    def create(self, kind: str, *operands: Value, suffix: str, **attrs: Any) -> Value:
        """Append a convc op named `<node>.<suffix>`: the `OpFactory` the value-building steps of
        `convc.builders` take (`slice_along`, `pad`, `reshape`), so converters reuse them."""
        return self.builder.op(kind, *operands, name=self.fresh(suffix), **attrs)

    def constant(self, array: np.ndarray, hint: str = "constant") -> Value:
        """An anonymous constant (a folded BatchNormalization scale), named after the node."""
        return self.builder.constant(self.fresh(hint), array)

    def fresh(self, kind: str) -> str:
        label = self.node.label if self.node is not None else "onnx"
        name = unused_name(f"{label}.{kind}", self.taken)
        self.taken.add(name)
        return name

    # --- errors -----------------------------------------------------------------------

    def location(self, node: Node) -> Location:
        return Location(file=self.file, pointer=f"/graph/node/{node.index}", node=node.label, op=node.shown_op)

    def error(self, message: str, constraint: str = UNSUPPORTED_ATTR) -> ConvcError:
        """A located error about the node being converted (default id: an unsupported attribute value)."""
        assert self.node is not None
        return ConvcError(message, self.location(self.node), constraint)
