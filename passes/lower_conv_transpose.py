"""lower-conv-transpose: `conv_transpose` -> an lhs-dilated `conv` (`lhs_dilation = strides`,
unit window strides, the pads lax.conv_transpose computes); with `transpose_kernel`, an explicit
`reverse` of the kernel plus an I/O role swap, and for groups a reshuffle of its group axis.

The plan (what to reverse, which group axis to move, the conv's attributes) is the op's own
(`convc.ops.conv_grad`); `build_plan` here turns any such plan into ops and is shared by the
other two conv-gradient lowerings.
"""

from __future__ import annotations

from dataclasses import dataclass

from convc.diagnostics import InternalError
from convc.ir import Graph, Op, Value
from convc.ops import view
from convc.ops.conv_grad import PLANS, ConvPlan, GroupMove
from convc.pass_manager import Pass
from convc.rewrite import RewritePattern, Rewriter, apply_patterns


def move_groups(rewriter: Rewriter, value: Value, move: GroupMove, what: str) -> Value:
    """reshape (split the group axis off) -> transpose (put it before `dst`) -> reshape (merge)."""
    split = rewriter.create("reshape", value, suffix=f"{what}_split", new_sizes=move.split_shape(value.type.shape))
    moved = rewriter.create("transpose", split, suffix=f"{what}_moved", permutation=move.permutation(value.type.rank))
    return rewriter.create("reshape", moved, suffix=f"{what}_grouped", new_sizes=move.merged_shape(value.type.shape))


def build_plan(rewriter: Rewriter, plan: ConvPlan, lhs: Value, rhs: Value) -> Value:
    kernel = rhs
    if plan.reverse_dims:
        kernel = rewriter.create("reverse", kernel, suffix="kernel_reversed", dimensions=plan.reverse_dims)
    if plan.kernel_move is not None:
        kernel = move_groups(rewriter, kernel, plan.kernel_move, "kernel")
    result = rewriter.create("conv", lhs, kernel, suffix="conv", **plan.conv_attrs)
    if plan.result_move is not None:
        result = move_groups(rewriter, result, plan.result_move, "result")
    return result


class LowerToPlan(RewritePattern):
    """Replace an op of `kind` by the ops of its plan."""

    def __init__(self, kind: str):
        self.kind = kind

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        result = build_plan(rewriter, PLANS[op.kind](view(op)), *op.operands)
        if result.type != op.result.type:
            raise InternalError(f"lowering '{op.name}' ({op.kind}) gave {result.type}, expected {op.result.type}")
        rewriter.replace_anchor(result)


@dataclass(frozen=True)
class LowerConvTranspose(Pass):
    name = "lower-conv-transpose"
    summary = "conv_transpose becomes an lhs-dilated conv (explicit reverse and I/O swap for transpose_kernel)"

    def run(self, graph: Graph) -> bool:
        return apply_patterns(graph, [LowerToPlan("conv_transpose")])
