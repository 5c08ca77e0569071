"""convc's IR: one function of single-result ops over typed tensor values.

Shaped like torch.fx (values know their users, uses can be replaced) but typed
like MLIR: every value has a `TensorType`, every op a declared kind and typed
attributes (see `convc.ops`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .diagnostics import UNKNOWN, Location

if TYPE_CHECKING:
    from .sharding import Mesh, ShardingSpec


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    def num_elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    def mlir(self) -> str:
        return _tensor_text(tuple(self.shape), self.dtype)

    def __str__(self) -> str:
        return self.mlir()


@functools.lru_cache(maxsize=4096)
def _tensor_text(shape: tuple[int, ...], dtype: str) -> str:
    """`tensor<1x8x8x4xf32>`; cached because emitters and printers spell each type many times."""
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


class Value:
    """An SSA value: a graph input or the result of an op."""

    __slots__ = ("name", "type", "producer", "users", "sharding")

    def __init__(self, name: str, type: TensorType, producer: Op | None = None):
        self.name = name
        self.type = type
        self.producer = producer
        self.users: list[Op] = []
        # pinned sharding (convc.sharding.ShardingSpec): an argument's, a result's, or a constraint
        self.sharding: ShardingSpec | None = None

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


class Op:
    """One operation: a kind from the op registry, operands, attributes, one result."""

    __slots__ = ("kind", "operands", "attrs", "result", "loc")

    def __init__(
        self,
        kind: str,
        operands: list[Value],
        attrs: dict[str, Any],
        result_name: str,
        result_type: TensorType,
        loc: Location = UNKNOWN,
    ):
        self.kind = kind
        self.operands = list(operands)
        self.attrs = dict(attrs)
        self.result = Value(result_name, result_type, self)
        self.loc = loc
        for operand in self.operands:
            operand.users.append(self)

    @property
    def name(self) -> str:
        return self.result.name

    def set_operand(self, index: int, value: Value) -> None:
        self.operands[index].users.remove(self)
        self.operands[index] = value
        value.users.append(self)

    def drop_operands(self) -> None:
        for operand in self.operands:
            operand.users.remove(self)
        self.operands = []

    def __repr__(self) -> str:
        args = ", ".join(f"%{v.name}" for v in self.operands)
        return f"%{self.name} = {self.kind}({args}) {self.attrs} : {self.result.type}"


@dataclass
class Graph:
    """A function: named inputs, ops in topological order, outputs."""

    name: str
    inputs: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    # where each graph input came from, for diagnostics (by input name)
    input_locs: dict[str, Location] = field(default_factory=dict)
    # the device mesh the program is partitioned over (None: one device); see convc.sharding
    mesh: Mesh | None = None

    def values(self) -> Iterator[Value]:
        yield from self.inputs
        for op in self.ops:
            yield op.result

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        for user in list(old.users):
            for index, operand in enumerate(user.operands):
                if operand is old:
                    user.set_operand(index, new)
        self.outputs = [new if v is old else v for v in self.outputs]
        self._carry_sharding(old, new)

    @staticmethod
    def _carry_sharding(old: Value, new: Value) -> None:
        """A pinned sharding follows the value that now stands for `old`; an argument's
        stays on the argument too (it is still the argument's)."""
        if old.sharding is None or new.sharding is not None:
            return
        new.sharding = old.sharding
        if old.producer is not None:
            old.sharding = None

    def erase_op(self, op: Op) -> None:
        if op.result.users:
            raise ValueError(f"cannot erase '{op.name}': it still has users")
        op.drop_operands()
        self.ops.remove(op)

    def fresh_name(self, base: str) -> str:
        """A value name not yet used in this graph, derived from `base`."""
        taken = {v.name for v in self.values()}
        if base not in taken:
            return base
        index = 1
        while f"{base}_{index}" in taken:
            index += 1
        return f"{base}_{index}"

    def clone(self) -> Graph:
        """A deep copy of the structure (attribute values are shared; they are immutable)."""
        mapping: dict[int, Value] = {}
        copy = Graph(self.name, input_locs=dict(self.input_locs), mesh=self.mesh)
        for value in self.inputs:
            mapping[id(value)] = Value(value.name, value.type)
            mapping[id(value)].sharding = value.sharding
            copy.inputs.append(mapping[id(value)])
        for op in self.ops:
            new = Op(op.kind, [mapping[id(v)] for v in op.operands], op.attrs, op.name, op.result.type, op.loc)
            new.result.sharding = op.result.sharding
            mapping[id(op.result)] = new.result
            copy.ops.append(new)
        copy.outputs = [mapping[id(v)] for v in self.outputs]
        return copy
