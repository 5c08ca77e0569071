"""Inputs and outputs for `--run`: random or .npz inputs, .npz outputs, tolerant comparison."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .arrayfile import ArrayFileError, as_dtype, open_array_file
from .diagnostics import ConvcError, Location
from .dtypes import is_float, numpy_dtype
from .fileio import write_atomic
from .ir import Graph

# Max |error| / (1 + max |reference|) accepted by --check, per element type.
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "f16": 1e-2, "bf16": 5e-2, "i8": 0.0, "i32": 0.0}
DEFAULT_MAX_INPUT_BYTES = 1 << 31


def random_inputs(graph: Graph, seed: int, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> list[np.ndarray]:
    total = sum(v.type.num_elements() * numpy_dtype(v.type.dtype).itemsize for v in graph.inputs)
    if total > max_bytes:
        raise ConvcError(f"random inputs would need {total} bytes, over the limit of {max_bytes}", Location())
    rng = np.random.default_rng(seed)
    arrays = []
    for value in graph.inputs:
        dtype = numpy_dtype(value.type.dtype)
        if is_float(value.type.dtype):
            arrays.append(rng.standard_normal(value.type.shape).astype(dtype))
        else:
            arrays.append(rng.integers(-4, 5, value.type.shape).astype(dtype))
    return arrays


def load_inputs(graph: Graph, path: str, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> list[np.ndarray]:
    """One array per graph input, by name, from an .npz; sizes are checked before reading."""
    loc = Location(file=path)
    arrays, remaining = [], max_bytes
    try:
        with open_array_file(path) as archive:
            if not archive.is_archive:
                raise ConvcError("--inputs must be an .npz holding one array per input name", loc)
            for value in graph.inputs:
                if value.name not in archive.names:
                    raise ConvcError(f"no array named '{value.name}' (has: {', '.join(archive.names)})", loc)
                array = archive.read(value.name, remaining)
                remaining -= array.nbytes
                if tuple(array.shape) != value.type.shape:
                    raise ConvcError(f"array '{value.name}' has shape {list(array.shape)}, expected {list(value.type.shape)}", loc)
                try:
                    arrays.append(as_dtype(array, numpy_dtype(value.type.dtype)))
                except (ValueError, TypeError) as err:
                    raise ConvcError(f"array '{value.name}' ({array.dtype}) cannot be converted to {value.type.dtype}: {err}", loc) from None
    except ArrayFileError as err:
        raise ConvcError(f"cannot load inputs: {err}", loc) from None
    return arrays


def save_outputs(path: str, graph: Graph, outputs: list[np.ndarray]) -> None:
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {v.name: out for v, out in zip(graph.outputs, outputs)}
    np.savez(buffer, **arrays)
    write_atomic(path, buffer.getvalue())


def compare(name: str, dtype: str, got: np.ndarray, want: np.ndarray) -> tuple[str, bool]:
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got64.shape != want64.shape:
        return f"{name}: shape {list(got64.shape)} != reference {list(want64.shape)}", False
    same = (got64 == want64) | (np.isnan(got64) & np.isnan(want64))  # equal infinities (f16 overflow) agree
    error = float(np.nan_to_num(np.where(same, 0.0, np.abs(got64 - want64)), nan=np.inf).max()) if got64.size else 0.0
    finite = np.abs(want64[np.isfinite(want64)])
    scale = 1.0 + (float(finite.max()) if finite.size else 0.0)
    passed = error <= TOLERANCE[dtype] * scale
    return f"{name}: max abs error vs jax.lax {error:.3g} ({'ok' if passed else 'MISMATCH'})", passed
