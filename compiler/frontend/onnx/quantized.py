"""QuantizeLinear, DequantizeLinear and QLinearConv: convc's quantized types and ops (issue 19).

A quantized ONNX tensor (int8/uint8/int16 with a scale and zero point) is a convc value of
a `!quant.uniform` type with the same parameters: QuantizeLinear is `uniform_quantize`,
DequantizeLinear `uniform_dequantize`, and QLinearConv a `conv` of the quantized input with
the weights (an initializer, made a quantized constant) into its i32 accumulator, requantized
to y's type by ONNX Runtime's arithmetic. ONNX rounds x / scale to nearest even and then adds
the zero point; StableHLO's `uniform_quantize` adds first and then rounds. The two differ by
one step where x / scale is a tie and the zero point is odd, so a QuantizeLinear with an odd
zero point imports as ONNX's steps (`quantize_linear`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...builders import rounded_quotient
from ...diagnostics import VerifyError
from ...dtypes import QuantType, is_quantized, numpy_dtype, parse_quant, quant_type
from ...ir import TensorType, Value
from ...ops.conv import dilate_dim
from ...ops.conv_grad import CONV_BACKPROP_INPUT, plan_backprop_input
from ...verify import coerce_attrs
from .conv import transpose_attrs
from .pooling import PoolWindow, pool_window
from .registry import UNSUPPORTED_ATTR, Context, Node, Operand, converter
from .shared import normalized_axis, spatial_attr, spread_along, unless_ones, window_pads

# ONNX zero-point dtype -> the quantized storage type of the same values
_STORAGE = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8", np.dtype(np.int16): "i16"}


def _quant_spelling(ctx: Context, node: Node, scale: np.ndarray, zero_point: np.ndarray | None, rank: int, axis: int) -> str:
    """The `!quant.uniform` type of ONNX's (scale, zero_point) for a tensor of `rank`: per
    tensor for one scale, else per axis along `axis`. No zero point: uint8, 0."""
    if node.attrs.get("block_size", 0):
        raise ctx.error(f"block_size {node.attrs['block_size']} (blocked quantization) is not supported")
    storage = _STORAGE.get(np.dtype(np.uint8) if zero_point is None else zero_point.dtype)
    if storage is None:
        raise ctx.error(f"zero point type {zero_point.dtype if zero_point is not None else ''} is not one of int8, uint8, int16")
    scales = np.asarray(scale, np.float32).reshape(-1)
    zero_points = np.zeros(scales.shape, np.int64) if zero_point is None else np.asarray(zero_point, np.int64).reshape(-1)
    if zero_points.size != scales.size or scale.ndim > 1:
        raise ctx.error(f"scale {list(scale.shape)} and zero point {list(zero_points.shape)} must be scalars or of one 1-D size")
    params = [f"{float(s)!r}:{int(z)}" for s, z in zip(scales, zero_points, strict=True)]
    if scales.size == 1:  # a scalar, or one scale for a dimension of size 1: the same values
        return f"!quant.uniform<{storage}:f32, {params[0]}>"
    return f"!quant.uniform<{storage}:f32:{normalized_axis(ctx, axis, rank)}, {{{', '.join(params)}}}>"


def quant_params(ctx: Context, node: Node, first: int, rank: int, axis: int | None = None,
                 absent_zero: np.ndarray | None = None) -> str:
    """The quantized type of inputs `first` (scale) and `first + 1` (zero point), known at
    import, per axis along `axis` (default: the node's `axis` attribute, 1 when absent). No
    zero point: `absent_zero` (the 0 of the quantized value's type), else uint8 0."""
    scale = ctx.required_array(node, first, "the scale")
    zero_point = ctx.required_array(node, first + 1, "the zero point") if node.input(first + 1) else absent_zero
    return _quant_spelling(ctx, node, scale, zero_point, rank, node_axis(node) if axis is None else axis)


def node_axis(node: Node) -> int:
    """The node's `axis`; opset 10 declares none (per-tensor only), where it is 1 as from opset 13."""
    try:
        return int(node.attrs["axis"])
    except KeyError:
        return 1


def checked_type(ctx: Context, spelling: str, rank: int) -> str:
    """`spelling` canonicalized and checked by the quantized-type rules (as an O6 here)."""
    from ...dtypes import QuantTypeError, tensor_element_type

    try:
        name = tensor_element_type(spelling, (0,) * rank)
    except QuantTypeError as err:
        if err.constraint not in ("quant.C13",):  # the shape is checked by the op itself
            raise ctx.error(f"quantization parameters: {err.message}") from None
        name = parse_quant(spelling).spelling()
    assert name is not None
    return name


@converter("QuantizeLinear", since=10)
def quantize_linear(node: Node, ctx: Context) -> Sequence[Operand]:
    """x quantized to the type of y_scale and y_zero_point (per tensor, or per axis along `axis`; int8, uint8, int16)
    by ONNX's arithmetic, saturate(round(x / y_scale) + y_zero_point): `uniform_quantize` where every zero point is
    even (it adds the zero point before rounding, which is the same then), else those steps spelled out for an f32 x
    (an odd zero point moves a tie to the other even integer), the stored integers given y's type."""
    x = ctx.operand(node, 0)
    spelling = checked_type(ctx, quant_params(ctx, node, 1, x.type.rank), x.type.rank)
    y = quant_type(spelling)
    assert y is not None
    if x.type.dtype != "f32" or not any(zero % 2 for zero in y.zero_points):
        return [ctx.op("uniform_quantize", x, new_dtype=spelling)]
    axis = 0 if y.axis is None else y.axis
    scales = _along_channels(ctx, np.asarray(y.scales, np.float32), x, "y_scale", axis)
    steps = ctx.op("round_nearest_even", ctx.op("divide", x, scales))
    zero_points = _along_channels(ctx, np.asarray(y.zero_points, np.float32), steps, "y_zero_point", axis)
    return [_stored_as(ctx, ctx.op("add", steps, zero_points), y)]


def quantized_x(ctx: Context, node: Node) -> Value:
    """Input 0, x, as a value of the quantized type x_scale and x_zero_point (inputs 1 and 2) say: a value of that
    type (a QuantizeLinear's or a QLinear op's output) as it is, or plain integers of its storage type (an int8 or
    uint8 graph input, a Cast's result) given that type by `bitcast_convert`, which keeps the integers:
    (x - zero point) * scale either way."""
    x = ctx.operand(node, 0)
    plain = None if is_quantized(x.type.dtype) else np.zeros((), numpy_dtype(x.type.dtype))  # ONNX's absent zero point
    expected = checked_type(ctx, quant_params(ctx, node, 1, x.type.rank, absent_zero=plain), x.type.rank)
    if x.type.dtype == expected:
        return x
    quant = quant_type(expected)
    assert quant is not None
    if x.type.dtype == quant.storage_dtype():
        return ctx.op("bitcast_convert", x, new_dtype=expected)
    raise ctx.error(f"x is {x.type}, neither quantized with x_scale and x_zero_point ({expected}) nor "
                    f"plain integers of its storage type {quant.storage_dtype()}")


@converter("DequantizeLinear", since=10)
def dequantize_linear(node: Node, ctx: Context) -> Sequence[Operand]:
    """`uniform_dequantize` of x quantized with x_scale and x_zero_point (`quantized_x`)."""
    return [ctx.op("uniform_dequantize", quantized_x(ctx, node))]


# ConvTranspose's W as a forward conv's kernel: W's integers -> (the kernel, each of its output channels' index
# along W's quantization axis)
Kernel = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _quantized_weights(ctx: Context, node: Node, storage: str, kernel: Kernel | None = None) -> Value:
    """W (an initializer; `kernel` of it, when given) as a quantized constant of X's storage type, per tensor or
    per axis 0: its real values as an f32 constant, quantized again (which gives back exactly the stored integers).
    An int8 W for a uint8 X is the same reals with 128 added to values and zero points."""
    w = ctx.required_array(node, 3, "W")
    spelling = checked_type(ctx, quant_params(ctx, node, 4, w.ndim, axis=0), w.ndim)
    quant = parse_quant(spelling)
    stored, zero_points, scale_list = w.astype(np.int64), np.asarray(quant.zero_points, np.int64), list(quant.scales)
    if kernel is not None:
        stored, channels = kernel(stored)
        if quant.axis is not None:
            scale_list, zero_points = [scale_list[i] for i in channels], zero_points[channels]
    if quant.storage != storage:
        if {quant.storage, storage} != {"i8", "u8"}:
            raise ctx.error(f"W's storage type {quant.storage} cannot be made X's ({storage})")
        shift = 128 if storage == "u8" else -128
        stored, zero_points = stored + shift, zero_points + shift
    scales = np.asarray(scale_list, np.float64)
    where = (-1,) + (1,) * (w.ndim - 1) if quant.axis is not None else ()
    real = ((stored - zero_points.reshape(where)) * scales.reshape(where)).astype(np.float32)
    params = [f"{s!r}:{int(z)}" for s, z in zip(scale_list, zero_points, strict=True)]
    body = params[0] if quant.axis is None else "{" + ", ".join(params) + "}"
    target = f"!quant.uniform<{storage}:f32{'' if quant.axis is None else ':0'}, {body}>"
    return ctx.create("uniform_quantize", ctx.constant(real, "w_real"), suffix="w", new_dtype=target)


def _accumulator_type(scales: np.ndarray) -> str:
    """The i32 accumulator of a quantized conv (NCHW): scale x_scale * w_scale, per output channel
    (dimension 1) when the weights are, zero point 0."""
    params = [f"{float(s)!r}:0" for s in scales]
    if len(params) == 1:
        return f"!quant.uniform<i32:f32, {params[0]}>"
    return f"!quant.uniform<i32:f32:1, {{{', '.join(params)}}}>"


@converter("QLinearConv", since=10)
def qlinear_conv(node: Node, ctx: Context) -> Sequence[Operand]:
    """`conv` of the quantized x with W made a quantized constant (per tensor or per output channel), its result the
    i32 accumulator (scale x_scale * w_scale, zero point 0), whose stored integers (`bitcast_convert`) plus B are
    requantized to y's type in f32 as ONNX Runtime's kernel does (`requantized`). group, strides, dilations, pads,
    auto_pad.

    ONNX leaves QLinearConv's rounding to the runtime. The spec's quantized `conv` with y's type as its result (or
    the quantized `add` of B that TensorFlow's converter spells) rounds twice in f32, and differs from ONNX Runtime
    by a step where the exact value lies within f32 rounding of a half step; through a deep network such steps
    grow (docs/onnx.md), so the import spells ONNX Runtime's arithmetic."""
    return _conv_window(node, ctx, onnxruntime_arithmetic=True)


def qdq_conv(node: Node, ctx: Context) -> Sequence[Operand]:
    """A QDQ pattern around a Conv (qdq.py), its inputs QLinearConv's: what it says, the spec's dequantize -> conv ->
    quantize: `conv` of the quantized x and W into y's type; with B its i32 accumulator, `uniform_dequantize`,
    `bias_add` of B * x_scale * w_scale and `uniform_quantize` to y's type, the spec's quantized add as StableHLO from
    TensorFlow's converter spells a biased conv. (ONNX Runtime runs some such patterns as its QLinearConv and others
    as a float Conv between casts, by rules of its own.)"""
    return _conv_window(node, ctx, onnxruntime_arithmetic=False)


def _conv_window(node: Node, ctx: Context, onnxruntime_arithmetic: bool) -> Sequence[Operand]:
    """QLinearConv's (or its QDQ pattern's) inputs as a quantized `conv` with the node's window attributes."""
    def window(x: Value, w: Value, result: str) -> Value:
        rank = x.type.rank - 2
        kernel = w.type.shape[2:]
        strides, dilations = spatial_attr(ctx, node, "strides", rank), spatial_attr(ctx, node, "dilations", rank)
        pads = window_pads(ctx, node, x.type.shape[2:], kernel, strides, dilations)
        group = node.attrs["group"]
        return ctx.op("conv", x, w, preferred_element_type=result, window_strides=unless_ones(strides), padding=pads,
                      rhs_dilation=unless_ones(dilations), feature_group_count=None if group == 1 else group)

    return _quantized_window(node, ctx, window, lambda w: w.type.shape[0], onnxruntime_arithmetic=onnxruntime_arithmetic)


def qdq_gemm(node: Node, ctx: Context) -> Sequence[Operand]:
    """A QDQ pattern around a Gemm (qdq.py: alpha and beta 1, A not transposed), its inputs QLinearConv's: as
    `qdq_conv`, the product of the quantized A [N, K] and B as a 1x1 `conv` of A viewed as N x K x 1 x 1 with B made a
    quantized kernel [M, K, 1, 1] (B's rows, or with transB 0 its columns, per tensor or per output channel), so
    that the weights stay 8-bit integers into `lower-quantized` (the dequantized weights as a float Gemm stream
    four times the bytes on every call)."""
    trans_b = node.attrs["transB"]

    def rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        kernel = w if trans_b else w.T
        return kernel, np.arange(kernel.shape[0])

    def product(a: Value, w: Value, result: str) -> Value:
        (outputs, depth), (batch, *rest) = w.type.shape, a.type.shape
        if rest != [depth]:
            raise ctx.error(f"A {a.type} must be a matrix of {depth} columns, as B has (transB {trans_b})")
        lhs = ctx.op("reshape", a, new_sizes=(batch, depth, 1, 1))
        kernel = ctx.op("reshape", w, new_sizes=(outputs, depth, 1, 1))
        return ctx.op("reshape", ctx.op("conv", lhs, kernel, preferred_element_type=result), new_sizes=(batch, outputs))

    return _quantized_window(node, ctx, product, lambda w: w.type.shape[0], rows, onnxruntime_arithmetic=False)


def qlinear_conv_transpose(node: Node, ctx: Context) -> Sequence[Operand]:
    """A QDQ pattern around a ConvTranspose (qdq.py), its inputs QLinearConv's: as `qdq_conv` (y's type, or with
    B the i32 accumulator, `bias_add` and `uniform_quantize`), the window op `conv_backprop_input` of the quantized x
    with W made a quantized constant per tensor. W per channel (W's axis 1, the output channels) is a kernel
    StableHLO's quantized transposed conv cannot take (it reverses the kernel: B8), so that window op is the forward
    `conv` the transposed conv lowers to, lhs-dilated, its kernel W reversed and regrouped at import (per axis 0)."""
    w_array = ctx.required_array(node, 3, "W")
    if ctx.required_array(node, 4, "w_scale").size == 1:
        def transposed(x: Value, w: Value, result: str) -> Value:
            return ctx.op("conv_backprop_input", x, w, preferred_element_type=result, **transpose_attrs(node, ctx, x.type, w.type))

        return _quantized_window(node, ctx, transposed, lambda w: w.type.shape[1] * node.attrs["group"], onnxruntime_arithmetic=False)

    def forward(x: Value, w: Value, result: str) -> Value:
        return ctx.op("conv", x, w, preferred_element_type=result, **_forward_conv_attrs(node, ctx, x, w_array.shape))

    return _quantized_window(node, ctx, forward, lambda w: w.type.shape[0], _forward_kernel(node.attrs["group"]),
                             onnxruntime_arithmetic=False)


def _forward_kernel(group: int) -> Kernel:
    """ConvTranspose's W [C, M / group, *k] as the kernel of the forward conv it is, [M, C / group, *k] (OI...):
    spatially reversed, its group axis moved from the input to the output channels (group-major), as
    conv_backprop_input's plan does; output channel g * M / group + j takes W's channel j's parameters."""
    def arrange(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        channels, per_group, *kernel = w.shape
        flipped = w[(slice(None), slice(None), *(slice(None, None, -1),) * len(kernel))]
        grouped = flipped.reshape(group, channels // group, per_group, *kernel).swapaxes(1, 2)
        return grouped.reshape(group * per_group, channels // group, *kernel), np.tile(np.arange(per_group), group)
    return arrange


def _forward_conv_attrs(node: Node, ctx: Context, x: Value, w_shape: Sequence[int]) -> dict[str, Any]:
    """The attributes of the forward conv (NC.../OI...) a ConvTranspose of x and a W of `w_shape` is: the
    conv_backprop_input plan's (lhs dilation, pads), whose kernel is `_forward_kernel`'s."""
    attrs = {name: value for name, value in transpose_attrs(node, ctx, x.type, TensorType(tuple(w_shape), "f32")).items()
             if value is not None}
    types = [TensorType(x.type.shape, "f32"), TensorType(tuple(w_shape), "f32")]  # the plan's geometry, in floats
    view = CONV_BACKPROP_INPUT.bind(types, coerce_attrs("conv_backprop_input", attrs, ctx.location(node)))
    try:
        conv = plan_backprop_input(view).conv_attrs
    except VerifyError as err:  # a geometry the transposed conv refuses (B7): the same diagnostic as unfused
        raise ctx.error(err.message, err.constraint or UNSUPPORTED_ATTR) from None
    windows = {name: unless_ones(conv[name]) for name in ("window_strides", "lhs_dilation", "rhs_dilation")}
    return {"padding": conv["padding"], **windows, "feature_group_count": conv.get("feature_group_count")}


def _quantized_window(node: Node, ctx: Context, window: Callable[[Value, Value, str], Value],
                      out_channels: Callable[[Value], int], kernel: Kernel | None = None, *,
                      onnxruntime_arithmetic: bool) -> Sequence[Operand]:
    """QLinearConv's inputs as a quantized window op (`window(x, w, result element type)`, W a quantized constant).
    With `onnxruntime_arithmetic`, its result is its i32 accumulator (scale x_scale * w_scale, zero point 0: the exact
    sums), B added to those sums and requantized to y's type as ONNX Runtime's kernels do (`requantized`); else y's
    type, or with B the accumulator, dequantized, B added, quantized (the spec's arithmetic)."""
    x = quantized_x(ctx, node)
    x_quant = quant_type(x.type.dtype)
    assert x_quant is not None
    w = _quantized_weights(ctx, node, x_quant.storage, kernel)
    y_type = checked_type(ctx, quant_params(ctx, node, 6, x.type.rank), x.type.rank)
    y_quant = quant_type(y_type)
    assert y_quant is not None
    if not node.input(8) and not onnxruntime_arithmetic:
        return [window(x, w, y_type)]
    channels = out_channels(w)
    w_scales = np.asarray(ctx.required_array(node, 4, "w_scale"), np.float32).reshape(-1)
    if w_scales.size > 1 and kernel is not None:
        w_scales = np.tile(w_scales, channels // w_scales.size)  # a forward kernel's channels in groups, each as W's
    scales = np.float32(x_quant.scales[0]) * w_scales
    bias = ctx.required_array(node, 8, "B") if node.input(8) else None
    if bias is not None and (bias.shape != (channels,) or w_scales.size not in (1, bias.size)):
        raise ctx.error(f"B {list(bias.shape)} must have one value per output channel ({channels}), and w_scale one or as many")
    accumulator = window(x, w, _accumulator_type(scales))
    if not onnxruntime_arithmetic:
        assert bias is not None
        real_bias = (bias.astype(np.float64) * scales.astype(np.float64)).astype(np.float32)  # i32 B: exact in f64
        y = ctx.op("bias_add", ctx.op("uniform_dequantize", accumulator), ctx.constant(real_bias, "bias"), axis=1)
        return [ctx.op("uniform_quantize", y, new_dtype=y_type)]
    if y_quant.axis is not None:
        raise ctx.error(f"y_scale and y_zero_point must be one value each (per tensor), got {len(y_quant.scales)}")
    sums = ctx.op("bitcast_convert", accumulator, new_dtype="i32")
    if bias is not None:
        sums = ctx.op("add", sums, _along_channels(ctx, np.asarray(bias, np.int32), sums, "bias"))
    multipliers = np.float32(x_quant.scales[0]) * w_scales / np.float32(y_quant.scales[0])  # f32 steps, as ONNX Runtime's
    return [requantized(ctx, sums, multipliers, y_quant)]


def requantized(ctx: Context, sums: Value, multipliers: np.ndarray, y: QuantType) -> Value:
    """The i32 `sums` (NC...) quantized to `y` as ONNX Runtime's QLinearConv computes it: f32(sums) times the f32
    multiplier x_scale * w_scale / y_scale (one per output channel, or one), rounded half to even, plus y's zero
    point, saturated to its storage, the stored integers given y's type (`bitcast_convert`). One rounding of the f32
    product: the spec's dequantize-conv-quantize rounds the dequantized sum and its quotient by y_scale each, which
    differs from it where the exact value lies within f32 rounding of a half step."""
    real = ctx.op("convert", sums, new_dtype="f32")
    steps = ctx.op("round_nearest_even", ctx.op("multiply", real, _along_channels(ctx, multipliers, real, "multiplier")))
    return _stored_as(ctx, _plus_zero_point(ctx, steps, y), y)


def _plus_zero_point(ctx: Context, steps: Value, y: QuantType, offset: int = 0) -> Value:
    """f32 `steps` plus y's (per-tensor) zero point, plus `offset`."""
    if not y.zero_points[0] + offset:
        return steps
    zero_point = np.asarray([y.zero_points[0] + offset], np.float32)
    return ctx.op("add", steps, _along_channels(ctx, zero_point, steps, "y_zero_point"))


def _stored_as(ctx: Context, steps: Value, y: QuantType) -> Value:
    """Whole f32 `steps` (zero point included) saturated to y's storage, the stored integers given y's type."""
    low, high = y.limits()
    stored = ctx.op("convert", ctx.op("clamp", steps, min=float(low), max=float(high)), new_dtype=y.storage_dtype())
    return ctx.op("bitcast_convert", stored, new_dtype=y.spelling())


def _pool_types(node: Node, ctx: Context) -> tuple[Value, QuantType, QuantType]:
    """A QLinear pool's x (quantized with x_scale and x_zero_point) and the quantized types of x and y, per tensor."""
    x = quantized_x(ctx, node)
    x_quant, y_quant = quant_type(x.type.dtype), quant_type(checked_type(ctx, quant_params(ctx, node, 3, x.type.rank), x.type.rank))
    assert x_quant is not None and y_quant is not None
    if x_quant.axis is not None or y_quant.axis is not None:
        raise ctx.error("the scales and zero points must be one value each (per tensor)")
    return x, x_quant, y_quant


def qlinear_average_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """A QDQ pattern around an AveragePool (qdq.py) as ONNX Runtime's QLinearAveragePool computes it (measured equal
    on every element): x dequantized in f32, each window's sum added in order and divided by its count (with
    count_include_pad the kernel's size, even where ceil_mode's windows pass the pads), then y = x / y_scale + y's
    zero point, rounded half to even once, saturated. QuantizeLinear rounds before it adds the zero point, which
    differs on a tie with an odd zero point (a 2x2 average of equal scales is a tie one time in four)."""
    return [_average_pool(node, ctx, zero_point_first=True)]


def qlinear_average_pool_as_uint8(node: Node, ctx: Context) -> Sequence[Operand]:
    """An int8 QDQ pattern around an AveragePool that ONNX Runtime made uint8 before fusing it (qdq.py), as its
    QLinearAveragePool computes it there: as `qlinear_average_pool`, with y's zero point plus 128 added in f32 before
    the rounding (the f32 sum of a larger number, which rounds a value near a tie otherwise) and 128 taken off after."""
    return [_average_pool(node, ctx, zero_point_first=True, uint8_offset=128)]


def dequantized_average_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """A QDQ pattern around an AveragePool that ONNX Runtime runs as its three ops (qdq.py), in their arithmetic:
    the window sums of the dequantized x added in order (its float AveragePool's order from opset 19, where XLA's
    reduce-window pairs them), divided by AveragePool's count, then QuantizeLinear's rounding (round, then add the
    zero point). Up to opset 18 ONNX Runtime's float pool may add column sums instead (MLAS's vector kernel, chosen
    by the channel count and the CPU), so there a tie may round from another f32 sum (docs/onnx.md)."""
    return [_average_pool(node, ctx, zero_point_first=False)]


def _average_pool(node: Node, ctx: Context, zero_point_first: bool, uint8_offset: int = 0) -> Value:
    x, _, y = _pool_types(node, ctx)
    real = ctx.op("uniform_dequantize", x)
    window = pool_window(node, ctx, real)
    summed = _window_sums_in_order(ctx, real, window)
    include_pad = bool(node.attrs.get("count_include_pad", 0))
    if include_pad and zero_point_first:  # QLinearAveragePool: the whole window, ceil_mode's positions too
        counts = np.full(summed.type.shape[2:], np.prod(window.kernel, dtype=np.int64))
    else:
        counts = window.counts(x.type.shape[2:], summed.type.shape[2:], include_pad)
    count = ctx.op("broadcast_in_dim", ctx.constant(counts.astype(np.float32), "count"), shape=summed.type.shape,
                   broadcast_dimensions=tuple(range(2, summed.type.rank)))
    average = rounded_quotient(ctx, summed, count, "average")
    steps = rounded_quotient(ctx, average, _along_channels(ctx, np.asarray([y.scales[0]], np.float32), average, "y_scale"), "steps")
    if zero_point_first:
        rounded = ctx.op("round_nearest_even", _plus_zero_point(ctx, steps, y, uint8_offset))
        if uint8_offset:
            rounded = ctx.op("subtract", rounded, _along_channels(ctx, np.asarray([uint8_offset], np.float32), rounded, "uint8_offset"))
        return _stored_as(ctx, rounded, y)
    return _stored_as(ctx, _plus_zero_point(ctx, ctx.op("round_nearest_even", steps), y), y)


def _window_sums_in_order(ctx: Context, x: Value, window: PoolWindow) -> Value:
    """Each window's sum of `x`, added tap after tap in row-major order from the first, padding adding zeros: ONNX
    Runtime's order (XLA's reduce-window may pair them otherwise, which moves a sum by an f32 rounding)."""
    padded = ctx.op("pad", x, padding_config=((0, 0, 0), (0, 0, 0), *((lo, hi, 0) for lo, hi in window.ceil_pads)),
                    padding_value=0.0) if any(lo or hi for lo, hi in window.ceil_pads) else x
    out = [(size - dilate_dim(k, d)) // s + 1
           for size, k, d, s in zip(padded.type.shape[2:], window.kernel, window.dilations, window.strides)]
    total: Value | None = None
    for tap in itertools.product(*(range(k) for k in window.kernel)):
        start = [0, 0, *(t * d for t, d in zip(tap, window.dilations))]
        limit = [*x.type.shape[:2], *(b + (o - 1) * s + 1 for b, o, s in zip(start[2:], out, window.strides))]
        piece = ctx.op("slice", padded, start_indices=tuple(start), limit_indices=tuple(limit),
                       strides=(1, 1, *window.strides))
        total = piece if total is None else ctx.op("add", total, piece)
    assert total is not None
    return total


def qlinear_global_average_pool(node: Node, ctx: Context) -> Sequence[Operand]:
    """A QDQ pattern around a GlobalAveragePool (qdq.py), as ONNX Runtime runs it (its QLinearGlobalAveragePool,
    measured equal on every element): the i32 sum of x's stored integers less its zero point over the spatial dims,
    in f32 times the f32 multiplier x_scale / (y_scale * count), rounded half to even, plus y's zero point, saturated."""
    x, x_quant, y = _pool_types(node, ctx)
    stored = ctx.op("convert", ctx.op("bitcast_convert", x, new_dtype=x_quant.storage_dtype()), new_dtype="i32")
    if x_quant.zero_points[0]:
        stored = ctx.op("subtract", stored, _along_channels(ctx, np.asarray([x_quant.zero_points[0]], np.int32), stored, "x_zero_point"))
    spatial = x.type.shape[2:]
    total = ctx.op("reduce_sum", stored, axes=tuple(range(2, x.type.rank)))
    sums = ctx.op("reshape", total, new_sizes=(*x.type.shape[:2], *(1 for _ in spatial)))
    count = np.float32(np.prod(spatial, dtype=np.int64))
    multiplier = np.float32(np.float32(x_quant.scales[0]) / (np.float32(y.scales[0]) * count))
    return [requantized(ctx, sums, np.asarray([multiplier], np.float32), y)]


def _along_channels(ctx: Context, values: np.ndarray, like: Value, hint: str, axis: int = 1) -> Value:
    """`values` (one, or one per index of dimension `axis`: the channels) as a constant broadcast to `like`'s shape."""
    return spread_along(ctx, ctx.constant(values.reshape(()) if values.size == 1 else values, hint), like.type.shape, axis)
