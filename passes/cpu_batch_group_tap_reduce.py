"""cpu-batch-group-tap-reduce: a batch-grouped conv with one lhs batch and one output
feature per group (the weight gradient of a depthwise conv) becomes, for each output
window, a multiply of the shifted lhs by the rhs summed over everything but the group.

For a depthwise weight gradient the output windows are the kernel taps (9 for 3x3)
and the "kernel" is the whole output gradient, so XLA CPU's batch-group expansion and
its feature-grouped form both run it as huge-kernel grouped convs; as multiplies summed
by one variadic reduce it runs an order of magnitude faster (docs/benchmarks.md). Its cost
model takes convs with at most `max_windows` output windows; legal on f32/f64 convs without
a wider accumulation type, up to MAX_WINDOWS windows.

    out[0, g, s] = sum over f, k of lhs_padded[g, f, s*stride + k*rhs_dilation] * rhs[g, f, k]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

from convc.builders import pad_along, relayout, reshape, slice_along
from convc.conv_facts import WIDE_FLOATS, ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op, Value
from convc.rewrite import Rewriter, pattern_pass

# One multiply per output window: past this many the graph would flood, whatever a pin asks.
MAX_WINDOWS = 256


@dataclass(frozen=True)
class BatchGroupTapReduce(ConvLowering):
    name = "cpu-batch-group-tap-reduce"
    requires = (f"an f32/f64 batch-grouped conv with one lhs batch and one output feature per group, no wider "
                f"preferred_element_type, and at most {MAX_WINDOWS} output windows")
    max_windows: int = 64  # the cost model; a pinned conv may have up to MAX_WINDOWS

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        groups = facts.batch_groups
        one_per_group = facts.lhs.shape[facts.dn.lhs_spec[0]] == groups and facts.out_features == groups
        return (groups > 1 and one_per_group and facts.accumulates_in_input_type() and facts.lhs.dtype in WIDE_FLOATS
                and math.prod(facts.out_spatial) <= MAX_WINDOWS)

    def profitable(self, facts: ConvFacts) -> bool:
        return math.prod(facts.out_spatial) <= self.max_windows

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        lhs = self._dilated_padded_lhs(op.operands[0], facts, rewriter)
        rhs = relayout(rewriter, op.operands[1], facts.dn.rhs_spec, facts.dn.lhs_spec, "aligned")  # out feature as batch
        products = [rewriter.create("multiply", self._window(lhs, window, facts, rewriter), rhs, suffix="product")
                    for window in product(*(range(n) for n in facts.out_spatial))]
        stacked = self._sum_all_but_group(products, facts, rewriter)
        rewriter.replace_anchor(self._out_layout(stacked, facts, rewriter))

    @staticmethod
    def _sum_all_but_group(products: list[Value], facts: ConvFacts, rewriter: Rewriter) -> Value:
        """[windows, G]: every product summed over all dims but the group (lhs batch) dim.

        In two steps: first over the outermost summed dim only, all windows in one
        variadic reduce (one loop reading the input once, with many outputs to spread over
        threads), then over the rest: faster than one variadic reduce over all dims or one
        reduce per window (docs/benchmarks.md)."""
        keep, shape = facts.dn.lhs_spec[0], products[0].type.shape
        summed = [d for d in range(len(shape)) if d != keep]
        first = next((i for i, d in enumerate(summed) if shape[d] > 1), len(summed) - 1)
        outer, rest = summed[:first + 1], summed[first + 1:]
        partial = rewriter.create("stacked_reduce_sum", *products, suffix="partial", axes=tuple(outer))
        if not rest:
            return partial
        kept = [d for d in range(len(shape)) if d not in outer]  # dims of `partial` after its window dim
        return rewriter.create("reduce_sum", partial, suffix="sum", axes=tuple(1 + kept.index(d) for d in rest))

    @staticmethod
    def _dilated_padded_lhs(lhs: Value, facts: ConvFacts, rewriter: Rewriter) -> Value:
        pads = {dim: (lo, hi, dilation - 1) for dim, (lo, hi), dilation in zip(facts.dn.lhs_spec[2:], facts.pads, facts.lhs_dilation)}
        return pad_along(rewriter, lhs, pads, "padded")

    @staticmethod
    def _window(lhs: Value, window: tuple[int, ...], facts: ConvFacts, rewriter: Rewriter) -> Value:
        """The lhs elements output window `window` multiplies with the rhs."""
        return slice_along(rewriter, lhs, {
            dim: (s * stride, s * stride + (k - 1) * dilation + 1, dilation)
            for dim, s, k, stride, dilation in zip(facts.dn.lhs_spec[2:], window, facts.kernel_spatial, facts.strides,
                                                   facts.rhs_dilation)}, "window")

    @staticmethod
    def _out_layout(stacked: Value, facts: ConvFacts, rewriter: Rewriter) -> Value:
        """[windows, G] -> the conv's result: (spatial..., batch 1, feature G), then out layout."""
        spatial_rank = len(facts.out_spatial)
        shaped = reshape(rewriter, stacked, (*facts.out_spatial, 1, facts.batch_groups), "windows")
        return relayout(rewriter, shaped, (spatial_rank, spatial_rank + 1, *range(spatial_rank)), facts.dn.out_spec, "layout")


CpuBatchGroupTapReduce = pattern_pass(
    BatchGroupTapReduce, "depthwise weight gradients (one feature per batch group) become per-window multiply-reduces")
