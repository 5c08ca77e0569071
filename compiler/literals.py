"""MLIR literal spellings (strings, i64 arrays and rows, floats, dense tensors, identifiers)
shared by the attribute kinds, the convc printer and the StableHLO emitter."""

from __future__ import annotations

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
    if array.size > 1 and not any(array.strides):  # a broadcast scalar: a splat without looking
        first = array.flat[0]
        if not is_float(dtype) or math.isfinite(float(first)):
            return f"dense<{_scalar(first, dtype)}> : {type_text}"
    finite = not is_float(dtype) or bool(np.isfinite(array.astype(np.float64)).all())
    if finite and array.size > 1 and bool((array == array.flat[0]).all()):
        return f"dense<{_scalar(array.flat[0], dtype)}> : {type_text}"
    if array.size <= INLINE_ELEMENTS and finite:
        return f"dense<{_nested(array, dtype)}> : {type_text}"
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return f'dense<"0x{data.hex().upper()}"> : {type_text}'


def _scalar(value: Any, dtype: str) -> str:
    if dtype.startswith(("i", "u")):
        return str(int(value))
    return float_literal(float(value))


def _nested(array: np.ndarray, dtype: str) -> str:
    if array.ndim == 0:
        return _scalar(array.item() if dtype.startswith("i") else float(array), dtype)
    return "[" + ", ".join(_nested(sub, dtype) for sub in array) + "]"
