"""MLIR literal spellings (strings, i64 arrays and rows, floats, dense tensors, identifiers)
shared by the attribute kinds, the convc printer and the StableHLO emitter."""

from __future__ import annotations

import binascii
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import from_numpy, is_float
from .ir import TensorType

INLINE_ELEMENTS = 16  # larger constants are printed as a hex blob
_SSA_ID = re.compile(r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*")
_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PLAIN = re.compile(r'[^\\"\x00-\x1f\x7f]*')


def is_symbol_id(name: str) -> bool:
    """A bare `@name`: MLIR's bare-id, narrower than an SSA id (no leading digit or '$', no '-')."""
    return _BARE_ID.fullmatch(name) is not None


def is_ssa_id(name: str) -> bool:
    return _SSA_ID.fullmatch(name) is not None


def quote(text: str) -> str:
    """An MLIR string literal. Control characters become `\\XX` hex escapes: MLIR's lexer
    rejects some raw ones, and text tools would rewrite a raw CR."""
    if _PLAIN.fullmatch(text):  # most names: nothing to escape
        return f'"{text}"'
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + _CONTROL.sub(lambda m: f"\\{ord(m.group()):02X}", escaped) + '"'


def i64_array(values: Sequence[int]) -> str:
    if not values:
        return "array<i64>"
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


def int_list(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def i64_rows(rows: Sequence[Sequence[int]], width: int) -> str:
    body = ", ".join(int_list(row) for row in rows)
    return f"dense<[{body}]> : tensor<{len(rows)}x{width}xi64>" if rows else f"dense<> : tensor<0x{width}xi64>"


def float_literal(value: float) -> str:
    """An MLIR float literal (the mantissa needs a dot); exact round trip via repr."""
    text = repr(float(value))
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def dense_literal(array: np.ndarray) -> str:
    """`dense<...> : tensor<...>`: nested literals when small, else a little-endian hex blob."""
    dtype = from_numpy(array.dtype)
    assert dtype is not None
    type_text = TensorType(tuple(array.shape), dtype).mlir()
    if array.size == 0:  # `dense<[]>` would claim shape [0]
        return f"dense<> : {type_text}"
    finite = _all_finite(array, dtype)
    if finite and is_splat(array):
        return f"dense<{_scalar(array.flat[0], dtype)}> : {type_text}"
    if array.size <= INLINE_ELEMENTS and finite:
        return f"dense<{_nested(array, dtype)}> : {type_text}"
    return f'dense<"0x{hex_blob(array)}"> : {type_text}'


def is_splat(array: np.ndarray) -> bool:
    """More than one element, all the same finite value: what MLIR prints as `dense<v>`.
    A broadcast scalar (all strides zero) is one without looking at its elements."""
    if array.size <= 1:
        return False
    if not any(array.strides):
        first = array.flat[0]
        return not np.issubdtype(array.dtype, np.inexact) or math.isfinite(float(first))
    return bool((array == array.flat[0]).all()) and _all_finite(array.flat[:1], from_numpy(array.dtype) or "")


def hex_blob(array: np.ndarray) -> str:
    """The elements as MLIR's dense hex blob: little-endian bytes, upper-case hex digits.
    (`binascii` on bytes, then one ASCII decode: a fraction of the cost of `str.upper`.)"""
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return binascii.hexlify(data).upper().decode("ascii")


def _all_finite(array: np.ndarray, dtype: str) -> bool:
    if not is_float(dtype):
        return True
    try:
        return bool(np.isfinite(array).all())
    except TypeError:  # a float type numpy's isfinite lacks: through f64
        return bool(np.isfinite(array.astype(np.float64)).all())


def _scalar(value: Any, dtype: str) -> str:
    if dtype.startswith(("i", "u")):
        return str(int(value))
    return float_literal(float(value))


def _nested(array: np.ndarray, dtype: str) -> str:
    if array.ndim == 0:
        return _scalar(array.item() if dtype.startswith("i") else float(array), dtype)
    return "[" + ", ".join(_nested(sub, dtype) for sub in array) + "]"
