"""cpu-conv-1x1-to-dot: a conv that is a matrix product becomes one `dot_general` (a
library GEMM on XLA CPU), which XLA runs faster than the same product as a convolution
(figures in docs/benchmarks.md).

Two forms are matrix products, both ungrouped, without padding or lhs dilation, and both
always taken (no cost model):

* a 1x1 kernel: the lhs feature dim contracts with the kernel's input features; strides
  become a strided `slice` of the input first. The kernel matrix keeps its feature dims'
  order, except that a constant integer kernel of a channels-last conv over more than one
  position becomes an [out, in] constant (its contracting dim minor) and the input a matrix
  of positions: YNNPACK's integer GEMM on XLA:CPU ran the [in, out] form up to 3.2x as long at
  few positions and the [out, in] one no slower beyond noise (docs/benchmarks.md). A
  transpose would not do: XLA folds it into the dot's dimension numbers and keeps the
  constant as it was. At one position XLA runs its own matrix-vector product, not YNNPACK,
  which was up to 9% slower with [out, in];
* a full window, the kernel as large as the input in every spatial dim (no rhs dilation):
  the feature dim and every spatial dim contract, the output's spatial dims are 1. This is
  the kernel gradient of a 1x1 conv (the input against the output gradient, summed over
  batch and space).
"""

from __future__ import annotations

import numpy as np
from convc.builders import constant_array, relayout, reshape, slice_along, transpose
from convc.conv_facts import ConvFacts
from convc.conv_lowering import ConvLowering
from convc.dtypes import is_integer
from convc.ir import Op, Value
from convc.rewrite import Rewriter, pattern_pass


def _one_by_one(facts: ConvFacts) -> bool:
    return all(k == 1 for k in facts.kernel_spatial)


def _full_window(facts: ConvFacts) -> bool:
    lhs_spatial = tuple(facts.lhs.shape[d] for d in facts.dn.lhs_spec[2:])
    return facts.kernel_spatial == lhs_spatial and all(d == 1 for d in facts.rhs_dilation)


class Conv1x1ToDot(ConvLowering):
    name = "cpu-conv-1x1-to-dot"
    requires = ("an ungrouped conv with a kernel of 1 in every spatial dim, no padding and no lhs dilation, "
                "or a kernel as large as the input without padding or dilation")

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        return (facts.feature_groups == facts.batch_groups == 1
                and all(lo == hi == 0 for lo, hi in facts.pads)
                and all(d == 1 for d in facts.lhs_dilation)
                and (_one_by_one(facts) or _full_window(facts)))

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        if _one_by_one(facts):
            self._rewrite_1x1(op, facts, rewriter)
        else:
            self._rewrite_full_window(op, facts, rewriter)

    def _rewrite_1x1(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        lhs, rhs = op.operands
        dn = facts.dn
        if any(s > 1 for s in facts.strides):
            every = {dim: (0, facts.lhs.shape[dim], stride) for dim, stride in zip(dn.lhs_spec[2:], facts.strides)}
            lhs = slice_along(rewriter, lhs, every, "strided")
        product = _integer_rows_product(facts, lhs, rhs, rewriter)
        if product is None:
            product = _matrix_product(facts, lhs, rhs, rewriter)
        # dot_general's result: the lhs dims but its feature dim, in order, then the out feature
        order = [d for d in range(facts.lhs.rank) if d != dn.lhs_spec[1]] + [dn.lhs_spec[1]]
        rewriter.replace_anchor(relayout(rewriter, product, [order.index(d) for d in dn.lhs_spec], dn.out_spec, "layout"))

    def _rewrite_full_window(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        """out[b, o] = sum over (feature, space) of lhs[b, ...] * rhs[o, ...]: the result
        [batch, out feature] is the output itself once its spatial 1s are put back."""
        lhs, rhs = op.operands
        dn = facts.dn
        product = rewriter.create(
            "dot_general", lhs, rhs, suffix="dot",
            lhs_contracting_dimensions=(dn.lhs_spec[1], *dn.lhs_spec[2:]),
            rhs_contracting_dimensions=(dn.rhs_spec[1], *dn.rhs_spec[2:]),
            precision=facts.precision, preferred_element_type=facts.preferred_element_type)
        batch_first = dn.out_spec[0] < dn.out_spec[1]
        ordered = product if batch_first else transpose(rewriter, product, (1, 0), "swapped")
        rewriter.replace_anchor(reshape(rewriter, ordered, facts.out.shape, "spatial"))


def _matrix_product(facts: ConvFacts, lhs: Value, rhs: Value, rewriter: Rewriter) -> Value:
    """The 1x1 conv as `dot_general` of `lhs` (its feature dim contracting) with the kernel as a matrix, its two
    feature dims in their original order: the lhs dims but its feature dim, in order, then the out feature."""
    dn = facts.dn
    out_first = dn.rhs_spec[0] < dn.rhs_spec[1]
    matrix_shape = (facts.out_features, facts.in_features) if out_first else (facts.in_features, facts.out_features)
    return rewriter.create(
        "dot_general", lhs, reshape(rewriter, rhs, matrix_shape, "matrix"), suffix="dot",
        lhs_contracting_dimensions=(dn.lhs_spec[1],), rhs_contracting_dimensions=(1 if out_first else 0,),
        precision=facts.precision, preferred_element_type=facts.preferred_element_type)


def _integer_rows_product(facts: ConvFacts, lhs: Value, rhs: Value, rewriter: Rewriter) -> Value | None:
    """`_matrix_product`'s result for a constant integer kernel and a channels-last lhs of more than one position:
    the lhs as a matrix [positions, in] times the kernel as an [out, in] constant, both contracting their minor dim.
    XLA keeps a dot of two matrices as it is given; a higher-rank lhs it rewrites into the [in, out] form,
    transposing the constant back. None for any other conv."""
    dn = facts.dn
    values = constant_array(rhs)
    if values is None or not is_integer(facts.rhs.dtype) or dn.lhs_spec[1] != lhs.type.rank - 1 or not facts.in_features:
        return None
    positions = lhs.type.num_elements() // facts.in_features
    if positions < 2:
        return None
    out_dim, in_dim = dn.rhs_spec[0], dn.rhs_spec[1]
    rows = np.moveaxis(values, (out_dim, in_dim), (0, 1)).reshape(facts.out_features, facts.in_features)
    kernel = rewriter.create("constant", suffix="rows", value=np.ascontiguousarray(rows))
    matrix = reshape(rewriter, lhs, (positions, facts.in_features), "positions")
    product = rewriter.create(
        "dot_general", matrix, kernel, suffix="dot", lhs_contracting_dimensions=(1,), rhs_contracting_dimensions=(1,),
        precision=facts.precision, preferred_element_type=facts.preferred_element_type)
    return reshape(rewriter, product, (*lhs.type.shape[:-1], facts.out_features), "unflattened")


CpuConv1x1ToDot = pattern_pass(Conv1x1ToDot, "1x1 and full-window ungrouped convs without padding become dot_general (a GEMM on XLA CPU)")
