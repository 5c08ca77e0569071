"""Device meshes and shardings (Shardy's model, as JAX's `Mesh` and `PartitionSpec`).

A `Mesh` names axes and their sizes; its size is the number of devices, laid out
row-major as `jax.make_mesh` does. A `ShardingSpec` gives, per dimension of a value,
the mesh axes that split it (major to minor; none: not split). A graph holds its mesh
(`Graph.mesh`) and each pinned value's spec (`Value.sharding`): on an input it is the
argument's sharding, on an output the result's, elsewhere a sharding constraint. The
program stays global-shaped; XLA's SPMD partitioner writes the per-device program.

Constraint ids (docs/sharding.md):
  S1 a spec names an axis the mesh lacks        S5 a mesh axis is not a name with a positive size
  S2 an axis is used twice in one spec          S6 a `shardings` key names no value
  S3 a spec is longer than the value's rank     S7 `shardings` without a `mesh`
  S4 a dimension is not divisible by its axes   S8 `--mesh` axes differ from the model's
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .diagnostics import ConvcError, Location, UsageError, suggest

AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MESH_SYMBOL = "mesh"


@dataclass(frozen=True)
class Mesh:
    """Named axes with sizes, in order; `size` devices, numbered row-major."""

    axes: tuple[tuple[str, int], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)

    @property
    def size(self) -> int:
        return math.prod(size for _, size in self.axes)

    def axis_size(self, name: str) -> int:
        return dict(self.axes)[name]

    def sdy(self) -> str:
        """`<["data"=4, "space"=2]>`: the body of an `sdy.mesh` op."""
        return "<[" + ", ".join(f'"{name}"={size}' for name, size in self.axes) + "]>"

    def spelling(self) -> str:
        """`data=4,space=2`, as `--mesh` takes it."""
        return ",".join(f"{name}={size}" for name, size in self.axes)


@dataclass(frozen=True)
class ShardingSpec:
    """Per dimension, the mesh axes splitting it (major to minor); one entry per dimension."""

    dims: tuple[tuple[str, ...], ...]
    loc: Location = field(default=Location(), compare=False, repr=False)

    def axes(self) -> list[str]:
        return [axis for dim in self.dims for axis in dim]

    def padded(self, rank: int) -> ShardingSpec:
        """One entry per dimension: a shorter spec leaves the rest unsplit (as PartitionSpec)."""
        return ShardingSpec(self.dims + ((),) * (rank - len(self.dims)), self.loc)

    def sdy_dims(self) -> str:
        """`[{"data"}, {"space"}, {}, {}]`: closed dimensions, as JAX writes them."""
        return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in dim) + "}" for dim in self.dims) + "]"

    def sdy(self) -> str:
        """`#sdy.sharding<@mesh, [...]>`: an argument's or result's sharding."""
        return f"#sdy.sharding<@{MESH_SYMBOL}, {self.sdy_dims()}>"

    def sdy_per_value(self) -> str:
        """`#sdy.sharding_per_value<[<@mesh, [...]>]>`: an op result's sharding (convc IR)."""
        return f"#sdy.sharding_per_value<[<@{MESH_SYMBOL}, {self.sdy_dims()}>]>"

    def partition_spec(self) -> tuple[Any, ...]:
        """The jax.sharding.PartitionSpec arguments: None, an axis, or a tuple of axes."""
        return tuple(None if not dim else dim[0] if len(dim) == 1 else dim for dim in self.dims)

    def __str__(self) -> str:
        return "[" + ", ".join("null" if not d else f'"{d[0]}"' if len(d) == 1 else str(list(d)) for d in self.dims) + "]"


# --- reading ------------------------------------------------------------------------


def read_mesh(raw: Any, loc: Location) -> Mesh:
    """A mesh from `{"axis": size, ...}` (JSON, builder) or `[(axis, size), ...]`."""
    pairs = list(raw.items()) if isinstance(raw, Mapping) else raw
    if not isinstance(pairs, list | tuple):
        raise ConvcError(f"a mesh maps axis names to sizes, got {_kind(raw)}", loc, "S5")
    axes: list[tuple[str, int]] = []
    for pair in pairs:
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise ConvcError(f"a mesh maps axis names to sizes, got {pair!r}", loc, "S5")
        name, size = pair
        where = loc.child(str(name))
        if not isinstance(name, str) or not AXIS_NAME.fullmatch(name):
            raise ConvcError(f"mesh axis name {name!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", where, "S5")
        if name in dict(axes):
            raise ConvcError(f"mesh axis '{name}' is named twice", where, "S5")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConvcError(f"the size of mesh axis '{name}' must be a positive integer, got {_brief(size)}", where, "S5")
        axes.append((name, size))
    return Mesh(tuple(axes))


def parse_mesh_flag(text: str) -> Mesh:
    """`--mesh data=4,space=2`. A value that does not parse is a usage error naming the flag
    (exit 2, no id), as any malformed flag value; S8, axes the model lacks, is the model's."""
    pairs: list[tuple[str, Any]] = []
    for item in text.split(","):
        name, equals, size = item.strip().partition("=")
        if not equals:
            raise UsageError(f"--mesh: expected AXIS=SIZE[,AXIS=SIZE...], got '{text}'")
        size = size.strip()
        pairs.append((name.strip(), int(size) if re.fullmatch(r"[+-]?\d+", size) else size))
    try:
        return read_mesh(pairs, Location(file="--mesh"))
    except ConvcError as err:
        raise UsageError(f"--mesh: {err.message}") from None


def read_spec(raw: Any, loc: Location) -> ShardingSpec:
    """A spec from its JSON/builder form: per dimension null, "axis" or ["a", "b"]."""
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise ConvcError(f"a sharding is a list with one entry per dimension, got {_brief(raw)}", loc, "S10")
    dims: list[tuple[str, ...]] = []
    for index, entry in enumerate(raw):
        if entry is None:
            dims.append(())
        elif isinstance(entry, str):
            dims.append((entry,))
        elif isinstance(entry, list | tuple) and all(isinstance(a, str) for a in entry):
            dims.append(tuple(entry))
        else:
            raise ConvcError(f"dimension {index}: expected null, an axis name or a list of them, got {_brief(entry)}",
                             loc.child(index), "S10")
    return ShardingSpec(tuple(dims), loc)


def check_spec(spec: ShardingSpec, shape: Sequence[int], mesh: Mesh | None, what: str) -> ShardingSpec:
    """`spec` padded to the value's rank, or a located error naming the broken rule (S1-S4, S7)."""
    loc = spec.loc
    if mesh is None:
        raise ConvcError(f"{what} has a sharding but the graph has no mesh", loc, "S7")
    if len(spec.dims) > len(shape):
        raise ConvcError(f"{what}: sharding {spec} has {len(spec.dims)} entries but the value has rank {len(shape)}", loc, "S3")
    seen: set[str] = set()
    for index, dim in enumerate(spec.dims):
        for axis in dim:
            if axis not in mesh.names:

                raise ConvcError(f"{what}: sharding names axis '{axis}', which the mesh ({', '.join(mesh.names) or 'no axes'}) "
                                 f"lacks{suggest(axis, mesh.names)}", loc.child(index), "S1")
            if axis in seen:
                raise ConvcError(f"{what}: sharding uses axis '{axis}' twice", loc.child(index), "S2")
            seen.add(axis)
        ways = math.prod(mesh.axis_size(a) for a in dim)
        if shape[index] % ways:
            split = " x ".join(f"{a}({mesh.axis_size(a)})" for a in dim)
            raise ConvcError(f"{what}: dimension {index} of size {shape[index]} is not divisible by {split} = {ways}",
                             loc.child(index), "S4")
    return spec.padded(len(shape))


def verify_shardings(graph: Any) -> None:
    """Every pinned spec fits the graph's mesh and its value (S1-S4, S7)."""
    for value in graph.values():
        if value.sharding is not None:
            value.sharding = check_spec(value.sharding, value.type.shape, graph.mesh, f"'{value.name}'")


def apply_mesh_override(graph: Any, mesh: Mesh, file: str | None) -> None:
    """`--mesh`: set the mesh of a graph without one, or resize the graph's (same axes, same
    order, else S8); every spec is checked again against the new sizes."""
    if graph.mesh is not None and graph.mesh.names != mesh.names:
        raise ConvcError(f"--mesh {mesh.spelling()}: axes ({', '.join(mesh.names)}) differ from the model's mesh axes "
                         f"({', '.join(graph.mesh.names)}); --mesh may only change their sizes", Location(file=file), "S8")
    graph.mesh = mesh
    verify_shardings(graph)


def pin(graph: Any, values: Mapping[str, Any], raw: Mapping[str, Any], loc: Location) -> None:
    """The `shardings` object: name -> spec, checked and set on the named values (S6, S7)."""
    for name, entry in raw.items():
        where = loc.child(name)
        value = values.get(name)
        if value is None:

            raise ConvcError(f"sharding for '{name}', which names no value{suggest(name, values)}", where, "S6")
        spec = read_spec(entry, where)
        if graph.mesh is None:
            raise ConvcError("\"shardings\" needs a \"mesh\": the axes the specs name", where, "S7")
        value.sharding = check_spec(spec, value.type.shape, graph.mesh, f"'{name}'")


# --- convc IR text --------------------------------------------------------------------

_SDY_DIMS = re.compile(r"\[(.*)\]")
_SDY_DIM = re.compile(r"\{([^{}]*)\}")
_SDY_AXIS = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"')
_SDY_MESH_AXIS = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*=\s*(-?\d+)')


def parse_sdy_mesh(text: str, loc: Location) -> Mesh:
    """`<["data"=4, "space"=2]>` -> Mesh."""
    body = text.strip()[2:-2].strip()
    items = [item.strip() for item in body.split(",")] if body else []
    pairs: list[tuple[str, Any]] = []
    for item in items:
        match = _SDY_MESH_AXIS.fullmatch(item)
        if match is None:
            raise ConvcError(f"malformed mesh axis '{item}' (expected \"name\"=size)", loc, "S5")
        pairs.append((match.group(1), int(match.group(2))))
    return read_mesh(pairs, loc)


def parse_sdy_sharding(text: str, loc: Location) -> ShardingSpec:
    """`#sdy.sharding<@mesh, [{"a"}, {}]>` or its `_per_value<[<...>]>` form -> ShardingSpec."""
    match = _SDY_DIMS.search(text[text.index("@"):])
    if match is None or not text.startswith("#sdy.sharding"):
        raise ConvcError(f"malformed sharding '{text}'", loc, "S10")
    dims = []
    for dim in _SDY_DIM.findall(match.group(1)):
        dims.append(tuple(_SDY_AXIS.findall(dim)))
    return ShardingSpec(tuple(dims), loc)


# --- small helpers -------------------------------------------------------------------


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _brief(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return "null" if value is None else text if len(text) <= 40 else text[:37] + "..."


def specs_of(graph: Any) -> Iterable[tuple[Any, ShardingSpec]]:
    """(value, spec) for every pinned value, in definition order."""
    return ((v, v.sharding) for v in graph.values() if v.sharding is not None)


# --- JSON Schema (tools/gen_schema.py) -----------------------------------------------


def mesh_schema() -> dict[str, Any]:
    return {"type": "object", "description": "named mesh axes and their sizes, in order (devices: their product, row-major)",
            "propertyNames": {"pattern": f"^{AXIS_NAME.pattern}$"},
            "additionalProperties": {"type": "integer", "minimum": 1}}


def shardings_schema() -> dict[str, Any]:
    axis = {"type": "string", "pattern": f"^{AXIS_NAME.pattern}$"}
    dim = {"oneOf": [{"type": "null"}, axis, {"type": "array", "items": axis, "description": "axes, major to minor"}]}
    return {"type": "object", "description": "value name -> one entry per dimension (null: not split); needs a mesh. "
                                             "See docs/sharding.md.",
            "additionalProperties": {"type": "array", "items": dim}}
