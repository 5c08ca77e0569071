"""Conformance with the forms of the StableHLO project's quantized conv tests
(`stablehlo/testdata/quantized/conv_general_dilated_*`, `convolution_qi8`), the per-axis and
hybrid convs of its quant-to-int legalization tests, and the integer convs (i64, i8 -> i32)
of its interpreter tests: convc's own small cases of each form, compiled for the cpu target
(lower-quantized, then XLA through PJRT) and checked against the spec oracle
(compiler/reference.py: dequantize, float conv, quantize), and emitted for `--target generic`
as quantized StableHLO that MLIR verifies. docs/testing.md lists the forms."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from convc import Builder, compile_graph, run
from convc.dtypes import is_quantized, numpy_dtype, parse_quant
from convc.ir import Graph, Value
from convc.mlir import parse_module
from convc.reference import evaluate

# Scales are powers of two (and products of them) wherever the spec's float arithmetic must
# be exact for the lowering and the oracle to agree bit for bit; the requantizing scales are
# not (11/128, 13/64): both sides divide by them in f32 alike.
LHS = "!quant.uniform<i8:f32, 3.906250e-03:-128>"  # 2^-8, zero point at the storage minimum
RHS = "!quant.uniform<i8:f32, 7.812500e-03:-128>"  # 2^-7
ACC = "!quant.uniform<i32:f32, 3.0517578125E-5>"  # 2^-15 = s_lhs * s_rhs, zero point 0: the export path's i32 result
OUT = "!quant.uniform<i8:f32, 8.593750e-02:-128>"  # 11/128
NHWC = ("NHWC", "HWIO", "NHWC")


def per_axis(storage: str, axis: int, scales: list[float], zero_points: list[int]) -> str:
    params = ",".join(f"{s}:{z}" for s, z in zip(scales, zero_points, strict=True))
    return f"!quant.uniform<{storage}:f32:{axis}, {{{params}}}>"


def requantized(b: Builder, acc: Value) -> Value:
    """The JAX export path after its conv: requantize the i32 result to i8, dequantize."""
    return b.uniform_dequantize(b.uniform_quantize(acc, new_dtype=OUT))


def export_conv(lhs: tuple[int, ...], rhs: tuple[int, ...], **attrs: object) -> Callable[[Builder], Value]:
    """uniform_quantize'd operands (here graph inputs of the quantized types), a conv with the
    i32 accumulator result type, requantize and dequantize: every `testdata/quantized` conv."""

    def build(b: Builder) -> Value:
        conv = b.conv(b.input("x", lhs, LHS), b.input("w", rhs, RHS), preferred_element_type=ACC, **attrs)
        return requantized(b, conv)

    return build


def transposed_export_conv(b: Builder) -> Value:
    """jax2tf's layout: NCHW/OIHW operands transposed (quantized) to NHWC/HWIO, the conv, the
    result transposed back before dequantizing (testdata's dtype_precision, group_counts, ...)."""
    x = b.transpose(b.input("x", (2, 3, 7, 8), LHS), permutation=(0, 2, 3, 1))
    w = b.transpose(b.input("w", (4, 3, 3, 2), RHS), permutation=(2, 3, 1, 0))
    conv = b.conv(x, w, dimension_numbers=NHWC, preferred_element_type=ACC, precision="HIGHEST", padding=((1, 2), (2, 1)))
    out = b.transpose(b.uniform_quantize(conv, new_dtype=OUT), permutation=(0, 3, 1, 2))
    return b.uniform_dequantize(out)


def per_axis_kernel_transposed(b: Builder) -> Value:
    """A per-axis OIHW kernel transposed to HWIO: the quantization dimension follows (0 -> 3)."""
    w = b.transpose(b.input("w", (3, 2, 2, 2), per_axis("i8", 0, [0.25, 0.5, 0.125], [3, -7, 0])), permutation=(2, 3, 1, 0))
    out = per_axis("i8", 3, [8.0, 2.0, 4.0], [1, -1, 0])
    return b.conv(b.input("x", (1, 5, 5, 2), LHS), w, dimension_numbers=NHWC, preferred_element_type=out, padding="SAME")


def quantized_conv(lhs: tuple[int, ...], rhs: tuple[int, ...], types: tuple[str, str, str | None], **attrs: object) -> Callable[[Builder], Value]:
    """One conv of the given (lhs, rhs, result) element types (result None: the float of a hybrid conv)."""

    def build(b: Builder) -> Value:
        return b.conv(b.input("x", lhs, types[0]), b.input("w", rhs, types[1]), preferred_element_type=types[2], **attrs)

    return build


P4 = [0.25, 0.5, 0.125, 0.0625]

# name -> (the StableHLO test family whose form it has, the graph)
FORMS: dict[str, tuple[str, Callable[[Builder], Value]]] = {
    "conv1d-ncw": ("conv_general_dilated_conv1d", export_conv((2, 3, 9), (3, 3, 4))),
    "transposed-1d-same": ("conv_tranpose1d_same_padding", export_conv(
        (1, 6, 2), (3, 2, 2), dimension_numbers=("NWC", "WIO", "NWC"), lhs_dilation=(2,), padding=((2, 1),))),
    "transposed-2d-valid": ("conv_tranpose2d_valid_padding", export_conv(
        (1, 5, 4, 2), (2, 3, 2, 2), dimension_numbers=NHWC, lhs_dilation=(2, 2), padding=((1, 1), (2, 2)))),
    "depthwise-1d-dilated": ("depthwise1d_dilated", export_conv((2, 3, 9), (12, 1, 3), feature_group_count=3, rhs_dilation=(2,))),
    "depthwise-2d-nhwc-dilated": ("depthwise2d_dilated", export_conv(
        (2, 7, 7, 3), (3, 3, 1, 12), dimension_numbers=NHWC, feature_group_count=3, rhs_dilation=(2, 1))),
    "lhs-and-rhs-dilation": ("dilations", export_conv(
        (1, 5, 6, 3), (3, 2, 3, 3), dimension_numbers=NHWC, lhs_dilation=(2, 3), rhs_dilation=(3, 2))),
    "mixed-dimension-numbers": ("dimension_numbers", export_conv((2, 3, 6, 7), (3, 2, 3, 4), dimension_numbers=("NCHW", "HWIO", "NHWC"))),
    "transposes-around-conv-highest": ("dtype_precision", transposed_export_conv),
    "feature-groups": ("group_counts (feature)", export_conv((2, 7, 6, 6), (3, 2, 3, 6), dimension_numbers=NHWC, feature_group_count=2)),
    "batch-groups": ("group_counts (batch)", export_conv((4, 6, 7, 3), (3, 2, 3, 6), dimension_numbers=NHWC, batch_group_count=2)),
    "explicit-padding": ("padding", export_conv((2, 6, 7, 3), (3, 3, 3, 3), dimension_numbers=NHWC, padding=((1, 2), (2, 1)))),
    "window-strides": ("window_strides", export_conv((2, 9, 10, 3), (3, 4, 3, 3), dimension_numbers=NHWC, window_strides=(2, 3))),
    "kernel-larger-than-input": ("rhs_oob_after_pading", export_conv(
        (1, 2, 2, 3), (7, 7, 3, 8), dimension_numbers=NHWC, window_strides=(2, 2), padding=((3, 3), (3, 3)))),
    "kernel-taller-than-input": ("rhs_oob_same_padding", export_conv(
        (1, 1, 9, 1), (4, 1, 1, 2), dimension_numbers=NHWC, padding=((1, 2), (0, 0)))),
    "tf-path-1d-padded-dilated": ("tf_conversion_path_1d", export_conv(
        (1, 12, 1), (3, 1, 8), dimension_numbers=("NWC", "WIO", "NWC"), padding=((2, 2),), rhs_dilation=(2,))),
    "tf-path-2d-nchw-padded-dilated": ("tf_conversion_path_2d", export_conv(
        (1, 1, 9, 9), (3, 3, 1, 8), dimension_numbers=("NCHW", "HWIO", "NCHW"), padding=((1, 2), (0, 1)), rhs_dilation=(1, 2))),
    "tf-path-3d-dilated": ("tf_conversion_path_3d", export_conv(
        (1, 3, 6, 6, 1), (2, 3, 3, 1, 4), dimension_numbers=("NDHWC", "DHWIO", "NDHWC"), rhs_dilation=(1, 1, 2))),
    "strided-lhs-dilated": ("convolution_qi8", export_conv((1, 4, 4, 1), (3, 3, 1, 1), dimension_numbers=NHWC, window_strides=(4, 4),
                                                         lhs_dilation=(2, 2))),
    "per-axis-kernel-hwio": ("quant_to_int conv2d_per_channel", quantized_conv(
        (2, 6, 6, 1), (3, 3, 1, 4), (LHS, per_axis("i8", 3, P4, [0, 0, 0, 0]), "!quant.uniform<i8:f32, 1.600000e+01:3>"),
        dimension_numbers=NHWC)),
    "per-axis-kernel-and-result-zero-points": ("quant_to_int conv2d_per_channel_res_zp_not_zero", quantized_conv(
        (2, 6, 6, 2), (3, 3, 2, 4), (LHS, per_axis("i8", 3, P4, [5, -128, 127, -3]), per_axis("i8", 3, [8.0, 4.0, 16.0, 2.0], [-2, 7, 0, 127])),
        dimension_numbers=NHWC, padding="SAME")),
    "per-axis-kernel-transposed": ("quant_to_int conv2d_non_nhwc + transpose", per_axis_kernel_transposed),
    "hybrid-per-axis-kernel": ("quant_to_int conv2d_hybrid_per_channel", quantized_conv(
        (1, 5, 5, 2), (3, 3, 2, 4), ("f32", per_axis("i8", 3, P4, [0, 3, -3, 127]), None), dimension_numbers=NHWC, padding="SAME")),
    "hybrid-per-tensor-kernel": ("quant_to_int conv2d_static_hybrid", quantized_conv(
        (1, 2, 5, 5), (3, 2, 3, 3), ("f32", RHS, None), padding=((1, 0), (0, 1)))),
}


def _stored(rng: np.random.Generator, value: Value) -> np.ndarray:
    dtype = value.type.dtype
    if is_quantized(dtype):
        low, high = parse_quant(dtype).limits()
        return rng.integers(low, high + 1, value.type.shape).astype(numpy_dtype(dtype))
    return rng.standard_normal(value.type.shape).astype(np.float32)


def _graph(name: str, build: Callable[[Builder], Value]) -> Graph:
    b = Builder(name.replace("-", "_"))
    b.output(build(b))
    return b.build()


@pytest.mark.parametrize("name", list(FORMS))
def test_stablehlo_quantized_conv_form_agrees_with_the_spec_oracle(name: str) -> None:
    """Lowered and run by XLA:CPU (integer convs), each form equals the spec's dequantize ->
    float conv -> quantize on every element (a hybrid conv's f32 result: within f32 rounding)."""
    graph = _graph(name, FORMS[name][1])
    rng = np.random.default_rng(sum(map(ord, name)))
    inputs = [_stored(rng, v) for v in graph.inputs]
    (got,), (want,) = run(graph, inputs, target="cpu", platform="cpu").outputs, evaluate(graph, inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    if name.startswith("hybrid"):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 3  # not a saturated or constant result


@pytest.mark.parametrize("name", ["transposes-around-conv-highest", "per-axis-kernel-transposed", "batch-groups", "transposed-1d-same"])
def test_generic_target_keeps_the_forms_quantized_stablehlo(name: str) -> None:
    """--target generic emits the quantized transposes and convs as they are; MLIR verifies them."""
    text = compile_graph(_graph(name, FORMS[name][1]), target="generic")
    assert "!quant.uniform" in text
    parse_module(text)


# The interpreter's integer convs (stablehlo/tests/interpret/convolution.mlir): i64 and i16
# operands, i8 operands accumulated in i32; windows with lhs dilation, padding, both group
# counts and permuted dimension numbers. Checked against an independent numpy loop.
INTEGER_FORMS: dict[str, tuple[str, str | None, tuple[int, ...], tuple[int, ...], dict[str, object]]] = {
    "i64-strided-lhs-dilated": ("i64", None, (1, 4, 4, 1), (3, 3, 1, 1), {"window_strides": (4, 4), "lhs_dilation": (2, 2)}),
    "i8-accumulated-in-i32": ("i8", "i32", (1, 4, 4, 1), (3, 3, 1, 1), {"window_strides": (4, 4), "lhs_dilation": (2, 2)}),
    "i64-padded-lhs-dilated": ("i64", None, (1, 4, 4, 1), (3, 3, 1, 1), {"window_strides": (4, 4), "lhs_dilation": (2, 2),
                                                                        "padding": ((1, 1), (1, 1))}),
    "i64-batch-groups-permuted": ("i64", None, (1, 4, 4, 1), (1, 2, 1, 4), {"window_strides": (4, 4), "lhs_dilation": (2, 2),
                                                                           "batch_group_count": 4,
                                                                           "dimension_numbers": ("HNWC", "HWIO", "NHWC")}),
    "i64-feature-groups-permuted": ("i64", None, (1, 4, 4, 1), (1, 2, 1, 4), {"window_strides": (4, 4), "lhs_dilation": (2, 2),
                                                                             "feature_group_count": 2,
                                                                             "dimension_numbers": ("NHCW", "HIWO", "NHWC")}),
    "i16-same-padded-grouped": ("i16", None, (2, 5, 5, 4), (3, 3, 2, 6), {"padding": "SAME", "feature_group_count": 2}),
}


def _numpy_conv(lhs: np.ndarray, rhs: np.ndarray, dims: tuple[str, str, str], attrs: dict[str, object]) -> np.ndarray:
    """The spec's convolution, spelled out in numpy on int64 (2-D): dilate, pad, window sums
    per group; batch groups split the batch and the kernel's output features."""
    lhs = np.moveaxis(lhs, [dims[0].index(c) for c in "NCHW"], range(4)).astype(np.int64)
    rhs = np.moveaxis(rhs, [dims[1].index(c) for c in "OIHW"], range(4)).astype(np.int64)
    stride = attrs.get("window_strides", (1, 1))
    ld = attrs.get("lhs_dilation", (1, 1))
    fg, bg = attrs.get("feature_group_count", 1), attrs.get("batch_group_count", 1)
    n, c, h, w = lhs.shape
    dilated = np.zeros((n, c, (h - 1) * ld[0] + 1, (w - 1) * ld[1] + 1), np.int64)
    dilated[:, :, ::ld[0], ::ld[1]] = lhs
    pads = attrs.get("padding", ((0, 0), (0, 0)))
    if pads == "SAME":
        pads = tuple(((k - 1) // 2, k // 2) for k in rhs.shape[2:])
    padded = np.pad(dilated, ((0, 0), (0, 0), *pads))
    o, i, kh, kw = rhs.shape
    oh, ow = (padded.shape[2] - kh) // stride[0] + 1, (padded.shape[3] - kw) // stride[1] + 1
    out = np.zeros((n // bg, o, oh, ow), np.int64)
    for f in range(o):
        group = f // (o // max(fg, bg))
        channels = padded[:, group * i:(group + 1) * i] if fg > 1 else padded
        batch = channels[group * (n // bg):(group + 1) * (n // bg)] if bg > 1 else channels
        for y in range(oh):
            for x in range(ow):
                window = batch[:, :, y * stride[0]:y * stride[0] + kh, x * stride[1]:x * stride[1] + kw]
                out[:, f, y, x] = (window * rhs[f]).sum(axis=(1, 2, 3))
    return np.moveaxis(out, range(4), [dims[2].index(c) for c in "NCHW"])


@pytest.mark.parametrize("name", list(INTEGER_FORMS))
def test_integer_conv_form_equals_the_spelled_out_spec(name: str) -> None:
    """i64, i16 and i8->i32 convs through the cpu pipeline and XLA equal both the oracle and
    a numpy loop over the spec's windows, exactly."""
    dtype, preferred, lhs_shape, rhs_shape, attrs = INTEGER_FORMS[name]
    attrs = {"dimension_numbers": NHWC, **attrs}
    b = Builder(name.replace("-", "_"))
    b.output(b.conv(b.input("x", lhs_shape, dtype), b.input("w", rhs_shape, dtype), preferred_element_type=preferred, **attrs))
    graph = b.build()
    rng = np.random.default_rng(7)
    limit = {"i8": 100, "i16": 40}.get(dtype, 3000)  # no i16 sum overflows
    inputs = [rng.integers(-limit, limit, s).astype(numpy_dtype(dtype)) for s in (lhs_shape, rhs_shape)]
    (got,), (want,) = run(graph, inputs, target="cpu", platform="cpu").outputs, evaluate(graph, inputs)
    assert got.dtype == numpy_dtype(preferred or dtype)
    np.testing.assert_array_equal(got, want)
    spelled = _numpy_conv(*inputs, attrs["dimension_numbers"], attrs)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got.astype(np.int64), spelled)


# --- conv_transpose on quantized operands: the spec's quantized convolution with lhs dilation
# (lower-conv-transpose builds it; the kernel's reverse and group moves act on stored integers).

TRANSPOSED: dict[str, tuple[tuple[int, ...], tuple[int, ...], str, str, dict[str, object]]] = {
    "same-stride2": ((1, 4, 4, 3), (3, 3, 3, 4), RHS, OUT, {"strides": (2, 2), "padding": "SAME"}),
    "valid-1d-per-axis": ((2, 5, 2), (3, 2, 4), per_axis("i8", 2, P4, [1, -2, 127, -128]), OUT, {"strides": (3,), "padding": "VALID"}),
    "transpose-kernel": ((1, 3, 3, 4), (2, 2, 3, 4), RHS, OUT, {"strides": (2, 2), "padding": "SAME", "transpose_kernel": True}),
    "per-axis-result": ((1, 3, 3, 4), (2, 2, 4, 3), per_axis("i8", 3, P4[:3], [0, 5, -5]), per_axis("i8", 3, [4.0, 8.0, 2.0], [0, 1, -1]),
                        {"strides": (2, 2), "padding": "SAME"}),
    "groups-explicit-consistent": ((1, 4, 4, 4), (3, 3, 2, 6), per_axis("i8", 3, P4 + P4[:2], [0, 1, 2, 3, 4, 5]), OUT,
                                   {"strides": (2, 1), "padding": ((1, 0), (0, 2)), "use_consistent_padding": True,
                                    "feature_group_count": 2, "rhs_dilation": (1, 2)}),
    "groups-transpose-kernel-per-tensor": ((1, 3, 3, 4), (3, 3, 3, 4), RHS, OUT,
                                           {"strides": (2, 2), "padding": "VALID", "transpose_kernel": True, "feature_group_count": 2}),
}


@pytest.mark.parametrize("name", list(TRANSPOSED))
def test_quantized_conv_transpose_agrees_with_the_spec_oracle(name: str) -> None:
    """A quantized conv_transpose, lowered to a quantized lhs-dilated conv and then to integer
    ops, equals lax.conv_transpose of the dequantized operands, quantized (every element)."""
    lhs, rhs, rhs_type, out_type, attrs = TRANSPOSED[name]
    b = Builder(name.replace("-", "_"))
    b.output(b.conv_transpose(b.input("x", lhs, LHS), b.input("w", rhs, rhs_type), preferred_element_type=out_type, **attrs))
    graph = b.build()
    rng = np.random.default_rng(sum(map(ord, name)))
    inputs = [_stored(rng, v) for v in graph.inputs]
    (got,), (want,) = run(graph, inputs, target="cpu", platform="cpu").outputs, evaluate(graph, inputs)
    assert got.dtype == want.dtype == np.int8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 3
    parse_module(compile_graph(graph, target="generic"))  # the lowered quantized conv, as StableHLO, verifies


# --- the conv gradients on quantized operands: the spec's quantized convolution that each
# lowers to (lower-conv-backprop-input: out_grad over the reversed per-tensor kernel, lhs
# dilated; lower-conv-backprop-filter: the input with out_grad as its kernel, per axis along
# out_grad's features, batch-grouped for feature groups). The oracle is jax.vjp of the forward
# conv on the dequantized operands, quantized: independent of both lowerings.

NWC = ("NWC", "WIO", "NWC")
P6 = [0.25, 0.5, 0.125, 0.0625, 0.25, 0.125]

# name -> (out_grad shape, kernel shape, out_grad type, kernel type, result type (None: float), attributes)
BACKPROP_INPUT: dict[str, tuple[tuple[int, ...], tuple[int, ...], str, str, str | None, dict[str, object]]] = {
    "2d-same-stride2-input-shape": ((1, 3, 3, 4), (3, 3, 2, 4), LHS, RHS, OUT,
                                    {"dimension_numbers": NHWC, "window_strides": (2, 2), "padding": "SAME", "input_shape": (1, 6, 6, 2)}),
    "1d-explicit-pads-output-padding": ((2, 4, 3), (3, 2, 3), LHS, RHS, OUT,
                                        {"dimension_numbers": NWC, "window_strides": (2,), "padding": ((1, 2),), "output_padding": (1,)}),
    "2d-nchw-dilated-cropping": ((1, 3, 4, 4), (3, 2, 2, 2), LHS, RHS, OUT,
                                 {"rhs_dilation": (2, 1), "padding": ((3, 0), (0, 1)), "input_shape": (1, 2, 3, 4)}),
    "feature-groups": ((1, 3, 3, 4), (3, 3, 1, 4), LHS, RHS, OUT, {"dimension_numbers": NHWC, "feature_group_count": 2, "padding": "SAME"}),
    "batch-groups": ((1, 4, 4, 4), (2, 2, 3, 4), LHS, RHS, OUT,
                     {"dimension_numbers": NHWC, "batch_group_count": 2, "window_strides": (2, 2), "input_shape": (2, 8, 8, 3)}),
    "forward-lhs-dilation": ((1, 3, 3, 2), (2, 2, 3, 2), LHS, RHS, OUT, {"dimension_numbers": NHWC, "lhs_dilation": (2, 2)}),
    "i32-result": ((1, 3, 3, 4), (3, 3, 2, 4), LHS, RHS, ACC, {"dimension_numbers": NHWC, "padding": "SAME"}),
    "hybrid-per-tensor-kernel": ((1, 3, 3, 4), (3, 3, 2, 4), "f32", RHS, None,
                                 {"dimension_numbers": NHWC, "window_strides": (2, 2), "padding": "VALID"}),
}

# name -> (input shape, out_grad shape, input type, out_grad type, result type (None: float), attributes)
BACKPROP_FILTER: dict[str, tuple[tuple[int, ...], tuple[int, ...], str, str, str | None, dict[str, object]]] = {
    "2d-same-stride2": ((2, 6, 6, 2), (2, 3, 3, 4), LHS, RHS, OUT,
                        {"dimension_numbers": NHWC, "window_strides": (2, 2), "padding": "SAME", "kernel_shape": (3, 3, 2, 4)}),
    "per-axis-out-grad-and-result": ((2, 6, 6, 2), (2, 3, 3, 4), LHS, per_axis("i8", 3, P4, [0, 3, -128, 127]),
                                     per_axis("i8", 3, [0.5, 0.25, 0.125, 1.0], [1, 0, -3, 127]),
                                     {"dimension_numbers": NHWC, "window_strides": (2, 2), "padding": "SAME", "kernel_shape": (3, 3, 2, 4)}),
    "per-axis-out-grad-nchw": ((2, 2, 5, 5), (2, 3, 3, 3), LHS, per_axis("i8", 1, P4[:3], [5, -5, 0]), OUT,
                               {"kernel_shape": (3, 2, 3, 3)}),
    "1d-dilated-explicit-pads": ((2, 9, 3), (2, 7, 4), LHS, RHS, OUT,
                                 {"dimension_numbers": NWC, "rhs_dilation": (2,), "padding": ((1, 1),), "kernel_shape": (3, 3, 4)}),
    "feature-groups-per-axis": ((1, 5, 5, 4), (1, 3, 3, 6), LHS, per_axis("i8", 3, P6, [0, 1, 2, -1, -2, 0]),
                                per_axis("i8", 3, [0.125, 0.25, 0.0625, 0.125, 0.25, 0.5], [0, 0, 1, -1, 0, 2]),
                                {"dimension_numbers": NHWC, "feature_group_count": 2, "kernel_shape": (3, 3, 2, 6)}),
    "depthwise-same": ((1, 5, 5, 3), (1, 5, 5, 3), LHS, RHS, OUT,
                       {"dimension_numbers": NHWC, "feature_group_count": 3, "padding": "SAME", "kernel_shape": (3, 3, 1, 3)}),
    "batch-groups": ((2, 4, 4, 3), (1, 4, 4, 4), LHS, RHS, OUT,
                     {"dimension_numbers": NHWC, "batch_group_count": 2, "padding": "SAME", "kernel_shape": (3, 3, 3, 4)}),
    "forward-lhs-dilation": ((1, 3, 3, 2), (1, 4, 4, 3), LHS, RHS, OUT,
                             {"dimension_numbers": NHWC, "lhs_dilation": (2, 2), "kernel_shape": (2, 2, 2, 3)}),
    "hybrid-per-axis-out-grad": ((1, 5, 5, 2), (1, 3, 3, 4), "f32", per_axis("i8", 3, P4, [0, 3, -3, 127]), None,
                                 {"dimension_numbers": NHWC, "kernel_shape": (3, 3, 2, 4)}),
}


def _check_against_the_oracle(graph: Graph, name: str, hybrid: bool) -> None:
    """Run by XLA:CPU after the cpu pipeline equals the spec oracle (a hybrid's float result:
    within f32 rounding), is not saturated or constant, and stays quantized StableHLO that MLIR
    verifies for --target generic."""
    rng = np.random.default_rng(sum(map(ord, name)))
    inputs = [_stored(rng, v) for v in graph.inputs]
    (got,), (want,) = run(graph, inputs, target="cpu", platform="cpu").outputs, evaluate(graph, inputs)
    assert got.dtype == want.dtype and got.shape == want.shape
    if hybrid:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 3
    text = compile_graph(graph, target="generic")
    assert "!quant.uniform" in text
    parse_module(text)


@pytest.mark.parametrize("name", list(BACKPROP_INPUT))
def test_quantized_conv_backprop_input_agrees_with_the_spec_oracle(name: str) -> None:
    """A quantized conv_backprop_input, lowered to a quantized conv of out_grad over the
    reversed kernel and then to integer ops, equals jax.vjp of the forward conv of the
    dequantized operands, quantized (every element)."""
    out_grad, rhs, grad_type, rhs_type, out_type, attrs = BACKPROP_INPUT[name]
    b = Builder(name.replace("-", "_"))
    b.output(b.conv_backprop_input(b.input("g", out_grad, grad_type), b.input("w", rhs, rhs_type), preferred_element_type=out_type,
                                   **attrs))
    _check_against_the_oracle(b.build(), name, out_type is None)


@pytest.mark.parametrize("name", list(BACKPROP_FILTER))
def test_quantized_conv_backprop_filter_agrees_with_the_spec_oracle(name: str) -> None:
    """A quantized conv_backprop_filter, lowered to a quantized conv of the input with out_grad
    as its kernel (per axis along out_grad's features) and then to integer ops, equals jax.vjp
    of the forward conv of the dequantized operands, quantized (every element)."""
    lhs, out_grad, lhs_type, grad_type, out_type, attrs = BACKPROP_FILTER[name]
    b = Builder(name.replace("-", "_"))
    b.output(b.conv_backprop_filter(b.input("x", lhs, lhs_type), b.input("g", out_grad, grad_type), preferred_element_type=out_type,
                                    **attrs))
    _check_against_the_oracle(b.build(), name, out_type is None)
