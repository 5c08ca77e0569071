"""Property tests of `lower-quantized` against the spec oracle (compiler/reference.py:
dequantize, float conv, quantize): drawn quantized convs, 1-D to 3-D, with every padding mode
(and explicit, cropping and lhs-dilated windows), strides, both dilations, feature groups and
depthwise convs, batch groups, channels first or last, per-tensor and per-axis scales and zero
points anywhere in the storage range (its limits drawn often), i8/u8/i16 storage, the kernel a
graph input or a quantized constant (whose zero-point term the cpu lowering computes at
compile time); compiled for the cpu target (exact f32 convs of the shifted operands where
XLA:CPU's integer conv is slow, else i8 x i8 -> i32 convs plus zero-point terms for 8-bit
storage and shifted i64 convs for i16), the cpu target with every 8-bit conv an i8 one
(`cpu-i8`), or the gpu pipeline (f64 convs, run on the CPU) and run by XLA.

Fixed seed (derandomized, `strategies.budget`); CONVC_SOAK=1 draws fresh ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from convc import Builder
from convc.dtypes import parse_quant
from convc.ir import Graph
from convc.reference import evaluate
from hypothesis import given
from hypothesis import strategies as st
from strategies import budget
from test_lower_quantized import run_for

STORAGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767)}


@dataclass(frozen=True)
class QConv:
    """A drawn quantized conv: shapes, types, attributes, and whether every dequantized value
    is exact in f32 (power-of-two operand scales), where the lowering must match bit for bit."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    types: tuple[str, str, str]
    attrs: dict[str, Any]
    exact: bool
    target: str
    constant_kernel: bool

    def graph(self, kernel: np.ndarray) -> Graph:
        """The conv; with `constant_kernel`, its kernel the stored integers `kernel` made a
        quantized constant (their real values quantized again), else a graph input."""
        b = Builder("qprop")
        x = b.input("x", self.lhs, self.types[0])
        if self.constant_kernel:
            real = b.constant("w_real", _real(kernel, self.types[1]))
            w = b.uniform_quantize(real, name="w", new_dtype=self.types[1])
        else:
            w = b.input("w", self.rhs, self.types[1])
        b.output(b.conv(x, w, name="c", preferred_element_type=self.types[2], **self.attrs))
        return b.build()


def _real(stored: np.ndarray, dtype: str) -> np.ndarray:
    """The f32 real values of stored integers (per axis: along the type's dimension)."""
    quant = parse_quant(dtype)
    shape = [-1 if d == quant.axis else 1 for d in range(stored.ndim)]
    scales = np.asarray(quant.scales, np.float32).reshape(shape)
    zero_points = np.asarray(quant.zero_points, np.float32).reshape(shape)
    return ((stored.astype(np.float32) - zero_points) * scales).astype(np.float32)


def _spelled(storage: str, expressed_axis: int | None, params: list[tuple[float, int]]) -> str:
    items = [f"{s!r}:{z}" for s, z in params]
    if expressed_axis is None:
        return f"!quant.uniform<{storage}:f32, {items[0]}>"
    return f"!quant.uniform<{storage}:f32:{expressed_axis}, {{{','.join(items)}}}>"


@st.composite
def zero_points(draw: st.DrawFn, storage: str) -> int:
    """At the storage limits half the time (where a shifted value needs the full i32 range)."""
    low, high = STORAGE[storage]
    return draw(st.sampled_from([low, high]) | st.integers(low, high))


@st.composite
def scales(draw: st.DrawFn, exact: bool) -> float:
    if exact:
        return 2.0 ** draw(st.integers(-9, -1))
    return float(np.float32(draw(st.floats(1e-3, 0.5))))


def _window(draw: st.DrawFn, size: int, kernel: int, stride: int, rhs_dil: int, lhs_dil: int, mode: str) -> tuple[int, int] | None:
    """One spatial dimension's explicit pads for `mode` (None: the mode keeps its name)."""
    if mode != "explicit":
        return None
    lo, hi = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
    padded = lo + (size - 1) * lhs_dil + 1 + hi
    window = (kernel - 1) * rhs_dil + 1
    return (lo, hi) if padded >= window else (window, window)  # a window that fits


@st.composite
def quantized_convs(draw: st.DrawFn) -> QConv:
    rank = draw(st.integers(1, 3))
    groups_kind = draw(st.sampled_from(["plain", "grouped", "depthwise", "batch_grouped"]))
    groups = 1 if groups_kind == "plain" else draw(st.integers(2, 3))
    per_group = 1 if groups_kind == "depthwise" else draw(st.integers(1, 2))
    out_features = groups * draw(st.integers(1, 2))
    in_features = groups * per_group
    batch_groups = groups if groups_kind == "batch_grouped" else 1
    if batch_groups > 1:  # the kernel takes every input feature; the batch splits in groups
        groups, per_group = 1, in_features
    sizes = [draw(st.integers(1, 5 if rank < 3 else 3)) for _ in range(rank)]
    kernels = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 2)) for _ in range(rank)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(rank)]
    lhs_dil = [draw(st.sampled_from([1, 1, 2])) for _ in range(rank)]
    mode = draw(st.sampled_from(["VALID", "SAME", "SAME_LOWER", "explicit"]))
    if mode in ("SAME", "SAME_LOWER"):
        lhs_dil = [1] * rank
    if mode == "VALID":  # a window that fits the input
        sizes = [max(s, (k - 1) * d + 1) for s, k, d in zip(sizes, kernels, rhs_dil, strict=True)]
    pads = [_window(draw, s, k, st_, rd, ld, mode) for s, k, st_, rd, ld in zip(sizes, kernels, strides, rhs_dil, lhs_dil, strict=True)]
    spatial = "HWD"[:rank]
    channels_last = draw(st.booleans())
    layouts = ("N" + spatial + "C", spatial + "IO", "N" + spatial + "C") if channels_last else ("NC" + spatial, "OI" + spatial, "NC" + spatial)
    batch = batch_groups * draw(st.integers(1, 2))
    lhs = (batch, *sizes, in_features) if channels_last else (batch, in_features, *sizes)
    rhs = (*kernels, per_group, out_features) if channels_last else (out_features, per_group, *kernels)
    rhs_axis, out_axis = (rank + 1, rank + 1) if channels_last else (0, 1)

    storage = draw(st.sampled_from(["i8", "i8", "u8", "i16"]))
    exact = draw(st.booleans())
    lhs_scale = draw(scales(exact))
    lhs_type = _spelled(storage, None, [(lhs_scale, draw(zero_points(storage)))])
    per_axis = draw(st.booleans())
    rhs_scales = [draw(scales(exact)) for _ in range(out_features if per_axis else 1)]
    rhs_type = _spelled(storage, rhs_axis if per_axis else None, [(s, draw(zero_points(storage))) for s in rhs_scales])
    # result scales near the accumulator's magnitude (terms per window times a shifted
    # product's), so that few outputs saturate
    terms = per_group * int(np.prod(kernels))
    magnitude = terms * 2.0 ** (draw(st.integers(4, 8)) + (16 if storage == "i16" else 0))
    out_storage = draw(st.sampled_from(["i8", "u8"]))
    out_scales = rhs_scales if per_axis and draw(st.booleans()) else rhs_scales[:1]
    out_type = _spelled(out_storage, out_axis if len(out_scales) > 1 or (per_axis and out_features == 1 and draw(st.booleans())) else None,
                        [(float(np.float32(lhs_scale * s * magnitude)), draw(st.integers(*STORAGE[out_storage]))) for s in out_scales])
    attrs: dict[str, Any] = {
        "dimension_numbers": layouts, "window_strides": tuple(strides), "rhs_dilation": tuple(rhs_dil), "lhs_dilation": tuple(lhs_dil),
        "padding": tuple(p for p in pads if p is not None) if mode == "explicit" else mode,
    }
    if groups > 1:
        attrs["feature_group_count"] = groups
    if batch_groups > 1:
        attrs["batch_group_count"] = batch_groups
    return QConv(lhs, rhs, (lhs_type, rhs_type, out_type), attrs, exact, draw(st.sampled_from(["cpu", "cpu-i8", "cpu-i8", "gpu"])), draw(st.booleans()))


def _stored(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    quant = parse_quant(dtype)
    low, high = quant.limits()
    return rng.integers(low, high + 1, shape).astype(quant.storage_numpy())


@budget(ci=24, soak=400)
@given(quantized_convs(), st.integers(0, 2**16))
def test_lowered_quantized_conv_agrees_with_the_spec_oracle(case: QConv, seed: int) -> None:
    """Exact scales: identical on every element. Others: the spec rounds each dequantized
    value to f32 and the lowering does not, so an output may land one step apart, no more."""
    rng = np.random.default_rng(seed)
    x, w = _stored(rng, case.lhs, case.types[0]), _stored(rng, case.rhs, case.types[1])
    graph = case.graph(w)
    inputs = [x] if case.constant_kernel else [x, w]
    (got,), (want,) = run_for(graph, inputs, case.target), evaluate(graph, inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    apart = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert apart.max(initial=0) <= (0 if case.exact else 1), f"{case}: {int(apart.max())} steps apart"
