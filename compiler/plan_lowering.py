"""How a conv-gradient op (`conv_transpose`, `conv_backprop_input`, `conv_backprop_filter`)
becomes ops: its plan (convc.ops.conv_grad: what to reverse, which group axis to move, the
forward conv's attributes) built as a kernel `reverse`, group-axis moves and one `conv`.
Shared by the three `lower-conv-*` passes, each a `LowerToPlan` for its op kind."""

from __future__ import annotations

from .diagnostics import InternalError
from .ir import Op, Value
from .ops import view
from .ops.conv_grad import PLANS, ConvPlan, GroupMove
from .rewrite import RewritePattern, Rewriter


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
    """Replace an op of `kind` by the ops of its plan; subclasses set `kind` and `name`."""

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        result = build_plan(rewriter, PLANS[op.kind](view(op)), *op.operands)
        if result.type != op.result.type:
            raise InternalError(f"lowering '{op.name}' ({op.kind}) gave {result.type}, expected {op.result.type}")
        rewriter.replace_anchor(result)
