"""`reduce_sum`: `jax.lax.reduce_sum` (a `stablehlo.reduce` with an add body), with the
StableHLO `reduce` constraints C4/C5 on `axes`.

The CPU lowering of depthwise weight gradients sums tap products with it.
"""

from __future__ import annotations

from ..ir import TensorType
from .base import INTS, Attr, OpDef, OpView, check_axes


def infer_reduce_sum(v: OpView) -> TensorType:
    x, axes = v.operand(0), v.attr("axes")
    check_axes(axes, x.rank, "axes")
    return TensorType(tuple(size for dim, size in enumerate(x.shape) if dim not in axes), x.dtype)


REDUCE_SUM = OpDef(
    "reduce_sum",
    ("x",),
    infer_reduce_sum,
    {"axes": Attr(INTS, required=True, doc="the dims summed away")},
    doc="lax.reduce_sum",
)
