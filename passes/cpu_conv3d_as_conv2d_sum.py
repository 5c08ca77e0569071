"""cpu-conv3d-as-conv2d-sum: a conv with 3 or more spatial dims becomes a sum over the
kernel taps of one spatial dim (the "peeled" dim) of convs with one spatial dim fewer,
the peeled dim folded into the batch.

XLA CPU's 3-D convolution runs far from its 2-D library path, behind PyTorch; 2-D convs
over a batch of N*D slices, one per tap, run several times faster (docs/benchmarks.md).
For tap t of the peeled dim:

    x_t = slice(pad(x), t * rhs_dilation, stride)    # [N, D_out, ...] in the lhs layout
    y_t = conv(merge(N, D_out) of x_t, w[t])          # one spatial dim fewer
    out = split(sum_t y_t) back to [N, D_out, ...]

The peeled dim is the spatial dim right after the lhs batch dim when there is one (no
transpose), else the first; convs with more than 3 spatial dims are peeled repeatedly.
Legal on convs without batch groups and without lhs dilation along the peeled dim, and
always taken there (no cost model).
"""

from __future__ import annotations

from collections.abc import Sequence

from convc.builders import pad_along, permutation_between, reshape, slice_along, sum_values, tap_range, transpose
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.ir import Op, Value
from convc.ops import ConvDimensionNumbers
from convc.rewrite import Rewriter, pattern_pass


def peeled_axis(facts: ConvFacts) -> int:
    """Which spatial dim (index into the spatial attributes) to fold into the batch."""
    batch = facts.dn.lhs_spec[0]
    for axis, dim in enumerate(facts.dn.lhs_spec[2:]):
        if dim == batch + 1:
            return axis
    return 0


# One conv per tap of the peeled dim: past this many the graph would flood (a long kernel
# along that dim is better left to XLA).
MAX_SLABS = 64


def without(spec: Sequence[int], dim: int) -> tuple[int, ...]:
    """A dimension-number spec with `dim` dropped and the dims after it renumbered."""
    return tuple(d - (d > dim) for d in spec if d != dim)


def _after_batch(rank: int, batch: int, dim: int) -> list[int]:
    """The dim order with `dim` moved right after `batch`, the others keeping their order."""
    order = [d for d in range(rank) if d != dim]
    order.insert(order.index(batch) + 1, dim)
    return order


class Conv3dAsConv2dSum(ConvLowering):
    name = "cpu-conv3d-as-conv2d-sum"
    requires = (f"a conv with 3 or more spatial dims, no batch groups, and no lhs dilation and at most {MAX_SLABS} "
                "kernel taps along the peeled dim")

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        if len(facts.kernel_spatial) < 3 or facts.batch_groups != 1:
            return False
        axis = peeled_axis(facts)
        return facts.lhs_dilation[axis] == 1 and facts.kernel_spatial[axis] <= MAX_SLABS

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        axis = peeled_axis(facts)
        dn = facts.dn
        lhs_dim, rhs_dim, out_dim = dn.lhs_spec[2 + axis], dn.rhs_spec[2 + axis], dn.out_spec[2 + axis]
        reduced = ConvDimensionNumbers(without(dn.lhs_spec[:2 + axis] + dn.lhs_spec[3 + axis:], lhs_dim),
                                       without(dn.rhs_spec[:2 + axis] + dn.rhs_spec[3 + axis:], rhs_dim),
                                       without(dn.out_spec[:2 + axis] + dn.out_spec[3 + axis:], out_dim))
        attrs = facts.with_attrs(
            op, dimension_numbers=reduced,
            window_strides=_drop(facts.strides, axis), padding=_drop(facts.pads, axis),
            lhs_dilation=_drop(facts.lhs_dilation, axis), rhs_dilation=_drop(facts.rhs_dilation, axis))
        padded = pad_along(rewriter, op.operands[0], {lhs_dim: (*facts.pads[axis], 0)}, "padded")
        terms = [rewriter.create("conv", self._input_slab(padded, facts, axis, tap, rewriter),
                                 self._kernel_slab(op.operands[1], rhs_dim, tap, rewriter), suffix="slab", **attrs)
                 for tap in range(facts.kernel_spatial[axis])]
        rewriter.replace_anchor(self._unfold(sum_values(rewriter, terms, "sum"), facts, out_dim, rewriter))

    @staticmethod
    def _input_slab(x: Value, facts: ConvFacts, axis: int, tap: int, rewriter: Rewriter) -> Value:
        """The input rows tap `tap` reads, for every output row, merged into the batch."""
        dim, batch = facts.dn.lhs_spec[2 + axis], facts.dn.lhs_spec[0]
        out_size, stride, dilation = facts.out_spatial[axis], facts.strides[axis], facts.rhs_dilation[axis]
        rows = slice_along(rewriter, x, {dim: tap_range(tap, dilation, stride, out_size)}, "rows")
        order = _after_batch(x.type.rank, batch, dim)
        moved = transpose(rewriter, rows, order, "rows_after_batch")
        shape = [moved.type.shape[d] for d in range(x.type.rank)]
        at = order.index(batch)
        return reshape(rewriter, moved, shape[:at] + [shape[at] * shape[at + 1]] + shape[at + 2:], "folded")

    @staticmethod
    def _kernel_slab(w: Value, dim: int, tap: int, rewriter: Rewriter) -> Value:
        taps = slice_along(rewriter, w, {dim: (tap, tap + 1)}, "tap")
        return reshape(rewriter, taps, [s for d, s in enumerate(w.type.shape) if d != dim], "kernel_slab")

    @staticmethod
    def _unfold(total: Value, facts: ConvFacts, out_dim: int, rewriter: Rewriter) -> Value:
        """[N*D_out, ...] in the reduced out layout -> the conv's result in its own layout."""
        batch = without(facts.dn.out_spec, out_dim)[0]
        shape = list(total.type.shape)
        split = shape[:batch] + [facts.out.shape[facts.dn.out_spec[0]], facts.out.shape[out_dim]] + shape[batch + 1:]
        unfolded = reshape(rewriter, total, split, "unfolded")
        order = _after_batch(facts.out.rank, facts.dn.out_spec[0], out_dim)  # the dims `unfolded` holds, in order
        return transpose(rewriter, unfolded, permutation_between(order, range(facts.out.rank)), "layout")


def _drop(values: Sequence[object], axis: int) -> tuple[object, ...]:
    return tuple(v for i, v in enumerate(values) if i != axis)


CpuConv3dAsConv2dSum = pattern_pass(  # 4-D and up: the peeled convs are peeled again
    Conv3dAsConv2dSum, "convs with 3+ spatial dims become sums of convs with one spatial dim fewer (peeled dim in the batch)",
    until_stable=True)
