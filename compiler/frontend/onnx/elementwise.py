"""Elementwise ops: Relu, and Add and Mul with numpy broadcasting (`broadcast_in_dim`)."""

from __future__ import annotations

from collections.abc import Sequence

from .registry import Context, ConvertFn, Node, Operand, converter
from .shared import broadcast_pair


@converter("Relu", since=13)
def relu(node: Node, ctx: Context) -> Sequence[Operand]:
    """`relu`."""
    return [ctx.op("relu", ctx.operand(node, 0))]


def _binary(kind: str) -> ConvertFn:
    def convert(node: Node, ctx: Context) -> Sequence[Operand]:
        lhs, rhs = broadcast_pair(ctx, ctx.operand(node, 0), ctx.operand(node, 1))
        return [ctx.op(kind, lhs, rhs)]
    convert.__doc__ = f"`{kind}`, each operand spread to the common shape by `broadcast_in_dim` (numpy broadcasting)."
    return convert


add = converter("Add", since=13)(_binary("add"))
mul = converter("Mul", since=13)(_binary("multiply"))
