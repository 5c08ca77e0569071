"""cpu-transposed-conv-phases: an lhs-dilated conv (a transposed conv, or the input
gradient of a strided conv) becomes one stride-1 conv per output phase plus an
interleave, so no multiply touches a zero inserted by the dilation (sub-pixel
decomposition).

Along a dim with lhs_dilation D, output position o = q*D + p (phase p) only meets the
kernel taps k = k0(p) + m*D with k0(p) = (pad_lo - p) mod D, and they read input
elements q + c(p) + m with c(p) = (p + k0(p) - pad_lo) / D. So phase p is a plain conv
of the undilated input with kernel taps k0(p)::D and low padding -c(p). The D^n phase
results are interleaved by stacking them on a new dim next to each spatial dim and
merging the two. Legal on stride-1 convs without rhs dilation (the forms transposed
convs and input gradients lower to) with at most MAX_PHASES phases; negative pads become
slices of the input. Its cost model takes every legal conv; `unbalanced=false` takes only
those where the phases beat XLA's own lhs-dilated kernel before the phase convs ran on
Eigen (`worth_it`, see cpu-conv-eigen-path).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

from convc.builders import leading, pad_along, reshape, slice_along, zeros
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op, Value
from convc.rewrite import Rewriter, pattern_pass


@dataclass(frozen=True)
class Phase:
    """One output phase along one spatial dim: which taps it uses and how it pads."""

    first_tap: int
    taps: int  # 0: the phase gets no tap (kernel shorter than the dilation)
    pad_lo: int
    pad_hi: int
    length: int  # output positions in this phase


def phases(in_size: int, out_size: int, kernel: int, dilation: int, pad_lo: int) -> list[Phase]:
    result = []
    for p in range(dilation):
        first = (pad_lo - p) % dilation
        taps = max(0, -(-(kernel - first) // dilation))
        offset = (p + first - pad_lo) // dilation
        length = max(0, -(-(out_size - p) // dilation))
        result.append(Phase(first, taps, -offset, length + taps - 1 - in_size + offset, length))
    return result


# One conv per phase: past this many, the rewrite would flood the graph (and an lhs dilation
# of 2^28, which a model may legally give, would never finish).
MAX_PHASES = 64


def worth_it(facts: ConvFacts) -> bool:
    """XLA CPU has its own kernel for ungrouped stride-1 lhs-dilated convs: uncontended, it beat
    the phases when they are unbalanced (3x3, stride 2: 1x1..2x2 phase kernels) and lost to
    them when every phase gets the same taps (4x4, stride 2). Grouped convs miss that
    kernel, so their phases always pay. Since cpu-conv-eigen-path moves the phase convs to
    Eigen, unbalanced phases win too, so this only applies with `unbalanced=false`
    (figures: docs/benchmarks.md)."""
    balanced = all(k % d == 0 for k, d in zip(facts.kernel_spatial, facts.lhs_dilation))
    return balanced or facts.feature_groups > 1 or facts.batch_groups > 1


@dataclass(frozen=True)
class TransposedConvPhases(ConvLowering):
    name = "cpu-transposed-conv-phases"
    requires = f"an lhs-dilated conv with stride 1, no rhs dilation and at most {MAX_PHASES} phases"
    unbalanced: bool = True  # also when XLA's own kernel applies and the phases get unequal taps (false: not)

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return (any(d > 1 for d in facts.lhs_dilation) and math.prod(facts.lhs_dilation) <= MAX_PHASES
                and all(s == 1 for s in facts.strides) and all(d == 1 for d in facts.rhs_dilation))

    def profitable(self, facts: ConvFacts) -> bool:
        return self.unbalanced or worth_it(facts)

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        in_spatial = [facts.lhs.shape[d] for d in facts.dn.lhs_spec[2:]]
        per_dim = [phases(size, out, k, d, lo) for size, out, k, d, (lo, _) in
                   zip(in_spatial, facts.out_spatial, facts.kernel_spatial, facts.lhs_dilation, facts.pads)]
        longest = [max(p.length for p in dim_phases) for dim_phases in per_dim]
        results = {}
        for combo in product(*(range(len(dim_phases)) for dim_phases in per_dim)):
            chosen = [dim_phases[p] for dim_phases, p in zip(per_dim, combo)]
            # shorter phases get zeros at the end, so all interleave to the same length
            tail = {dim: (0, size - p.length, 0) for dim, p, size in zip(facts.dn.out_spec[2:], chosen, longest)}
            results[combo] = pad_along(rewriter, self._phase_conv(op, facts, chosen, rewriter), tail, "phase_padded")
        rewriter.replace_anchor(self._interleave(results, facts, rewriter))

    @staticmethod
    def _phase_conv(op: Op, facts: ConvFacts, chosen: Sequence[Phase], rewriter: Rewriter) -> Value:
        """The stride-1, undilated conv computing one phase (zeros when a dim has no tap)."""
        if any(p.taps == 0 or p.length == 0 for p in chosen):
            shape = list(facts.out.shape)
            for dim, p in zip(facts.dn.out_spec[2:], chosen):
                shape[dim] = p.length
            return zeros(rewriter, shape, facts.out.dtype, "empty_phase")
        lhs, rhs = op.operands
        lhs = _crop(lhs, facts.dn.lhs_spec[2:], [(p.pad_lo, p.pad_hi) for p in chosen], rewriter)
        taps = slice_along(rewriter, rhs, {dim: (p.first_tap, p.first_tap + (p.taps - 1) * dilation + 1, dilation)
                                           for dim, p, dilation in zip(facts.dn.rhs_spec[2:], chosen, facts.lhs_dilation)},
                           "phase_taps")
        attrs = facts.with_attrs(op, lhs_dilation=None, padding=tuple((max(p.pad_lo, 0), max(p.pad_hi, 0)) for p in chosen))
        return rewriter.create("conv", lhs, taps, suffix="phase", **attrs)

    @staticmethod
    def _interleave(results: dict[tuple[int, ...], Value], facts: ConvFacts, rewriter: Rewriter) -> Value:
        """Merge the phases dim by dim, last spatial dim first: out[q*D + p] = phase p's [q]."""
        spatial_dims = facts.dn.out_spec[2:]
        for axis in reversed(range(len(spatial_dims))):
            merged = {}
            for key in results:
                if key[axis] == 0:
                    parts = [results[key[:axis] + (p,)] for p in range(facts.lhs_dilation[axis])]
                    merged[key[:axis]] = _stack_after(parts, spatial_dims[axis], rewriter)
            results = merged
        (value,) = results.values()
        return leading(rewriter, value, facts.out.shape, "trimmed")


def _stack_after(parts: Sequence[Value], dim: int, rewriter: Rewriter) -> Value:
    """[.., L, ..] x D -> [.., L*D, ..], element q*D + p taken from parts[p][q]."""
    if len(parts) == 1:
        return parts[0]
    shape = parts[0].type.shape
    widened = [reshape(rewriter, v, shape[:dim + 1] + (1,) + shape[dim + 1:], "phase_axis") for v in parts]
    stacked = rewriter.create("concatenate", *widened, suffix="phases", dimension=dim + 1)
    return reshape(rewriter, stacked, shape[:dim] + (shape[dim] * len(parts),) + shape[dim + 1:], "interleaved")


def _crop(value: Value, dims: Sequence[int], pads: Sequence[tuple[int, int]], rewriter: Rewriter) -> Value:
    """Apply the negative parts of `pads` as a slice (XLA CPU misreads negative conv pads)."""
    if all(lo >= 0 and hi >= 0 for lo, hi in pads):
        return value
    shape = value.type.shape
    return slice_along(rewriter, value, {dim: (max(0, -lo), shape[dim] - max(0, -hi)) for dim, (lo, hi) in zip(dims, pads)},
                       "cropped")


CpuTransposedConvPhases = pattern_pass(
    TransposedConvPhases, "lhs-dilated (transposed) convs become one stride-1 conv per output phase plus an interleave")
