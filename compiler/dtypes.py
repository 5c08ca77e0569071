"""Element types convc accepts, and their spellings in JSON, numpy and MLIR.

A plain type is a short name (`f32`); a quantized one is its StableHLO spelling
(`!quant.uniform<i8:f32, 5.000000e-01:-3>`), canonicalized, so that every stage carries
element types as strings and the emitter writes them as they are."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np

# canonical name -> numpy dtype; the canonical name is also the MLIR spelling.
_NUMPY: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
}

_ALIASES: dict[str, str] = {
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float64": "f64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "ui8",
}

DTYPES: tuple[str, ...] = tuple(_NUMPY)


def canonical_dtype(name: str) -> str | None:
    """The canonical spelling of a dtype name, or None when convc does not know it."""
    if name in _NUMPY:
        return name
    return _ALIASES.get(name)


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of an element type; a quantized type's is its storage type's."""
    found = _NUMPY.get(name)
    if found is not None:
        return found
    quant = quant_type(name)
    if quant is None:
        raise KeyError(name)
    return quant.storage_numpy()


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


def is_integer(name: str) -> bool:
    """A plain integer element type (i8 ... i64, ui8); not a quantized one."""
    return name.startswith(("i", "ui"))


def itemsize(name: str) -> int:
    return numpy_dtype(name).itemsize


def is_quantized(name: str) -> bool:
    return name.startswith(QUANT_PREFIX)


def element_type(name: str) -> str | None:
    """The canonical spelling of any element type convc takes, a quantized one included;
    None when it is none. A malformed or invalid quantized spelling raises QuantTypeError."""
    if name.startswith(QUANT_PREFIX):
        return parse_quant(name).spelling()
    return canonical_dtype(name)


def quant_type(name: str) -> QuantType | None:
    """The parameters of a (canonical or not) quantized spelling; None for a plain type."""
    return parse_quant(name) if name.startswith(QUANT_PREFIX) else None


# --- quantized element types: StableHLO's `!quant.uniform` (spec "Types", C1..C13) ---------

QUANT_PREFIX = "!quant.uniform<"

# storage spelling -> (numpy dtype, the plain convc type it is stored as)
_STORAGE: dict[str, tuple[np.dtype, str]] = {
    "i8": (np.dtype(np.int8), "i8"),
    "u8": (np.dtype(np.uint8), "ui8"),
    "i16": (np.dtype(np.int16), "i16"),
    "i32": (np.dtype(np.int32), "i32"),
}
QUANT_STORAGE: tuple[str, ...] = tuple(_STORAGE)
QUANT_EXPRESSED: tuple[str, ...] = ("f32", "f16", "bf16", "f64")


class QuantTypeError(ValueError):
    """A quantized spelling that does not parse (`constraint` None) or breaks a rule of the
    spec's quantized element types (`quant.C1`...)."""

    def __init__(self, message: str, constraint: str | None = None):
        super().__init__(message)
        self.message = message
        self.constraint = constraint


@dataclass(frozen=True)
class QuantType:
    """`!quant.uniform<storage[<min:max>]:expressed[:axis], scale[:zp] | {scale[:zp],...}>`."""

    storage: str
    expressed: str
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None = None
    storage_min: int | None = None  # None: the storage type's own limit
    storage_max: int | None = None

    def storage_numpy(self) -> np.dtype:
        return _STORAGE[self.storage][0]

    def storage_dtype(self) -> str:
        """The plain convc element type holding the stored integers (`u8` -> `ui8`)."""
        return _STORAGE[self.storage][1]

    def limits(self) -> tuple[int, int]:
        """The inclusive range of stored values: storage_min/max, else the storage type's."""
        info = np.iinfo(self.storage_numpy())
        low = int(info.min) if self.storage_min is None else self.storage_min
        high = int(info.max) if self.storage_max is None else self.storage_max
        return low, high

    def spelling(self) -> str:
        storage = self.storage
        if self.storage_min is not None or self.storage_max is not None:
            low, high = self.limits()
            storage += f"<{low}:{high}>"
        axis = "" if self.axis is None else f":{self.axis}"
        params = [_scale_text(s) + (f":{z}" if z else "") for s, z in zip(self.scales, self.zero_points)]
        body = params[0] if self.axis is None else "{" + ",".join(params) + "}"
        return f"{QUANT_PREFIX}{storage}:{self.expressed}{axis}, {body}>"

    def per_tensor(self) -> QuantType:
        """The per-tensor type of one slice's parameters (only for one scale)."""
        return replace(self, axis=None)


def _scale_text(scale: float) -> str:
    """As MLIR prints a scale: `%e` (5.000000e-01) when that reads back the same, else in full."""
    short = f"{scale:.6e}"
    return short if float(short) == scale else repr(scale)


_QUANT = re.compile(
    r"!quant\.uniform<\s*(?P<storage>[a-z]+\d+)\s*(?:<\s*(?P<min>[-+]?\d+)\s*:\s*(?P<max>[-+]?\d+)\s*>)?\s*:"
    r"\s*(?P<expressed>[a-z]+\d+)\s*(?::\s*(?P<axis>[-+]?\d+)\s*)?,\s*(?P<params>\{[^{}]*\}|[^{},<>]+)\s*>$")
_PARAM = re.compile(r"\s*(?P<scale>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan))\s*(?::\s*(?P<zp>[-+]?\d+))?\s*$")


@functools.lru_cache(maxsize=1024)
def parse_quant(text: str) -> QuantType:
    """A quantized spelling -> its checked parameters (the spec's C1-C8, C10, C11)."""
    match = _QUANT.match(text.strip())
    if match is None:
        raise QuantTypeError(f"malformed quantized type '{text}': expected "
                             "!quant.uniform<storage[<min:max>]:expressed[:axis], scale[:zero_point]> or {scale:zero_point,...}")
    storage, expressed = match["storage"], match["expressed"]
    if storage not in _STORAGE:
        raise QuantTypeError(f"quantized storage type '{storage}' is not one of {', '.join(QUANT_STORAGE)}")
    if expressed not in QUANT_EXPRESSED:
        raise QuantTypeError(f"quantized expressed type '{expressed}' is not one of {', '.join(QUANT_EXPRESSED)}")
    params = match["params"]
    braced = params.startswith("{")
    scales, zero_points = _params(text, params.strip("{}") if braced else params)
    axis = None if match["axis"] is None else int(match["axis"])
    quant = QuantType(storage, expressed, scales, zero_points, axis,
                      None if match["min"] is None else int(match["min"]), None if match["max"] is None else int(match["max"]))
    _check_quant(quant)
    return quant


def _params(text: str, body: str) -> tuple[tuple[float, ...], tuple[int, ...]]:
    scales: list[float] = []
    zero_points: list[int] = []
    for item in body.split(","):
        found = _PARAM.match(item)
        if found is None:
            raise QuantTypeError(f"malformed quantization parameter '{item.strip()}' in '{text}': expected scale[:zero_point]")
        scales.append(float(found["scale"]))
        zero_points.append(int(found["zp"] or 0))
    return tuple(scales), tuple(zero_points)


def _check_quant(q: QuantType) -> None:
    info = np.iinfo(q.storage_numpy())
    low, high = int(info.min), int(info.max)
    for value, name, rule in ((q.storage_min, "storage_min", "quant.C1"), (q.storage_max, "storage_max", "quant.C2")):
        if value is not None and not low <= value <= high:
            raise QuantTypeError(f"{name} {value} is outside the {q.storage} range [{low}, {high}]", rule)
    smin, smax = q.limits()
    if smin >= smax:
        raise QuantTypeError(f"storage_min {smin} must be less than storage_max {smax}", "quant.C3")
    finfo = ml_dtypes.finfo(numpy_dtype(q.expressed))
    for scale in q.scales:
        if not math.isfinite(scale):
            raise QuantTypeError(f"scale {scale} is not finite", "quant.C6")
        if scale <= 0:
            raise QuantTypeError(f"scale {scale} must be positive", "quant.C5")
        if not float(finfo.smallest_subnormal) <= scale <= float(finfo.max):
            raise QuantTypeError(f"scale {scale:g} is outside the {q.expressed} range", "quant.C4")
    for zero_point in q.zero_points:
        if not low <= zero_point <= high:
            raise QuantTypeError(f"zero point {zero_point} is outside the {q.storage} range [{low}, {high}]", "quant.C8")
        if not smin <= zero_point <= smax:
            raise QuantTypeError(f"zero point {zero_point} lies outside [storage_min, storage_max] = [{smin}, {smax}]", "quant.C7")
    if q.axis is None and len(q.scales) != 1:
        raise QuantTypeError(f"a per-tensor quantized type has one scale, got {len(q.scales)} (per-axis types name a "
                             "quantization dimension: !quant.uniform<i8:f32:0, {...}>)", "quant.C10")
    if q.axis is not None and q.axis < 0:
        raise QuantTypeError(f"quantization dimension {q.axis} must not be negative", "quant.C11")


def tensor_element_type(name: str, shape: tuple[int, ...]) -> str | None:
    """The canonical element type of a tensor of `shape` (None: unknown plain name); a
    quantized spelling that breaks a rule, of its own or with this shape, raises QuantTypeError."""
    canonical = element_type(name)
    if canonical is not None:
        problem = check_quant_tensor(shape, canonical)
        if problem is not None:
            raise problem
    return canonical


def check_quant_tensor(shape: tuple[int, ...], name: str) -> QuantTypeError | None:
    """The tensor-level rules of a per-axis type (C12, C13); None when they hold or `name`
    is not per-axis."""
    quant = quant_type(name)
    if quant is None or quant.axis is None:
        return None
    if quant.axis >= len(shape):
        return QuantTypeError(f"quantization dimension {quant.axis} is out of range for a rank-{len(shape)} tensor", "quant.C12")
    if shape[quant.axis] != len(quant.scales):
        return QuantTypeError(f"dimension {quant.axis} has size {shape[quant.axis]} but the type has {len(quant.scales)} scales",
                              "quant.C13")
    return None
