"""Inputs and outputs for `--run`: random or .npz inputs, .npz outputs, tolerant comparison."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .arrayfile import ArrayFileError, as_dtype, open_array_file
from .diagnostics import ConvcError, Location, one_line
from .dtypes import is_float, numpy_dtype, quant_type
from .fileio import write_atomic
from .ir import Graph, Op, TensorType

# Max |error| / (1 + max |reference|) accepted by --check, per precision a module computes in:
# its element types, and "tf32" (f32 with a 10-bit significand, as f16's: the same bound).
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "tf32": 1e-2, "f16": 1e-2, "bf16": 5e-2, "i8": 0.0, "i32": 0.0}

# What a platform computes an f32 conv or dot in, per `precision` below HIGHEST (HIGHEST: f32).
# NVIDIA GPUs since Ampere run DEFAULT (and HIGH) on TF32 tensor cores; a TPU's DEFAULT is one
# bf16 pass and its HIGH three (about TF32's accuracy). Other platforms (the CPU) compute f32.
REDUCED_F32 = {"gpu": {"DEFAULT": "tf32", "HIGH": "tf32"}, "tpu": {"DEFAULT": "bf16", "HIGH": "tf32"}}
_PLATFORM_FAMILY = {"cuda": "gpu", "rocm": "gpu"}  # PJRT's names for what --platform calls gpu
CONTRACTIONS = ("conv", "conv_transpose", "conv_backprop_input", "conv_backprop_filter", "dot_general")
DEFAULT_MAX_INPUT_BYTES = 1 << 31


def computed_precision(graph: Graph, platform: str) -> str:
    """The least precise type `graph` computes in when run on PJRT `platform`: its weakest
    element type (a bf16 step rounds what follows it, even into an f32 output), or what the
    platform makes of an f32 conv or dot whose `precision` is below HIGHEST."""
    reduced = (_reduced_contraction(op, platform) for op in graph.ops)
    return least_precise([*(v.type.dtype for v in graph.values()), *(p for p in reduced if p is not None)])


def least_precise(precisions: Iterable[str]) -> str:
    """The TOLERANCE key with the loosest bound among `precisions` ("i32" for none)."""
    return max(precisions, key=lambda name: TOLERANCE.get(name, 0.0), default="i32")


def _reduced_contraction(op: Op, platform: str) -> str | None:
    """What `platform` computes an f32 conv or dot in when below f32 ("tf32", "bf16"), else None."""
    if op.kind not in CONTRACTIONS or any(v.type.dtype != "f32" for v in op.operands):
        return None
    reduced = REDUCED_F32.get(_PLATFORM_FAMILY.get(platform, platform), {})
    precision = op.attrs.get("precision") or "DEFAULT"
    pair = (precision, precision) if isinstance(precision, str) else tuple(precision)
    weakest = least_precise(reduced.get(p, "f32") for p in pair)
    return None if weakest == "f32" else weakest


def tolerance_for(graphs: Sequence[Graph], platform: str) -> str:
    """The TOLERANCE key --check (and autotune's agreement check) applies to outputs of a module
    run on `platform`: the least precise of what each of `graphs` (the source and what was
    lowered from it) computes in."""
    return least_precise(computed_precision(g, platform) for g in graphs)


def random_inputs(graph: Graph, seed: int, max_bytes: int = DEFAULT_MAX_INPUT_BYTES) -> list[np.ndarray]:
    total = sum(v.type.num_elements() * numpy_dtype(v.type.dtype).itemsize for v in graph.inputs)
    if total > max_bytes:
        raise ConvcError(f"random inputs would need {total} bytes, over the limit of {max_bytes}", Location(), "R5")
    rng = np.random.default_rng(seed)
    return [random_array(value.type, rng) for value in graph.inputs]


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Seeded values of type `t`: standard normal for a float type, small integers (-4..4) otherwise."""
    dtype = numpy_dtype(t.dtype)
    if is_float(t.dtype):
        return rng.standard_normal(t.shape).astype(dtype)
    return rng.integers(-4, 5, t.shape).astype(dtype)


def unused_arrays_warning(graph: Graph, names: Iterable[str], loc: Location) -> str | None:
    """The warning line for arrays, given by name, that name no input of `graph` (a typo, or
    another model's file): they are ignored, as an unused flag is not, so convc says so."""
    inputs = [v.name for v in graph.inputs]
    extra = [name for name in names if name not in inputs]
    if not extra:
        return None
    shown = ", ".join(f"'{name}'" for name in extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
    plural = len(extra) > 1
    return one_line(f"{loc.where()}: warning: ignoring array{'s' if plural else ''} {shown}, which name{'' if plural else 's'} "
                    f"no input of '{graph.name}' (inputs: {', '.join(inputs)})")


def load_inputs(graph: Graph, path: str, max_bytes: int = DEFAULT_MAX_INPUT_BYTES,
                warn: Callable[[str], None] | None = None) -> list[np.ndarray]:
    """One array per graph input, by name, from an .npz; sizes are checked before reading.
    Arrays that name no input are ignored, with one line to `warn`."""
    loc = Location(file=path)
    arrays, remaining = [], max_bytes
    try:
        with open_array_file(path) as archive:
            if not archive.is_archive:
                raise ConvcError("--inputs must be an .npz holding one array per input name", loc, "R4")
            for value in graph.inputs:
                if value.name not in archive.names:
                    raise ConvcError(f"no array named '{value.name}' (has: {', '.join(archive.names)})", loc, "R1")
                array = archive.read(value.name, remaining)
                remaining -= array.nbytes
                if tuple(array.shape) != value.type.shape:
                    raise ConvcError(f"array '{value.name}' has shape {list(array.shape)}, expected {list(value.type.shape)}", loc,
                                     "R2")
                try:
                    arrays.append(as_dtype(array, numpy_dtype(value.type.dtype)))
                except (ValueError, TypeError) as err:
                    raise ConvcError(f"array '{value.name}' ({array.dtype}) cannot be converted to {value.type.dtype}: {err}",
                                     loc, "R3") from None
            unused = unused_arrays_warning(graph, archive.names, loc)
    except ArrayFileError as err:
        raise ConvcError(f"cannot load inputs: {err}", loc, "R4") from None
    if unused is not None and warn is not None:
        warn(unused)
    return arrays


def input_array_shapes(path: str) -> dict[str, tuple[int, ...]]:
    """The shape of each array of an `--inputs` .npz, read from the headers alone: what an ONNX
    model's symbolic dims take. A file that is no readable .npz is R4, as for `load_inputs`."""
    loc = Location(file=path)
    try:
        with open_array_file(path) as archive:
            if not archive.is_archive:
                raise ConvcError("--inputs must be an .npz holding one array per input name", loc, "R4")
            return {name: archive.shape(name) for name in archive.names}
    except ArrayFileError as err:
        raise ConvcError(f"cannot load inputs: {err}", loc, "R4") from None


def save_outputs(path: str, graph: Graph, outputs: list[np.ndarray]) -> None:
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {v.name: out for v, out in zip(graph.outputs, outputs)}
    np.savez(buffer, **arrays)
    write_atomic(path, buffer.getvalue())


# A quantized output (or a dequantized one) is compared in steps of its type: the integer
# lowering and the spec's float computation may round a value on a step boundary apart.
QUANTIZED_IDENTICAL = 0.999  # the least fraction of elements that must be identical
QUANTIZED_MAX_STEPS = 1  # and no element more steps apart


def quantized_steps(array: np.ndarray, dtype: str, stored: bool) -> np.ndarray:
    """`array` in steps of quantized type `dtype`: the stored integers as they are, or real
    values (a dequantized output) divided by the scale (per axis, the slice's), rounded."""
    values = np.asarray(array, np.float64)
    if stored:
        return values
    quant = quant_type(dtype)
    assert quant is not None
    where = [1] * values.ndim
    if quant.axis is not None:
        where[quant.axis] = len(quant.scales)
    return np.round(values / np.asarray(quant.scales, np.float64).reshape(where))


def compare_steps(name: str, got: np.ndarray, want: np.ndarray, against: str = "jax.lax") -> tuple[str, bool]:
    """One --check line for a quantized output, in steps: identical on QUANTIZED_IDENTICAL of
    the elements and never more than QUANTIZED_MAX_STEPS apart."""
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)} != reference {list(want.shape)}", False
    apart = np.abs(got - want)
    worst = float(apart.max()) if apart.size else 0.0
    identical = float((apart == 0).mean()) if apart.size else 1.0
    passed = worst <= QUANTIZED_MAX_STEPS and identical >= QUANTIZED_IDENTICAL
    return (f"{name}: {identical:.2%} identical, at most {worst:g} quantization steps apart vs {against} "
            f"({'ok' if passed else 'MISMATCH'})"), passed


def compare(name: str, precision: str, got: np.ndarray, want: np.ndarray, against: str = "jax.lax") -> tuple[str, bool]:
    """One --check line and whether `got` is within TOLERANCE[precision] of `want` (computed by `against`)."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got64.shape != want64.shape:
        return f"{name}: shape {list(got64.shape)} != reference {list(want64.shape)}", False
    same = (got64 == want64) | (np.isnan(got64) & np.isnan(want64))  # equal infinities (f16 overflow) agree
    error = float(np.nan_to_num(np.where(same, 0.0, np.abs(got64 - want64)), nan=np.inf).max()) if got64.size else 0.0
    finite = np.abs(want64[np.isfinite(want64)])
    scale = 1.0 + (float(finite.max()) if finite.size else 0.0)
    passed = error <= TOLERANCE[precision] * scale
    return f"{name}: max abs error vs {against} {error:.3g} ({'ok' if passed else 'MISMATCH'})", passed
