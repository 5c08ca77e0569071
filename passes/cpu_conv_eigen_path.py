"""cpu-conv-eigen-path: a dense 2-D f32 conv computes one output row more than asked (one
more stride of high padding on a spatial dim), and a `slice` drops it.

XLA:CPU hands every 2-D f32 channels-last conv to YNNPACK, whose kernels run the bench's
dense 3x3 convs well below XLA's own sgemm rate; its Eigen conv, which XLA uses for every
conv YNNPACK declines, runs the same convs faster (figures and the jaxlib they were
measured on: docs/benchmarks.md). XLA offers no per-op choice, but it declines YNNPACK for a conv
whose output is larger than its input in a spatial dim (xla/backends/cpu/ynn_support.cc),
so a conv whose output is as large as its input (SAME, stride 1) grows by one row, which
moves it to Eigen for 1/H more multiply-adds and a copy of the result.

Always exact: the extra row reads only input and padding, and is dropped. Legal (offered to
`--autotune`, allowed as a pin) on ungrouped 2-D convs without lhs dilation; profitable (the
cost model) where YNNPACK would take the conv: f32, at least `min_features` features (YNNPACK takes none with fewer than 17), an
output no larger than the input, and at most `max_extra` extra rows per 1000 output rows
needed to make it outgrow the input (a SAME stride-1 conv needs one).
"""

from __future__ import annotations

from dataclasses import dataclass

from convc.builders import leading
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op
from convc.ops.conv import spatial
from convc.rewrite import Rewriter, pattern_pass

# YNNPACK leaves convs with at most 16 features to XLA's other kernels anyway.
YNN_MIN_FEATURES = 17


def extra_rows(facts: ConvFacts) -> list[int]:
    """Per spatial dim, the output rows to add so the output outgrows the input there."""
    return [max(0, size - out + 1) for size, out in zip(spatial(facts.lhs.shape, facts.dn.lhs_spec), facts.out_spatial)]


def grown_dim(facts: ConvFacts) -> int:
    """The spatial dim (index among the spatial dims) to grow: fewest extra rows, then the
    outermost in the output layout (the cheapest slice)."""
    rows = extra_rows(facts)
    return min(range(len(rows)), key=lambda i: (rows[i], facts.dn.out_spec[2 + i]))


@dataclass(frozen=True)
class ConvEigenPath(ConvLowering):
    name = "cpu-conv-eigen-path"
    requires = "an ungrouped 2-D conv without lhs dilation (what YNNPACK could take)"
    max_extra: int = 125  # extra output rows allowed, per 1000 rows of the grown dim
    min_features: int = YNN_MIN_FEATURES

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        """Exact on every conv; legal (a candidate) only where the kernel choice is open."""
        return (len(facts.out_spatial) == 2 and facts.feature_groups == facts.batch_groups == 1
                and all(d == 1 for d in facts.lhs_dilation))

    def profitable(self, facts: ConvFacts) -> bool:
        if not (facts.lhs.dtype == "f32" and facts.accumulates_in_input_type()
                and max(facts.in_features, facts.out_features) >= self.min_features):
            return False
        rows = extra_rows(facts)
        if any(r == 0 for r in rows):  # already larger than its input somewhere: not YNNPACK's
            return False
        i = grown_dim(facts)
        return rows[i] * 1000 <= self.max_extra * facts.out_spatial[i]

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        i = grown_dim(facts)
        grow = max(1, extra_rows(facts)[i])
        pads = list(facts.pads)
        lo, hi = pads[i]
        pads[i] = (lo, hi + grow * facts.strides[i])
        grown = rewriter.create("conv", *op.operands, suffix="grown", **facts.with_attrs(op, padding=tuple(pads)))
        rewriter.replace_anchor(leading(rewriter, grown, facts.out.shape, "rows"))


CpuConvEigenPath = pattern_pass(
    ConvEigenPath, "dense 2-D f32 convs grow one output row (sliced off) so XLA:CPU runs them on Eigen, not YNNPACK")
