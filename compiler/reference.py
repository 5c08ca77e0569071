"""An independent oracle: evaluate a Graph op by op with jax.lax (no convc passes,
no convc emitter), for `--check` and the numeric tests.

The oracle computes the exact math an op names, whatever it asks an implementation for:
every conv and dot at Precision.HIGHEST (a GPU's DEFAULT is TF32), and under `evaluate` on
the CPU, floating convs, dots and sums accumulated in f64 and rounded once to the result's
element type. docs/cli.md ("--check") says why and how close the checked module must be.

Each result's shape and element type are jax.lax's, derived from the operands and the op's
attributes, never read from convc's inferred types; each is then compared with convc's type
for that node, and a difference raises `TypeDisagreement` (a wrong shape rule in convc, which
a comparison of values alone could miss)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from .dtypes import QuantType, is_quantized
from .ir import Graph, Op, TensorType
from .ops import view
from .ops.base import ConvDimensionNumbers
from .ops.elementwise import ELEMENTWISE
from .ops.pool import pool_padding

LaxRule = Callable[[Op, Sequence[Any]], Any]
LAX_RULES: dict[str, LaxRule] = {}


def lax_rule(kind: str) -> Callable[[LaxRule], LaxRule]:
    def register(fn: LaxRule) -> LaxRule:
        LAX_RULES[kind] = fn
        return fn
    return register


_WIDE: ContextVar[bool] = ContextVar("convc_reference_wide", default=False)


class TypeDisagreement(Exception):
    """convc's inferred type for a node differs from the type jax.lax gives its result."""


def agreed(op: Op, value: Any) -> Any:
    """`value`, the oracle's result for `op`, once its shape and element type are convc's
    inferred ones (as canonicalized by jax: f64 is f32 without x64); else TypeDisagreement."""
    import jax

    from .dtypes import from_numpy, numpy_dtype

    want = op.result.type
    if tuple(value.shape) == want.shape and value.dtype == jax.dtypes.canonicalize_dtype(numpy_dtype(want.dtype)):
        return value
    got = TensorType(tuple(int(d) for d in value.shape), from_numpy(value.dtype) or str(value.dtype))
    raise TypeDisagreement(f"{op.loc.where()}: node '{op.loc.node or op.name}' ({op.kind}): convc infers {want}, jax.lax gives {got}")


@contextmanager
def _accumulating_in_f64(wide: bool) -> Iterator[None]:
    token = _WIDE.set(wide)
    try:
        yield
    finally:
        _WIDE.reset(token)


def exact_precision() -> Any:
    """The oracle's precision for every conv and dot: an op's own `precision` asks an
    implementation for speed over accuracy, the oracle must not take that offer."""
    from jax import lax

    return lax.Precision.HIGHEST


def result_dtype(op: Op, args: Sequence[Any]) -> Any:
    """The element type jax.lax gives `op` applied to `args`: its preferred_element_type,
    else its first operand's (the conv family, dot_general and the sums)."""
    preferred = lax_dtype(op.attrs.get("preferred_element_type"))
    return args[0].dtype if preferred is None else preferred


def compute_dtype(op: Op, args: Sequence[Any]) -> Any:
    """The element type the oracle accumulates `op` in: f64 for a floating result while
    `evaluate` runs on the CPU, else the op's preferred_element_type (None: its operands')."""
    import jax.numpy as jnp

    if _WIDE.get() and jnp.issubdtype(result_dtype(op, args), jnp.floating):
        return np.float64
    return lax_dtype(op.attrs.get("preferred_element_type"))


def as_result(op: Op, args: Sequence[Any], value: Any) -> Any:
    """`value` rounded (once) to the element type jax.lax gives `op` on `args`."""
    from jax import lax

    return lax.convert_element_type(value, result_dtype(op, args))


def lax_dimension_numbers(value: object) -> Any:
    from jax import lax

    return lax.ConvDimensionNumbers(*value) if isinstance(value, ConvDimensionNumbers) else value


def lax_dtype(name: str | None) -> Any:
    from .dtypes import numpy_dtype

    return None if name is None else numpy_dtype(name)


def _lax_string_pads(lhs_shape: Sequence[int], rhs_shape: Sequence[int], op: Op, padding: str) -> Any:
    """lax refuses string padding on lhs-dilated convs; resolve it as lax would without the
    dilation check: lax.padtype_to_pads on the undilated input and the dilated kernel."""
    from jax import lax

    a = view(op)
    lhs_perm, rhs_perm, _ = lax.conv_dimension_numbers(lhs_shape, rhs_shape, lax_dimension_numbers(a.dimension_numbers))
    window = [0 if k == 0 else (k - 1) * d + 1 for k, d in zip((rhs_shape[i] for i in rhs_perm[2:]), a.rhs_dilation)]
    return lax.padtype_to_pads([lhs_shape[i] for i in lhs_perm[2:]], window, a.window_strides, padding)


def _padded_lhs(lhs: Any, rhs: Any, dims: Any, padding: Sequence[Sequence[int]], lhs_dilation: Sequence[int]) -> Any:
    """`lhs` as a conv reads it: lhs-dilated, then padded, every pad applied by lax.pad (a
    negative one crops, exactly). The conv that follows needs no pad and no lhs dilation:
    XLA:CPU's conv misreads negative low next to positive high padding (openxla/xla#48713),
    and the oracle must not share that bug."""
    from jax import lax

    lhs_perm, _, _ = lax.conv_dimension_numbers(lhs.shape, rhs.shape, dims)
    config = [(0, 0, 0)] * lhs.ndim
    for dim, (lo, hi), d in zip(lhs_perm[2:], padding, lhs_dilation):
        config[dim] = (lo, hi, d - 1)
    return lax.pad(lhs, lax.convert_element_type(0, lhs.dtype), config)


def _crops(padding: Any) -> bool:
    """Whether explicit `padding` holds a negative pad, which the conv must not see."""
    return not isinstance(padding, str) and any(lo < 0 or hi < 0 for lo, hi in padding)


@lax_rule("conv")
def _conv(op: Op, args: Sequence[Any]) -> Any:
    if any(is_quantized(v.type.dtype) for v in (*op.operands, op.result)):
        return _quantized_conv(op, args)
    return as_result(op, args, _lax_conv(op, args[0], args[1], compute_dtype(op, args)))


def _lax_conv(op: Op, lhs: Any, rhs: Any, preferred: Any) -> Any:
    """The conv `op` names on `lhs` and `rhs`, accumulated in `preferred` (None: theirs)."""
    from jax import lax

    v = view(op)
    n = lhs.ndim - 2
    padding = v.padding
    lhs_dilation = v.lhs_dilation
    if isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        padding = _lax_string_pads(lhs.shape, rhs.shape, op, padding)
    dims = lax_dimension_numbers(v.dimension_numbers)
    if _crops(padding):
        lhs = _padded_lhs(lhs, rhs, dims, padding, lhs_dilation)
        padding, lhs_dilation = [(0, 0)] * n, None
    return lax.conv_general_dilated(
        lhs, rhs, v.window_strides, padding,
        lhs_dilation=lhs_dilation, rhs_dilation=v.rhs_dilation,
        dimension_numbers=dims,
        feature_group_count=v.feature_group_count, batch_group_count=v.batch_group_count,
        precision=exact_precision(), preferred_element_type=preferred)


# --- transposed and gradient convs: lax.conv_transpose and jax.vjp of the forward conv ---
# Neither may hand XLA a conv that crops low and pads high (openxla/xla#48713, see
# _padded_lhs): the transposed conv's pads are applied by lax.pad where they crop, and the
# gradients are vjps of lax.pad followed by a VALID conv, whose transposes are a lax.pad and
# convs padded (w - 1, >= 0) (input) or (0, <= 0) (kernel).


def _conv_transpose_pads(op: Op, rhs_shape: Sequence[int], rhs_spec: Sequence[int]) -> list[tuple[int, int]]:
    """Explicit `padding` as lax.conv_transpose hands it to its conv: as given, or with
    `use_consistent_padding` the forward conv's, i.e. (w - 1 - lo, w - 1 - hi)."""
    v = view(op)
    padding = [(lo, hi) for lo, hi in v.padding]
    if not v.use_consistent_padding:
        return padding
    windows = [(rhs_shape[d] - 1) * r + 1 for d, r in zip(rhs_spec[2:], v.rhs_dilation)]
    return [(w - 1 - lo, w - 1 - hi) for w, (lo, hi) in zip(windows, padding)]


def _conv_transpose_one(op: Op, lhs: Any, rhs: Any, dims: Any, float_of_quantized: bool = False) -> Any:
    """lax.conv_transpose; where its conv would crop, on the input dilated and padded by
    lax.pad instead (then strides 1 and no pads: the same conv). `float_of_quantized`: the
    operands are a quantized op's dequantized ones, accumulated wide and left unrounded."""
    from jax import lax

    v = view(op)
    n = lhs.ndim - 2
    strides, padding, consistent = v.strides, v.padding, v.use_consistent_padding
    if not isinstance(padding, str):
        pads = _conv_transpose_pads(op, rhs.shape, lax.conv_dimension_numbers(lhs.shape, rhs.shape, dims).rhs_spec)
        if _crops(pads):
            lhs = _padded_lhs(lhs, rhs, dims, pads, strides)
            strides, padding, consistent = (1,) * n, [(0, 0)] * n, False
    preferred = (np.float64 if _WIDE.get() else None) if float_of_quantized else compute_dtype(op, (lhs, rhs))
    value = lax.conv_transpose(
        lhs, rhs, strides, padding, rhs_dilation=v.rhs_dilation,
        dimension_numbers=dims, transpose_kernel=v.transpose_kernel, precision=exact_precision(),
        preferred_element_type=preferred, use_consistent_padding=consistent)
    return value if float_of_quantized else as_result(op, (lhs, rhs), value)


@lax_rule("conv_transpose")
def _conv_transpose(op: Op, args: Sequence[Any]) -> Any:
    """lax.conv_transpose; with feature groups, one per group (lhs features and the kernel's
    O dim sliced per group) concatenated along the output features."""

    if any(is_quantized(v.type.dtype) for v in (*op.operands, op.result)):
        return _dequantize_op_quantize(op, args, _conv_transpose_float)
    return _conv_transpose_float(op, args[0], args[1])


def _conv_transpose_float(op: Op, lhs: Any, rhs: Any, float_of_quantized: bool = False) -> Any:
    from jax import lax

    v = view(op)
    dims = lax_dimension_numbers(v.dimension_numbers)
    groups = v.feature_group_count
    if groups == 1:
        return _conv_transpose_one(op, lhs, rhs, dims, float_of_quantized)
    lhs_spec, rhs_spec, out_spec = lax.conv_dimension_numbers(lhs.shape, rhs.shape, dims)
    lhs_step, rhs_step = lhs.shape[lhs_spec[1]] // groups, rhs.shape[rhs_spec[0]] // groups
    outputs = [
        _conv_transpose_one(op, lax.slice_in_dim(lhs, g * lhs_step, (g + 1) * lhs_step, axis=lhs_spec[1]),
                            lax.slice_in_dim(rhs, g * rhs_step, (g + 1) * rhs_step, axis=rhs_spec[0]), dims, float_of_quantized)
        for g in range(groups)]
    return lax.concatenate(outputs, out_spec[1])


def _forward_conv(op: Op, lhs_shape: Sequence[int], rhs_shape: Sequence[int], padding: Any) -> Callable[[Any, Any], Any]:
    """The forward conv a gradient op describes, as a function of (input, kernel): lax.pad
    (lhs dilation and pads) then a VALID conv, so that neither vjp holds a conv that crops
    low. Taken as is, lax.conv_general_dilated's input vjp pads its conv by w - 1 - lo on
    the low side (negative for lo >= w) and its kernel vjp by lo."""
    from jax import lax

    v = view(op)
    n = len(lhs_shape) - 2
    if isinstance(padding, str):
        padding = _lax_string_pads(lhs_shape, rhs_shape, op, padding)
    dims = lax_dimension_numbers(v.dimension_numbers)

    def forward(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(
            _padded_lhs(x, w, dims, padding, v.lhs_dilation), w, v.window_strides,
            [(0, 0)] * n, rhs_dilation=v.rhs_dilation, dimension_numbers=dims,
            feature_group_count=v.feature_group_count, batch_group_count=v.batch_group_count,
            precision=exact_precision())
    return forward


def _scatter_padding(op: Op, out_grad: Any, rhs: Any, input_shape: Sequence[int]) -> Any:
    """Without `input_shape`: forward pads whose low side is the op's and whose high side makes
    the forward output exactly out_grad's size, so the vjp is the scatter the op defines."""
    from jax import lax

    v = view(op)
    lhs_spec, rhs_spec, out_spec = lax.conv_dimension_numbers(input_shape, rhs.shape, lax_dimension_numbers(v.dimension_numbers))
    strides, lhs_dilation, rhs_dilation = v.window_strides, v.lhs_dilation, v.rhs_dilation
    out = [out_grad.shape[d] for d in out_spec[2:]]
    windows = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(rhs_spec[2:], rhs_dilation)]
    padding = v.padding
    if isinstance(padding, str):
        padding = lax.padtype_to_pads([o * s for o, s in zip(out, strides)], windows, strides, padding)
    return [(lo, (o - 1) * s + w - lo - ((input_shape[d] - 1) * ld + 1))
            for (lo, _), o, s, w, d, ld in zip(padding, out, strides, windows, lhs_spec[2:], lhs_dilation)]


def _backprop_dtype(op: Op, args: Sequence[Any]) -> Any:
    """A gradient op's operands are (exactly) widened to the type it accumulates in."""
    dtype = compute_dtype(op, args)
    return result_dtype(op, args) if dtype is None else dtype


def _backprop_input_shape(op: Op, out_grad: Any, rhs: Any) -> tuple[int, ...]:
    """The forward input's shape, from the op's attributes and operand shapes alone (the
    sizing rules of docs/transposed-convs.md): `input_shape`; else out_grad's batch times the
    batch groups, the kernel's input features times the feature groups, and per spatial dim
    o * s + p (SAME family) or ceil(((o - 1) * s + w - lo - hi + p) / ld), with p the
    output_padding and w the dilated window."""
    from jax import lax

    if "input_shape" in op.attrs:
        return tuple(op.attrs["input_shape"])
    v = view(op)
    lhs_spec, rhs_spec, out_spec = lax.conv_dimension_numbers(out_grad.shape, rhs.shape, lax_dimension_numbers(v.dimension_numbers))
    out = [out_grad.shape[d] for d in out_spec[2:]]
    windows = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(rhs_spec[2:], v.rhs_dilation)]
    padding = [(0, 0)] * len(out) if v.padding == "VALID" else v.padding
    shape = [0] * out_grad.ndim
    shape[lhs_spec[0]] = out_grad.shape[out_spec[0]] * v.batch_group_count
    shape[lhs_spec[1]] = rhs.shape[rhs_spec[1]] * v.feature_group_count
    for i, (o, s, w, p, ld) in enumerate(zip(out, v.window_strides, windows, v.output_padding, v.lhs_dilation)):
        if isinstance(padding, str):  # SAME, SAME_LOWER
            shape[lhs_spec[2 + i]] = o * s + p
        else:
            lo, hi = padding[i]
            shape[lhs_spec[2 + i]] = -(-((o - 1) * s + w - lo - hi + p) // ld)
    return tuple(shape)


def _backprop_rule(float_op: Callable[[Op, Any, Any, Any], Any]) -> LaxRule:
    """A gradient op's rule: `float_op` in the type it accumulates in, rounded to its result;
    on quantized operands, the spec's dequantize -> that float op (f64 on the CPU) -> quantize."""

    def rule(op: Op, args: Sequence[Any]) -> Any:
        if any(is_quantized(v.type.dtype) for v in (*op.operands, op.result)):
            return _dequantize_op_quantize(op, args, lambda op, a, b, _: float_op(op, a, b, np.float64 if _WIDE.get() else b.dtype))
        return as_result(op, args, float_op(op, args[0], args[1], _backprop_dtype(op, args)))

    return rule


def _backprop_input_value(op: Op, out_grad: Any, rhs: Any, dtype: Any) -> Any:
    """The vjp of the forward conv with respect to its input, in `dtype`."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    out_grad, rhs = (lax.convert_element_type(a, dtype) for a in (out_grad, rhs))
    input_shape = _backprop_input_shape(op, out_grad, rhs)
    padding = view(op).padding
    if "input_shape" not in op.attrs:
        padding = _scatter_padding(op, out_grad, rhs, input_shape)
    forward = _forward_conv(op, input_shape, rhs.shape, padding)
    _, pullback = jax.vjp(lambda x: forward(x, rhs), jnp.zeros(input_shape, dtype))
    return pullback(out_grad)[0]


def _backprop_filter_value(op: Op, lhs: Any, out_grad: Any, dtype: Any) -> Any:
    """The vjp of the forward conv with respect to its kernel, in `dtype`."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    lhs, out_grad = (lax.convert_element_type(a, dtype) for a in (lhs, out_grad))
    kernel_shape = op.attrs["kernel_shape"]
    forward = _forward_conv(op, lhs.shape, kernel_shape, view(op).padding)
    _, pullback = jax.vjp(lambda w: forward(lhs, w), jnp.zeros(kernel_shape, dtype))
    return pullback(out_grad)[0]


lax_rule("conv_backprop_input")(_backprop_rule(_backprop_input_value))
lax_rule("conv_backprop_filter")(_backprop_rule(_backprop_filter_value))


@lax_rule("constant")
def _constant(op: Op, args: Sequence[Any]) -> Any:
    import jax.numpy as jnp

    return jnp.asarray(op.attrs["value"])


@lax_rule("bias_add")
def _bias_add(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    x, bias = args
    axis = view(op).axis % x.ndim
    return x + lax.broadcast_in_dim(bias, x.shape, (axis,))


@lax_rule("add")
def _add(op: Op, args: Sequence[Any]) -> Any:
    return args[0] + args[1]


@lax_rule("multiply")
def _multiply(op: Op, args: Sequence[Any]) -> Any:
    return args[0] * args[1]


@lax_rule("relu")
def _relu(op: Op, args: Sequence[Any]) -> Any:
    """jax.nn.relu: max(x, 0), whose derivative at 0 is 0 (lax.max's would be 1/2), so that
    jax.vjp of the oracle is the gradient `relu_grad` computes."""
    import jax

    return jax.nn.relu(args[0])


@lax_rule("relu_grad")
def _relu_grad(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    out_grad, x = args
    zeros = lax.full_like(out_grad, 0)
    return lax.select(x > lax.full_like(x, 0), out_grad, zeros)


def _elementwise(lax_name: str) -> LaxRule:
    """The rule of an op of compiler/ops/elementwise.py: its jax.lax function, applied as is."""
    def rule(op: Op, args: Sequence[Any]) -> Any:
        from jax import lax

        return getattr(lax, lax_name)(*args)
    return rule


for _entry in ELEMENTWISE:
    if _entry.opdef.name != "clamp":
        lax_rule(_entry.opdef.name)(_elementwise(_entry.lax))


@lax_rule("clamp")
def _clamp(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    v, x = view(op), args[0]
    return lax.clamp(np.array(v.min, x.dtype), x, np.array(v.max, x.dtype))


@lax_rule("reshape")
def _reshape(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.reshape(args[0], op.attrs["new_sizes"])


@lax_rule("transpose")
def _transpose(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.transpose(args[0], op.attrs["permutation"])


@lax_rule("reverse")
def _reverse(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.rev(args[0], op.attrs["dimensions"])


@lax_rule("pad")
def _pad(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    x = args[0]
    fill = lax.convert_element_type(view(op).padding_value, x.dtype)
    return lax.pad(x, fill, [tuple(row) for row in op.attrs["padding_config"]])


@lax_rule("slice")
def _slice(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.slice(args[0], op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs.get("strides"))


@lax_rule("concatenate")
def _concatenate(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.concatenate(list(args), op.attrs["dimension"])


@lax_rule("convert")
def _convert(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.convert_element_type(args[0], lax_dtype(op.attrs["new_dtype"]))



@lax_rule("dot_general")
def _dot_general(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    v = view(op)
    dimension_numbers = ((v.lhs_contracting_dimensions, v.rhs_contracting_dimensions),
                         (v.lhs_batching_dimensions, v.rhs_batching_dimensions))
    return as_result(op, args, lax.dot_general(args[0], args[1], dimension_numbers, precision=exact_precision(),
                                               preferred_element_type=compute_dtype(op, args)))


@lax_rule("broadcast_in_dim")
def _broadcast_in_dim(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.broadcast_in_dim(args[0], op.attrs["shape"], op.attrs["broadcast_dimensions"])


@lax_rule("reduce_sum")
def _reduce_sum(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return as_result(op, args, lax.reduce_sum(_widened(op, args, args[0]), op.attrs["axes"]))


def _widened(op: Op, args: Sequence[Any], x: Any) -> Any:
    """`x`, one of `args`, in the type the oracle sums it in (f64 while `evaluate` runs on the CPU)."""
    from jax import lax

    dtype = compute_dtype(op, args)
    return x if dtype is None else lax.convert_element_type(x, dtype)


@lax_rule("stacked_reduce_sum")
def _stacked_reduce_sum(op: Op, args: Sequence[Any]) -> Any:
    import jax.numpy as jnp
    from jax import lax

    return as_result(op, args, jnp.stack([lax.reduce_sum(_widened(op, args, x), op.attrs["axes"]) for x in args]))


@lax_rule("reduce_max")
def _reduce_max(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.reduce_max(args[0], op.attrs["axes"])


@lax_rule("reduce_min")
def _reduce_min(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.reduce_min(args[0], op.attrs["axes"])


@lax_rule("reduce_prod")
def _reduce_prod(op: Op, args: Sequence[Any]) -> Any:
    """In f64 while `evaluate` runs on the CPU (as the sums), rounded once to x's type."""
    from jax import lax

    return as_result(op, args, lax.reduce_prod(_widened(op, args, args[0]), op.attrs["axes"]))


@lax_rule("reduce_prod_grad")
def _reduce_prod_grad(op: Op, args: Sequence[Any]) -> Any:
    """jax.vjp of lax.reduce_prod at x, pulled back from out_grad."""
    import jax
    from jax import lax

    x, out_grad = (_widened(op, args, a) for a in args)
    _, pullback = jax.vjp(lambda x: lax.reduce_prod(x, op.attrs["axes"]), x)
    return as_result(op, args, pullback(out_grad)[0])


@lax_rule("reduce_max_grad")
def _reduce_max_grad(op: Op, args: Sequence[Any]) -> Any:
    """jax.vjp of lax.reduce_max at x, pulled back from out_grad (ties share it equally)."""
    import jax
    from jax import lax

    x, out_grad = (_widened(op, args, a) for a in args)
    _, pullback = jax.vjp(lambda x: lax.reduce_max(x, op.attrs["axes"]), x)
    return as_result(op, args, pullback(out_grad)[0])


def _lax_max_pool(x: Any, window: Sequence[int], strides: Sequence[int], padding: Any,
                  base_dilation: Sequence[int] | None = None, window_dilation: Sequence[int] | None = None) -> Any:
    """lax.reduce_window(x, lowest, lax.max, ...), its initial value a concrete (numpy) scalar so
    that lax takes it for the max reducer JAX differentiates. For jax.vjp's sake, pads that
    crop are applied first by lax.pad (with the base dilation), as jax.vjp of a reduce_window
    that crops fails on the CPU, and a window dilation is dropped where the window is 1 wide
    (it changes nothing there, and jax.vjp takes none)."""
    import jax.numpy as jnp
    from jax import lax

    lowest = np.array(-np.inf if jnp.issubdtype(x.dtype, jnp.floating) else np.iinfo(x.dtype).min, x.dtype)
    if _crops(padding):
        interior = [0] * x.ndim if base_dilation is None else [d - 1 for d in base_dilation]
        x = lax.pad(x, lowest, [(min(lo, 0), min(hi, 0), i) for (lo, hi), i in zip(padding, interior)])
        padding, base_dilation = [(max(lo, 0), max(hi, 0)) for lo, hi in padding], None
    if window_dilation is not None:
        window_dilation = [d if w > 1 else 1 for w, d in zip(window, window_dilation)]
    return lax.reduce_window(x, lowest, lax.max, window, strides, padding, base_dilation, window_dilation)


def _lax_padding(padding: Any) -> Any:
    """A padding mode as lax takes it, or the [lo, hi] rows as tuples."""
    return padding if isinstance(padding, str) else tuple(tuple(row) for row in padding)


@lax_rule("max_pool")
def _max_pool(op: Op, args: Sequence[Any]) -> Any:
    v = view(op)
    return _lax_max_pool(args[0], v.window_dimensions, v.window_strides, _lax_padding(v.padding), v.base_dilation,
                         v.window_dilation)


@lax_rule("sum_pool")
def _sum_pool(op: Op, args: Sequence[Any]) -> Any:
    """lax.reduce_window(x, 0, lax.add, ...), summed in the oracle's wide type; its initial
    value a concrete (numpy) 0, so that JAX takes it for the sum it differentiates. Pads that
    crop are applied first by lax.pad, as for the max pool."""
    from jax import lax

    v, x = view(op), _widened(op, args, args[0])
    padding, base = _lax_padding(v.padding), v.base_dilation
    zero = np.array(0, x.dtype)
    if _crops(padding):
        padding = tuple(tuple(row) for row in pool_padding(v))
        x = lax.pad(x, zero, [(min(lo, 0), min(hi, 0), d - 1) for (lo, hi), d in zip(padding, base)])
        padding, base = tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding), None
    return as_result(op, args, lax.reduce_window(x, zero, lax.add, v.window_dimensions, v.window_strides, padding, base,
                                                 v.window_dilation))


@lax_rule("max_pool_grad")
def _max_pool_grad(op: Op, args: Sequence[Any]) -> Any:
    """jax.vjp of the max pool at x, pulled back from out_grad (JAX's own select_and_scatter_add)."""
    import jax

    x, out_grad = (_widened(op, args, a) for a in args)
    v = view(op)
    _, pullback = jax.vjp(lambda x: _lax_max_pool(x, v.window_dimensions, v.window_strides, _lax_padding(v.padding)), x)
    return as_result(op, args, pullback(out_grad)[0])


# --- quantized ops: the spec's own semantics ("Quantization computations"): dequantize,
# the float op, quantize. A quantized value is its stored integers (the storage dtype).


def _quant_params(name: str, shape: Sequence[int]) -> tuple[QuantType, Any, Any]:
    """The type's parameters, and its zero points (i32) and scales (expressed type) shaped to
    broadcast against a tensor of `shape` (per axis: along the quantization dimension)."""
    from .dtypes import numpy_dtype, quant_type

    quant = quant_type(name)
    assert quant is not None
    where = [1] * len(shape)
    if quant.axis is not None:
        where[quant.axis] = len(quant.scales)
    zero_points = np.asarray(quant.zero_points, np.int32).reshape(where)
    scales = np.asarray(quant.scales, np.float64).astype(numpy_dtype(quant.expressed)).reshape(where)
    return quant, zero_points, scales


def dequantize(x: Any, name: str) -> Any:
    """`dequantize`: (stored - zero_point) * scale in the expressed type. The spec subtracts in
    the storage type, which can overflow (i8 127 - (-128)); the oracle subtracts exactly, in i32."""
    import jax.numpy as jnp

    _, zero_points, scales = _quant_params(name, x.shape)
    return (x.astype(jnp.int32) - zero_points).astype(scales.dtype) * scales


def quantize(x: Any, name: str) -> Any:
    """`quantize`: x / scale + zero_point, clamped to [storage_min, storage_max], rounded to
    nearest even, converted to the storage type; in the expressed type, in the spec's order."""
    from jax import lax

    quant, zero_points, scales = _quant_params(name, x.shape)
    low, high = quant.limits()
    dtype = scales.dtype
    scaled = x.astype(dtype) / scales + zero_points.astype(dtype)
    clamped = lax.clamp(np.asarray(low, dtype), scaled, np.asarray(high, dtype))
    return lax.round(clamped, lax.RoundingMethod.TO_NEAREST_EVEN).astype(quant.storage_numpy())


@lax_rule("round_nearest_even")
def _round_nearest_even(op: Op, args: Sequence[Any]) -> Any:
    from jax import lax

    return lax.round(args[0], lax.RoundingMethod.TO_NEAREST_EVEN)


@lax_rule("uniform_quantize")
def _uniform_quantize(op: Op, args: Sequence[Any]) -> Any:
    x, source = args[0], op.operands[0].type.dtype
    return quantize(dequantize(x, source) if is_quantized(source) else x, op.result.type.dtype)


@lax_rule("bitcast_convert")
def _bitcast_convert(op: Op, args: Sequence[Any]) -> Any:
    """The same bits as the result's element type (a quantized one's storage)."""
    from jax import lax

    from .dtypes import numpy_dtype

    want = numpy_dtype(op.result.type.dtype)
    return args[0] if args[0].dtype == want else lax.bitcast_convert_type(args[0], want)


@lax_rule("uniform_dequantize")
def _uniform_dequantize(op: Op, args: Sequence[Any]) -> Any:
    return dequantize(args[0], op.operands[0].type.dtype)


def _quantized_conv(op: Op, args: Sequence[Any]) -> Any:
    return _dequantize_op_quantize(op, args, lambda op, lhs, rhs, _: _lax_conv(op, lhs, rhs, np.float64 if _WIDE.get() else None))


def _dequantize_op_quantize(op: Op, args: Sequence[Any], float_op: Callable[[Op, Any, Any, bool], Any]) -> Any:
    """`dequantize_op_quantize` (both quantized) or `hybrid_dequantize_then_op` (a float lhs):
    `float_op` (a conv) of the dequantized operands, exact (f64 on the CPU) and rounded once to
    the expressed type, then quantized to the result type when that is quantized."""
    (lhs, rhs), types = args, [v.type.dtype for v in op.operands]
    floats = [dequantize(a, t) if is_quantized(t) else a for a, t in zip((lhs, rhs), types)]
    expressed = floats[1].dtype
    value = float_op(op, floats[0], floats[1], True).astype(expressed)
    result = op.result.type.dtype
    return quantize(value, result) if is_quantized(result) else value


def lax_function(graph: Graph) -> Callable[..., list[Any]]:
    """The graph as a Python function of its inputs, built from jax.lax calls; each op's
    result type is checked against convc's (`agreed`)."""

    def fn(*inputs: Any) -> list[Any]:
        env: dict[int, Any] = {id(v): x for v, x in zip(graph.inputs, inputs)}
        for op in graph.ops:
            env[id(op.result)] = agreed(op, LAX_RULES[op.kind](op, [env[id(v)] for v in op.operands]))
        return [env[id(v)] for v in graph.outputs]

    return fn


def vjp_function(graph: Graph, wrt: Sequence[str]) -> Callable[..., list[Any]]:
    """`jax.vjp` of the graph, as a function of its inputs then one cotangent per output: the
    outputs, then the gradient of each `wrt` input or constant (what `convc.grad`'s step computes)."""
    import jax

    constants = {op.name: op for op in graph.ops if op.kind == "constant"}

    def fn(*args: Any) -> list[Any]:
        inputs, cotangents = args[:len(graph.inputs)], args[len(graph.inputs):]
        given = {v.name: x for v, x in zip(graph.inputs, inputs)}
        primals = [given[name] if name in given else LAX_RULES["constant"](constants[name], []) for name in wrt]

        def model(*params: Any) -> list[Any]:
            chosen = dict(zip(wrt, params))
            env: dict[int, Any] = {id(v): chosen.get(v.name, x) for v, x in zip(graph.inputs, inputs)}
            for op in graph.ops:
                replaced = op.kind == "constant" and op.name in chosen
                env[id(op.result)] = chosen[op.name] if replaced else agreed(op, LAX_RULES[op.kind](op, [env[id(v)] for v in op.operands]))
            return [env[id(v)] for v in graph.outputs]

        outputs, pullback = jax.vjp(model, *primals)
        return [*outputs, *pullback(list(cotangents))]

    return fn


def oracle_device() -> Any:
    """Where `evaluate` runs: the CPU, whose f64 is native and whose convs and dots do not
    trade accuracy for speed; the default device where PJRT has no CPU."""
    from .runtime import PlatformUnavailableError, first_device

    try:
        return first_device("cpu")
    except PlatformUnavailableError:
        return first_device()


def evaluate(graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The graph's outputs as exact math rounded to their element types (see the module doc)."""
    import jax

    device = oracle_device()
    with jax.enable_x64(True), jax.default_device(device), _accumulating_in_f64(device.platform == "cpu"):
        # x64: f64 graphs stay f64 and the oracle may accumulate in f64 (jax narrows to f32 by default)
        outputs = jax.jit(lax_function(graph))(*inputs)
    return [np.asarray(out) for out in outputs]


def evaluate_vjp(graph: Graph, wrt: Sequence[str], inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`vjp_function(graph, wrt)` on `inputs` (the graph's, then one cotangent per output), as
    exact as `evaluate`: the oracle of `convc --grad ... --check`."""
    import jax

    device = oracle_device()
    with jax.enable_x64(True), jax.default_device(device), _accumulating_in_f64(device.platform == "cpu"):
        outputs = jax.jit(vjp_function(graph, wrt))(*inputs)
    return [np.asarray(out) for out in outputs]
