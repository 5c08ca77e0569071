"""Shardy (`sdy`) text for a sharded graph, as JAX writes it: the mesh op, argument and
result shardings, constraints, and the partition counts on the module."""

from __future__ import annotations

from ..ir import Graph, Value
from ..sharding import MESH_SYMBOL, Mesh


def module_attributes(mesh: Mesh | None) -> str:
    if mesh is None:
        return ""
    return f" attributes {{mhlo.num_partitions = {mesh.size} : i32, mhlo.num_replicas = 1 : i32}}"


def mesh_ops(mesh: Mesh | None) -> list[str]:
    return [] if mesh is None else [f"  sdy.mesh @{MESH_SYMBOL} = {mesh.sdy()}"]


def argument_attrs(value: Value) -> str:
    return "" if value.sharding is None else f" {{sdy.sharding = {value.sharding.sdy()}}}"


def result_attr(value: Value) -> str:
    return "" if value.sharding is None else f", sdy.sharding = {value.sharding.sdy()}"


def constrained_values(graph: Graph) -> set[int]:
    """Op results with a pinned sharding that are not outputs (an output's is the result's)."""
    outputs = {id(v) for v in graph.outputs}
    return {id(op.result) for op in graph.ops if op.result.sharding is not None and id(op.result) not in outputs}


def constraint(operand: str, value: Value) -> str:
    assert value.sharding is not None
    return f"sdy.sharding_constraint {operand} <@{MESH_SYMBOL}, {value.sharding.sdy_dims()}> : {value.type}"
