"""cpu-batch-group-to-feature-group: a conv with batch_group_count G > 1 (the weight
gradient of a grouped conv) becomes a feature-grouped conv over a re-laid-out lhs.

XLA CPU expands batch_group_count into a conv with G times the work, most of it on
inserted zeros.
With lhs batch B = G*B' split as (G, B') and G moved in front of the lhs feature dim F,
the lhs has batch B' and features G*F, grouped exactly as the rhs out features already
are, so `feature_group_count = G` computes the same result without the expansion
(docs/benchmarks.md: the weight gradient of a G=32 3x3 conv).
Legal on every non-empty batch-grouped conv, and always taken there (no cost model).
"""

from __future__ import annotations

from convc.builders import permutation_between, reshape, split_dim, transpose
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op, Value
from convc.rewrite import Rewriter, pattern_pass


def feature_grouped_lhs(lhs: Value, facts: ConvFacts, rewriter: Rewriter) -> Value:
    """lhs[(g, b'), f, ...] -> lhs'[b', (g, f), ...], every dim staying where it was."""
    groups = facts.batch_groups
    batch_dim, feature_dim = facts.dn.lhs_spec[0], facts.dn.lhs_spec[1]
    shape = lhs.type.shape
    split = reshape(rewriter, lhs, split_dim(shape, batch_dim, (groups, shape[batch_dim] // groups)), "split")
    # label the split dims by the original dim they came from; "G" is the group index
    labels: list[object] = []
    for dim in range(len(shape)):
        labels += ["G", dim] if dim == batch_dim else [dim]
    target: list[object] = []
    for dim in range(len(shape)):
        target += ["G", dim] if dim == feature_dim else [dim]
    moved = transpose(rewriter, split, permutation_between(labels, target), "regroup")
    merged = list(shape)
    merged[batch_dim] //= groups
    merged[feature_dim] *= groups
    return reshape(rewriter, moved, merged, "merged")


class BatchGroupToFeatureGroup(ConvLowering):
    name = "cpu-batch-group-to-feature-group"
    requires = "a batch-grouped conv (batch_group_count > 1)"

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return facts.batch_groups > 1

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        lhs = feature_grouped_lhs(op.operands[0], facts, rewriter)
        attrs = facts.with_attrs(op, batch_group_count=None, feature_group_count=facts.batch_groups)
        rewriter.replace_anchor(rewriter.create("conv", lhs, op.operands[1], suffix="grouped", **attrs))


CpuBatchGroupToFeatureGroup = pattern_pass(
    BatchGroupToFeatureGroup, "batch-grouped convs (grouped weight gradients) become feature-grouped convs")
