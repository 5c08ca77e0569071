"""`reduce_sum`: `jax.lax.reduce_sum` (a `stablehlo.reduce` with an add body), with the
StableHLO `reduce` constraints C4/C5 on `axes` (`reduce_sum.C4`, `reduce_sum.C5`); and `stacked_reduce_sum`, the same over
several same-typed inputs at once (one variadic `stablehlo.reduce`). `reduce_max` is
`jax.lax.reduce_max` (a max body from the type's lowest value; ids `reduce_max.C4`, `.C5`), and
`reduce_max_grad` its cotangent as JAX's rule has it: ties share the cotangent equally.
`reduce_min` (`jax.lax.reduce_min`, from the type's highest value; its gradient is reduce_max's
of `-x`) and `reduce_prod` (`jax.lax.reduce_prod`, from 1; its gradient `reduce_prod_grad`, the
product of the other elements, exact where x holds zeros) are the ONNX importer's ReduceMin and
ReduceProd, with ids `.C4`, `.C5` as reduce_sum's; the two `_grad` ops share their rules.

The CPU lowering of depthwise weight gradients sums tap products with them: XLA runs a
variadic reduce as one loop over all its inputs, where separate reduces each re-read
(and re-materialize) their shifted input.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnostics import VerifyError
from ..dtypes import is_float
from ..ir import TensorType, Value
from .base import INTS, Attr, OpDef, OpFactory, OpView, check_axes


def infer_reduce_sum(v: OpView) -> TensorType:
    x, axes = v.operand(0), v.attr("axes")
    check_axes(axes, x.rank, "axes", f"{v.opdef.name}.C4", f"{v.opdef.name}.C5")
    return TensorType(tuple(size for dim, size in enumerate(x.shape) if dim not in axes), x.dtype)


def reduce_sum_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `broadcast_in_dim(g)` back over the summed dims."""
    x = operands[0].type
    kept = tuple(d for d in range(x.rank) if d not in v.axes)
    return (b.create("broadcast_in_dim", g, suffix="d_x", shape=x.shape, broadcast_dimensions=kept),)


REDUCE_SUM = OpDef(
    "reduce_sum",
    ("x",),
    infer_reduce_sum,
    {"axes": Attr(INTS, required=True, doc="the dims summed away")},
    doc="lax.reduce_sum",
    vjp=reduce_sum_vjp,
)


def reduce_max_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `reduce_max_grad(x, g)`, each cotangent shared equally among the elements equal to their maximum (as JAX)."""
    return (b.create("reduce_max_grad", operands[0], g, suffix="d_x", axes=v.axes),)


REDUCE_MAX = OpDef(
    "reduce_max",
    ("x",),
    infer_reduce_sum,
    {"axes": Attr(INTS, required=True, doc="the dims maximized away")},
    doc="lax.reduce_max",
    vjp=reduce_max_vjp,
)


def reduce_min_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `reduce_max_grad(negate(x), g)` (min(x) = -max(-x)): each cotangent shared equally among the minima."""
    flipped = b.create("negate", operands[0], suffix="neg_x")
    return (b.create("reduce_max_grad", flipped, g, suffix="d_x", axes=v.axes),)


REDUCE_MIN = OpDef(
    "reduce_min",
    ("x",),
    infer_reduce_sum,
    {"axes": Attr(INTS, required=True, doc="the dims minimized away")},
    doc="lax.reduce_min",
    vjp=reduce_min_vjp,
)

def reduce_prod_vjp(b: OpFactory, v: OpView, operands: Sequence[Value], g: Value) -> Sequence[Value | None]:
    """x: `reduce_prod_grad(x, g)`, each cotangent times the product of the other reduced elements (zeros included)."""
    return (b.create("reduce_prod_grad", operands[0], g, suffix="d_x", axes=v.axes),)


REDUCE_PROD = OpDef(
    "reduce_prod",
    ("x",),
    infer_reduce_sum,
    {"axes": Attr(INTS, required=True, doc="the dims multiplied away")},
    doc="lax.reduce_prod",
    vjp=reduce_prod_vjp,
)


def infer_reduce_grad(v: OpView) -> TensorType:
    """The shape rule of reduce_max_grad and reduce_prod_grad (ids `<op>.C1`, `.C2`, `.C4`, `.C5`, `.L2`)."""
    x, out_grad, name = v.operand(0), v.operand(1), v.opdef.name
    if out_grad.dtype != x.dtype:
        raise VerifyError(f"element types differ: x is {x.dtype}, out_grad {out_grad.dtype}", f"{name}.C1", operand=1)
    if not is_float(x.dtype):
        raise VerifyError(f"{name} needs floating operands, got {x.dtype}", f"{name}.L2", operand=0)
    reduced = infer_reduce_sum(v)
    if out_grad.shape != reduced.shape:
        raise VerifyError(f"out_grad has shape {list(out_grad.shape)}, expected {list(reduced.shape)} (x reduced over axes)",
                          f"{name}.C2", operand=1)
    return x


REDUCE_MAX_GRAD = OpDef(
    "reduce_max_grad",
    ("x", "out_grad"),
    infer_reduce_grad,
    {"axes": Attr(INTS, required=True, doc="the forward reduce_max's axes")},
    doc="the cotangent of x through reduce_max: out_grad divided by the count of maxima, at each maximum of x (0 elsewhere)",
)

REDUCE_PROD_GRAD = OpDef(
    "reduce_prod_grad",
    ("x", "out_grad"),
    infer_reduce_grad,
    {"axes": Attr(INTS, required=True, doc="the forward reduce_prod's axes")},
    doc="the cotangent of x through reduce_prod: out_grad times the product of the other reduced elements of x",
)


def infer_stacked_reduce_sum(v: OpView) -> TensorType:
    first = v.operand(0)
    for index, t in enumerate(v.types):
        if t != first:
            raise VerifyError(f"operand {index} of type {t} does not match operand 0 of type {first}", "stacked_reduce_sum.C1",
                              operand=index)
    summed = infer_reduce_sum(v)
    return TensorType((len(v.types), *summed.shape), first.dtype)


STACKED_REDUCE_SUM = OpDef(
    "stacked_reduce_sum",
    ("inputs",),
    infer_stacked_reduce_sum,
    {"axes": Attr(INTS, required=True, doc="the dims summed away, in every input")},
    variadic=True,
    doc="jnp.stack([lax.reduce_sum(x, axes) for x in inputs])",
)
