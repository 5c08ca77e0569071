"""`max_pool`: `jax.lax.reduce_window(x, -inf, lax.max, ...)`, emitted as a
`stablehlo.reduce_window` with a max body; `sum_pool`: the same window with `lax.add` from 0
(average pooling is a sum_pool times a divisor).

As lax's, the window runs over every dimension (a 2-D NHWC pool has window
`[1, kh, kw, 1]`); strides and dilations default to 1, `padding` is SAME, SAME_LOWER,
VALID (resolved as lax does, on the undilated input and the dilated window) or one
`[lo, hi]` row per dimension. Padded elements never win: the initial value is -inf for
floats and the smallest integer for integers. Constraint ids are the StableHLO
`reduce_window` spec's (C4..C12, C15), namespaced by the op: `max_pool.C5`; `max_pool.L1` is
lax's rule that padding may crop but not below size 0.

max_pool's gradient rule is `max_pool_grad` (`pool_grad.py`), StableHLO's `select_and_scatter`;
sum_pool's is a sum_pool of the padded cotangent. sum_pool shares max_pool's attributes,
shape rule and ids (`sum_pool.C5`, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import VerifyError
from ..ir import TensorType, Value
from .base import INTS, PADDING, Attr, ForeignAttr, NoGradientRule, OpDef, OpFactory, OpView, ones_per_dim
from .conv import dilate_dim, same_pads


def per_dim(v: OpView, name: str, size_id: str, positive_id: str) -> tuple[int, ...]:
    """A window attribute with one positive entry per dimension of x."""
    value, rank = v.attr(name), v.operand(0).rank
    if len(value) != rank:
        raise VerifyError(f"{name} has {len(value)} entries, expected {rank} (one per dimension)", size_id, attr=name)
    if any(x <= 0 for x in value):
        raise VerifyError(f"{name} must be positive, got {list(value)}", positive_id, attr=name)
    return tuple(value)


def resolve_padding(x: TensorType, padding: str | Sequence[Sequence[int]], windows: Sequence[int], strides: Sequence[int],
                    rows_id: str) -> tuple[tuple[int, int], ...]:
    """Explicit [lo, hi] pads per dimension: a mode resolved as lax.padtype_to_pads does, on
    x's (undilated) sizes and the windows' (dilated) spans; rows checked for their count."""
    if padding == "VALID":
        return tuple((0, 0) for _ in x.shape)
    if isinstance(padding, str):
        return tuple(same_pads(size, w, s, padding == "SAME_LOWER") for size, w, s in zip(x.shape, windows, strides))
    if len(padding) != x.rank:
        raise VerifyError(f"padding has {len(padding)} [lo, hi] pairs, expected {x.rank} (one per dimension)", rows_id,
                          attr="padding")
    return tuple((int(lo), int(hi)) for lo, hi in padding)


def pool_padding(v: OpView) -> tuple[tuple[int, int], ...]:
    """A pool's (max_pool's, sum_pool's) explicit [lo, hi] pads per dimension (a mode resolved as
    lax.reduce_window does)."""
    windows = [dilate_dim(w, d) for w, d in zip(v.window_dimensions, v.window_dilation)]
    return resolve_padding(v.operand(0), v.padding, windows, v.window_strides, f"{v.opdef.name}.C12")


def window_count(padded: int, span: int, stride: int) -> int:
    """How many windows of `span` elements, `stride` apart, fit in `padded` elements (none in an empty input)."""
    return 0 if padded == 0 or span > padded else (padded - span) // stride + 1


def infer_pool(v: OpView) -> TensorType:
    """The result type of a reduce_window (max_pool, sum_pool); ids namespaced by the op (`max_pool.C5`)."""
    x, op = v.operand(0), v.opdef.name
    window = per_dim(v, "window_dimensions", f"{op}.C4", f"{op}.C5")
    strides = per_dim(v, "window_strides", f"{op}.C6", f"{op}.C7")
    base = per_dim(v, "base_dilation", f"{op}.C8", f"{op}.C9")
    dilation = per_dim(v, "window_dilation", f"{op}.C10", f"{op}.C11")
    shape = []
    for dim, (size, (lo, hi)) in enumerate(zip(x.shape, pool_padding(v))):
        padded = lo + dilate_dim(size, base[dim]) + hi
        if padded < 0:
            raise VerifyError(f"padding ({lo}, {hi}) makes dimension {dim} negative: dilated input size "
                              f"{dilate_dim(size, base[dim])}, padded size {padded}", f"{op}.L1", attr="padding")
        shape.append(window_count(padded, dilate_dim(window[dim], dilation[dim]), strides[dim]))
    return TensorType(tuple(shape), x.dtype)


# Other frameworks' names for the window attributes (A3's hints; an importer's renames).
_WINDOW_NOTE = "one entry per dimension of x, batch and features included: [1, kh, kw, 1] for NHWC"
POOL_FOREIGN = {
    **{name: ForeignAttr("window_dimensions", source=source, note=_WINDOW_NOTE)
       for name, source in (("window_shape", "flax"), ("kernel_size", "PyTorch"), ("kernel_shape", "ONNX"), ("pool_size", "Keras"),
                            ("ksize", "TensorFlow"))},
    "strides": ForeignAttr("window_strides", source="ONNX, TensorFlow, Keras and flax", note="one entry per dimension of x"),
    "stride": ForeignAttr("window_strides", source="PyTorch", note="one entry per dimension of x"),
    "dilation": ForeignAttr("window_dilation", source="PyTorch"),
    "dilations": ForeignAttr("window_dilation", source="ONNX"),
    "pads": ForeignAttr("padding", source="ONNX", note="as [[lo, hi], ...] rows, not all begins then all ends"),
}
def pool_attrs(op: str) -> dict[str, Attr]:
    """The window attributes max_pool and sum_pool share (lax.reduce_window's)."""
    return {
        "window_dimensions": Attr(INTS, required=True, doc="the window's size in every dimension (1 for batch and features)"),
        "window_strides": Attr(INTS, ones_per_dim, doc="the step between windows per dimension; default all 1"),
        "padding": Attr(PADDING, "VALID", doc='"SAME", "SAME_LOWER", "VALID" or [[lo, hi], ...] per dimension',
                        constraint=f"{op}.C12"),
        "base_dilation": Attr(INTS, ones_per_dim, doc="input dilation per dimension; default all 1"),
        "window_dilation": Attr(INTS, ones_per_dim, doc="window dilation per dimension; default all 1"),
    }


def max_pool_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `max_pool_grad(x, g)`, each window's cotangent added at its first maximum (select_and_scatter, as JAX).

    The pads are the forward's, made explicit. A base-dilated pool differentiates as JAX's:
    x spread by -inf (`pad`: a hole wins only where no element of x is larger), then every
    base_dilation-th element of that gradient (`slice`). select_and_scatter has no window
    dilation, nor has jax.vjp of a max reduce_window: a dilated window over more than one
    element is refused (G7)."""
    dilated = [d for w, d in zip(v.window_dimensions, v.window_dilation) if w > 1 and d > 1]
    if dilated:
        raise NoGradientRule(f"max_pool's gradient is a select_and_scatter, which has no window dilation; window_dilation "
                             f"{list(v.window_dilation)} dilates a window of {list(v.window_dimensions)}", attr="window_dilation")
    x, base = operands[0], v.base_dilation
    window = {"window_dimensions": v.window_dimensions, "window_strides": v.window_strides, "padding": pool_padding(v)}
    if all(d == 1 for d in base):
        return (b.create("max_pool_grad", x, g, suffix="d_x", **window),)
    spread = b.create("pad", x, suffix="x_dilated", padding_config=tuple((0, 0, d - 1) for d in base),
                      padding_value=float("-inf"))
    d_spread = b.create("max_pool_grad", spread, g, suffix="d_x_dilated", **window)
    return (b.create("slice", d_spread, suffix="d_x", start_indices=(0,) * x.type.rank, limit_indices=d_spread.type.shape,
                     strides=tuple(base)),)


MAX_POOL = OpDef(
    "max_pool",
    ("x",),
    infer_pool,
    pool_attrs("max_pool"),
    doc="lax.reduce_window with lax.max (-inf initial value); emitted as stablehlo.reduce_window",
    foreign=POOL_FOREIGN,
    vjp=max_pool_vjp,
)


def sum_pool_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `sum_pool` of g `pad`ded with stride - 1 interior zeros: each element of x gets the cotangent of every window it is in.

    As JAX's transpose of reduce_window_sum: g spread by `window_strides - 1` zeros and padded
    as a conv's input gradient is (edge pads that may crop), then summed over the (dilated)
    window with the base dilation as stride; the window is all ones, so it needs no reversal."""
    x = operands[0].type
    config = []
    for size, out, w, s, (lo, _), base, dil in zip(x.shape, g.type.shape, v.window_dimensions, v.window_strides, pool_padding(v),
                                                   v.base_dilation, v.window_dilation):
        span, dilated_in = dilate_dim(w, dil), dilate_dim(size, base)
        before = span - lo - 1
        config.append((before, dilated_in + span - 1 - dilate_dim(out, s) - before, s - 1))
    spread = b.create("pad", g, suffix="d_spread", padding_config=tuple(config))
    return (b.create("sum_pool", spread, suffix="d_x", window_dimensions=v.window_dimensions, window_strides=v.base_dilation,
                     window_dilation=v.window_dilation),)


SUM_POOL = OpDef(
    "sum_pool",
    ("x",),
    infer_pool,
    pool_attrs("sum_pool"),
    doc="lax.reduce_window with lax.add (0 initial value); emitted as stablehlo.reduce_window",
    foreign=POOL_FOREIGN,
    vjp=sum_pool_vjp,
)
