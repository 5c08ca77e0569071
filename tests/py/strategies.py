"""Hypothesis strategies that draw whole, valid convc models as JSON documents.

A drawn model is a plain dict in the JSON model format (docs/model-format.md), so a
failing example is itself the regression file: `dump_regression` writes it to
`tests/py/regressions/`. The strategy keeps track of every value's shape with its own
arithmetic (jax.lax's shape rules, written out here), independent of convc's verifier,
so a model it draws is valid by construction and convc must accept it.

Budgets: `budget(ci, soak)` gives the example count; `CONVC_SOAK=1` switches every
property test in these files to its soak count (or `CONVC_SOAK_EXAMPLES`) and to fresh
random seeds (docs/testing.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context

REGRESSIONS = Path(__file__).parent / "regressions"
SOAK = os.environ.get("CONVC_SOAK", "") not in ("", "0")

FLOAT_DTYPES = ("f32", "f16", "bf16")
SPATIAL_LETTERS = "HWDXYZ0123"  # any letters but N, C, O, I may name spatial dims
MAX_ELEMENTS = 1200  # per tensor: keeps the StableHLO interpreter oracle fast
MAX_BATCH, MAX_FEATURES, MAX_SPATIAL = 3, 6, 6
# conv padding kinds: the modes, explicit [lo, hi] rows, and rows with a negative (cropping) pad
PADDING_KINDS = ("VALID", "SAME", "SAME_LOWER", "explicit", "explicit", "negative")


def budget(ci: int, soak: int, **overrides: Any) -> settings:
    """Settings for one property test: a fixed seed and `ci` examples, or under CONVC_SOAK=1
    `soak` random ones (CONVC_SOAK_EXAMPLES=N: N for every test instead)."""
    examples = int(os.environ.get("CONVC_SOAK_EXAMPLES", soak)) if SOAK else ci
    return settings(
        max_examples=examples,
        derandomize=not SOAK,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        **overrides,
    )


# --- the model under construction -------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Draft:
    """A model being drawn: its JSON entries plus the shape of every value so far."""

    draw: Callable[[st.SearchStrategy[Any]], Any]
    odd_names: bool
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    padding_kinds: tuple[str, ...] = PADDING_KINDS
    inputs: list[dict[str, Any]] = field(default_factory=list)
    constants: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)

    def name(self, base: str) -> str:
        """A fresh value name; sometimes one MLIR cannot use as an SSA id (spaces, quotes, control
        characters, unicode). Never NUL: an .npz cannot hold it, so convc refuses it."""
        if self.odd_names and self.draw(st.booleans()):
            candidate = self.draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1, max_size=6))
        else:
            candidate = f"{base}{len(self.taken)}"
        while candidate in self.taken:
            candidate += "'"
        self.taken.add(candidate)
        return candidate

    def _value(self, tensor: Tensor) -> Tensor:
        self.values.append(tensor)
        return tensor

    def add_input(self, shape: Sequence[int], dtype: str, base: str = "x") -> Tensor:
        tensor = Tensor(self.name(base), tuple(shape), dtype)
        self.inputs.append({"name": tensor.name, "shape": list(tensor.shape), "dtype": dtype})
        return self._value(tensor)

    def add_constant(self, shape: Sequence[int], dtype: str, base: str = "k") -> Tensor:
        """An inline constant: either a splat scalar or a full nested list of small numbers."""
        tensor = Tensor(self.name(base), tuple(shape), dtype)
        entry: dict[str, Any] = {"name": tensor.name, "shape": list(tensor.shape), "dtype": dtype}
        if self.draw(st.booleans()):
            entry["value"] = self.draw(st.sampled_from([0.5, -0.25, 1.0, 0.125]))
        else:
            seed = self.draw(st.integers(0, 2**16))
            entry["value"] = np.round(np.random.default_rng(seed).standard_normal(shape), 2).tolist()
        self.constants.append(entry)
        return self._value(tensor)

    def operand(self, shape: Sequence[int], dtype: str, base: str) -> Tensor:
        """A fresh operand: a graph input (random data at run time) or a constant."""
        if self.draw(st.booleans()):
            return self.add_input(shape, dtype, base)
        return self.add_constant(shape, dtype, base)

    def add_node(self, op: str, operands: Sequence[Tensor], attrs: dict[str, Any], shape: Sequence[int], dtype: str) -> Tensor:
        tensor = Tensor(self.name(op[:4]), tuple(shape), dtype)
        self.nodes.append({"name": tensor.name, "op": op, "inputs": [t.name for t in operands], **attrs})
        return self._value(tensor)

    def model(self, outputs: Sequence[Tensor]) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": "drawn", "inputs": self.inputs}
        if self.constants:
            doc["constants"] = self.constants
        doc["nodes"] = self.nodes
        doc["outputs"] = list(dict.fromkeys(t.name for t in outputs))
        return doc


# --- conv shape arithmetic (jax.lax's rules, written out independently of convc) ---


def dilated(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def same_padding(size: int, window: int, stride: int, lower: bool) -> tuple[int, int]:
    """lax.padtype_to_pads: pad so that out = ceil(size / stride); the odd unit goes high (SAME) or low (SAME_LOWER)."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + window - size)
    return (total - total // 2, total // 2) if lower else (total // 2, total - total // 2)


def windows(padded: int, window: int, stride: int) -> int:
    return 0 if padded < window or padded == 0 else (padded - window) // stride + 1


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class SpatialDim:
    """One spatial dimension of a conv: its window parameters and output size."""

    kernel: int
    stride: int
    lhs_dilation: int
    rhs_dilation: int
    padding: tuple[int, int]
    out: int


def draw_spatial_dim(draw: Callable[..., Any], size: int, mode: str) -> SpatialDim:
    """Window parameters for one spatial dim of input size `size`, keeping the output non-empty."""
    lhs_dilation = draw(st.sampled_from([1, 1, 1, 2, 3]))  # with SAME: pads from the undilated size, as lax
    base = dilated(size, lhs_dilation)
    kernel = draw(st.integers(1, min(3, base) if mode == "VALID" else 3))
    max_rd = 3 if mode != "VALID" or kernel == 1 else max(1, min(3, (base - 1) // (kernel - 1)))
    rhs_dilation = draw(st.sampled_from([1, 1] + list(range(2, max_rd + 1))))
    window = dilated(kernel, rhs_dilation)
    stride = draw(st.integers(1, 4))  # larger and smaller than the kernel
    if mode in ("SAME", "SAME_LOWER"):
        pads = same_padding(size, window, stride, lower=mode == "SAME_LOWER")
    elif mode == "VALID":
        pads = (0, 0)
    elif mode == "negative" and base > 1:  # crop low, pad high by up to as much (openxla/xla#48713's case)
        low = draw(st.integers(max(-3, 1 - base), -1))
        high = draw(st.integers(max(-2, window - base - low), max(-low, window - base - low)))
        pads = (low, high)
    else:  # explicit: negative (cropping) and asymmetric, but never below one window
        low = draw(st.integers(max(-2, 1 - base), 3))
        high = draw(st.integers(max(-2, window - base - low), max(3, window - base - low)))
        pads = (low, high)
    out = windows(pads[0] + base + pads[1], window, stride)
    return SpatialDim(kernel, stride, lhs_dilation, rhs_dilation, pads, out)


def permutation(draw: Callable[..., Any], letters: Sequence[str]) -> str:
    return "".join(draw(st.permutations(list(letters))))


def draw_groups(draw: Callable[..., Any], batch: int, features: int) -> tuple[int, int, int]:
    """(feature_group_count, batch_group_count, output features): plain, grouped, depthwise (with a
    channel multiplier) or batch-grouped, always dividing what StableHLO C10-C16 need divided."""
    kind = draw(st.sampled_from(["plain", "plain", "feature", "depthwise", "batch"]))
    fgc = bgc = 1
    if kind == "feature":
        fgc = draw(st.sampled_from(divisors(features)))
    elif kind == "depthwise":
        fgc = features
    elif kind == "batch":
        bgc = draw(st.sampled_from(divisors(batch)))
    multiplier = draw(st.integers(1, 3 if fgc * bgc > 1 else MAX_FEATURES))
    return fgc, bgc, fgc * bgc * multiplier


@dataclass(frozen=True)
class ForwardConv:
    """A drawn forward conv on some lhs: its JSON attributes and the shapes they imply."""

    attrs: dict[str, Any]
    kernel_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    dims: dict[str, SpatialDim]
    lhs_layout: str
    rhs_layout: str
    out_layout: str
    padding_kind: str


def draw_layouts(draw: Callable[..., Any], n: int) -> tuple[str, str, str, bool]:
    """(lhs, rhs, out) layout strings with random spatial letters and orders, and whether
    they are lax's conv default (NC.../OI.../NC..., which the model may then leave out)."""
    letters = draw(st.permutations(list(SPATIAL_LETTERS)))[:n]
    if draw(st.integers(0, 5)) == 0:
        return "NC" + "".join(letters), "OI" + "".join(letters), "NC" + "".join(letters), True
    layouts = (permutation(draw, ["N", "C", *letters]), permutation(draw, ["O", "I", *letters]), permutation(draw, ["N", "C", *letters]))
    return (*layouts, False)


def draw_forward_conv(draw: Callable[..., Any], lhs: Tensor, padding_kinds: Sequence[str] = PADDING_KINDS) -> ForwardConv:
    """Random layouts, windows, padding and groups for a conv on `lhs` (rank 3..5)."""
    lhs_layout, rhs_layout, out_layout, default_layout = draw_layouts(draw, lhs.rank - 2)
    letters = [c for c in rhs_layout if c not in "OI"]  # lax orders spatial dims as the kernel does
    batch, features = lhs.shape[lhs_layout.index("N")], lhs.shape[lhs_layout.index("C")]
    fgc, bgc, out_features = draw_groups(draw, batch, features)
    padding_kind = draw(st.sampled_from(list(padding_kinds)))
    dims = {c: draw_spatial_dim(draw, lhs.shape[lhs_layout.index(c)], padding_kind) for c in letters}

    kernel_sizes = {"O": out_features, "I": features // fgc, **{c: dims[c].kernel for c in letters}}
    out_sizes = {"N": batch // bgc, "C": out_features, **{c: dims[c].out for c in letters}}
    attrs: dict[str, Any] = {}
    if not default_layout or draw(st.booleans()):
        attrs["dimension_numbers"] = [lhs_layout, rhs_layout, out_layout]
    _window_attr(draw, attrs, "window_strides", [dims[c].stride for c in letters])
    _window_attr(draw, attrs, "lhs_dilation", [dims[c].lhs_dilation for c in letters])
    _window_attr(draw, attrs, "rhs_dilation", [dims[c].rhs_dilation for c in letters])
    if padding_kind in ("explicit", "negative"):
        attrs["padding"] = [list(dims[c].padding) for c in letters]
    elif padding_kind != "VALID" or draw(st.booleans()):
        attrs["padding"] = draw(st.sampled_from([padding_kind, padding_kind.lower()]))
    if fgc > 1 or draw(st.integers(0, 3)) == 0:
        attrs["feature_group_count"] = fgc
    if bgc > 1:
        attrs["batch_group_count"] = bgc
    if draw(st.integers(0, 3)) == 0:
        attrs["precision"] = draw(st.sampled_from(["DEFAULT", "HIGHEST", ("HIGH", "HIGHEST")]))
        if isinstance(attrs["precision"], tuple):  # a fresh list per model: fuzzers edit models in place
            attrs["precision"] = list(attrs["precision"])
    return ForwardConv(attrs, tuple(kernel_sizes[c] for c in rhs_layout), tuple(out_sizes[c] for c in out_layout),
                       dims, lhs_layout, rhs_layout, out_layout, padding_kind)


def draw_conv(draw: Callable[..., Any], draft: Draft, lhs: Tensor) -> Tensor:
    """A `conv` node on `lhs`, sometimes accumulating f16/bf16 into f32."""
    fwd = draw_forward_conv(draw, lhs, draft.padding_kinds)
    kernel = draft.operand(fwd.kernel_shape, lhs.dtype, "w")
    attrs, dtype = dict(fwd.attrs), lhs.dtype
    if lhs.dtype != "f32" and draw(st.integers(0, 3)) == 0:
        attrs["preferred_element_type"] = dtype = "f32"
    return draft.add_node("conv", [lhs, kernel], attrs, fwd.out_shape, dtype)


def _out_grad(draw: Callable[..., Any], draft: Draft, x: Tensor, fwd: ForwardConv, kernel: Tensor) -> Tensor:
    """The gradient flowing into a forward conv's output: the forward conv itself (as autodiff
    graphs have it) or a fresh operand of its shape."""
    if draw(st.booleans()):
        return draft.add_node("conv", [x, kernel], fwd.attrs, fwd.out_shape, x.dtype)
    return draft.operand(fwd.out_shape, x.dtype, "g")


def scatter_size(dim: SpatialDim, out: int, padding_kind: str, output_padding: int) -> int:
    """conv_backprop_input's result size without `input_shape` (docs/transposed-convs.md):
    SAME: out * stride; else the scatter extent (out - 1) * stride + window - pads, in
    lhs-dilated units, plus output_padding."""
    if padding_kind.startswith("SAME"):
        return out * dim.stride + output_padding
    window = dilated(dim.kernel, dim.rhs_dilation)
    extent = (out - 1) * dim.stride + window - sum(dim.padding) + output_padding
    return -(-extent // dim.lhs_dilation)


def draw_backprop_input(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    """`conv_backprop_input` of a forward conv on `x`: sized by `input_shape` (x's shape),
    by `output_padding`, or by default."""
    fwd = draw_forward_conv(draw, x, draft.padding_kinds)
    kernel = draft.operand(fwd.kernel_shape, x.dtype, "w")
    out_grad = _out_grad(draw, draft, x, fwd, kernel)
    attrs = dict(fwd.attrs)
    sizing = draw(st.sampled_from(["input_shape", "output_padding", "default"]))
    if any(min(dim.padding) < 0 for dim in fwd.dims.values()):
        sizing = "input_shape"  # the size a crop implies is not always one the forward conv accepts
    letters = [c for c in fwd.rhs_layout if c not in "OI"]
    extra = {c: 0 for c in letters}
    if sizing == "input_shape":
        attrs["input_shape"] = list(x.shape)
        return draft.add_node("conv_backprop_input", [out_grad, kernel], attrs, x.shape, x.dtype)
    if sizing == "output_padding":
        extra = {c: draw(st.integers(0, max(fwd.dims[c].stride, fwd.dims[c].rhs_dilation) - 1)) for c in letters}
        attrs["output_padding"] = [extra[c] for c in letters]
    sizes = {c: scatter_size(fwd.dims[c], fwd.out_shape[fwd.out_layout.index(c)], fwd.padding_kind, extra[c]) for c in letters}
    shape = [sizes.get(c, x.shape[i]) for i, c in enumerate(fwd.lhs_layout)]
    if min(shape) <= 0:
        attrs["input_shape"] = list(x.shape)
        attrs.pop("output_padding", None)
        shape = list(x.shape)
    return draft.add_node("conv_backprop_input", [out_grad, kernel], attrs, shape, x.dtype)


def draw_backprop_filter(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    """`conv_backprop_filter` of a forward conv on `x`: a tensor of the kernel's shape and layout."""
    fwd = draw_forward_conv(draw, x, draft.padding_kinds)
    kernel = draft.add_input(fwd.kernel_shape, x.dtype, "w") if draw(st.booleans()) else None
    out_grad = _out_grad(draw, draft, x, fwd, kernel) if kernel is not None else draft.operand(fwd.out_shape, x.dtype, "g")
    attrs = {**fwd.attrs, "kernel_shape": list(fwd.kernel_shape)}
    return draft.add_node("conv_backprop_filter", [x, out_grad], attrs, fwd.kernel_shape, x.dtype)


def draw_conv_transpose(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    """`conv_transpose` (lax.conv_transpose plus feature groups): SAME, VALID, explicit and
    "consistent" explicit pads, transpose_kernel, lax's NHWC-style default layouts."""
    n = x.rank - 2
    default = n <= 3 and draw(st.integers(0, 4)) == 0
    if default:
        spatial_letters = "HWD"[:n]
        lhs_layout, rhs_layout, out_layout = "N" + spatial_letters + "C", spatial_letters + "IO", "N" + spatial_letters + "C"
    else:
        lhs_layout, rhs_layout, out_layout, _ = draw_layouts(draw, n)
    letters = [c for c in rhs_layout if c not in "OI"]
    features = x.shape[lhs_layout.index("C")]
    groups = draw(st.sampled_from(divisors(features))) if draw(st.booleans()) else 1
    multiplier = draw(st.integers(1, 3))
    transpose_kernel = draw(st.booleans())
    if transpose_kernel:  # kernel in the forward conv's roles: O consumes x's features
        kernel_features, out_features = {"O": features, "I": multiplier}, multiplier * groups
    else:
        kernel_features, out_features = {"O": multiplier * groups, "I": features // groups}, multiplier * groups
    mode = draw(st.sampled_from(["SAME", "VALID", "explicit", "consistent"]))
    params = {c: _transpose_dim(draw, x.shape[lhs_layout.index(c)], mode) for c in letters}

    attrs: dict[str, Any] = {}
    if not default or draw(st.booleans()):
        attrs["dimension_numbers"] = [lhs_layout, rhs_layout, out_layout]
    _window_attr(draw, attrs, "strides", [params[c][1] for c in letters])
    _window_attr(draw, attrs, "rhs_dilation", [params[c][2] for c in letters])
    if mode in ("SAME", "VALID"):
        if mode == "SAME" or draw(st.booleans()):
            attrs["padding"] = mode
    else:
        attrs["padding"] = [list(params[c][3]) for c in letters]
        if mode == "consistent":
            attrs["use_consistent_padding"] = True
    if transpose_kernel:
        attrs["transpose_kernel"] = True
    if groups > 1:
        attrs["feature_group_count"] = groups
    kernel_sizes = {**kernel_features, **{c: params[c][0] for c in letters}}
    kernel = draft.operand([kernel_sizes[c] for c in rhs_layout], x.dtype, "w")
    out_sizes = {"N": x.shape[lhs_layout.index("N")], "C": out_features, **{c: params[c][4] for c in letters}}
    return draft.add_node("conv_transpose", [x, kernel], attrs, [out_sizes[c] for c in out_layout], x.dtype)


def _transpose_dim(draw: Callable[..., Any], size: int, mode: str) -> tuple[int, int, int, tuple[int, int], int]:
    """(kernel, stride, rhs_dilation, pads as written, output size) of one conv_transpose dim:
    the lhs-dilated conv's pads follow lax's `_conv_transpose_padding`."""
    kernel, stride, rhs_dilation = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.sampled_from([1, 1, 2]))
    window, base = dilated(kernel, rhs_dilation), dilated(size, stride)
    if mode == "SAME":
        return kernel, stride, rhs_dilation, (0, 0), size * stride
    if mode == "VALID":
        return kernel, stride, rhs_dilation, (0, 0), size * stride + max(window - stride, 0)
    low = draw(st.integers(-1, 2 if mode == "explicit" else min(2, window + base - 1)))
    if mode == "explicit":  # pads of the lowered conv itself; keep at least one window
        high = draw(st.integers(max(-1, window - base - low), max(2, window - base - low)))
        return kernel, stride, rhs_dilation, (low, high), low + base + high - window + 1
    # consistent: the forward conv's pads; the lowered conv pads (window - 1 - p) each side
    high = draw(st.integers(-1, max(-1, window - 2 + base - low)))
    lowered = (window - 1 - low) + base + (window - 1 - high)
    return kernel, stride, rhs_dilation, (low, high), lowered - window + 1


def _window_attr(draw: Callable[..., Any], attrs: dict[str, Any], name: str, values: list[int]) -> None:
    """Spell an all-ones window attribute explicitly only sometimes (it is the default)."""
    if any(v != 1 for v in values) or draw(st.booleans()):
        attrs[name] = values


# --- the plain ops between convs ----------------------------------------------------


def draw_bias_add(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    axis = draw(st.integers(-x.rank, x.rank - 1))
    bias = draft.operand([x.shape[axis]], x.dtype, "b")
    attrs = {} if axis == -1 and draw(st.booleans()) else {"axis": axis}
    return draft.add_node("bias_add", [x, bias], attrs, x.shape, x.dtype)


def draw_relu(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    return draft.add_node("relu", [x], {}, x.shape, x.dtype)


def draw_binary(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    """add or multiply with itself, an earlier value of the same type, or a fresh operand."""
    kind = draw(st.sampled_from(["add", "add", "multiply"]))
    same = [t for t in draft.values if t.shape == x.shape and t.dtype == x.dtype]
    other = draw(st.sampled_from(same)) if draw(st.booleans()) else draft.operand(x.shape, x.dtype, "y")
    operands = [x, other] if draw(st.booleans()) else [other, x]
    return draft.add_node(kind, operands, {}, x.shape, x.dtype)


def draw_transpose(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    perm = draw(st.permutations(list(range(x.rank))))
    return draft.add_node("transpose", [x], {"permutation": perm}, [x.shape[d] for d in perm], x.dtype)


def draw_reverse(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    dims = draw(st.lists(st.integers(0, x.rank - 1), unique=True, max_size=x.rank))
    return draft.add_node("reverse", [x], {"dimensions": dims}, x.shape, x.dtype)


def draw_pad(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    rows, shape = [], []
    for size in x.shape:
        interior = draw(st.sampled_from([0, 0, 1]))
        base = size + max(size - 1, 0) * interior
        low = draw(st.integers(max(-2, 1 - base), 2))
        high = draw(st.integers(max(-2, 1 - base - low), 2))
        rows.append([low, high, interior])
        shape.append(low + base + high)
    if int(np.prod(shape)) > MAX_ELEMENTS:
        return draw_relu(draw, draft, x)
    attrs: dict[str, Any] = {"padding_config": rows}
    if draw(st.booleans()):
        attrs["padding_value"] = draw(st.sampled_from([0.0, 1.5, -2.0]))
    return draft.add_node("pad", [x], attrs, shape, x.dtype)


def draw_slice(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    start, limit, strides, shape = [], [], [], []
    for size in x.shape:
        lo = draw(st.integers(0, size - 1))
        hi = draw(st.integers(lo + 1, size))
        step = draw(st.integers(1, 3))
        start.append(lo)
        limit.append(hi)
        strides.append(step)
        shape.append(-(-(hi - lo) // step))
    attrs: dict[str, Any] = {"start_indices": start, "limit_indices": limit}
    if any(s != 1 for s in strides) or draw(st.booleans()):
        attrs["strides"] = strides
    return draft.add_node("slice", [x], attrs, shape, x.dtype)


def draw_concatenate(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    dim = draw(st.integers(0, x.rank - 1))
    extra = draw(st.integers(1, 3))
    other_shape = list(x.shape)
    other_shape[dim] = extra
    if (x.shape[dim] + extra) * x.size // max(x.shape[dim], 1) > MAX_ELEMENTS:
        return draw_relu(draw, draft, x)
    other = x if extra == x.shape[dim] and draw(st.booleans()) else draft.operand(other_shape, x.dtype, "z")
    operands = draw(st.permutations([x, other]))
    shape = list(x.shape)
    shape[dim] += other.shape[dim]
    return draft.add_node("concatenate", operands, {"dimension": dim}, shape, x.dtype)


def draw_convert(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    dtype = draw(st.sampled_from([d for d in draft.dtypes if d != x.dtype] or [x.dtype]))
    return draft.add_node("convert", [x], {"new_dtype": dtype}, x.shape, dtype)


def draw_reshape(draw: Callable[..., Any], draft: Draft, x: Tensor, rank: int | None = None) -> Tensor:
    """Reshape to another factorisation of the same element count, of `rank` dims when given."""
    target = rank if rank is not None else draw(st.integers(max(1, x.rank - 1), min(5, x.rank + 1)))
    shape = factorise(draw, x.size, target)
    return draft.add_node("reshape", [x], {"new_sizes": shape}, shape, x.dtype)


def factorise(draw: Callable[..., Any], count: int, rank: int) -> list[int]:
    """`rank` positive sizes whose product is `count` (prime factors dealt to random dims)."""
    shape = [1] * rank
    remaining, factor = count, 2
    while remaining > 1:
        while remaining % factor == 0:
            shape[draw(st.integers(0, rank - 1))] *= factor
            remaining //= factor
        factor += 1
    return shape


PLAIN_OPS: dict[str, Callable[..., Tensor]] = {
    "bias_add": draw_bias_add,
    "relu": draw_relu,
    "binary": draw_binary,
    "transpose": draw_transpose,
    "reverse": draw_reverse,
    "pad": draw_pad,
    "slice": draw_slice,
    "concatenate": draw_concatenate,
    "convert": draw_convert,
    "reshape": draw_reshape,
}


CONV_OPS: dict[str, Callable[..., Tensor]] = {
    "conv": draw_conv,
    "conv_transpose": draw_conv_transpose,
    "conv_backprop_input": draw_backprop_input,
    "conv_backprop_filter": draw_backprop_filter,
}
GRAD_OPS = ("conv_transpose", "conv_backprop_input", "conv_backprop_filter")


def conv_ready(draw: Callable[..., Any], draft: Draft, x: Tensor) -> Tensor:
    """`x` itself when it can feed a conv (rank 3..5, small enough), else a reshape of it that can."""
    if 3 <= x.rank <= 5:
        return x
    return draw_reshape(draw, draft, x, rank=draw(st.integers(3, 5)))


# --- whole models ---------------------------------------------------------------------


@st.composite
def conv_models(draw: Callable[..., Any], *, dtypes: Sequence[str] = FLOAT_DTYPES, max_convs: int = 3,
                max_plain_ops: int = 2, odd_names: bool = True, conv_ops: Sequence[str] = ("conv", "conv", *GRAD_OPS),
                padding_kinds: Sequence[str] = PADDING_KINDS) -> dict[str, Any]:
    """A whole valid model: an input, then 1..max_convs conv-family ops (`conv_ops`) with plain
    ops between them; outputs are the last value plus, sometimes, an intermediate one."""
    draft = Draft(draw, odd_names=odd_names, dtypes=tuple(dtypes), padding_kinds=tuple(padding_kinds))
    dtype = draw(st.sampled_from(list(dtypes)))
    n = draw(st.integers(1, 3))
    spatial_max = MAX_SPATIAL if n < 3 else 4
    shape = [draw(st.integers(1, MAX_BATCH)), draw(st.integers(1, MAX_FEATURES))]
    shape += [draw(st.integers(1, spatial_max)) for _ in range(n)]
    x = draft.add_input(draw(st.permutations(shape)), dtype)
    for _ in range(draw(st.integers(1, max_convs))):
        x = CONV_OPS[draw(st.sampled_from(conv_ops))](draw, draft, conv_ready(draw, draft, x))
        for _ in range(draw(st.integers(0, max_plain_ops))):
            x = PLAIN_OPS[draw(st.sampled_from(sorted(PLAIN_OPS)))](draw, draft, x)
        if x.size > MAX_ELEMENTS or 0 in x.shape:
            break
    outputs = [x]
    if len(draft.nodes) > 1 and draw(st.booleans()):
        outputs.append(draw(st.sampled_from(draft.values[:-1])))
    return draft.model(outputs)


# --- inputs, tolerances and regression files ----------------------------------------


def random_inputs(model: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal data for every model input, in its dtype."""
    from convc.dtypes import numpy_dtype

    rng = np.random.default_rng(seed)
    return {e["name"]: rng.standard_normal(e["shape"]).astype(numpy_dtype(e.get("dtype", "f32"))) for e in model["inputs"]}


def model_dtypes(model: dict[str, Any]) -> set[str]:
    found = {e.get("dtype", "f32") for e in model["inputs"] + model.get("constants", [])}
    found |= {n["new_dtype"] for n in model["nodes"] if n["op"] == "convert"}
    found |= {n["preferred_element_type"] for n in model["nodes"] if "preferred_element_type" in n}
    return found


def tolerance(model: dict[str, Any]) -> float:
    """Max |error| / (1 + max |reference|) for the least precise dtype the model touches."""
    dtypes = model_dtypes(model)
    if "bf16" in dtypes:
        return 6e-2
    if "f16" in dtypes:
        return 1e-2
    return 1e-4


def format_model(model: Any) -> str:
    """JSON with one line per input, constant and node, so a regression file reads like a model."""
    if not isinstance(model, dict):
        return json.dumps(model) + "\n"
    lines = []
    for key, value in model.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            entries = ",\n".join(f"  {json.dumps(v)}" for v in value)
            lines.append(f" {json.dumps(key)}: [\n{entries}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def dump_regression(model: Any, kind: str, data: bytes | None = None) -> Path | None:
    """On hypothesis's final (shrunk) failing example, save it under tests/py/regressions/.

    `kind` names the replaying test's folder; `data` is written verbatim when the input
    is not a JSON document (malformed bytes). Set CONVC_REGRESSIONS_DIR to redirect."""
    try:
        if not current_build_context().is_final:
            return None
    except Exception:  # noqa: BLE001 - outside a hypothesis test: always save
        pass
    payload = data if data is not None else format_model(model).encode()
    folder = Path(os.environ.get("CONVC_REGRESSIONS_DIR", REGRESSIONS)) / kind
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".json" if data is None or data.lstrip()[:1] in (b"{", b"[") else ".bin"
    path = folder / f"found-{hashlib.sha1(payload).hexdigest()[:10]}{suffix}"
    path.write_bytes(payload)
    return path


# --- running convc in-process -------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_cli(argv: Sequence[str], entry: str = "convc") -> CliResult:
    """`convc` (or `convc-opt`) in this process, as its console script would run it."""
    import contextlib
    import io

    from convc.cli import main, opt_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = (main if entry == "convc" else opt_main)(list(argv))
        except SystemExit as exit_:  # argparse usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
    return CliResult(code, out.getvalue(), err.getvalue())
