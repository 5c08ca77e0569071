"""How an op kind is declared: operands, typed attributes with defaults, and one
`infer` function that verifies the op and returns its result type."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..diagnostics import VerifyError
from ..dtypes import canonical_dtype
from ..ir import TensorType


class ConvDimensionNumbers(NamedTuple):
    """Explicit conv dimension numbers, as `jax.lax.ConvDimensionNumbers`:
    each spec is (batch or out-feature dim, feature or in-feature dim, spatial dims...),
    spatial dims listed in the kernel spec's order."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


PADDING_MODES = ("SAME", "SAME_LOWER", "VALID")
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")

# Attribute kinds. Each names how a value is checked, printed and parsed.
INT, INTS, INT_ROWS, PADDING, DIMS, PRECISION, DTYPE, FLOAT, BOOL, STR = (
    "int", "ints", "int_rows", "padding", "dims", "precision", "dtype", "float", "bool", "str",
)


@dataclass(frozen=True)
class Attr:
    kind: str
    default: Any = None
    required: bool = False
    row_width: int = 2  # for INT_ROWS and explicit PADDING rows
    doc: str = ""
    choices: tuple[str, ...] = ()  # for STR: the values the op's verifier accepts (the schema's enum)


@dataclass(frozen=True)
class OpDef:
    name: str
    operands: tuple[str, ...]
    infer: Callable[[OpView], TensorType]
    attrs: dict[str, Attr] = field(default_factory=dict)
    variadic: bool = False  # operands repeat (concatenate)
    doc: str = ""


class OpView:
    """What an `infer` function sees: operand types and attributes with defaults."""

    __slots__ = ("opdef", "types", "attrs")

    def __init__(self, opdef: OpDef, types: Sequence[TensorType], attrs: dict[str, Any]):
        self.opdef = opdef
        self.types = list(types)
        self.attrs = attrs

    def operand(self, index: int) -> TensorType:
        return self.types[index]

    def attr(self, name: str) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        return self.opdef.attrs[name].default

    def has(self, name: str) -> bool:
        return name in self.attrs


# --- attribute coercion: raw (JSON, builder or parsed) value -> typed value ---

def _short_repr() -> reprlib.Repr:
    limits = reprlib.Repr()
    limits.maxlevel, limits.maxlist, limits.maxtuple, limits.maxdict = 3, 6, 6, 4
    limits.maxstring, limits.maxlong, limits.maxother = 40, 24, 40
    return limits


# How a bad value appears in a message: short, whatever its size or nesting depth.
shown = _short_repr().repr


def _int(value: Any, attr: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not _is_integral(value):
        raise VerifyError(f"{attr} must be an integer, got {shown(value)}", attr=attr)
    if not -(2**63) <= int(value) < 2**63:  # StableHLO attributes are i64
        raise VerifyError(f"{attr} must fit in 64 bits, got {shown(value)}", attr=attr)
    return int(value)


def _is_integral(value: Any) -> bool:
    return hasattr(value, "__index__") and not isinstance(value, bool)


def _ints(value: Any, attr: str) -> tuple[int, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) and not hasattr(value, "tolist"):
        raise VerifyError(f"{attr} must be a list of integers, got {shown(value)}", attr=attr)
    if hasattr(value, "tolist"):
        value = value.tolist()
    return tuple(_int(v, attr) for v in value)


def _rows(value: Any, attr: str, width: int) -> tuple[tuple[int, ...], ...]:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise VerifyError(f"{attr} must be a list of [{_row_names(width)}] rows, got {shown(value)}", attr=attr)
    rows = []
    for row in value:
        items = _ints(row, attr)
        if len(items) != width:
            raise VerifyError(f"{attr} rows must have {width} integers [{_row_names(width)}], got {list(items)}", attr=attr)
        rows.append(items)
    return tuple(rows)


def _row_names(width: int) -> str:
    return "lo, hi" if width == 2 else "lo, hi, interior"


def _padding(value: Any, attr: str) -> str | tuple[tuple[int, ...], ...]:
    if isinstance(value, str):
        if value.upper() not in PADDING_MODES:
            raise VerifyError(f"{attr} must be one of {', '.join(PADDING_MODES)} or [[lo, hi], ...], got {shown(value)}", attr=attr)
        return value.upper()
    try:
        return _rows(value, attr, 2)
    except VerifyError as err:  # StableHLO C4: shape(padding) = [N - 2, 2]
        raise VerifyError(err.message, "C4", attr=attr) from None


def _dims(value: Any, attr: str) -> tuple[str, str, str] | ConvDimensionNumbers:
    if isinstance(value, ConvDimensionNumbers):
        return value
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or len(value) != 3:
        raise VerifyError(f"{attr} must be three layout strings [lhs, rhs, out], got {shown(value)}", attr=attr)
    if not all(isinstance(spec, str) for spec in value):
        raise VerifyError(f"{attr} must be three layout strings [lhs, rhs, out], got {shown(value)}", attr=attr)
    return (value[0], value[1], value[2])


def _precision(value: Any, attr: str) -> str | tuple[str, str]:
    def one(item: Any) -> str:
        if not isinstance(item, str) or item.upper() not in PRECISIONS:
            raise VerifyError(f"{attr} must be one of {', '.join(PRECISIONS)} or a pair of them, got {shown(value)}", attr=attr)
        return item.upper()

    if isinstance(value, str):
        return one(value)
    if not isinstance(value, Sequence) or len(value) != 2:
        raise VerifyError(f"{attr} must be a precision or a pair of them, got {shown(value)}", "C24", attr=attr)
    return (one(value[0]), one(value[1]))


def _dtype(value: Any, attr: str) -> str:
    name = canonical_dtype(value) if isinstance(value, str) else None
    if name is None:
        raise VerifyError(f"{attr} must be a dtype (f32, f16, bf16, f64, i8, i32), got {shown(value)}", attr=attr)
    return name


def _float(value: Any, attr: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) and not hasattr(value, "__float__"):
        raise VerifyError(f"{attr} must be a number, got {shown(value)}", attr=attr)
    result = float(value)
    if math.isnan(result) and not isinstance(value, float):
        raise VerifyError(f"{attr} must be a number, got {shown(value)}", attr=attr)
    return result


def _bool(value: Any, attr: str) -> bool:
    if not isinstance(value, bool):
        raise VerifyError(f"{attr} must be true or false, got {shown(value)}", attr=attr)
    return value


def _str(value: Any, attr: str) -> str:
    if not isinstance(value, str):
        raise VerifyError(f"{attr} must be a string, got {shown(value)}", attr=attr)
    return value


def coerce_attr(spec: Attr, name: str, value: Any) -> Any:
    """Check a raw attribute value against its declared kind; return the typed value."""
    if value is None:
        if spec.required:
            raise VerifyError(f"attribute '{name}' is required", attr=name)
        return None
    kind = spec.kind
    if kind == INT:
        return _int(value, name)
    if kind == INTS:
        return _ints(value, name)
    if kind == INT_ROWS:
        return _rows(value, name, spec.row_width)
    if kind == PADDING:
        return _padding(value, name)
    if kind == DIMS:
        return _dims(value, name)
    if kind == PRECISION:
        return _precision(value, name)
    if kind == DTYPE:
        return _dtype(value, name)
    if kind == FLOAT:
        return _float(value, name)
    if kind == BOOL:
        return _bool(value, name)
    if kind == STR:
        return _str(value, name)
    raise AssertionError(f"unknown attribute kind {kind}")


# --- small shared checks used by many infer functions ---


def check_rank(t: TensorType, rank: int, what: str, constraint: str | None = None, operand: int | None = None) -> None:
    if t.rank != rank:
        raise VerifyError(f"{what} must have rank {rank}, got {t}", constraint, operand=operand)


def check_same_dtype(a: TensorType, b: TensorType, constraint: str | None = None) -> None:
    if a.dtype != b.dtype:
        raise VerifyError(f"element types differ: {a.dtype} and {b.dtype}", constraint, operand=1)


def check_permutation(perm: Sequence[int], rank: int, attr: str) -> None:
    if sorted(perm) != list(range(rank)):
        raise VerifyError(f"{attr} {list(perm)} is not a permutation of 0..{rank - 1}", attr=attr)


def check_axes(axes: Sequence[int], rank: int, attr: str) -> None:
    for axis in axes:
        if not 0 <= axis < rank:
            raise VerifyError(f"{attr} has dimension {axis} out of range for rank {rank}", attr=attr)
    if len(set(axes)) != len(axes):
        raise VerifyError(f"{attr} {list(axes)} repeats a dimension", attr=attr)
