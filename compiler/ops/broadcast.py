"""`broadcast_in_dim`: `jax.lax.broadcast_in_dim`, with the StableHLO constraints C2..C5
(`broadcast_in_dim.C2`, ...) and MLIR's rule that a shape is non-negative (`broadcast_in_dim.M1`).

The CPU lowerings use it to spread per-channel weights over a feature map.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import VerifyError
from ..ir import TensorType, Value
from .base import INTS, Attr, OpDef, OpFactory, OpView, check_axes


def infer_broadcast_in_dim(v: OpView) -> TensorType:
    x, shape, dims = v.operand(0), v.attr("shape"), v.attr("broadcast_dimensions")
    if any(size < 0 for size in shape):
        raise VerifyError(f"shape must be non-negative, got {list(shape)}", "broadcast_in_dim.M1", attr="shape")
    if len(dims) != x.rank:
        raise VerifyError(f"broadcast_dimensions has {len(dims)} entries, expected {x.rank} (the operand's rank)", "broadcast_in_dim.C2",
                          attr="broadcast_dimensions")
    check_axes(dims, len(shape), "broadcast_dimensions", "broadcast_in_dim.C3", "broadcast_in_dim.C4")
    for axis, (size, target) in enumerate(zip(x.shape, dims)):
        if size not in (1, shape[target]):
            raise VerifyError(f"operand dimension {axis} has size {size}, which cannot broadcast to size {shape[target]} "
                              f"(result dimension {target})", "broadcast_in_dim.C5", attr="broadcast_dimensions")
    return TensorType(tuple(shape), x.dtype)


def broadcast_in_dim_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `reduce_sum(g)` over the dims x was spread over, reshaped to x.

    Those are the result dims no operand dim maps to and those a size-1 operand dim was
    spread over (JAX's transpose rule)."""
    x = operands[0].type
    kept = {target for size, target in zip(x.shape, v.broadcast_dimensions) if size != 1}
    summed = tuple(d for d in range(g.type.rank) if d not in kept)
    total = b.create("reduce_sum", g, suffix="d_x_sum", axes=summed) if summed else g
    return (total if total.type.shape == x.shape else b.create("reshape", total, suffix="d_x", new_sizes=x.shape),)


BROADCAST_IN_DIM = OpDef(
    "broadcast_in_dim",
    ("x",),
    infer_broadcast_in_dim,
    {
        "shape": Attr(INTS, required=True, doc="the result shape"),
        "broadcast_dimensions": Attr(INTS, required=True, doc="the result dim each operand dim maps to"),
    },
    doc="lax.broadcast_in_dim",
    vjp=broadcast_in_dim_vjp,
)
