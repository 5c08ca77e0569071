"""`max_pool_grad`: the cotangent of x through a max pool, StableHLO's `select_and_scatter`
with a GE select (the first maximum of a window wins, as XLA and JAX pick it), an add
scatter and 0 as the initial value: each window's `out_grad` element is added at the
position of its window's maximum in x; padded positions never win, and a window of padding
alone adds nowhere.

`max_pool`'s gradient rule builds it. Its attributes are those select_and_scatter has, named
as max_pool's (`window_dimensions`, `window_strides`, `padding`, a mode resolved on x as
max_pool resolves it); a base-dilated pool's rule spreads x first, and a window-dilated one
has no gradient (G7). Constraint ids are the StableHLO `select_and_scatter` spec's (C1, C2,
C4..C8), namespaced by the op; `max_pool_grad.L1` is lax's rule that padding may crop but not
below size 0, and `max_pool_grad.L2` that a gradient is of floating values (jax.vjp's).
The op itself declares no gradient rule (its own would be a select-and-gather).
"""

from __future__ import annotations

from ..diagnostics import VerifyError
from ..dtypes import is_float
from ..ir import TensorType
from .base import INTS, PADDING, Attr, OpDef, OpView, ones_per_dim
from .pool import per_dim, resolve_padding, window_count


def grad_padding(v: OpView) -> tuple[tuple[int, int], ...]:
    """The explicit [lo, hi] pads per dimension of x (a mode resolved on x and the window)."""
    return resolve_padding(v.operand(0), v.padding, v.window_dimensions, v.window_strides, "max_pool_grad.C8")


def infer_max_pool_grad(v: OpView) -> TensorType:
    x, out_grad = v.operand(0), v.operand(1)
    if out_grad.dtype != x.dtype:
        raise VerifyError(f"element types differ: x is {x.dtype}, out_grad {out_grad.dtype}", "max_pool_grad.C1", operand=1)
    if not is_float(x.dtype):
        raise VerifyError(f"max_pool_grad needs floating operands, got {x.dtype}", "max_pool_grad.L2", operand=0)
    window = per_dim(v, "window_dimensions", "max_pool_grad.C4", "max_pool_grad.C5")
    strides = per_dim(v, "window_strides", "max_pool_grad.C6", "max_pool_grad.C7")
    windows = []
    for dim, (size, (lo, hi)) in enumerate(zip(x.shape, grad_padding(v))):
        padded = lo + size + hi
        if padded < 0:
            raise VerifyError(f"padding ({lo}, {hi}) makes dimension {dim} negative: input size {size}, padded size {padded}",
                              "max_pool_grad.L1", attr="padding")
        windows.append(window_count(padded, window[dim], strides[dim]))
    if out_grad.rank != x.rank or list(out_grad.shape) != windows:
        raise VerifyError(f"out_grad has shape {list(out_grad.shape)}, expected {windows} (one element per window of x)",
                          "max_pool_grad.C2", operand=1)
    return x


MAX_POOL_GRAD = OpDef(
    "max_pool_grad",
    ("x", "out_grad"),
    infer_max_pool_grad,
    {
        "window_dimensions": Attr(INTS, required=True, doc="the forward pool's window, in every dimension"),
        "window_strides": Attr(INTS, ones_per_dim, doc="the forward pool's strides; default all 1"),
        "padding": Attr(PADDING, "VALID", doc='"SAME", "SAME_LOWER", "VALID" or [[lo, hi], ...] per dimension, as the pool\'s',
                        constraint="max_pool_grad.C8"),
    },
    doc="the cotangent of x through max_pool: stablehlo.select_and_scatter (GE select, add scatter, 0 initial value)",
)
