"""`relu_grad`: the cotangent that flows back through `relu`, `out_grad` where `x > 0` and 0
elsewhere (TF's ReluGrad, `jax.nn.relu`'s derivative: 0 at `x = 0`, as PyTorch's). `relu`'s
gradient rule builds it; no composition of convc's other ops can compare.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import VerifyError
from ..dtypes import is_float
from ..ir import TensorType, Value
from .base import OpDef, OpFactory, OpView


def infer_relu_grad(v: OpView) -> TensorType:
    out_grad, x = v.operand(0), v.operand(1)
    if out_grad != x:
        raise VerifyError(f"out_grad type {out_grad} differs from x type {x}", "relu_grad.C1", operand=1)
    if not is_float(x.dtype):
        raise VerifyError(f"relu_grad needs floating operands, got {x.dtype}", "relu_grad.C2", operand=0)
    return x


def _relu_grad_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """out_grad: `relu_grad(g, x)` (linear in out_grad, the same mask); x: none (it only selects)."""
    return b.create("relu_grad", g, operands[1], suffix="d_out_grad"), None


RELU_GRAD = OpDef("relu_grad", ("out_grad", "x"), infer_relu_grad, vjp=_relu_grad_vjp,
                  doc="out_grad where x > 0, else 0: the cotangent through relu")
