"""`conv`: `jax.lax.conv_general_dilated` with the StableHLO `convolution` constraints.

Constraint ids C1..C27 are the StableHLO spec's (non-quantized); L1 and L2 are
rules `lax.conv_general_dilated` adds (spatial letters agree; padding does not
make the input negative); P1 is convc's own (a pinned `lowering` names a known
choice). The helpers here are shared by the transposed and gradient conv ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..diagnostics import VerifyError
from ..dtypes import is_quantized
from ..ir import TensorType, Value
from ..lowering_pins import lowering_pins
from ..memo import memoized
from .attr_kinds import ELEMENT_TYPE
from .base import (
    DIMS,
    DTYPE,
    INT,
    INTS,
    PADDING,
    PRECISION,
    SIZE_LIMIT,
    Attr,
    ConvDimensionNumbers,
    Derived,
    ForeignAttr,
    NoGradientRule,
    OpDef,
    OpFactory,
    OpView,
    StrKind,
    check_same_dtype,
    ones_per_spatial_dim,
    shown,
)
from .quantized import quantized_conv_dtype

# --- dimension numbers ------------------------------------------------------

_SPEC_ROLES = (("N", "C", "lhs", "C12", "C13"), ("O", "I", "rhs", "C17", "C18"), ("N", "C", "out", "C19", "C20"))


def default_layouts(rank: int) -> tuple[str, str, str]:
    """lax's default: NC.../OI.../NC... with spatial letters in order."""
    spatial = "".join(chr(ord("0") + i) if i < 10 else chr(ord("a") + i) for i in range(rank - 2))
    return ("NC" + spatial, "OI" + spatial, "NC" + spatial)


def _case_hint(spec: str, a: str, b: str) -> str:
    """Lowercase letters are spatial dimensions to lax and convc, so 'nhwc' names neither batch
    nor features; when the uppercase spelling would, say so."""
    upper = spec.upper()
    if upper == spec or upper.count(a) != 1 or upper.count(b) != 1:
        return ""
    return f"; layout letters are uppercase: '{upper}'"


def dimension_numbers_from_layouts(layouts: Sequence[str], rank: int, attr: str = "dimension_numbers") -> ConvDimensionNumbers:
    """Layout strings -> explicit dimension numbers, as `lax.conv_general_permutations`."""
    for spec, (a, b, which, size_id, unique_id) in zip(layouts, _SPEC_ROLES):
        if len(spec) != rank:
            raise VerifyError(f"{which} layout '{spec}' has {len(spec)} dimensions but the operands have rank {rank}", size_id, attr=attr)
        if spec.count(a) != 1 or spec.count(b) != 1:
            raise VerifyError(f"{which} layout '{spec}' must contain '{a}' and '{b}' exactly once{_case_hint(spec, a, b)}", unique_id,
                              attr=attr)
        if len(set(spec)) != len(spec):
            raise VerifyError(f"{which} layout '{spec}' repeats a dimension letter", unique_id, attr=attr)
    lhs, rhs, out = layouts
    spatial = [c for c in rhs if c not in "OI"]
    for spec, which in ((lhs, "lhs"), (out, "out")):
        if sorted(c for c in spec if c not in "NC") != sorted(spatial):
            raise VerifyError(f"{which} layout '{spec}' and rhs layout '{rhs}' name different spatial dimensions", "L1", attr=attr)
    return ConvDimensionNumbers(
        (lhs.index("N"), lhs.index("C")) + tuple(lhs.index(c) for c in spatial),
        (rhs.index("O"), rhs.index("I")) + tuple(rhs.index(c) for c in spatial),
        (out.index("N"), out.index("C")) + tuple(out.index(c) for c in spatial),
    )


def check_dimension_numbers(dn: ConvDimensionNumbers, rank: int, attr: str = "dimension_numbers") -> ConvDimensionNumbers:
    for spec, (_, _, which, size_id, unique_id) in zip(dn, _SPEC_ROLES):
        if len(spec) != rank:
            raise VerifyError(f"{which} dimension numbers {list(spec)} have {len(spec)} entries but the operands have rank {rank}", size_id, attr=attr)
        if len(set(spec)) != rank or not all(0 <= d < rank for d in spec):
            raise VerifyError(f"{which} dimension numbers {list(spec)} are not a permutation of 0..{rank - 1}", unique_id, attr=attr)
    return dn


@memoized(1024)
def resolve_dimension_numbers(value: object, rank: int, attr: str = "dimension_numbers") -> ConvDimensionNumbers:
    """Any accepted spelling (layout strings, explicit) -> checked explicit numbers; memoized:
    every conv of a network spells its layouts the same way, and every pass asks."""
    if isinstance(value, ConvDimensionNumbers):
        return check_dimension_numbers(value, rank, attr)
    assert isinstance(value, tuple)
    return dimension_numbers_from_layouts(value, rank, attr)


# --- window attributes and padding ------------------------------------------


# Strides, dilations and pads past the largest dimension mean nothing, and MLIR's and lax's
# shape arithmetic (int64, float) overflows on them where convc's Python ints would not.
MAX_WINDOW = 2**31 - 1


def window_attr(v: OpView, name: str, spatial_rank: int, size_id: str, positive_id: str) -> tuple[int, ...]:
    """A checked per-spatial-dim attribute (strides, dilations)."""
    value = v.attr(name)
    if len(value) != spatial_rank:
        raise VerifyError(f"{name} has {len(value)} entries, expected {spatial_rank} (one per spatial dimension)", size_id, attr=name)
    if any(x <= 0 for x in value):
        raise VerifyError(f"{name} must be positive, got {list(value)}", positive_id, attr=name)
    if any(x > MAX_WINDOW for x in value):
        raise VerifyError(f"{name} must be at most {MAX_WINDOW}, got {list(value)}", SIZE_LIMIT, attr=name)
    return tuple(value)


def dilate_dim(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def same_pads(in_size: int, window: int, stride: int, lower: bool = False) -> tuple[int, int]:
    """lax.padtype_to_pads for SAME (extra pad high) and SAME_LOWER (extra pad low)."""
    out_size = -(-in_size // stride)
    total = max(0, (out_size - 1) * stride + window - in_size)
    small, large = total // 2, total - total // 2
    return (large, small) if lower else (small, large)


def explicit_padding(
    padding: object,
    in_spatial: Sequence[int],
    kernel_spatial: Sequence[int],
    strides: Sequence[int],
    rhs_dilation: Sequence[int],
) -> tuple[tuple[int, int], ...]:
    """Resolve SAME/SAME_LOWER/VALID on the dilated kernel, as lax does; check explicit pads."""
    if padding == "VALID":
        return tuple((0, 0) for _ in in_spatial)
    if isinstance(padding, str):
        windows = [dilate_dim(k, d) for k, d in zip(kernel_spatial, rhs_dilation)]
        lower = padding == "SAME_LOWER"
        return tuple(same_pads(i, w, s, lower) for i, w, s in zip(in_spatial, windows, strides))
    assert isinstance(padding, tuple)
    if len(padding) != len(in_spatial):
        raise VerifyError(f"padding has {len(padding)} [lo, hi] pairs, expected {len(in_spatial)} (one per spatial dimension)", "C4", attr="padding")
    if any(abs(p) > MAX_WINDOW for row in padding for p in row):
        raise VerifyError(f"padding values must lie in [-{MAX_WINDOW}, {MAX_WINDOW}], got {[list(row) for row in padding]}", SIZE_LIMIT, attr="padding")
    return tuple((int(lo), int(hi)) for lo, hi in padding)


def conv_output_spatial(
    in_spatial: Sequence[int],
    kernel_spatial: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int],
    rhs_dilation: Sequence[int],
) -> tuple[int, ...]:
    """StableHLO C25's num_windows per spatial dim (0 for an empty window)."""
    sizes = []
    for i, (size, k, s, (lo, hi), ld, rd) in enumerate(zip(in_spatial, kernel_spatial, strides, pads, lhs_dilation, rhs_dilation)):
        padded = lo + dilate_dim(size, ld) + hi
        if padded < 0:
            raise VerifyError(
                f"padding ({lo}, {hi}) makes spatial dimension {i} negative: dilated input size {dilate_dim(size, ld)}, padded size {padded}",
                "L2", attr="padding")
        window = dilate_dim(k, rd)
        sizes.append(0 if padded == 0 or window > padded else (padded - window) // s + 1)
    return tuple(sizes)


def spatial(shape: Sequence[int], spec: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[d] for d in spec[2:])


def assemble(spec: Sequence[int], first: int, second: int, spatial_sizes: Sequence[int]) -> tuple[int, ...]:
    """Place (batch, feature, spatial...) sizes at the dims a spec names."""
    shape = [0] * len(spec)
    shape[spec[0]], shape[spec[1]] = first, second
    for dim, size in zip(spec[2:], spatial_sizes):
        shape[dim] = size
    return tuple(shape)


def check_group_counts(v: OpView) -> tuple[int, int]:
    fgc, bgc = v.feature_group_count, v.batch_group_count
    if fgc <= 0:
        raise VerifyError(f"feature_group_count must be positive, got {fgc}", "C21", attr="feature_group_count")
    if bgc <= 0:
        raise VerifyError(f"batch_group_count must be positive, got {bgc}", "C22", attr="batch_group_count")
    if fgc > 1 and bgc > 1:
        raise VerifyError(f"feature_group_count {fgc} and batch_group_count {bgc} cannot both exceed 1", "C23", attr="batch_group_count")
    return fgc, bgc


def check_ranks(lhs: TensorType, rhs: TensorType) -> int:
    if lhs.rank != rhs.rank:
        raise VerifyError(f"lhs rank {lhs.rank} and rhs rank {rhs.rank} differ", "C1", operand=1)
    if lhs.rank < 2:
        raise VerifyError(f"operands must have rank at least 2, got {lhs.rank}", "C1", operand=0)
    if not (is_quantized(lhs.dtype) or is_quantized(rhs.dtype)):  # quantized operands: C28-C34 instead
        check_same_dtype(lhs, rhs, "C27")
    return lhs.rank


@dataclass(frozen=True)
class Forward:
    """The checked attributes of the forward conv whose gradient an op computes."""

    dn: ConvDimensionNumbers
    strides: tuple[int, ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_groups: int
    batch_groups: int

    def windows(self, kernel: Sequence[int]) -> tuple[int, ...]:
        return tuple(dilate_dim(k, d) for k, d in zip(kernel, self.rhs_dilation))


def read_forward(v: OpView, rank: int) -> Forward:
    n = rank - 2
    dn = resolve_dimension_numbers(v.dimension_numbers, rank)
    strides = window_attr(v, "window_strides", n, "C2", "C3")
    lhs_dilation = window_attr(v, "lhs_dilation", n, "C5", "C6")
    rhs_dilation = window_attr(v, "rhs_dilation", n, "C7", "C8")
    feature_groups, batch_groups = check_group_counts(v)
    return Forward(dn, strides, lhs_dilation, rhs_dilation, feature_groups, batch_groups)


def _layout_hint(lhs: Sequence[int], rhs: Sequence[int], dn: ConvDimensionNumbers, fgc: int) -> str:
    """For an ungrouped conv whose kernel's input features match another lhs dimension than
    the one the dimension numbers name, the likely mistake is the layout (NCHW dimension
    numbers on NHWC data): say which dimension would fit."""
    lhs_f, lhs_b = dn.lhs_spec[1], dn.lhs_spec[0]
    fits = [d for d in range(len(lhs)) if d not in (lhs_f, lhs_b) and lhs[d] == rhs[dn.rhs_spec[1]]]
    if fgc != 1 or not fits:
        return ""
    return (f"; the shapes fit if lhs dimension {fits[0]} (size {lhs[fits[0]]}) holds the features, not dimension {lhs_f}: "
            "do the dimension_numbers match the data's layout?")


def infer_conv(v: OpView) -> TensorType:
    lhs, rhs = v.operand(0), v.operand(1)
    fwd = read_forward(v, check_ranks(lhs, rhs))
    dn, fgc, bgc = fwd.dn, fwd.feature_groups, fwd.batch_groups

    batch, features = lhs.shape[dn.lhs_spec[0]], lhs.shape[dn.lhs_spec[1]]
    out_features, in_features = rhs.shape[dn.rhs_spec[0]], rhs.shape[dn.rhs_spec[1]]
    if batch % bgc:
        raise VerifyError(f"lhs batch dimension {batch} is not divisible by batch_group_count {bgc}", "C10", attr="batch_group_count")
    if features % fgc:
        raise VerifyError(f"lhs feature dimension {features} is not divisible by feature_group_count {fgc}", "C11", attr="feature_group_count")
    if in_features != features // fgc:
        raise VerifyError(
            f"rhs input feature dimension {in_features} must equal lhs feature dimension {features} / feature_group_count {fgc} = {features // fgc}"
            f"{_layout_hint(lhs.shape, rhs.shape, dn, fgc)}", "C14", operand=1)
    if out_features % bgc:
        raise VerifyError(f"rhs output feature dimension {out_features} is not divisible by batch_group_count {bgc}", "C15", attr="batch_group_count")
    if out_features % fgc:
        raise VerifyError(f"rhs output feature dimension {out_features} is not divisible by feature_group_count {fgc}", "C16", attr="feature_group_count")

    in_spatial, kernel_spatial = spatial(lhs.shape, dn.lhs_spec), spatial(rhs.shape, dn.rhs_spec)
    if 0 in kernel_spatial:  # MLIR's verifier: "expects window to have positive value"
        raise VerifyError(f"rhs spatial dimensions {list(kernel_spatial)} must be positive: a conv window cannot be empty", "M1", operand=1)
    pads = explicit_padding(v.padding, in_spatial, kernel_spatial, fwd.strides, fwd.rhs_dilation)
    out_spatial = conv_output_spatial(in_spatial, kernel_spatial, fwd.strides, pads, fwd.lhs_dilation, fwd.rhs_dilation)
    dtype = quantized_conv_dtype(lhs, rhs, v.preferred_element_type, dn) or v.preferred_element_type or lhs.dtype
    check_lowering(v.lowering)
    return TensorType(assemble(dn.out_spec, batch // bgc, out_features, out_spatial), dtype)


def result_type_rule(written: TensorType, inferred: TensorType) -> str:
    """The rule a written result type (convc IR text) that differs from the inferred one
    breaks: C26 its rank, C25 its shape, else C27 its element type."""
    if written.rank != inferred.rank:
        return "C26"
    return "C25" if written.shape != inferred.shape else "C27"


# What a conv's `lowering` may pin: XLA's own conv, or a conv rewrite registered by name
# (the cpu-* passes register theirs; convc.lowering_pins).
def check_lowering(lowering: str | None) -> None:
    if lowering is not None and lowering not in (pins := lowering_pins()):
        raise VerifyError(f"lowering must be one of {', '.join(pins)}, got {shown(lowering)}", "P1", attr="lowering")


class LoweringPinKind(StrKind):
    """A `lowering` pin: its schema enum is the pins registered when the schema is written."""

    label = "'xla' or a cpu-* pass name"

    def schema(self) -> dict[str, Any]:
        return {"enum": list(lowering_pins())}


CONV_ATTRS: dict[str, Attr] = {
    "window_strides": Attr(INTS, ones_per_spatial_dim, doc="inter-window strides; default all 1"),
    "padding": Attr(PADDING, "VALID", doc='"SAME", "SAME_LOWER", "VALID" or [[lo, hi], ...]', constraint="C4"),
    "lhs_dilation": Attr(INTS, ones_per_spatial_dim, doc="input (base) dilation; default all 1"),
    "rhs_dilation": Attr(INTS, ones_per_spatial_dim, doc="kernel (window) dilation; default all 1"),
    "dimension_numbers": Attr(DIMS, Derived(lambda types: default_layouts(types[0].rank), "lax's: NC.../OI.../NC... by rank"),
                              doc="[lhs, rhs, out] layouts; default NC.../OI.../NC..."),
    "feature_group_count": Attr(INT, 1, doc="grouped conv: lhs features in this many groups (depthwise: the input channels)"),
    "batch_group_count": Attr(INT, 1, doc="lhs batch in this many groups (grouped kernel gradients)"),
    "precision": Attr(PRECISION, doc='"DEFAULT" | "HIGH" | "HIGHEST" or a pair', constraint="C24"),
    "preferred_element_type": Attr(DTYPE, doc="result/accumulation element type"),
}

# Other frameworks' names for the conv attributes (PyTorch, ONNX, TensorFlow, Keras): the hints
# of an unknown attribute on conv and its gradient ops, and what an importer renames.
ONE_PER_SPATIAL_DIM = "one entry per spatial dimension"
CONV_FOREIGN: dict[str, ForeignAttr] = {
    "groups": ForeignAttr("feature_group_count", source="PyTorch and Keras"),
    "group": ForeignAttr("feature_group_count", source="ONNX"),
    "stride": ForeignAttr("window_strides", source="PyTorch"),
    "strides": ForeignAttr("window_strides", source="ONNX, TensorFlow and Keras", note=ONE_PER_SPATIAL_DIM),
    "dilation": ForeignAttr("rhs_dilation", source="PyTorch"),
    "dilations": ForeignAttr("rhs_dilation", source="ONNX and TensorFlow", note=ONE_PER_SPATIAL_DIM),
    "dilation_rate": ForeignAttr("rhs_dilation", source="Keras"),
    "pads": ForeignAttr("padding", source="ONNX", note="as [[lo, hi], ...] rows, not all begins then all ends"),
    "auto_pad": ForeignAttr("padding", source="ONNX", note='"SAME_UPPER" is "SAME"'),
    "data_format": ForeignAttr("dimension_numbers", source="TensorFlow and Keras", note='as three layouts, e.g. ["NHWC", "HWIO", "NHWC"]'),
    "kernel_shape": ForeignAttr(note="a conv's kernel shape is its rhs operand's shape"),
    "output_padding": ForeignAttr("output_padding", op="conv_backprop_input",
                                  note="a transposed conv with output_padding (PyTorch, ONNX) is the input gradient of its forward conv"),
}

# Only the forward conv takes a pin: the gradient and transposed ops share CONV_ATTRS, and
# their lowered convs are what autotune-conv-lowering pins.
LOWERING_ATTR = Attr(LoweringPinKind(),
                     doc='which lowering the cpu target uses: "xla" (XLA\'s own conv) or a cpu-* rewrite pass; default: its cost model')

# The forward conv's result type may be quantized (the spec's quantized conv: C28-C34).
QUANTIZED_PREFERRED = Attr(ELEMENT_TYPE, doc="result/accumulation element type; a quantized conv's result type (!quant.uniform<...>)")

# --- gradient rule ----------------------------------------------------------------------


def gradient_conv_attrs(v: OpView, lhs: TensorType, rhs: TensorType) -> dict[str, Any]:
    """The forward conv's attributes as its two gradient ops take them: padding resolved to
    explicit pairs, group counts, precision and preferred_element_type as set (no `lowering`:
    the gradient convs' own lowerings are chosen afresh)."""
    dn = resolve_dimension_numbers(v.dimension_numbers, lhs.rank)
    pads = explicit_padding(v.padding, spatial(lhs.shape, dn.lhs_spec), spatial(rhs.shape, dn.rhs_spec), v.window_strides,
                            v.rhs_dilation)
    attrs: dict[str, Any] = {"window_strides": v.window_strides, "padding": pads, "lhs_dilation": v.lhs_dilation,
                             "rhs_dilation": v.rhs_dilation, "dimension_numbers": v.dimension_numbers}
    for name in ("feature_group_count", "batch_group_count"):
        if v.attr(name) != 1:
            attrs[name] = v.attr(name)
    for name in ("precision", "preferred_element_type"):
        if v.attr(name) is not None:
            attrs[name] = v.attr(name)
    return attrs


def conv_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> tuple[Value | None, Value | None]:
    """lhs: `conv_backprop_input(g, rhs)`; rhs: `conv_backprop_filter(lhs, g)`; both with this conv's attributes.

    The attributes are the forward conv's with the padding resolved to explicit pairs, group
    counts, precision and preferred_element_type (not `lowering`); the lowering passes turn
    the two ops into JAX's transpose convs. With a preferred_element_type other than
    the operands', the other operand is converted to the cotangent's type and each gradient
    back to its primal's, as JAX's rules do. An empty cotangent flows nowhere."""
    lhs, rhs = operands
    if is_quantized(lhs.type.dtype):
        raise NoGradientRule("a quantized conv has no gradient rule: its result is rounded to a quantized type")
    if is_quantized(rhs.type.dtype):  # the hybrid (weight-only) form: a float result, a quantized kernel
        raise NoGradientRule("a quantized conv has no gradient rule: its kernel is quantized, and convc builds no gradient "
                             "through a quantized kernel")
    if g.type.num_elements() == 0:
        return None, None
    attrs = gradient_conv_attrs(v, lhs.type, rhs.type)
    wide = g.type.dtype

    def widened(x: Value, suffix: str) -> Value:
        return x if x.type.dtype == wide else b.create("convert", x, suffix=suffix, new_dtype=wide)

    def narrowed(x: Value, dtype: str, suffix: str) -> Value:
        return x if x.type.dtype == dtype else b.create("convert", x, suffix=suffix, new_dtype=dtype)

    d_lhs = b.create("conv_backprop_input", g, widened(rhs, "rhs_wide"), suffix="d_lhs", input_shape=lhs.type.shape, **attrs)
    d_rhs = b.create("conv_backprop_filter", widened(lhs, "lhs_wide"), g, suffix="d_rhs", kernel_shape=rhs.type.shape, **attrs)
    return narrowed(d_lhs, lhs.type.dtype, "d_lhs_narrow"), narrowed(d_rhs, rhs.type.dtype, "d_rhs_narrow")


CONV = OpDef(
    "conv",
    ("lhs", "rhs"),
    infer_conv,
    {**CONV_ATTRS, "preferred_element_type": QUANTIZED_PREFERRED, "lowering": LOWERING_ATTR},
    doc="jax.lax.conv_general_dilated; emitted as stablehlo.convolution",
    result_constraint=result_type_rule,
    vjp=conv_vjp,
    foreign=CONV_FOREIGN,
    quantized=True,
)
