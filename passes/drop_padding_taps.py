"""drop-padding-taps: kernel taps that only ever meet padding are sliced off a conv.

A 3x3 conv with SAME padding over a 1x1 map multiplies eight of its nine taps by padding
zeros (ResNet's last stage at 32x32 inputs; any network fed images smaller than it was
built for). Those taps add nothing, yet the conv streams them and, on XLA:CPU, a window
larger than its input keeps the conv off YNNPACK's kernels. Along each spatial dim, tap k of
a kernel with stride s and rhs dilation r reads input position o*s + k*r - low for the
outputs o; a tap none of whose positions lies inside the input is dead. The dead taps at
either end of the kernel are dropped with the padding they face, which keeps every output
position: a 1x1 map's conv becomes a 1x1 conv (`cpu-conv-1x1-to-dot` makes it a dot), a
stride-2 3x3 conv over a 2x2 map a full-window 2x2 conv (the high padding no window
reaches then goes too). Exact: only products with padding go. A constant kernel is sliced
here; another one by a `slice`.

Left alone: lhs-dilated convs (a transposed conv's: their dead taps interleave), convs with
negative padding (cpu-crop-negative-padding's), quantized ones (after `lower-quantized`,
which the pipelines run first, there are none) and convs whose `lowering` is pinned.
"""

from __future__ import annotations

from convc.builders import constant_array, slice_along
from convc.conv_facts import ConvFacts, conv_facts
from convc.dtypes import is_quantized
from convc.ir import Op, Value
from convc.ops import view
from convc.ops.conv import spatial
from convc.rewrite import RewritePattern, Rewriter, pattern_pass


def reads_input(tap: int, size: int, stride: int, dilation: int, low: int, outputs: int) -> bool:
    """Whether kernel position `tap` meets an input element at some output position along a
    dim of `size` input elements: o*stride + tap*dilation - low in [0, size) for an o in
    [0, outputs)."""
    start = tap * dilation - low
    first = max(0, -(start // stride))  # the first o whose position is not below 0: ceil(-start / stride)
    last = min(outputs - 1, (size - 1 - start) // stride)
    return first <= last


def dead_ends(size: int, taps: int, stride: int, dilation: int, pads: tuple[int, int], outputs: int) -> tuple[int, int]:
    """How many taps to drop at the low and at the high end of one spatial dim: the dead taps
    there, as many as the padding on that side covers (a pad stays non-negative)."""
    live = [k for k in range(taps) if reads_input(k, size, stride, dilation, pads[0], outputs)]
    if not live:  # every window sees padding only: leave it whole (its value is zero; rare)
        return 0, 0
    return min(live[0], pads[0] // dilation), min(taps - 1 - live[-1], pads[1] // dilation)


def reached_high_padding(size: int, taps: int, stride: int, dilation: int, low: int, outputs: int) -> int:
    """How much high padding the last window reaches: past it a pad only rounds the output
    count down (what a stride leaves over), and dropping it keeps that count."""
    last_position = (outputs - 1) * stride + (taps - 1) * dilation - low
    return max(0, last_position - (size - 1))


def _droppable(op: Op, facts: ConvFacts) -> bool:
    plain = not any(is_quantized(t.dtype) for t in (facts.lhs, facts.rhs, facts.out))
    return (plain and not facts.is_empty() and view(op).lowering is None
            and all(d == 1 for d in facts.lhs_dilation) and all(lo >= 0 and hi >= 0 for lo, hi in facts.pads))


def _kernel_taps(rewriter: Rewriter, kernel: Value, kept: dict[int, tuple[int, int]]) -> Value:
    """The kernel's taps in `kept` (dim -> [start, limit)): a new constant where it is one."""
    values = constant_array(kernel)
    if values is None:
        return slice_along(rewriter, kernel, kept, "taps")
    index = tuple(slice(*kept[dim]) if dim in kept else slice(None) for dim in range(values.ndim))
    return rewriter.create("constant", suffix="taps", value=values[index])


class PaddingTaps(RewritePattern):
    kind = "conv"
    name = "drop-padding-taps"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        facts = conv_facts(op)
        if facts is None or not _droppable(op, facts):
            return
        sizes = spatial(facts.lhs.shape, facts.dn.lhs_spec)
        kept, pads = {}, []
        for i, (size, taps) in enumerate(zip(sizes, facts.kernel_spatial)):
            dilation, (lo, hi) = facts.rhs_dilation[i], facts.pads[i]
            drop_lo, drop_hi = dead_ends(size, taps, facts.strides[i], dilation, (lo, hi), facts.out_spatial[i])
            if drop_lo or drop_hi:
                kept[facts.dn.rhs_spec[2 + i]] = (drop_lo, taps - drop_hi)
            lo, hi, taps = lo - drop_lo * dilation, hi - drop_hi * dilation, taps - drop_lo - drop_hi
            pads.append((lo, min(hi, reached_high_padding(size, taps, facts.strides[i], dilation, lo, facts.out_spatial[i]))))
        if not kept:
            return
        kernel = _kernel_taps(rewriter, op.operands[1], kept)
        conv = rewriter.create("conv", op.operands[0], kernel, suffix="conv", **facts.with_attrs(op, padding=tuple(pads)))
        rewriter.replace_anchor(conv)


DropPaddingTaps = pattern_pass(PaddingTaps, "kernel taps that only ever meet padding are sliced off a conv, with that padding")
