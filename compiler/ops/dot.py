"""`dot_general`: `jax.lax.dot_general` with the StableHLO `dot_general` constraints.

lax's nested `dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))`
is split into four typed attributes. Constraint ids are the StableHLO spec's C1..C13
(non-quantized), namespaced by the op: `dot_general.C5`. The result is batch dims, then lhs free dims, then rhs free dims.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import VerifyError
from ..ir import TensorType
from .base import DTYPE, INTS, PRECISION, Attr, OpDef, OpView, check_same_dtype

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


DOT_GENERAL = OpDef(
    "dot_general",
    ("lhs", "rhs"),
    infer_dot_general,
    {
        "lhs_batching_dimensions": Attr(INTS, (), doc="lhs dims paired with rhs_batching_dimensions"),
        "rhs_batching_dimensions": Attr(INTS, ()),
        "lhs_contracting_dimensions": Attr(INTS, (), doc="lhs dims summed against rhs_contracting_dimensions"),
        "rhs_contracting_dimensions": Attr(INTS, ()),
        "precision": Attr(PRECISION, doc='"DEFAULT" | "HIGH" | "HIGHEST" or a pair', constraint="dot_general.C11"),
        "preferred_element_type": Attr(DTYPE, doc="result/accumulation element type"),
    },
    doc="jax.lax.dot_general; emitted as stablehlo.dot_general",
)
