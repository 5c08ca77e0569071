"""cpu-depthwise-tap-sum: depthwise and small-group convs as a sum over kernel taps of
shifted input slices times per-channel weights.

XLA CPU runs a grouped conv group by group as tiny patch+GEMM problems, far behind
PyTorch. Written as slices, broadcasts, multiplies and adds, the whole sum is one fused
elementwise loop. The terms together do exactly the conv's multiply-adds, but past some
number of terms XLA stops fusing them into one loop and the sum loses to the native conv
(where: docs/benchmarks.md), so its cost model takes only convs with at most `max_terms`
= taps x input features per group. Legal on f32/f64 feature-grouped convs without lhs dilation or a wider
accumulation type, up to MAX_TERMS terms.

In the lhs layout, with G groups of Cgi input and Cgo output features, the feature
dim is split into (G, Cgi) for the input and (G, Cgo) for the result; term (tap, i)
is `slice(x, tap, i)` broadcast over Cgo, times `w[tap, i, :]` broadcast over the rest.

A sum whose value several fusions would read goes behind an `optimization_barrier`: XLA:CPU
copies a cheap producer into every fusion that reads it, and with it the whole sum, so a
training step's depthwise sum, read through its BatchNorm by the forward clip and by the
backward masks, was computed again inside the kernel gradient's reduce (`shared_downstream`).
The barrier is the identity; jaxlib 0.10.2 drops it before fusing (figures: docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from convc.builders import DimRange, pad_along, relayout, reshape, slice_along, split_dim, sum_values, tap_range
from convc.conv_facts import WIDE_FLOATS, ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op, Value
from convc.rewrite import UNFUSED_READERS, Rewriter, pattern_pass


def terms(facts: ConvFacts) -> int:
    return len(facts.taps()) * (facts.in_features // facts.feature_groups)


# One slice-multiply-add per term: past this many the graph would flood (and its compile
# time with it), whatever a pin asks.
MAX_TERMS = 256

# The elementwise ops a value flows through unchanged in size (each reads one full-size value
# and constants or broadcasts).
ELEMENTWISE_READERS = frozenset({"add", "subtract", "multiply", "divide", "bias_add", "maximum", "minimum", "clamp", "relu",
                                 "negate", "abs", "convert", "logistic", "tanh", "exp"})
SHARED_DEPTH = 8  # how many sole elementwise readers `shared_downstream` follows
MEET_DEPTH = 3  # ... and `_meet`, from each reader of a shared value


def shared_downstream(value: Value, returned: set[int]) -> bool:
    """Whether `value`, or a value computed from it through a chain of sole elementwise readers
    (at most SHARED_DEPTH), is read by several ops one of which XLA fuses producers into (or
    also returned), and whose chains do not meet again in one op (a SiLU's logistic and product
    do, in one fusion): XLA would copy the chain, and the sum behind it, into each such reader."""
    for _ in range(SHARED_DEPTH):
        readers = list({id(user): user for user in value.users}.values())
        count = len(readers) + (id(value) in returned)
        if count > 1 and any(user.kind not in UNFUSED_READERS for user in readers):
            return id(value) in returned or not _meet(readers)
        if count != 1 or not readers or readers[0].kind not in ELEMENTWISE_READERS:
            return False
        value = readers[0].result
    return False


def _meet(readers: list[Op]) -> bool:
    """Whether the chains of sole elementwise readers from each of `readers` (a few ops each)
    reach one common op: XLA then fuses them, and what they read, into one loop."""
    reached: list[set[int]] = []
    for op in readers:
        chain = {id(op)}
        for _ in range(MEET_DEPTH):
            users = list({id(user): user for user in op.result.users}.values())
            if len(users) != 1 or users[0].kind not in ELEMENTWISE_READERS:
                break
            op = users[0]
            chain.add(id(op))
        reached.append(chain)
    return bool(set.intersection(*reached))


@dataclass
class _Layout:
    """Where the (possibly split) feature dims and the spatial dims sit in the working tensors."""

    facts: ConvFacts
    split: bool  # feature dim split into (G, C per group)

    @property
    def feature(self) -> int:
        return self.facts.dn.lhs_spec[1]

    def shifted(self, dim: int) -> int:
        return dim + 1 if self.split and dim > self.feature else dim

    def spatial_dims(self) -> list[int]:
        return [self.shifted(d) for d in self.facts.dn.lhs_spec[2:]]

    def work_shape(self) -> tuple[int, ...]:
        """The accumulator: the result in lhs layout, feature dim split into (G, Cgo) when split."""
        f, shape = self.facts, _result_in_lhs_layout(self.facts)
        groups = f.feature_groups
        return split_dim(shape, self.feature, (groups, f.out_features // groups)) if self.split else shape


def _result_in_lhs_layout(facts: ConvFacts) -> tuple[int, ...]:
    """The conv's result shape with its dims laid out as the lhs's."""
    shape = list(facts.lhs.shape)
    for dim, size in zip(facts.dn.lhs_spec[2:], facts.out_spatial):
        shape[dim] = size
    shape[facts.dn.lhs_spec[1]] = facts.out_features
    return tuple(shape)


@dataclass(frozen=True)
class DepthwiseTapSum(ConvLowering):
    name = "cpu-depthwise-tap-sum"
    requires = (f"an f32/f64 feature-grouped conv without lhs dilation or a wider preferred_element_type, "
                f"with at most {MAX_TERMS} terms (taps x input features per group)")
    max_terms: int = 100  # the cost model; a pinned conv may have up to MAX_TERMS

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return (facts.feature_groups > 1 and facts.batch_groups == 1
                and all(d == 1 for d in facts.lhs_dilation)
                and facts.accumulates_in_input_type() and facts.lhs.dtype in WIDE_FLOATS
                and terms(facts) <= MAX_TERMS)

    def profitable(self, facts: ConvFacts) -> bool:
        return terms(facts) <= self.max_terms

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        groups = facts.feature_groups
        per_group_in, per_group_out = facts.in_features // groups, facts.out_features // groups
        layout = _Layout(facts, split=(per_group_in, per_group_out) != (1, 1))
        x = self._padded_input(op.operands[0], facts, rewriter)
        if layout.split:
            x = reshape(rewriter, x, split_dim(x.type.shape, layout.feature, (groups, per_group_in)), "grouped")
        products = [
            rewriter.create("multiply", self._input_term(x, tap, i, layout, rewriter),
                            self._weight_term(op.operands[1], tap, i, layout, rewriter), suffix="term")
            for tap in facts.taps() for i in range(per_group_in)]
        total = sum_values(rewriter, products, "sum")
        result = reshape(rewriter, total, _result_in_lhs_layout(facts), "merged")
        result = relayout(rewriter, result, facts.dn.lhs_spec, facts.dn.out_spec, "layout")
        if shared_downstream(op.result, {id(v) for v in rewriter.graph.outputs}):
            result = rewriter.create("optimization_barrier", result, suffix="once")
        rewriter.replace_anchor(result)

    @staticmethod
    def _padded_input(x: Value, facts: ConvFacts, rewriter: Rewriter) -> Value:
        return pad_along(rewriter, x, {dim: (lo, hi, 0) for dim, (lo, hi) in zip(facts.dn.lhs_spec[2:], facts.pads)}, "padded")

    @staticmethod
    def _input_term(x: Value, tap: tuple[int, ...], i: int, layout: _Layout, rewriter: Rewriter) -> Value:
        """The input window at `tap` (strided like the conv), input feature i of every group."""
        f = layout.facts
        ranges: dict[int, DimRange] = {
            dim: tap_range(k, dilation, stride, out)
            for dim, k, out, stride, dilation in zip(layout.spatial_dims(), tap, f.out_spatial, f.strides, f.rhs_dilation)}
        if layout.split:
            ranges[layout.feature + 1] = (i, i + 1, 1)
        window = slice_along(rewriter, x, ranges, "window")
        shape = layout.work_shape()
        if window.type.shape == shape:
            return window
        return rewriter.create("broadcast_in_dim", window, suffix="spread", shape=shape,
                               broadcast_dimensions=tuple(range(len(shape))))

    @staticmethod
    def _weight_term(w: Value, tap: tuple[int, ...], i: int, layout: _Layout, rewriter: Rewriter) -> Value:
        """w[tap, i, :] as a vector over output features, broadcast over the work shape."""
        f = layout.facts
        at = {**{dim: (k, k + 1) for dim, k in zip(f.dn.rhs_spec[2:], tap)}, f.dn.rhs_spec[1]: (i, i + 1)}
        column = slice_along(rewriter, w, at, "weight")
        groups = f.feature_groups
        vector_shape = (groups, f.out_features // groups) if layout.split else (f.out_features,)
        vector = reshape(rewriter, column, vector_shape, "vector")
        dims = (layout.feature, layout.feature + 1) if layout.split else (layout.feature,)
        return rewriter.create("broadcast_in_dim", vector, suffix="scale", shape=layout.work_shape(), broadcast_dimensions=dims)


CpuDepthwiseTapSum = pattern_pass(
    DepthwiseTapSum, "depthwise / small-group convs become sums of shifted slices times per-channel weights")
