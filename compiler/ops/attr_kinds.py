"""Attribute kinds: each knows how to check a raw value, spell it in convc text, read it
back, and describe it in the model's JSON Schema (after MLIR ODS's attribute constraints
and xDSL's IRDL attribute definitions).

A raw value comes from JSON, the builder, a rewrite or the text parser; `check` turns it into
the typed value ops hold: immutable and hashable (ints, strings, tuples, dimension numbers),
so that `convc.memo` can key on an op's attributes. A constant's array is the exception:
it is kept as a read-only numpy array (hashing its contents would cost a pass over the data
and identity keys would pin arrays in caches; its type rule is trivial, so nothing is lost).
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..diagnostics import VerifyError
from ..dtypes import DTYPES, QuantTypeError, canonical_dtype, element_type
from ..literals import dense_literal, float_literal, i64_array, i64_rows, quote

PADDING_MODES = ("SAME", "SAME_LOWER", "VALID")
PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


class ConvDimensionNumbers(NamedTuple):
    """Explicit conv dimension numbers, as `jax.lax.ConvDimensionNumbers`:
    each spec is (batch or out-feature dim, feature or in-feature dim, spatial dims...),
    spatial dims listed in the kernel spec's order."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def _short_repr() -> reprlib.Repr:
    limits = reprlib.Repr()
    limits.maxlevel, limits.maxlist, limits.maxtuple, limits.maxdict = 3, 6, 6, 4
    limits.maxstring, limits.maxlong, limits.maxother = 40, 24, 40
    return limits


# How a bad value appears in a message: short, whatever its size or nesting depth.
shown = _short_repr().repr


class AttrKind:
    """One kind of attribute value. Subclasses implement `check`, `print` and `schema`, and
    name the Python values they take in `label` (the builder's help and docs/builder.md)."""

    label = "a value"

    def check(self, value: Any, attr: str) -> Any:
        """A raw value -> the typed value, or a VerifyError naming `attr`."""
        raise NotImplementedError

    def print(self, value: Any) -> str:
        """The convc-text spelling of a typed value."""
        raise NotImplementedError

    def parse(self, value: Any) -> Any:
        """What the text reader's generic value (int, float, string, tuple, list, array)
        means for this kind, before `check`; most kinds read it as it is."""
        return value

    def schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the raw value; None: JSON models cannot spell it."""
        raise NotImplementedError


# --- integers -------------------------------------------------------------------


def _is_integral(value: Any) -> bool:
    return hasattr(value, "__index__") and not isinstance(value, bool)


def check_int(value: Any, attr: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not _is_integral(value):
        raise VerifyError(f"{attr} must be an integer, got {shown(value)}", attr=attr)
    if not -(2**63) <= int(value) < 2**63:  # StableHLO attributes are i64
        raise VerifyError(f"{attr} must fit in 64 bits, got {shown(value)}", attr=attr)
    return int(value)


def check_ints(value: Any, attr: str) -> tuple[int, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) and not hasattr(value, "tolist"):
        raise VerifyError(f"{attr} must be a list of integers, got {shown(value)}", attr=attr)
    if hasattr(value, "tolist"):
        value = value.tolist()
    return tuple(check_int(v, attr) for v in value)


def _row_names(width: int) -> str:
    return "lo, hi" if width == 2 else "lo, hi, interior"


def check_rows(value: Any, attr: str, width: int) -> tuple[tuple[int, ...], ...]:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise VerifyError(f"{attr} must be a list of [{_row_names(width)}] rows, got {shown(value)}", attr=attr)
    rows = []
    for row in value:
        items = check_ints(row, attr)
        if len(items) != width:
            raise VerifyError(f"{attr} rows must have {width} integers [{_row_names(width)}], got {list(items)}", attr=attr)
        rows.append(items)
    return tuple(rows)


def rows_schema(width: int) -> dict[str, Any]:
    row = {"type": "array", "items": {"type": "integer"}, "minItems": width, "maxItems": width,
           "description": f"[{_row_names(width)}]"}
    return {"type": "array", "items": row}


class IntKind(AttrKind):
    label = "int"

    def check(self, value: Any, attr: str) -> int:
        return check_int(value, attr)

    def print(self, value: Any) -> str:
        return f"{value} : i64"

    def schema(self) -> dict[str, Any]:
        return {"type": "integer"}


class IntsKind(AttrKind):
    label = "ints"

    def check(self, value: Any, attr: str) -> tuple[int, ...]:
        return check_ints(value, attr)

    def print(self, value: Any) -> str:
        return i64_array(value)

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "integer"}}


class IntRowsKind(AttrKind):
    """Rows of `width` integers: [lo, hi] or [lo, hi, interior]."""

    def __init__(self, width: int):
        self.width = width
        self.label = f"[{_row_names(width)}] rows"

    def check(self, value: Any, attr: str) -> tuple[tuple[int, ...], ...]:
        return check_rows(value, attr, self.width)

    def print(self, value: Any) -> str:
        return i64_rows(value, self.width)

    def schema(self) -> dict[str, Any]:
        return rows_schema(self.width)


# --- enums and strings ------------------------------------------------------------


def case_insensitive(words: tuple[str, ...]) -> dict[str, Any]:
    """convc upper-cases these enums before checking; ECMA regexes have no (?i), so spell both cases."""
    def one(word: str) -> str:
        return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)

    return {"type": "string", "pattern": "^(" + "|".join(one(w) for w in words) + ")$"}


class PaddingKind(AttrKind):
    """A padding mode (SAME, SAME_LOWER, VALID) or explicit [lo, hi] rows."""

    label = "padding mode or [lo, hi] rows"

    def check(self, value: Any, attr: str) -> str | tuple[tuple[int, ...], ...]:
        if isinstance(value, str):
            if value.upper() not in PADDING_MODES:
                raise VerifyError(f"{attr} must be one of {', '.join(PADDING_MODES)} or [[lo, hi], ...], got {shown(value)}",
                                  attr=attr)
            return value.upper()
        return check_rows(value, attr, 2)

    def print(self, value: Any) -> str:
        return quote(value) if isinstance(value, str) else i64_rows(value, 2)

    def schema(self) -> dict[str, Any]:
        return {"anyOf": [case_insensitive(PADDING_MODES), rows_schema(2)]}


class PrecisionKind(AttrKind):
    """One precision for both operands, or a pair."""

    label = "precision or a pair"

    def check(self, value: Any, attr: str) -> str | tuple[str, str]:
        def one(item: Any) -> str:
            if not isinstance(item, str) or item.upper() not in PRECISIONS:
                raise VerifyError(f"{attr} must be one of {', '.join(PRECISIONS)} or a pair of them, got {shown(value)}", attr=attr)
            return item.upper()

        if isinstance(value, str):
            return one(value)
        if not isinstance(value, Sequence) or len(value) != 2:
            raise VerifyError(f"{attr} must be a precision or a pair of them, got {shown(value)}", attr=attr)
        return (one(value[0]), one(value[1]))

    def print(self, value: Any) -> str:
        return quote(value) if isinstance(value, str) else "[" + ", ".join(quote(p) for p in value) + "]"

    def schema(self) -> dict[str, Any]:
        one = case_insensitive(PRECISIONS)
        return {"anyOf": [one, {"type": "array", "items": one, "minItems": 2, "maxItems": 2}]}


class DtypeKind(AttrKind):
    label = "dtype"

    def check(self, value: Any, attr: str) -> str:
        name = canonical_dtype(value) if isinstance(value, str) else None
        if name is None:
            raise VerifyError(f"{attr} must be a dtype ({', '.join(DTYPES)}), got {shown(value)}", attr=attr)
        return name

    def print(self, value: Any) -> str:
        return str(value)

    def schema(self) -> dict[str, Any]:
        return {"$ref": "#/$defs/dtype"}


class StrKind(AttrKind):
    """A string; `choices` (checked by the op's verifier, for its own diagnostic) is the schema's enum."""

    label = "str"

    def __init__(self, choices: tuple[str, ...] = ()):
        self.choices = choices
        if choices:
            self.label = " | ".join(repr(choice) for choice in choices)

    def check(self, value: Any, attr: str) -> str:
        if not isinstance(value, str):
            raise VerifyError(f"{attr} must be a string, got {shown(value)}", attr=attr)
        return value

    def print(self, value: Any) -> str:
        return quote(value)

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.choices)} if self.choices else {"type": "string"}


class BoolKind(AttrKind):
    label = "bool"

    def check(self, value: Any, attr: str) -> bool:
        if not isinstance(value, bool):
            raise VerifyError(f"{attr} must be true or false, got {shown(value)}", attr=attr)
        return value

    def print(self, value: Any) -> str:
        return "true" if value else "false"

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


_NON_FINITE = ("inf", "-inf", "nan")


class FloatKind(AttrKind):
    label = "float"

    def check(self, value: Any, attr: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) and not hasattr(value, "__float__"):
            raise VerifyError(f"{attr} must be a number, got {shown(value)}", attr=attr)
        result = float(value)
        if math.isnan(result) and not isinstance(value, float):
            raise VerifyError(f"{attr} must be a number, got {shown(value)}", attr=attr)
        return result

    def print(self, value: Any) -> str:
        # no decimal literal spells inf or nan: they are quoted, and `parse` reads them back
        return f"{float_literal(value)} : f64" if math.isfinite(value) else quote(repr(value))

    def parse(self, value: Any) -> Any:
        return float(value) if isinstance(value, str) and value in _NON_FINITE else value

    def schema(self) -> dict[str, Any]:
        return {"type": "number"}


# --- conv layouts -------------------------------------------------------------------


def format_dimension_numbers(dn: ConvDimensionNumbers) -> str:
    """StableHLO's compact form: `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`."""

    def one(spec: tuple[int, ...], first: str, second: str) -> str:
        labels = [""] * len(spec)
        labels[spec[0]], labels[spec[1]] = first, second
        for index, dim in enumerate(spec[2:]):
            labels[dim] = str(index)
        return "[" + ", ".join(labels) + "]"

    return f"{one(dn.lhs_spec, 'b', 'f')}x{one(dn.rhs_spec, 'o', 'i')}->{one(dn.out_spec, 'b', 'f')}"


def parse_dimension_numbers(text: str) -> ConvDimensionNumbers:
    """Inverse of `format_dimension_numbers`; raises ValueError on malformed text."""
    compact = text.replace(" ", "")
    try:
        lhs_text, rest = compact.split("x", 1)
        rhs_text, out_text = rest.split("->")
    except ValueError:
        raise ValueError(f"malformed dimension numbers '{text}'") from None

    def one(part: str, first: str, second: str) -> tuple[int, ...]:
        if not (part.startswith("[") and part.endswith("]")):
            raise ValueError(f"malformed dimension numbers '{text}'")
        labels = part[1:-1].split(",")
        try:
            spatial = sorted((int(label), dim) for dim, label in enumerate(labels) if label not in (first, second))
            result = (labels.index(first), labels.index(second)) + tuple(dim for _, dim in spatial)
        except ValueError:
            raise ValueError(f"malformed dimension numbers '{text}'") from None
        if [label for label, _ in spatial] != list(range(len(spatial))):
            raise ValueError(f"malformed dimension numbers '{text}': spatial labels must be 0..{len(spatial) - 1}, each once")
        return result

    return ConvDimensionNumbers(one(lhs_text, "b", "f"), one(rhs_text, "o", "i"), one(out_text, "b", "f"))


class DimsKind(AttrKind):
    """Conv dimension numbers: three layout strings, or explicit `ConvDimensionNumbers`."""

    label = "3 layout strings or ConvDimensionNumbers"

    def check(self, value: Any, attr: str) -> tuple[str, str, str] | ConvDimensionNumbers:
        if isinstance(value, ConvDimensionNumbers):
            return value
        if isinstance(value, str | bytes) or not isinstance(value, Sequence) or len(value) != 3:
            raise VerifyError(f"{attr} must be three layout strings [lhs, rhs, out], got {shown(value)}", attr=attr)
        if not all(isinstance(spec, str) for spec in value):
            raise VerifyError(f"{attr} must be three layout strings [lhs, rhs, out], got {shown(value)}", attr=attr)
        return (value[0], value[1], value[2])

    def print(self, value: Any) -> str:
        if isinstance(value, ConvDimensionNumbers):
            return f"#convc.dims<{format_dimension_numbers(value)}>"
        return "[" + ", ".join(quote(spec) for spec in value) + "]"

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3,
                "description": "[lhs, rhs, out] layout strings, e.g. [\"NHWC\", \"HWIO\", \"NHWC\"]"}


# --- constants -----------------------------------------------------------------------


class TensorKind(AttrKind):
    """A constant's value: a numpy array, held read-only (a view: the caller's array stays
    writable). JSON models give constants in their own "constants" list, not as attributes."""

    label = "numpy array"

    def check(self, value: Any, attr: str) -> Any:
        if isinstance(value, np.ndarray) and value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        return value

    def print(self, value: Any) -> str:
        return dense_literal(value)

    def schema(self) -> None:
        return None


INT, INTS, PADDING, DIMS, PRECISION = IntKind(), IntsKind(), PaddingKind(), DimsKind(), PrecisionKind()
class ElementTypeKind(DtypeKind):
    """A dtype or a quantized element type in its StableHLO spelling (`!quant.uniform<...>`);
    a quantized spelling that breaks a rule of the spec's quantized types names that rule."""

    label = "element type"

    def check(self, value: Any, attr: str) -> str:
        try:
            name = element_type(value) if isinstance(value, str) else None
        except QuantTypeError as err:
            raise VerifyError(err.message, err.constraint, attr=attr) from None
        if name is None:
            raise VerifyError(f"{attr} must be a dtype ({', '.join(DTYPES)}) or a !quant.uniform<...> type, got {shown(value)}",
                              attr=attr)
        return name

    def print(self, value: Any) -> str:
        return quote(value) if value.startswith("!") else str(value)

    def schema(self) -> dict[str, Any]:
        return {"anyOf": [{"$ref": "#/$defs/dtype"}, {"$ref": "#/$defs/quantized_dtype"}]}


DTYPE, FLOAT, BOOL, STR, TENSOR = DtypeKind(), FloatKind(), BoolKind(), StrKind(), TensorKind()
ELEMENT_TYPE = ElementTypeKind()
