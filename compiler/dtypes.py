"""Element types convc accepts, and their spellings in JSON, numpy and MLIR."""

from __future__ import annotations

import ml_dtypes
import numpy as np

# canonical name -> numpy dtype; the canonical name is also the MLIR spelling.
_NUMPY: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "i32": np.dtype(np.int32),
}

_ALIASES: dict[str, str] = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int8": "i8",
    "int32": "i32",
}

DTYPES: tuple[str, ...] = tuple(_NUMPY)


def canonical_dtype(name: str) -> str | None:
    """The canonical spelling of a dtype name, or None when convc does not know it."""
    if name in _NUMPY:
        return name
    return _ALIASES.get(name)


def numpy_dtype(name: str) -> np.dtype:
    return _NUMPY[name]


_BY_NUMPY: dict[np.dtype, str] = {dtype: name for name, dtype in _NUMPY.items()}


def from_numpy(dtype: np.dtype) -> str | None:
    found = _BY_NUMPY.get(dtype)
    if found is not None:
        return found
    for name, candidate in _NUMPY.items():  # what compares equal without hashing equal ("float32")
        if candidate == dtype:
            return name
    return None


def is_float(name: str) -> bool:
    return name.startswith(("f", "bf"))


def itemsize(name: str) -> int:
    return _NUMPY[name].itemsize
