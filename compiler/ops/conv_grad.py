"""Transposed and gradient convolutions, each declared as the forward `conv` it lowers to.

- `conv_transpose`: `jax.lax.conv_transpose` (same defaults, SAME/VALID meaning, explicit
  pads, `transpose_kernel`, `use_consistent_padding`) plus `feature_group_count`.
- `conv_backprop_input`: the scatter (transposed) conv of a forward conv's out_grad, sized by
  `input_shape` (TF's `input_sizes`), `output_padding` (PyTorch/ONNX) or the default.
- `conv_backprop_filter`: the kernel gradient of a forward conv, in the kernel's layout.

Each op's shape rule builds a `ConvPlan` (kernel reverse, group-axis moves, one forward conv)
and infers the result through the plain `conv` rule; the lowering passes build the very same
plan, so shape rule and rewrite cannot drift apart. The algebra is that of JAX's conv transpose
rules (see docs/transposed-convs.md).

Constraint ids: T1..T6 (conv_transpose), B1..B8 (conv_backprop_input), F1..F4
(conv_backprop_filter); where a rule is the forward conv's own, its C/L id is kept.

Quantized operands: each op takes those the conv it lowers to takes (the spec's quantized
`convolution`, C28-C34, checked on that conv), less those its kernel moves cannot carry: a
per-axis kernel cannot be reversed (T6, B8), and the kernel gradient's conv has out_grad as its
kernel, so a per-axis out_grad is quantized along its feature dimension (F4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..diagnostics import VerifyError
from ..dtypes import is_quantized, quant_type
from ..ir import TensorType, Value
from .base import BOOL, INTS, PADDING, Attr, ConvDimensionNumbers, Derived, ForeignAttr, OpDef, OpFactory, OpView, ones_per_spatial_dim
from .conv import (
    CONV,
    CONV_ATTRS,
    CONV_FOREIGN,
    QUANTIZED_PREFERRED,
    Forward,
    assemble,
    check_ranks,
    conv_vjp,
    dilate_dim,
    explicit_padding,
    infer_conv,
    read_forward,
    resolve_dimension_numbers,
    spatial,
    window_attr,
)

SAME_FAMILY = ("SAME", "SAME_LOWER")
Pads = tuple[tuple[int, int], ...]

# --- the plan every op here lowers to -----------------------------------------


@dataclass(frozen=True)
class GroupMove:
    """Split `groups` off dim `src` (group-major) and merge them, as the major part, into dim
    `dst`: JAX's `_reshape_axis_out_of` + `_reshape_axis_into`, built as reshape/transpose/reshape."""

    src: int
    dst: int
    groups: int

    def split_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        split = list(shape)
        split[self.src:self.src + 1] = [self.groups, shape[self.src] // self.groups]
        return tuple(split)

    def permutation(self, rank: int) -> tuple[int, ...]:
        """Of the split shape: every dim in order, the group axis just before `dst`."""
        perm: list[int] = []
        for dim in range(rank):
            if dim == self.dst:
                perm.append(self.src)
            perm.append(dim if dim < self.src else dim + 1)
        return tuple(perm)

    def merged_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        merged = list(shape)
        merged[self.src] //= self.groups
        merged[self.dst] *= self.groups
        return tuple(merged)


@dataclass(frozen=True)
class ConvPlan:
    """A transposed or gradient conv spelled as one forward `conv`: reverse the kernel's
    `reverse_dims`, apply `kernel_move`, convolve with `conv_attrs`, apply `result_move`."""

    conv_attrs: dict[str, Any]
    reverse_dims: tuple[int, ...] = ()
    kernel_move: GroupMove | None = None
    result_move: GroupMove | None = None

    def result_type(self, lhs: TensorType, rhs: TensorType, attr_names: Sequence[str]) -> TensorType:
        kernel = rhs.shape if self.kernel_move is None else self.kernel_move.merged_shape(rhs.shape)
        try:
            out = infer_conv(CONV.bind([lhs, TensorType(kernel, rhs.dtype)], self.conv_attrs))
        except VerifyError as err:  # a user's padding can still empty a dim (L2)
            attr = err.attr if err.attr in attr_names else None
            raise VerifyError(err.message, err.constraint, attr=attr) from None
        if self.result_move is None:
            return out
        return TensorType(self.result_move.merged_shape(out.shape), out.dtype)


# The quantized rules of the conv an op lowers to (the spec's convolution C28-C34, input I1).
QUANTIZED_CONV_RULES = frozenset({"I1", *(f"C{n}" for n in range(28, 35))})


def lowered_type(plan: ConvPlan, v: OpView, attr_names: Sequence[str], roles: str) -> TensorType:
    """The plan's result type; a quantized rule of its conv says which operand plays which role there."""
    try:
        return plan.result_type(v.operand(0), v.operand(1), attr_names)
    except VerifyError as err:
        if err.constraint not in QUANTIZED_CONV_RULES:
            raise
        raise VerifyError(f"{err.message} (in the conv it lowers to: {roles})", err.constraint, attr=err.attr,
                          operand=err.operand) from None


def swap_roles(spec: Sequence[int]) -> tuple[int, ...]:
    """A dimension spec with its first two roles swapped (lax's `_conv_spec_transpose`)."""
    return (spec[1], spec[0], *spec[2:])


def _conv_attrs(v: OpView, dn: ConvDimensionNumbers, strides: Sequence[int], pads: Pads, lhs_dilation: Sequence[int],
                rhs_dilation: Sequence[int], feature_groups: int = 1, batch_groups: int = 1) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "window_strides": tuple(strides), "padding": tuple(pads), "lhs_dilation": tuple(lhs_dilation),
        "rhs_dilation": tuple(rhs_dilation), "dimension_numbers": dn,
    }
    if feature_groups > 1:
        attrs["feature_group_count"] = feature_groups
    if batch_groups > 1:
        attrs["batch_group_count"] = batch_groups
    for name in ("precision", "preferred_element_type"):
        if v.has(name):
            attrs[name] = v.attrs[name]
    return attrs


# --- conv_transpose -----------------------------------------------------------


def transpose_default_layouts(rank: int) -> tuple[str, str, str]:
    """lax.conv_transpose's defaults: NC/IO/NC, NHC/HIO/NHC, NHWC/HWIO/NHWC, NHWDC/HWDIO/NHWDC."""
    spatial_letters = "HWD"[:rank - 2]
    if rank - 2 > len("HWD"):
        raise VerifyError(f"conv_transpose has no default dimension_numbers for rank {rank}; give them explicitly", "T1",
                          attr="dimension_numbers")
    return ("N" + spatial_letters + "C", spatial_letters + "IO", "N" + spatial_letters + "C")


def conv_transpose_padding(window: int, stride: int, padding: str | tuple[int, int], consistent: bool) -> tuple[int, int]:
    """lax's `_conv_transpose_padding` on the dilated kernel size `window`: the pads of the
    lhs-dilated conv for a forward SAME/VALID (or, with `consistent`, forward explicit) padding."""
    if padding == "SAME":
        total = window + stride - 2
        low = window - 1 if stride > window - 1 else -(-total // 2)
        return low, total - low
    if padding == "VALID":
        return window - 1, window + stride - 2 + max(window - stride, 0) - (window - 1)
    assert isinstance(padding, tuple)
    if consistent:
        return window - 1 - padding[0], window - 1 - padding[1]
    return padding


def _transpose_pads(v: OpView, kernel: Sequence[int], strides: Sequence[int], rhs_dilation: Sequence[int]) -> Pads:
    padding = v.padding
    if padding == "SAME_LOWER":
        raise VerifyError("conv_transpose padding must be SAME, VALID or [[lo, hi], ...] (as lax.conv_transpose), got SAME_LOWER",
                          "T2", attr="padding")
    if isinstance(padding, tuple) and len(padding) != len(kernel):
        raise VerifyError(f"padding has {len(padding)} [lo, hi] pairs, expected {len(kernel)} (one per spatial dimension)",
                          "C4", attr="padding")
    rows = padding if isinstance(padding, tuple) else (padding,) * len(kernel)
    consistent = v.use_consistent_padding
    return tuple(conv_transpose_padding(dilate_dim(k, d), s, row, consistent)
                 for k, s, d, row in zip(kernel, strides, rhs_dilation, rows))


def _check_transpose_features(lhs: TensorType, rhs: TensorType, dn: ConvDimensionNumbers, groups: int, transpose_kernel: bool) -> None:
    features = lhs.shape[dn.lhs_spec[1]]
    if features % groups:
        raise VerifyError(f"lhs feature dimension {features} is not divisible by feature_group_count {groups}", "T3",
                          attr="feature_group_count")
    if transpose_kernel:
        consumed = rhs.shape[dn.rhs_spec[0]]
        if consumed != features:
            raise VerifyError(f"with transpose_kernel the rhs output feature dimension {consumed} is the one contracted with the lhs "
                              f"and must equal lhs feature dimension {features}", "T4", operand=1)
        return
    consumed, produced = rhs.shape[dn.rhs_spec[1]], rhs.shape[dn.rhs_spec[0]]
    if consumed * groups != features:
        raise VerifyError(f"rhs input feature dimension {consumed} × feature_group_count {groups} must equal lhs feature dimension "
                          f"{features}", "T4", operand=1)
    if produced % groups:
        raise VerifyError(f"rhs output feature dimension {produced} is not divisible by feature_group_count {groups}", "T5",
                          attr="feature_group_count")


def _check_per_axis_kernel(rhs: TensorType, transpose_kernel: bool) -> None:
    """With `transpose_kernel` the lowering reverses the kernel (and for groups reshapes it):
    StableHLO's `reverse` takes per-tensor quantized tensors only, so a per-axis kernel cannot."""
    quant = quant_type(rhs.dtype)
    if transpose_kernel and quant is not None and quant.axis is not None:
        raise VerifyError("a per-axis quantized kernel cannot be used with transpose_kernel: the lowered conv's kernel is this one "
                          "reversed, and StableHLO's reverse takes per-tensor quantized tensors only (quantize the kernel per "
                          "tensor, or reverse and transpose it before quantizing)", "T6", operand=1)


def plan_conv_transpose(v: OpView) -> ConvPlan:
    """lhs-dilated conv (`lhs_dilation = strides`, unit window strides); with `transpose_kernel`
    the kernel is reversed, its I/O roles swapped and, for groups, its group axis moved O -> I."""
    lhs, rhs = v.operand(0), v.operand(1)
    rank = check_ranks(lhs, rhs)
    n = rank - 2
    dn = resolve_dimension_numbers(v.dimension_numbers, rank)
    strides = window_attr(v, "strides", n, "C2", "C3")
    rhs_dilation = window_attr(v, "rhs_dilation", n, "C7", "C8")
    groups = v.feature_group_count
    if groups <= 0:
        raise VerifyError(f"feature_group_count must be positive, got {groups}", "C21", attr="feature_group_count")
    transpose_kernel = v.transpose_kernel
    _check_transpose_features(lhs, rhs, dn, groups, transpose_kernel)
    _check_per_axis_kernel(rhs, transpose_kernel)
    pads = _transpose_pads(v, spatial(rhs.shape, dn.rhs_spec), strides, rhs_dilation)
    rhs_spec = swap_roles(dn.rhs_spec) if transpose_kernel else dn.rhs_spec
    attrs = _conv_attrs(v, ConvDimensionNumbers(dn.lhs_spec, rhs_spec, dn.out_spec), (1,) * n, pads, strides, rhs_dilation, groups)
    return ConvPlan(
        attrs,
        reverse_dims=dn.rhs_spec[2:] if transpose_kernel else (),
        kernel_move=GroupMove(dn.rhs_spec[0], dn.rhs_spec[1], groups) if transpose_kernel and groups > 1 else None,
    )


def infer_conv_transpose(v: OpView) -> TensorType:
    return plan_conv_transpose(v).result_type(v.operand(0), v.operand(1), list(CONV_TRANSPOSE_ATTRS))


# --- the forward conv a gradient op describes ---------------------------------


def expressed_type(t: TensorType) -> TensorType:
    """`t` with a quantized element type replaced by its expressed type (shapes checked alone)."""
    quant = quant_type(t.dtype)
    return t if quant is None else TensorType(t.shape, quant.expressed)


def forward_type(v: OpView, lhs: TensorType, rhs: TensorType, operand_attr: dict[int, str]) -> TensorType:
    """The forward conv's result type; its errors about an operand that the gradient op only
    knows as a shape attribute (`input_shape`, `kernel_shape`) point at that attribute."""
    attrs = {name: value for name, value in v.attrs.items() if name in CONV_ATTRS}
    if any(is_quantized(t.dtype) for t in (lhs, rhs)) or is_quantized(attrs.get("preferred_element_type") or ""):
        # the forward conv is only sized here: the quantized rules are the lowered conv's (C28-C34)
        lhs, rhs = expressed_type(lhs), expressed_type(rhs)
        attrs.pop("preferred_element_type", None)
    try:
        return infer_conv(CONV.bind([lhs, rhs], attrs))
    except VerifyError as err:
        if err.operand in operand_attr:
            raise VerifyError(err.message, err.constraint, attr=operand_attr[err.operand]) from None
        raise


def out_backprop_mismatch(actual: int, computed: int, dim: int, detail: str) -> str:
    """TF's wording, with the sizes that produced it."""
    return f"Size of out_backprop doesn't match computed: actual = {actual}, computed = {computed} (spatial dimension {dim}: {detail})"


def check_non_spatial(forward_out: TensorType, out_grad: TensorType, out_spec: Sequence[int], constraint: str,
                      source: str | None, operand: int) -> None:
    """out_grad's batch and feature sizes are the forward conv's (computed with `source`)."""
    using = f" with this {source}" if source else ""
    for role, dim in (("batch", out_spec[0]), ("feature", out_spec[1])):
        if forward_out.shape[dim] != out_grad.shape[dim]:
            raise VerifyError(f"out_grad {role} dimension {out_grad.shape[dim]} differs from the {forward_out.shape[dim]} the forward conv "
                              f"produces{using}", constraint, operand=operand)


def check_shape_attr(v: OpView, name: str, rank: int, constraint: str) -> tuple[int, ...]:
    shape = v.attr(name)
    if len(shape) != rank:
        raise VerifyError(f"{name} {list(shape)} has {len(shape)} dimensions, the operands have rank {rank}", constraint, attr=name)
    if any(d < 0 for d in shape):
        raise VerifyError(f"{name} {list(shape)} has a negative dimension", constraint, attr=name)
    return tuple(shape)


# --- conv_backprop_input --------------------------------------------------------


def _forward_pads(v: OpView, fwd: Forward, out: Sequence[int], kernel: Sequence[int], input_spatial: Sequence[int] | None) -> Pads:
    """The forward pads; a SAME family resolves on the forward input (`input_shape`, else out * stride)."""
    padding = v.padding
    if input_spatial is None:
        input_spatial = tuple(o * s for o, s in zip(out, fwd.strides))
    return explicit_padding(padding, input_spatial, kernel, fwd.strides, fwd.rhs_dilation)


def _check_output_padding(v: OpView, fwd: Forward, n: int) -> tuple[int, ...]:
    extra = v.output_padding
    if len(extra) != n:
        raise VerifyError(f"output_padding has {len(extra)} entries, expected {n} (one per spatial dimension)", "B5", attr="output_padding")
    for dim, (p, s, d) in enumerate(zip(extra, fwd.strides, fwd.rhs_dilation)):
        if not 0 <= p < max(s, d):
            raise VerifyError(f"output_padding {p} for spatial dimension {dim} must be in [0, max(stride {s}, dilation {d}) = {max(s, d)})",
                              "B6", attr="output_padding")
    return tuple(extra)


def _scatter_sizes(v: OpView, fwd: Forward, out: Sequence[int], kernel: Sequence[int], pads: Pads) -> tuple[int, ...]:
    """Result sizes without `input_shape`: the scatter's extent plus output_padding (SAME: out * stride)."""
    extra = _check_output_padding(v, fwd, len(out))
    sizes = []
    for dim, (o, s, w, (lo, hi), p, ld) in enumerate(zip(out, fwd.strides, fwd.windows(kernel), pads, extra, fwd.lhs_dilation)):
        if v.padding in SAME_FAMILY:
            sizes.append(o * s + p)
            continue
        extent = (o - 1) * s + w - lo - hi + p  # in the forward input's dilated coordinates
        if extent <= 0:
            raise VerifyError(f"the result's spatial dimension {dim} would have size {extent}: (out {o} - 1) * stride {s} + window {w} "
                              f"- pads ({lo}, {hi}) + output_padding {p}", "B7", attr="padding")
        sizes.append(-(-extent // ld))
    return tuple(sizes)


def _check_input_shape(v: OpView, fwd: Forward, out_grad: TensorType, rhs: TensorType, input_type: TensorType, pads: Pads) -> None:
    forward_out = forward_type(v, input_type, rhs, {0: "input_shape"})
    check_non_spatial(forward_out, out_grad, fwd.dn.out_spec, "B1", "input_shape", operand=0)
    kernel = spatial(rhs.shape, fwd.dn.rhs_spec)
    sizes = zip(spatial(out_grad.shape, fwd.dn.out_spec), spatial(forward_out.shape, fwd.dn.out_spec),
                spatial(input_type.shape, fwd.dn.lhs_spec), kernel, fwd.strides, pads)
    for dim, (actual, computed, size, k, s, lo_hi) in enumerate(sizes):
        if actual != computed:
            detail = f"input_shape size {size}, kernel {k}, stride {s}, pads {lo_hi}"
            raise VerifyError(out_backprop_mismatch(actual, computed, dim, detail), "B4", attr="input_shape")


def backprop_input_sizes(v: OpView, fwd: Forward) -> tuple[Pads, tuple[int, ...]]:
    """(forward pads, result spatial sizes) after every size check."""
    out_grad, rhs = v.operand(0), v.operand(1)
    if v.has("input_shape") and v.has("output_padding"):
        raise VerifyError("give input_shape or output_padding, not both", "B2", attr="output_padding")
    out, kernel = spatial(out_grad.shape, fwd.dn.out_spec), spatial(rhs.shape, fwd.dn.rhs_spec)
    if not v.has("input_shape"):
        pads = _forward_pads(v, fwd, out, kernel, None)
        return pads, _scatter_sizes(v, fwd, out, kernel, pads)
    input_type = TensorType(check_shape_attr(v, "input_shape", out_grad.rank, "B3"), out_grad.dtype)
    input_spatial = spatial(input_type.shape, fwd.dn.lhs_spec)
    pads = _forward_pads(v, fwd, out, kernel, input_spatial)
    _check_input_shape(v, fwd, out_grad, rhs, input_type, pads)
    return pads, input_spatial


def transposed_pads(fwd: Forward, out: Sequence[int], kernel: Sequence[int], pads: Pads, sizes: Sequence[int]) -> Pads:
    """Pads of the lhs-dilated conv: `window - 1 - lo` low, and high whatever makes the result
    exactly `sizes` (negative crops); lax's `_conv_general_vjp_lhs_padding`."""
    rows = []
    for o, w, (lo, _), n, s, ld in zip(out, fwd.windows(kernel), pads, sizes, fwd.strides, fwd.lhs_dilation):
        low = w - 1 - lo
        rows.append((low, dilate_dim(n, ld) + w - 1 - dilate_dim(o, s) - low))
    return tuple(rows)


def plan_backprop_input(v: OpView) -> ConvPlan:
    """Conv of out_grad over the spatially reversed kernel with I/O roles swapped:
    `lhs_dilation = window_strides`, `window_strides = lhs_dilation`; groups move the kernel's
    group axis O -> I; batch groups become feature groups whose result groups move into batch."""
    out_grad, rhs = v.operand(0), v.operand(1)
    rank = check_ranks(out_grad, rhs)
    fwd = read_forward(v, rank)
    _check_backprop_kernel(rhs)
    pads, sizes = backprop_input_sizes(v, fwd)
    batch = out_grad.shape[fwd.dn.out_spec[0]] * fwd.batch_groups
    features = rhs.shape[fwd.dn.rhs_spec[1]] * fwd.feature_groups
    input_type = TensorType(assemble(fwd.dn.lhs_spec, batch, features, sizes), out_grad.dtype)
    check_non_spatial(forward_type(v, input_type, rhs, {}), out_grad, fwd.dn.out_spec, "B1", None, operand=0)
    out, kernel = spatial(out_grad.shape, fwd.dn.out_spec), spatial(rhs.shape, fwd.dn.rhs_spec)
    dn = ConvDimensionNumbers(fwd.dn.out_spec, swap_roles(fwd.dn.rhs_spec), fwd.dn.lhs_spec)
    groups = max(fwd.feature_groups, fwd.batch_groups)
    attrs = _conv_attrs(v, dn, fwd.lhs_dilation, transposed_pads(fwd, out, kernel, pads, sizes), fwd.strides, fwd.rhs_dilation, groups)
    return ConvPlan(
        attrs,
        reverse_dims=fwd.dn.rhs_spec[2:],
        kernel_move=GroupMove(fwd.dn.rhs_spec[0], fwd.dn.rhs_spec[1], groups) if groups > 1 else None,
        result_move=GroupMove(fwd.dn.lhs_spec[1], fwd.dn.lhs_spec[0], groups) if fwd.batch_groups > 1 else None,
    )


def _check_backprop_kernel(rhs: TensorType) -> None:
    """The input gradient's conv takes the kernel reversed with its feature roles swapped: a
    per-axis kernel fits neither StableHLO's reverse nor its conv's per-axis rule (C29)."""
    quant = quant_type(rhs.dtype)
    if quant is not None and quant.axis is not None:
        raise VerifyError("a per-axis quantized kernel cannot be used: the input gradient's conv takes this kernel spatially "
                          "reversed, with its input and output features swapped, and StableHLO takes a per-axis kernel only along "
                          "a conv's output features (C29) and never reversed (reverse.I1); quantize the kernel per tensor", "B8",
                          operand=1)


def infer_backprop_input(v: OpView) -> TensorType:
    return lowered_type(plan_backprop_input(v), v, list(BACKPROP_INPUT_ATTRS),
                        "lhs is out_grad, rhs this kernel reversed with its input and output features swapped")


# --- conv_backprop_filter -------------------------------------------------------


def _check_filter_sizes(v: OpView, fwd: Forward, lhs: TensorType, out_grad: TensorType, kernel_type: TensorType) -> Pads:
    forward_out = forward_type(v, lhs, kernel_type, {1: "kernel_shape"})
    check_non_spatial(forward_out, out_grad, fwd.dn.out_spec, "F2", "kernel_shape", operand=1)
    in_spatial, kernel = spatial(lhs.shape, fwd.dn.lhs_spec), spatial(kernel_type.shape, fwd.dn.rhs_spec)
    pads = explicit_padding(v.padding, in_spatial, kernel, fwd.strides, fwd.rhs_dilation)
    sizes = zip(spatial(out_grad.shape, fwd.dn.out_spec), spatial(forward_out.shape, fwd.dn.out_spec), in_spatial, kernel, fwd.strides, pads)
    for dim, (actual, computed, size, k, s, lo_hi) in enumerate(sizes):
        if actual != computed:
            detail = f"input size {size}, kernel_shape size {k}, stride {s}, pads {lo_hi}"
            raise VerifyError(out_backprop_mismatch(actual, computed, dim, detail), "F3", operand=1)
    return pads


def plan_backprop_filter(v: OpView) -> ConvPlan:
    """Conv of the forward input (batch and feature roles swapped) with out_grad as kernel:
    `window_strides = rhs_dilation`, `rhs_dilation = window_strides`, `lhs_dilation` kept,
    feature groups become batch groups and batch groups feature groups; result in kernel layout."""
    lhs, out_grad = v.operand(0), v.operand(1)
    rank = check_ranks(lhs, out_grad)
    fwd = read_forward(v, rank)
    _check_out_grad_axis(out_grad, fwd.dn.out_spec)
    kernel_type = TensorType(check_shape_attr(v, "kernel_shape", rank, "F1"), lhs.dtype)
    pads = _check_filter_sizes(v, fwd, lhs, out_grad, kernel_type)
    in_spatial, kernel = spatial(lhs.shape, fwd.dn.lhs_spec), spatial(kernel_type.shape, fwd.dn.rhs_spec)
    out = spatial(out_grad.shape, fwd.dn.out_spec)
    rows = tuple((lo, dilate_dim(o, s) - dilate_dim(i, ld) + w - 1 - lo)
                 for (lo, _), o, s, i, ld, w in zip(pads, out, fwd.strides, in_spatial, fwd.lhs_dilation, fwd.windows(kernel)))
    dn = ConvDimensionNumbers(swap_roles(fwd.dn.lhs_spec), swap_roles(fwd.dn.out_spec), swap_roles(fwd.dn.rhs_spec))
    return ConvPlan(_conv_attrs(v, dn, fwd.rhs_dilation, rows, fwd.lhs_dilation, fwd.strides,
                                feature_groups=fwd.batch_groups, batch_groups=fwd.feature_groups))


def _check_out_grad_axis(out_grad: TensorType, out_spec: Sequence[int]) -> None:
    """out_grad is the kernel of the kernel gradient's conv, its features that conv's output
    features: the only dimension the spec lets a per-axis kernel be quantized along (C29)."""
    quant = quant_type(out_grad.dtype)
    if quant is not None and quant.axis is not None and quant.axis != out_spec[1]:
        raise VerifyError(f"a per-axis quantized out_grad is quantized along its feature dimension {out_spec[1]}, not {quant.axis}: "
                          "it is the kernel of the kernel gradient's conv, and the spec quantizes a per-axis kernel along that "
                          "conv's output features (C29), which are out_grad's features", "F4", operand=1)


def infer_backprop_filter(v: OpView) -> TensorType:
    return lowered_type(plan_backprop_filter(v), v, list(BACKPROP_FILTER_ATTRS),
                        "lhs is this lhs, rhs is out_grad, and the result's features are the kernel's output features")


# --- gradient rule: the plan's ops, differentiated (the conv rule written once) -----------


def _moved(b: OpFactory, value: Value, move: GroupMove, what: str) -> Value:
    """The plan's group move as ops: reshape (split), transpose, reshape (merge)."""
    split = b.create("reshape", value, suffix=f"{what}_split", new_sizes=move.split_shape(value.type.shape))
    moved = b.create("transpose", split, suffix=f"{what}_moved", permutation=move.permutation(value.type.rank))
    return b.create("reshape", moved, suffix=f"{what}_grouped", new_sizes=move.merged_shape(value.type.shape))


def _moved_back(b: OpFactory, g: Value, move: GroupMove, shape: Sequence[int], what: str) -> Value:
    """The cotangent through a group move of a `shape` value: the same steps undone in reverse."""
    split = move.split_shape(shape)
    perm = move.permutation(len(shape))
    moved = b.create("reshape", g, suffix=f"{what}_ungrouped", new_sizes=tuple(split[d] for d in perm))
    inverse = tuple(perm.index(d) for d in range(len(perm)))
    unmoved = b.create("transpose", moved, suffix=f"{what}_unmoved", permutation=inverse)
    return b.create("reshape", unmoved, suffix=f"{what}_merged", new_sizes=tuple(shape))


def plan_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> tuple[Value | None, Value | None]:
    """back through the op's plan: the result regroup, then `conv`'s rule, then the kernel regroup and reverse.

    A transposed or gradient conv is its plan (kernel reverse and regroup, one conv, result
    regroup; docs/transposed-convs.md), so its gradient is written once, as the conv's
    (`conv_vjp`)."""
    plan = PLANS[v.opdef.name](v)
    lhs, rhs = operands
    kernel = rhs
    if plan.reverse_dims:
        kernel = b.create("reverse", kernel, suffix="kernel_reversed", dimensions=plan.reverse_dims)
    reversed_shape = kernel.type.shape
    if plan.kernel_move is not None:
        kernel = _moved(b, kernel, plan.kernel_move, "kernel")
    conv_view = CONV.bind([lhs.type, kernel.type], plan.conv_attrs)
    conv_out = infer_conv(conv_view)
    if plan.result_move is not None:
        g = _moved_back(b, g, plan.result_move, conv_out.shape, "d_result")
    d_lhs, d_kernel = conv_vjp(b, conv_view, [lhs, kernel], g)
    if d_kernel is not None and plan.kernel_move is not None:
        d_kernel = _moved_back(b, d_kernel, plan.kernel_move, reversed_shape, "d_kernel")
    if d_kernel is not None and plan.reverse_dims:
        d_kernel = b.create("reverse", d_kernel, suffix="d_rhs", dimensions=plan.reverse_dims)
    return d_lhs, d_kernel


# --- declarations -----------------------------------------------------------------

CONV_TRANSPOSE_ATTRS: dict[str, Attr] = {
    "strides": Attr(INTS, ones_per_spatial_dim, doc="fractional strides (the lhs dilation of the lowered conv); default all 1"),
    "padding": Attr(PADDING, "VALID", doc='"SAME", "VALID" (as the forward conv) or [[lo, hi], ...] of the lowered conv', constraint="C4"),
    "rhs_dilation": CONV_ATTRS["rhs_dilation"],
    "dimension_numbers": Attr(CONV_ATTRS["dimension_numbers"].kind,
                              Derived(lambda types: transpose_default_layouts(types[0].rank), "channels last: NHC/HIO/NHC, NHWC/HWIO/NHWC, ... by rank"),
                              doc="[lhs, rhs, out] layouts; default NHC/HIO/NHC, NHWC/HWIO/NHWC, ..."),
    "transpose_kernel": Attr(BOOL, False, doc="reverse the kernel's spatial dims and swap its I/O roles (Keras Conv2DTranspose)"),
    "use_consistent_padding": Attr(BOOL, False, doc="explicit pads mean the forward conv's (lax, PyTorch)"),
    "feature_group_count": CONV_ATTRS["feature_group_count"],
    "precision": CONV_ATTRS["precision"],
    "preferred_element_type": QUANTIZED_PREFERRED,
}

BACKPROP_INPUT_ATTRS: dict[str, Attr] = {
    **CONV_ATTRS,
    "input_shape": Attr(INTS, doc="the forward input's shape (TF input_sizes, ONNX output_shape)"),
    "output_padding": Attr(INTS, Derived(lambda types: (0,) * (types[0].rank - 2), "0 per spatial dimension"), doc="extra result elements on the high side per spatial dim (PyTorch, ONNX)"),
    "preferred_element_type": QUANTIZED_PREFERRED,
}

BACKPROP_FILTER_ATTRS: dict[str, Attr] = {
    **CONV_ATTRS,
    "kernel_shape": Attr(INTS, required=True, doc="the forward kernel's shape, in its layout (TF filter_sizes)"),
    "preferred_element_type": QUANTIZED_PREFERRED,
}

# The conv's foreign names, as these ops spell them (conv_transpose's stride is `strides`).
TRANSPOSE_FOREIGN: dict[str, ForeignAttr] = {
    **{name: meaning for name, meaning in CONV_FOREIGN.items() if name not in CONV_TRANSPOSE_ATTRS and meaning.attr != "window_strides"},
    "stride": ForeignAttr("strides", source="PyTorch"),
    "window_strides": ForeignAttr("strides", source="conv"),
}
BACKPROP_INPUT_FOREIGN = {name: meaning for name, meaning in CONV_FOREIGN.items() if name not in BACKPROP_INPUT_ATTRS}
BACKPROP_FILTER_FOREIGN = {name: meaning for name, meaning in CONV_FOREIGN.items() if name not in BACKPROP_FILTER_ATTRS}

CONV_TRANSPOSE = OpDef("conv_transpose", ("lhs", "rhs"), infer_conv_transpose, CONV_TRANSPOSE_ATTRS,
                       doc="jax.lax.conv_transpose plus feature_group_count; lowered by lower-conv-transpose", vjp=plan_vjp,
                       foreign=TRANSPOSE_FOREIGN, quantized=True)
CONV_BACKPROP_INPUT = OpDef("conv_backprop_input", ("out_grad", "rhs"), infer_backprop_input, BACKPROP_INPUT_ATTRS,
                            doc="input gradient (transposed conv) of a forward conv; lowered by lower-conv-backprop-input", vjp=plan_vjp,
                            foreign=BACKPROP_INPUT_FOREIGN, quantized=True)
CONV_BACKPROP_FILTER = OpDef("conv_backprop_filter", ("lhs", "out_grad"), infer_backprop_filter, BACKPROP_FILTER_ATTRS,
                             doc="kernel gradient of a forward conv; lowered by lower-conv-backprop-filter", vjp=plan_vjp,
                             foreign=BACKPROP_FILTER_FOREIGN, quantized=True)

CONV_GRAD_OPS: tuple[OpDef, ...] = (CONV_TRANSPOSE, CONV_BACKPROP_INPUT, CONV_BACKPROP_FILTER)

PLANS = {
    "conv_transpose": plan_conv_transpose,
    "conv_backprop_input": plan_backprop_input,
    "conv_backprop_filter": plan_backprop_filter,
}

__all__ = [
    "CONV_GRAD_OPS", "PLANS", "ConvPlan", "GroupMove", "conv_transpose_padding", "transpose_default_layouts",
]
