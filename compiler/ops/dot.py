"""`dot_general`: `jax.lax.dot_general` with the StableHLO `dot_general` constraints.

lax's nested `dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`
is split into four typed attributes. Constraint ids are the StableHLO spec's C1..C13
(non-quantized), namespaced by the op: `dot_general.C5`. The result is batch dims, then lhs free dims, then rhs free dims.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..diagnostics import VerifyError
from ..ir import TensorType, Value
from .base import DTYPE, INTS, PRECISION, Attr, OpDef, OpFactory, OpView, check_same_dtype

_DIM_ATTRS = (
    # attribute, which operand, range constraint
    ("lhs_batching_dimensions", 0, "dot_general.C5"),
    ("lhs_contracting_dimensions", 0, "dot_general.C6"),
    ("rhs_batching_dimensions", 1, "dot_general.C7"),
    ("rhs_contracting_dimensions", 1, "dot_general.C8"),
)


def _check_in_range(v: OpView, attr: str, operand: int, constraint: str) -> None:
    rank = v.operand(operand).rank
    for dim in v.attr(attr):
        if not 0 <= dim < rank:
            raise VerifyError(f"{attr} has dimension {dim} out of range for rank {rank}", constraint, attr=attr)


def _check_unique(dims: Sequence[int], side: str, constraint: str) -> None:
    if len(set(dims)) != len(dims):
        raise VerifyError(f"{side} batching and contracting dimensions {list(dims)} repeat a dimension", constraint,
                          attr=f"{side}_contracting_dimensions")


def _check_sizes_agree(v: OpView, role: str, constraint: str) -> None:
    lhs, rhs = v.operand(0), v.operand(1)
    lhs_dims, rhs_dims = v.attr(f"lhs_{role}_dimensions"), v.attr(f"rhs_{role}_dimensions")
    for a, b in zip(lhs_dims, rhs_dims):
        if lhs.shape[a] != rhs.shape[b]:
            raise VerifyError(f"{role} dimension sizes differ: lhs dimension {a} has size {lhs.shape[a]}, "
                              f"rhs dimension {b} has size {rhs.shape[b]}", constraint, attr=f"rhs_{role}_dimensions")


def free_dims(rank: int, batching: Sequence[int], contracting: Sequence[int]) -> list[int]:
    """The dims of one operand that appear in the result, in order."""
    return [d for d in range(rank) if d not in batching and d not in contracting]


def infer_dot_general(v: OpView) -> TensorType:
    lhs, rhs = v.operand(0), v.operand(1)
    lhs_batch, rhs_batch = v.attr("lhs_batching_dimensions"), v.attr("rhs_batching_dimensions")
    lhs_contract, rhs_contract = v.attr("lhs_contracting_dimensions"), v.attr("rhs_contracting_dimensions")
    if len(lhs_batch) != len(rhs_batch):
        raise VerifyError(f"lhs has {len(lhs_batch)} batching dimensions but rhs has {len(rhs_batch)}", "dot_general.C1",
                          attr="rhs_batching_dimensions")
    if len(lhs_contract) != len(rhs_contract):
        raise VerifyError(f"lhs has {len(lhs_contract)} contracting dimensions but rhs has {len(rhs_contract)}", "dot_general.C2",
                          attr="rhs_contracting_dimensions")
    _check_unique(lhs_batch + lhs_contract, "lhs", "dot_general.C3")
    _check_unique(rhs_batch + rhs_contract, "rhs", "dot_general.C4")
    for attr, operand, constraint in _DIM_ATTRS:
        _check_in_range(v, attr, operand, constraint)
    _check_sizes_agree(v, "batching", "dot_general.C9")
    _check_sizes_agree(v, "contracting", "dot_general.C10")
    check_same_dtype(lhs, rhs, "dot_general.C13")
    shape = ([lhs.shape[d] for d in lhs_batch]
             + [lhs.shape[d] for d in free_dims(lhs.rank, lhs_batch, lhs_contract)]
             + [rhs.shape[d] for d in free_dims(rhs.rank, rhs_batch, rhs_contract)])
    return TensorType(tuple(shape), v.attr("preferred_element_type") or lhs.dtype)


# --- gradient rule: JAX's dot_general transpose, one helper for both operands -------------

DotDims = tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int]]  # x batch, x contract, y batch, y contract


def _dot_operand_grad(b: OpFactory, v: OpView, g: Value, x: Value, y: Value, dims: DotDims, x_first: bool, suffix: str) -> Value:
    """The cotangent of `x` in a dot of `x` and `y` (`x_first`: x is the lhs): a dot of g with y
    over y's free dims (and the batch dims), transposed into x's dim order. g's type when
    it is wider (preferred_element_type): y is converted to it and the result back to x's."""
    x_batch, x_contract, y_batch, y_contract = dims
    x_free = free_dims(x.type.rank, x_batch, x_contract)
    y_free = free_dims(y.type.rank, y_batch, y_contract)
    n_batch = len(x_batch)
    g_y_free = range(n_batch + len(x_free), g.type.rank) if x_first else range(n_batch, n_batch + len(y_free))
    if y.type.dtype != g.type.dtype:
        y = b.create("convert", y, suffix=f"{suffix}_wide", new_dtype=g.type.dtype)
    product = b.create("dot_general", g, y, suffix=f"{suffix}_dot", lhs_batching_dimensions=tuple(range(n_batch)),
                       rhs_batching_dimensions=tuple(y_batch), lhs_contracting_dimensions=tuple(g_y_free),
                       rhs_contracting_dimensions=tuple(y_free), precision=v.precision,
                       preferred_element_type=v.preferred_element_type)
    contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    order = [*x_batch, *x_free, *contract_by_y]  # x's dim each product dim holds
    inverse = tuple(int(d) for d in np.argsort(order))
    result = product if inverse == tuple(range(len(inverse))) else b.create("transpose", product, suffix=suffix, permutation=inverse)
    if result.type.dtype != x.type.dtype:
        result = b.create("convert", result, suffix=f"{suffix}_narrow", new_dtype=x.type.dtype)
    return result


def dot_general_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """each operand: a `dot_general` of `g` with the other operand over that one's free dims, transposed into its dim order."""
    lhs, rhs = operands
    lb, rb = v.lhs_batching_dimensions, v.rhs_batching_dimensions
    lc, rc = v.lhs_contracting_dimensions, v.rhs_contracting_dimensions
    return (_dot_operand_grad(b, v, g, lhs, rhs, (lb, lc, rb, rc), True, "d_lhs"),
            _dot_operand_grad(b, v, g, rhs, lhs, (rb, rc, lb, lc), False, "d_rhs"))


DOT_GENERAL = OpDef(
    "dot_general",
    ("lhs", "rhs"),
    infer_dot_general,
    {
        "lhs_batching_dimensions": Attr(INTS, (), doc="lhs dims paired with rhs_batching_dimensions"),
        "rhs_batching_dimensions": Attr(INTS, (), doc="rhs dims paired with lhs_batching_dimensions"),
        "lhs_contracting_dimensions": Attr(INTS, (), doc="lhs dims summed against rhs_contracting_dimensions"),
        "rhs_contracting_dimensions": Attr(INTS, (), doc="rhs dims summed against lhs_contracting_dimensions"),
        "precision": Attr(PRECISION, doc='"DEFAULT" | "HIGH" | "HIGHEST" or a pair', constraint="dot_general.C11"),
        "preferred_element_type": Attr(DTYPE, doc="result/accumulation element type"),
    },
    doc="jax.lax.dot_general; emitted as stablehlo.dot_general",
    vjp=dot_general_vjp,
)
