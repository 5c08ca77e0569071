"""cpu-pad-before-pointwise: a depthwise conv whose input is an elementwise chain over a 1x1
conv reads no padded copy: the zero padding moves up onto the 1x1 conv's input, the 1x1 conv
and the chain run on the padded size, and a mask zeroes the border they made.

A depthwise conv that `cpu-depthwise-tap-sum` turns into a sum of shifted slices reads its
input padded, and XLA:CPU writes that padded copy as a fusion of its own (the chain, typically
a BatchNorm'd ReLU6, with it): one more pass over the largest tensors of a MobileNet. Padding
the 1x1 conv's input instead (a few features, where the conv's result has many) makes the 1x1
conv, a dot for XLA, write the padded size itself; the chain and the mask fuse into the sum's
loop, which then slices the un-copied dot result. The 1x1 conv does the border's extra rows of
work, and the chain runs again for each tap that reads an element, so only chains of cheap ops
are taken (`CHAIN_KINDS`).

The same values as the padded conv, whatever the chain computes: inside, a 1x1 conv reads only
its own position, so the chain's values are the unpadded ones; on the border, the mask is a
select (`relu_grad` of a constant, ones inside and zeros on the border), which gives the +0 that
padding is whatever the chain made there (a negative value, -0, inf or NaN from a bias or a
kernel's inf times a padded zero). Profitable (the cost model) where the padded size adds at
most `max_extra` rows of 1x1 work per 1000 (large feature maps, where the copy costs most).
Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from convc.builders import pad_along
from convc.conv_facts import ConvFacts, conv_facts
from convc.ir import Op, Value
from convc.ops import view
from convc.rewrite import RewritePattern, Rewriter, pattern_pass

# The elementwise ops the chain may hold, each of the full size, the rest of their operands
# per-feature vectors (bias_add's). Only ops cheap enough to compute again: XLA fuses the chain
# into each tap's slice of the sum, so an input element's chain runs once per tap that reads it.
# A SiLU's logistic is not: EfficientNet-B0's SiLU chains taken ran no faster (benchmarks.md).
CHAIN_KINDS = frozenset({"bias_add", "clamp", "relu", "add", "multiply", "subtract", "maximum", "minimum", "negate"})
MAX_CHAIN = 16  # ops a chain may hold: the walk back from each depthwise conv stays short


# The lowering whose padded copy this rewrite saves: a depthwise conv pinned to another (by
# --autotune or by hand) is left as it is.
TAP_SUM = "cpu-depthwise-tap-sum"


def _is_pointwise_conv(op: Op) -> bool:
    """A 1x1, stride-1, unpadded, ungrouped conv (what cpu-conv-1x1-to-dot makes a dot)."""
    facts = conv_facts(op)
    return (facts is not None and all(k == 1 for k in facts.kernel_spatial) and all(s == 1 for s in facts.strides)
            and all(p == (0, 0) for p in facts.pads) and all(d == 1 for d in facts.lhs_dilation)
            and facts.feature_groups == facts.batch_groups == 1 and facts.accumulates_in_input_type())


def _chain(x: Value, reader: Op, returned: set[int]) -> tuple[list[Op], Op] | None:
    """The elementwise ops that compute `x` from one 1x1 conv's result, and that conv. None
    unless the rest of their operands are vectors (read as they are at any spatial size) and
    each full-size value among them is read only inside the chain (`x` only by `reader`) and none
    is returned, so the rewrite leaves none alive."""
    shape = x.type.shape
    chain: dict[int, Op] = {}
    pointwise: Op | None = None
    pending = [x]
    while pending:
        op = pending.pop().producer
        if op is None:
            return None
        if id(op) in chain or op is pointwise:
            continue
        if op.kind == "conv":
            if pointwise is not None or not _is_pointwise_conv(op):
                return None
            pointwise = op
            continue
        if op.kind not in CHAIN_KINDS or len(chain) == MAX_CHAIN:
            return None
        chain[id(op)] = op
        for operand in op.operands:
            if operand.type.shape == shape:
                pending.append(operand)
            elif operand.type.rank > 1:
                return None
    if pointwise is None:
        return None
    allowed = {*chain, id(pointwise)}
    for op in (*chain.values(), pointwise):
        readers = {id(reader)} if op.result is x else allowed
        if id(op.result) in returned or any(id(user) not in readers for user in op.result.users):
            return None
    return list(chain.values()), pointwise


@dataclass
class PadBeforePointwise(RewritePattern):
    kind = "conv"
    name = "cpu-pad-before-pointwise"
    max_extra: int = 80  # extra 1x1 rows allowed per 1000, over the padded dims

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        facts = conv_facts(op)
        x = op.operands[0]
        pin = view(op).lowering
        if facts is None or not _takes(facts) or pin not in (None, TAP_SUM):
            return
        found = _chain(x, op, {id(v) for v in rewriter.graph.outputs})
        if found is None or not self._profitable(facts):
            return
        chain, pointwise = sorted(found[0], key=rewriter.graph.ops.index), found[1]  # graph order: producers first
        bordered = _bordered_chain(chain, pointwise, x, facts, rewriter)
        masked = rewriter.create("relu_grad", bordered, _mask(bordered, facts, rewriter), suffix="masked")  # bordered where mask > 0, else +0
        unpadded = tuple((0, 0) for _ in facts.pads)
        rewriter.replace_anchor(rewriter.create("conv", masked, op.operands[1], suffix="unpadded", **facts.with_attrs(op, padding=unpadded, lowering=pin)))
        for dead in (*reversed(chain), pointwise):
            rewriter.erase(dead)

    def _profitable(self, facts: ConvFacts) -> bool:
        """At most `max_extra` more 1x1 rows per 1000 for the border."""
        sizes = [facts.lhs.shape[d] for d in facts.dn.lhs_spec[2:]]
        padded = [n + lo + hi for n, (lo, hi) in zip(sizes, facts.pads)]
        return (math.prod(padded) - math.prod(sizes)) * 1000 <= self.max_extra * math.prod(sizes)


def _takes(facts: ConvFacts) -> bool:
    """A 2-D f32 depthwise conv (what cpu-depthwise-tap-sum sums) padded on some side, cropped on none."""
    return (len(facts.out_spatial) == 2 and facts.lhs.dtype == "f32" and facts.feature_groups == facts.in_features > 1
            and facts.batch_groups == 1 and all(d == 1 for d in facts.lhs_dilation) and facts.accumulates_in_input_type()
            and any(lo > 0 or hi > 0 for lo, hi in facts.pads) and all(lo >= 0 and hi >= 0 for lo, hi in facts.pads))


def _bordered_chain(chain: list[Op], pointwise: Op, x: Value, facts: ConvFacts, rewriter: Rewriter) -> Value:
    """`x` computed again at the depthwise conv's padded size: the 1x1 conv over its input
    padded as the depthwise conv pads `x`, then each chain op (`chain` is in graph order)."""
    inner = conv_facts(pointwise)
    assert inner is not None
    # Each spatial dim of `x` (the 1x1 conv's result) is the same-numbered spatial dim of its input.
    input_dim = {out: inner.dn.lhs_spec[2 + i] for i, out in enumerate(inner.dn.out_spec[2:])}
    pads = {input_dim[dim]: (lo, hi, 0) for dim, (lo, hi) in zip(facts.dn.lhs_spec[2:], facts.pads)}
    padded_input = pad_along(rewriter, pointwise.operands[0], pads, "bordered")
    values = {id(pointwise.result): rewriter.create("conv", padded_input, pointwise.operands[1], suffix="bordered",
                                                    **inner.with_attrs(pointwise, lowering=view(pointwise).lowering))}
    for link in chain:
        operands = [values.get(id(v), v) for v in link.operands]
        values[id(link.result)] = rewriter.create(link.kind, *operands, suffix="bordered", **dict(link.attrs))
    return values[id(x)]


def _mask(value: Value, facts: ConvFacts, rewriter: Rewriter) -> Value:
    """Ones inside, zeros on the border the depthwise conv's padding adds: ones of the unpadded
    spatial size, padded, broadcast over the batch and features."""
    spatial_dims = facts.dn.lhs_spec[2:]
    one = rewriter.create("constant", suffix="one", value=np.ones((), np.float32))
    inside = rewriter.create("broadcast_in_dim", one, suffix="inside", shape=tuple(facts.lhs.shape[d] for d in spatial_dims),
                             broadcast_dimensions=())
    bordered = pad_along(rewriter, inside, {i: (lo, hi, 0) for i, (lo, hi) in enumerate(facts.pads)}, "border")
    return rewriter.create("broadcast_in_dim", bordered, suffix="mask", shape=value.type.shape, broadcast_dimensions=tuple(spatial_dims))


CpuPadBeforePointwise = pattern_pass(
    PadBeforePointwise, "a depthwise conv over an elementwise chain of a 1x1 conv reads no padded copy: the 1x1 conv's input is padded "
    "instead, and a select on a constant mask zeroes the border")
