"""`max_pool`: `jax.lax.reduce_window(x, -inf, lax.max, ...)`, emitted as a
`stablehlo.reduce_window` with a max body.

As lax's, the window runs over every dimension (a 2-D NHWC pool has window
`[1, kh, kw, 1]`); strides and dilations default to 1, `padding` is SAME, SAME_LOWER,
VALID (resolved as lax does, on the undilated input and the dilated window) or one
`[lo, hi]` row per dimension. Padded elements never win: the initial value is -inf for
floats and the smallest integer for integers. Constraint ids are the StableHLO
`reduce_window` spec's (C4..C12, C15), namespaced by the op: `max_pool.C5`; `max_pool.L1` is
lax's rule that padding may crop but not below size 0.
"""

from __future__ import annotations

from ..diagnostics import VerifyError
from ..ir import TensorType
from .base import INTS, PADDING, Attr, ForeignAttr, OpDef, OpView, ones_per_dim
from .conv import dilate_dim, same_pads


def _per_dim(v: OpView, name: str, size_id: str, positive_id: str) -> tuple[int, ...]:
    """A window attribute with one positive entry per dimension of x."""
    value, rank = v.attr(name), v.operand(0).rank
    if len(value) != rank:
        raise VerifyError(f"{name} has {len(value)} entries, expected {rank} (one per dimension)", f"max_pool.{size_id}", attr=name)
    if any(x <= 0 for x in value):
        raise VerifyError(f"{name} must be positive, got {list(value)}", f"max_pool.{positive_id}", attr=name)
    return tuple(value)


def pool_padding(v: OpView) -> tuple[tuple[int, int], ...]:
    """The explicit [lo, hi] pads per dimension (a mode resolved as lax.reduce_window does)."""
    x, padding = v.operand(0), v.padding
    if padding == "VALID":
        return tuple((0, 0) for _ in x.shape)
    if isinstance(padding, str):
        windows = [dilate_dim(w, d) for w, d in zip(v.window_dimensions, v.window_dilation)]
        return tuple(same_pads(size, w, s, padding == "SAME_LOWER") for size, w, s in zip(x.shape, windows, v.window_strides))
    if len(padding) != x.rank:
        raise VerifyError(f"padding has {len(padding)} [lo, hi] pairs, expected {x.rank} (one per dimension)", "max_pool.C12",
                          attr="padding")
    return tuple((int(lo), int(hi)) for lo, hi in padding)


def infer_max_pool(v: OpView) -> TensorType:
    x = v.operand(0)
    window = _per_dim(v, "window_dimensions", "C4", "C5")
    strides = _per_dim(v, "window_strides", "C6", "C7")
    base = _per_dim(v, "base_dilation", "C8", "C9")
    dilation = _per_dim(v, "window_dilation", "C10", "C11")
    shape = []
    for dim, (size, (lo, hi)) in enumerate(zip(x.shape, pool_padding(v))):
        padded = lo + dilate_dim(size, base[dim]) + hi
        if padded < 0:
            raise VerifyError(f"padding ({lo}, {hi}) makes dimension {dim} negative: dilated input size "
                              f"{dilate_dim(size, base[dim])}, padded size {padded}", "max_pool.L1", attr="padding")
        span = dilate_dim(window[dim], dilation[dim])
        shape.append(0 if padded == 0 or span > padded else (padded - span) // strides[dim] + 1)
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

MAX_POOL = OpDef(
    "max_pool",
    ("x",),
    infer_max_pool,
    {
        "window_dimensions": Attr(INTS, required=True, doc="the window's size in every dimension (1 for batch and features)"),
        "window_strides": Attr(INTS, ones_per_dim, doc="the step between windows per dimension; default all 1"),
        "padding": Attr(PADDING, "VALID", doc='"SAME", "SAME_LOWER", "VALID" or [[lo, hi], ...] per dimension',
                        constraint="max_pool.C12"),
        "base_dilation": Attr(INTS, ones_per_dim, doc="input dilation per dimension; default all 1"),
        "window_dilation": Attr(INTS, ones_per_dim, doc="window dilation per dimension; default all 1"),
    },
    doc="lax.reduce_window with lax.max (-inf initial value); emitted as stablehlo.reduce_window",
    foreign=POOL_FOREIGN,
)
