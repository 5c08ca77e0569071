"""The op registry: every op kind convc knows, declared once.

Each module declares a family of ops (`OpDef`: operands, attributes with their kinds and
defaults, the shape rule that verifies and infers, the gradient rule): `conv.py`,
`conv_grad.py` (the transposed conv and the conv gradients), `tensor.py` (the plain tensor
ops), `elementwise.py` (arithmetic and activations), `dot.py`, `broadcast.py`, `reduce.py`, `pool.py` (max_pool, sum_pool), `pool_grad.py` (max_pool's
gradient). `base.py` holds `OpDef`, `Attr` and the typed view, `attr_kinds.py` the
attribute kinds. `OPS` maps each kind to its declaration; `view(op)` reads an op's
attributes with their declared defaults; `gradient_rules_table()` writes docs/autodiff.md's
table of gradient rules.
"""

from __future__ import annotations

from ..diagnostics import suggest
from ..ir import Op
from .base import Attr, ConvDimensionNumbers, Derived, ForeignAttr, OpDef, OpView
from .broadcast import BROADCAST_IN_DIM
from .conv import CONV
from .conv_grad import CONV_GRAD_OPS
from .dot import DOT_GENERAL
from .elementwise import ELEMENTWISE_OPS
from .pool import MAX_POOL, SUM_POOL
from .pool_grad import MAX_POOL_GRAD
from .quantized import QUANTIZED_OPS
from .reduce import REDUCE_MAX, REDUCE_MAX_GRAD, REDUCE_MIN, REDUCE_PROD, REDUCE_PROD_GRAD, REDUCE_SUM, STACKED_REDUCE_SUM
from .relu_grad import RELU_GRAD
from .tensor import TENSOR_OPS

OPS: dict[str, OpDef] = {op.name: op for op in (CONV, *CONV_GRAD_OPS, *TENSOR_OPS, DOT_GENERAL, BROADCAST_IN_DIM, REDUCE_SUM,
                                                  STACKED_REDUCE_SUM, REDUCE_MAX, REDUCE_MAX_GRAD, REDUCE_MIN, REDUCE_PROD, REDUCE_PROD_GRAD,
                                                  MAX_POOL, MAX_POOL_GRAD, SUM_POOL, RELU_GRAD, *ELEMENTWISE_OPS, *QUANTIZED_OPS)}


def register(opdef: OpDef) -> OpDef:
    """Add an op kind (later stages, e.g. the transposed convs, declare theirs here)."""
    OPS[opdef.name] = opdef
    return opdef


def view(op: Op) -> OpView:
    """The op's typed view: `view(op).window_strides`, its declared default filled in."""
    return OPS[op.kind].view(op)


def gradient_rules_table() -> str:
    """docs/autodiff.md's table of gradient rules: one row per op kind, in declaration order:
    where its rule (`OpDef.vjp`) is declared and what it builds, the first line of the rule's
    docstring; "none (G6)" for an op with operands and no rule."""
    rows = ["| op | rule (compiler/ops/) | cotangent of each operand |", "|---|---|---|"]
    for name, opdef in OPS.items():
        if opdef.vjp is not None:
            rows.append(f"| `{name}` | `{opdef.vjp.__module__.rsplit('.', 1)[-1]}.py` | {_summary_line(opdef)} |")
        elif not opdef.operands:
            rows.append(f"| `{name}` | not needed | none: it has no operands (a `wrt` constant's gradient is its cotangent) |")
        else:
            rows.append(f"| `{name}` | none (G6) | none: `convc.grad` refuses a model whose gradient flows through it |")
    return "\n".join(rows) + "\n"


def _summary_line(opdef: OpDef) -> str:
    """The first line of the op's gradient rule's docstring (a rule without one is a bug)."""
    doc = (opdef.vjp.__doc__ or "").strip() if opdef.vjp is not None else ""
    if not doc:
        raise ValueError(f"op '{opdef.name}': its gradient rule has no docstring to describe it in docs/autodiff.md")
    return doc.splitlines()[0].replace("|", "\\|")


def attribute_hint(opdef: OpDef, name: str) -> str:
    """The hint for an attribute `opdef` does not declare: what the op's `foreign` table
    says the name means (another framework's or another op's), else the closest spelling."""
    meaning = opdef.foreign.get(name)
    return meaning.hint(name, opdef.name) if meaning is not None else suggest(name, opdef.attrs)


__all__ = ["OPS", "Attr", "ConvDimensionNumbers", "Derived", "ForeignAttr", "OpDef", "OpView", "attribute_hint",
           "gradient_rules_table", "register", "view"]
