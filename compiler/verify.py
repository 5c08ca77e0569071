"""Type inference and verification: run each op's declared rule, locate failures."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .diagnostics import ConvcError, Location, VerifyError, suggest
from .dtypes import check_quant_tensor, is_quantized
from .ir import Graph, Op, TensorType, attrs_key
from .memo import memoized
from .ops import OPS, OpDef, attribute_hint
from .ops.attr_kinds import TensorKind
from .ops.base import ATTR_KNOWN, ATTR_REQUIRED, KNOWN_OP, OPERAND_COUNT, QUANTIZED_OPERAND, SIZE_LIMIT


def coerce_attrs(kind: str, raw: dict[str, Any], loc: Location) -> dict[str, Any]:
    """Check attribute names and value kinds; an unknown name gets a hint (the op's
    `foreign` table, else the closest declared name)."""
    return dict(_coerced(kind, raw, loc))  # a copy: the memoized dict is shared


def _raw_signature(kind: str, raw: dict[str, Any], loc: Location) -> object:
    """The memo key of JSON-shaped attribute values: ints, strings and lists of them (or of
    int lists), as the JSON frontend passes them. Anything else (a float, whose -0.0 equals
    0.0; a bool, which equals 1; a tuple from Python callers) gives an unhashable key, which
    the memo computes directly."""
    items = []
    for name, value in raw.items():
        frozen = _frozen(value)
        if frozen is None:
            return _UNKEYED
        items.append((name, frozen))
    return OPS.get(kind), tuple(items)


_UNKEYED: list[object] = []  # unhashable: the memo's "compute directly"


def _frozen(value: Any) -> Any:
    kind = type(value)
    if kind is int or kind is str:
        return value
    if kind is not list:
        return None
    items: list[object] = []
    for item in value:
        if type(item) is int or type(item) is str:
            items.append(item)
        elif type(item) is list and all(type(x) is int for x in item):
            items.append(tuple(item))
        else:
            return None
    return tuple(items)


@memoized(1 << 12, key=_raw_signature)
def _coerced(kind: str, raw: dict[str, Any], loc: Location) -> dict[str, Any]:
    opdef = OPS[kind]
    typed: dict[str, Any] = {}
    for name, value in raw.items():
        spec = opdef.attrs.get(name)
        if spec is None:
            hint = attribute_hint(opdef, name)
            raise ConvcError(f"unknown attribute '{name}' for op '{kind}'{hint}", loc.child(name), ATTR_KNOWN)
        try:
            typed[name] = spec.check(name, value)
        except VerifyError as err:
            raise locate(err, loc) from None
    for name, spec in opdef.attrs.items():
        if spec.required and name not in typed:
            raise ConvcError(f"attribute '{name}' is required", loc, ATTR_REQUIRED)
    return {k: v for k, v in typed.items() if v is not None}


def locate(err: VerifyError, loc: Location) -> ConvcError:
    where = loc
    if err.attr is not None:
        where = loc.child(err.attr)
    elif err.operand is not None:
        where = loc.child("inputs").child(err.operand)
    return ConvcError(err.message, where, err.constraint)


def _signature(kind: str, operand_types: Sequence[TensorType], attrs: dict[str, Any], loc: Location) -> object:
    """The memo key: the declaration itself (register() may replace one), types, attributes.
    An array attribute (a constant's value) enters by its shape and element type, all a
    shape rule reads of it, so constants are memoized too."""
    opdef = OPS.get(kind)
    arrays = _array_attrs(opdef)
    if arrays:
        items: object = tuple([(name, _array_key(value) if name in arrays else value) for name, value in attrs.items()])
    else:
        items = attrs_key(attrs)
    return opdef, tuple(operand_types), items


@functools.cache
def _array_attrs(opdef: OpDef | None) -> frozenset[str]:
    """The names of an op's array-valued (TensorKind) attributes."""
    if opdef is None:
        return frozenset()
    return frozenset(name for name, spec in opdef.attrs.items() if isinstance(spec.kind, TensorKind))


def _array_key(value: Any) -> Any:
    return (np.ndarray, value.shape, value.dtype) if isinstance(value, np.ndarray) else value


# Type inference is a pure function of (op declaration, operand types, attributes), and
# conv nets repeat layer signatures, so successful results are memoized (errors are not).
@memoized(1 << 16, key=_signature)
def infer_type(kind: str, operand_types: Sequence[TensorType], attrs: dict[str, Any], loc: Location) -> TensorType:
    """The result type of an op, or a located ConvcError naming the broken constraint."""
    opdef = OPS.get(kind)
    if opdef is None:
        raise ConvcError(f"unknown op '{kind}'{suggest(kind, OPS)}", loc.child("op"), KNOWN_OP)
    expected = len(opdef.operands)
    if opdef.variadic and not operand_types:
        raise ConvcError(f"'{kind}' takes at least one input, got none", loc.child("inputs"), OPERAND_COUNT)
    if not opdef.variadic and len(operand_types) != expected:
        names = ", ".join(opdef.operands) or "none"
        raise ConvcError(f"'{kind}' takes {expected} inputs ({names}), got {len(operand_types)}", loc.child("inputs"),
                         OPERAND_COUNT)
    if not opdef.quantized:
        _refuse_quantized(kind, operand_types, loc)
    try:
        result = opdef.infer(opdef.bind(operand_types, attrs))
    except VerifyError as err:
        raise locate(err, loc) from None
    _check_result_size(result, loc)
    problem = check_quant_tensor(result.shape, result.dtype)
    if problem is not None:
        raise ConvcError(f"result type {result}: {problem.message}", loc, problem.constraint)
    return result


def _refuse_quantized(kind: str, operand_types: Sequence[TensorType], loc: Location) -> None:
    for index, t in enumerate(operand_types):
        if is_quantized(t.dtype):
            raise ConvcError(f"'{kind}' does not take quantized operands (operand {index} is {t}); uniform_dequantize it first",
                             loc.child("inputs").child(index), QUANTIZED_OPERAND)


MAX_RESULT_DIM = 2**31 - 1  # as the JSON loader's input dimensions


def _check_result_size(result: TensorType, loc: Location) -> None:
    """Huge pads, dilations or sizes can make a shape MLIR, numpy and XLA cannot hold."""
    for index, size in enumerate(result.shape):
        if size > MAX_RESULT_DIM:
            raise ConvcError(f"result shape {list(result.shape)} is too large: dimension {index} is over {MAX_RESULT_DIM}", loc,
                             SIZE_LIMIT)
    count = 1
    for size in result.shape:
        count *= max(size, 1)
    if count >= 2**60:  # numpy and XLA size even empty arrays by their non-zero dims, in bytes, in int64
        raise ConvcError(f"result shape {list(result.shape)} is too large: its non-zero dimensions multiply to 2^60 or more", loc,
                         SIZE_LIMIT)


def verify_op(op: Op) -> None:
    inferred = infer_type(op.kind, op.operand_types(), op.attrs, op.loc)
    check_result_type(op.kind, op.result.type, inferred, op.loc)


def check_result_type(kind: str, written: TensorType, inferred: TensorType, loc: Location) -> None:
    """A written result type (convc IR text, a rewrite) must be the inferred one; the op names the rule."""
    if written != inferred:
        constraint = OPS[kind].result_constraint(written, inferred)
        raise ConvcError(f"result type {written} does not match the inferred type {inferred}", loc, constraint)


def verify_graph(graph: Graph) -> None:
    """Whole-graph invariants: unique names, defs before uses, outputs defined, op rules."""
    defined: set[int] = set()
    names: set[str] = set()
    for value in graph.inputs:
        _define(value.name, names, graph.input_locs.get(value.name, Location()))
        defined.add(id(value))
    for op in graph.ops:  # verify_op and _define inlined: this loop runs after every changing pass
        operands = op.operands
        for index, operand in enumerate(operands):
            if id(operand) not in defined:
                raise ConvcError(f"operand {index} '%{operand.name}' is used before it is defined", op.loc.child("inputs").child(index),
                                 "V1")
        result = op.result
        inferred = infer_type(op.kind, op.operand_types(), op.attrs, op.loc)
        if inferred is not result.type:  # types are uniqued: equal means identical
            check_result_type(op.kind, result.type, inferred, op.loc)
        _define(result.name, names, op.loc)
        defined.add(id(result))
    for value in graph.outputs:
        if id(value) not in defined:
            raise ConvcError(f"output '%{value.name}' is not defined in the graph", Location(), "V2")
    if graph.mesh is not None:  # shardings (a graph without a mesh holds none: S7 at every frontend)
        from .sharding import verify_shardings

        verify_shardings(graph)


def _define(name: str, names: set[str], loc: Location) -> None:
    if name in names:
        raise ConvcError(f"name '{name}' is defined twice", loc, "V3")
    names.add(name)
