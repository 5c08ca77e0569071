"""convc's IR: one function of single-result ops over typed tensor values.

Shaped like torch.fx (values know their users, uses can be replaced) but typed
like MLIR: every value has a `TensorType`, every op a declared kind and typed
attributes (see `convc.ops`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import weakref
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .diagnostics import UNKNOWN, Location

if TYPE_CHECKING:
    from .sharding import Mesh, ShardingSpec


class TensorType:
    """A ranked tensor type: a shape and an element type.

    Uniqued, as MLIR's types are: constructing an equal type returns the existing object, so
    equality and hashing are by identity (cheap in the memo keys every stage builds from
    operand types) and a type is immutable. Only types still in use are kept."""

    __slots__ = ("shape", "dtype", "_elements", "__weakref__")
    shape: tuple[int, ...]
    dtype: str
    _elements: int

    def __new__(cls, shape: tuple[int, ...], dtype: str) -> TensorType:
        key = (tuple(shape), dtype)
        found = _UNIQUED.get(key)
        if found is not None:
            return found
        made = object.__new__(cls)
        dims = tuple(_plain_int(d) for d in key[0])  # numpy integers equal ints: keep the one spelling
        object.__setattr__(made, "shape", dims)
        object.__setattr__(made, "dtype", dtype)
        object.__setattr__(made, "_elements", math.prod(dims))
        _UNIQUED[(dims, dtype)] = made
        return made

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"TensorType is immutable (cannot set '{name}')")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"TensorType is immutable (cannot delete '{name}')")

    def __reduce__(self) -> tuple[type[TensorType], tuple[tuple[int, ...], str]]:
        return TensorType, (self.shape, self.dtype)  # unpickling and copying unique again

    def __copy__(self) -> TensorType:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> TensorType:
        return self

    def __repr__(self) -> str:
        return f"TensorType(shape={self.shape!r}, dtype={self.dtype!r})"

    @property
    def rank(self) -> int:
        return len(self.shape)

    def num_elements(self) -> int:
        return self._elements

    def mlir(self) -> str:
        return _tensor_text(self.shape, self.dtype)

    def __str__(self) -> str:
        return self.mlir()


def _plain_int(dim: Any) -> int:
    """A dimension as a Python int when it is an integer of any kind (numpy's included)."""
    try:
        return operator.index(dim)
    except TypeError:
        return dim  # type: ignore[no-any-return]  # not an integer: kept as given, as before


_UNIQUED: weakref.WeakValueDictionary[tuple[tuple[int, ...], str], TensorType] = weakref.WeakValueDictionary()


@functools.lru_cache(maxsize=4096)
def _tensor_text(shape: tuple[int, ...], dtype: str) -> str:
    """`tensor<1x8x8x4xf32>`; cached because emitters and printers spell each type many times."""
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


class AttrsKey:
    """An op's attributes as one uniqued, hashable object: equal attribute sets give the same
    key, so a memo key holding it hashes and compares by identity."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[str, Any], ...]):
        self.items = items

    def __repr__(self) -> str:
        return f"AttrsKey({self.items!r})"


# Started over at a size: a key made afterwards for attributes an older key still stands for
# only costs memo hits (two keys, one meaning); no key ever stands for two attribute sets.
_ATTRS_KEYS: dict[tuple[tuple[str, Any], ...], AttrsKey] = {}
_MAX_ATTRS_KEYS = 1 << 16


class Attrs(dict[str, Any]):
    """An op's attribute dict. It remembers its `key()` until it is next changed, so the
    signature every stage memoizes on is built once per op rather than once per question."""

    __slots__ = ("_key",)
    _key: AttrsKey

    def key(self) -> AttrsKey | tuple[tuple[str, Any], ...]:
        """The uniqued key of these attributes; the plain items when a value is unhashable."""
        try:
            return self._key
        except AttributeError:
            pass
        items = tuple(self.items())
        try:
            key = _ATTRS_KEYS.get(items) or _new_attrs_key(items)
        except TypeError:  # an unhashable value (a constant's array): no key to keep
            return items
        self._key = key
        return key

    def _changed(self) -> None:
        with contextlib.suppress(AttributeError):
            del self._key

    def __setitem__(self, name: str, value: Any) -> None:
        self._changed()
        super().__setitem__(name, value)

    def __delitem__(self, name: str) -> None:
        self._changed()
        super().__delitem__(name)

    def __ior__(self, other: Any) -> Attrs:  # type: ignore[override,misc]
        self._changed()
        return super().__ior__(other)  # type: ignore[no-any-return]

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def setdefault(self, name: str, default: Any = None) -> Any:
        self._changed()
        return super().setdefault(name, default)

    def pop(self, name: str, *default: Any) -> Any:
        self._changed()
        return super().pop(name, *default)

    def popitem(self) -> tuple[str, Any]:
        self._changed()
        return super().popitem()

    def clear(self) -> None:
        self._changed()
        super().clear()

    def __reduce__(self) -> tuple[type[Attrs], tuple[dict[str, Any]]]:
        return Attrs, (dict(self),)


def _new_attrs_key(items: tuple[tuple[str, Any], ...]) -> AttrsKey:
    key = AttrsKey(items)
    if len(_ATTRS_KEYS) >= _MAX_ATTRS_KEYS:
        _ATTRS_KEYS.clear()
    _ATTRS_KEYS[items] = key
    return key


def attrs_key(attrs: dict[str, Any]) -> AttrsKey | tuple[tuple[str, Any], ...]:
    """A memo key part for an attribute dict: an op's uniqued key, else the plain items."""
    return attrs.key() if type(attrs) is Attrs else tuple(attrs.items())


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
        self.attrs = Attrs(attrs)
        self.result = Value(result_name, result_type, self)
        self.loc = loc
        for operand in self.operands:
            operand.users.append(self)

    @property
    def name(self) -> str:
        return self.result.name

    def operand_types(self) -> tuple[TensorType, ...]:
        """The operands' types (a fresh tuple: a memo key part)."""
        operands = self.operands
        if len(operands) == 2:  # most ops: spelled out, the cheapest way to build it
            return (operands[0].type, operands[1].type)
        if len(operands) == 1:
            return (operands[0].type,)
        return tuple([v.type for v in operands])

    def set_operand(self, index: int, value: Value) -> None:
        self.operands[index].users.remove(self)
        self.operands[index] = value
        value.users.append(self)

    def drop_operands(self) -> None:
        for operand in self.operands:
            operand.users.remove(self)
        self.operands = []

    def __repr__(self) -> str:
        """One line: a constant's array (any array attribute) as its type, not its elements."""
        args = ", ".join(f"%{v.name}" for v in self.operands)
        attrs = {name: _brief_attr(value) for name, value in self.attrs.items()}
        return f"%{self.name} = {self.kind}({args}) {attrs} : {self.result.type}"


class _Brief:
    """Stands in an op's repr for an array attribute: `<array f32[3, 3, 2, 4]>`."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _brief_attr(value: Any) -> Any:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    return value if shape is None or dtype is None else _Brief(f"<array {dtype}{list(shape)}>")


def unused_name(base: str, taken: Container[str]) -> str:
    """`base`, or the first of `base_1`, `base_2`, ... that `taken` lacks."""
    name, index = base, 0
    while name in taken:
        index += 1
        name = f"{base}_{index}"
    return name


@dataclass
class Graph:
    """A function: named inputs, ops in topological order, outputs. Its repr is a summary
    (`print_graph` writes it whole)."""

    name: str
    inputs: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    # where each graph input came from, for diagnostics (by input name)
    input_locs: dict[str, Location] = field(default_factory=dict)
    # the device mesh the program is partitioned over (None: one device); see convc.sharding
    mesh: Mesh | None = None

    def __repr__(self) -> str:
        mesh = f", mesh={self.mesh.spelling()!r}" if self.mesh is not None else ""
        return f"Graph({self.name!r}, inputs={self.inputs}, outputs={self.outputs}, ops={len(self.ops)}{mesh})"

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
        return unused_name(base, {v.name for v in self.values()})

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
