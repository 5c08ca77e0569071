"""Gemm and MatMul: `dot_general`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir import Value
from .registry import Context, Node, Operand, converter
from .shared import broadcast_to, scaled


@converter("Gemm", since=13)
def gemm(node: Node, ctx: Context) -> Sequence[Operand]:
    """`dot_general` of A and B (transA, transB as its contracting dims), times alpha, plus beta * C
    spread by `broadcast_in_dim`."""
    a, b = ctx.operand(node, 0), ctx.operand(node, 1)
    if a.type.rank != 2 or b.type.rank != 2:
        raise ctx.error(f"A {a.type} and B {b.type} must be matrices (rank 2)")
    product = ctx.op("dot_general", a, b, lhs_contracting_dimensions=(0 if node.attrs["transA"] else 1,),
                     rhs_contracting_dimensions=(1 if node.attrs["transB"] else 0,))
    y = scaled(ctx, product, node.attrs["alpha"])
    if not node.input(2):
        return [y]
    c = scaled(ctx, ctx.operand(node, 2), node.attrs["beta"])
    if not _spreads(c.type.shape, y.type.shape):
        raise ctx.error(f"C {c.type} does not broadcast to the product's shape {list(y.type.shape)}")
    return [ctx.op("add", y, broadcast_to(ctx, c, y.type.shape))]


def _spreads(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether numpy broadcasting spreads `shape` to `target`."""
    return len(shape) <= len(target) and all(d in (1, t) for d, t in zip(reversed(shape), reversed(target)))


@converter("MatMul", since=13)
def matmul(node: Node, ctx: Context) -> Sequence[Operand]:
    """`dot_general` over the last two dims, the leading ones as batch dims (spread by numpy broadcasting).
    A 1-D operand is a matrix by numpy's rule (A a row, B a column: a `reshape` before) whose
    dim is dropped from the result (a `reshape` after)."""
    return [matmul_values(ctx, ctx.operand(node, 0), ctx.operand(node, 1))]


def matmul_values(ctx: Context, a: Value, b: Value) -> Value:
    """MatMul's product of two convc values (MatMulInteger's and QLinearMatMul's too)."""
    if a.type.rank == 0 or b.type.rank == 0:
        raise ctx.error(f"A {a.type} and B {b.type} must have rank 1 or more")
    row, column = a.type.rank == 1, b.type.rank == 1
    if row:
        a = ctx.op("reshape", a, new_sizes=(1, *a.type.shape))
    if column:
        b = ctx.op("reshape", b, new_sizes=(*b.type.shape, 1))
    try:
        batch = np.broadcast_shapes(a.type.shape[:-2], b.type.shape[:-2])
    except ValueError:
        raise ctx.error(f"the batch dimensions of A {a.type} and B {b.type} do not broadcast") from None
    a = broadcast_to(ctx, a, (*batch, *a.type.shape[-2:]))
    b = broadcast_to(ctx, b, (*batch, *b.type.shape[-2:]))
    dims = tuple(range(len(batch)))
    y = ctx.op("dot_general", a, b, lhs_batching_dimensions=dims, rhs_batching_dimensions=dims,
               lhs_contracting_dimensions=(len(batch) + 1,), rhs_contracting_dimensions=(len(batch),))
    if not (row or column):
        return y
    shape = (*batch, *(() if row else a.type.shape[-2:-1]), *(() if column else b.type.shape[-1:]))
    return ctx.op("reshape", y, new_sizes=shape)
