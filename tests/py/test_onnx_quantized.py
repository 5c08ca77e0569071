"""QuantizeLinear, DequantizeLinear and QLinearConv imported as convc's quantized ops, run by
XLA after lower-quantized, against ONNX Runtime's int8 kernels: a quantized output by the
issue's bar for single quantized convs (identical on at least 99.9% of elements, never more
than one step of the output's scale apart)."""

from __future__ import annotations

from typing import Any

import convc
import numpy as np
import pytest
from convc.dtypes import is_quantized
from test_lower_quantized import I8_CPU_PIPELINE  # every 8-bit quantized conv an i8 one (the default makes some exact f32 convs)
from test_onnx_import import OPSET, _model, _onnxruntime, _random, _skip_where_check_did_not_compare_with_onnxruntime, ort

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _steps_apart(ours: np.ndarray, theirs: np.ndarray, scale: float) -> tuple[float, float]:
    """(largest difference, fraction identical), in steps of `scale`."""
    apart = np.abs(np.round((ours.astype(np.float64) - theirs.astype(np.float64)) / scale))
    return float(apart.max()), float((apart == 0).mean())


def _run_both(model: bytes, x_shape: tuple[int, ...], seed: int = 0) -> tuple[convc.Graph, list[np.ndarray], list[np.ndarray]]:
    graph = convc.load_onnx(model)
    feeds = {"x": _random(x_shape, seed) * 3}
    return graph, convc.run(graph, feeds, platform="cpu", target="cpu").outputs, _onnxruntime(model, feeds)


@pytest.mark.parametrize("odd", [True, False], ids=["odd_zero_points", "even_zero_points"])
@pytest.mark.parametrize("storage", [np.uint8, np.int8])
def test_quantize_dequantize_linear_per_tensor_and_per_axis_match_onnxruntime(storage: Any, odd: bool) -> None:
    """Q -> DQ per tensor, then per axis (axis 1): the same stored integers and reals as ONNX Runtime. With even zero
    points each QuantizeLinear is a `uniform_quantize`; with an odd one ONNX's rounding spelled out (round, then add
    the zero point), which `uniform_quantize` (add, then round) is not on ties."""
    shift = 0 if odd else 1
    zero = np.array((3 if storage is np.uint8 else -5) + shift, storage)
    scales = np.array([0.02, 0.05, 0.1], np.float32)
    zeros = np.array([0, 7 + shift, 250] if storage is np.uint8 else [0, 7 + shift, -100], storage)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["qa"], axis=1),
             helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["da"], axis=1)]
    model = _model(nodes, {"x": (2, 3, 4, 4)}, ["q", "d", "qa", "da"],
                   {"s": np.array(0.03, np.float32), "z": zero, "sa": scales, "za": zeros})
    graph, ours, theirs = _run_both(model, (2, 3, 4, 4))
    kinds = [op.kind for op in graph.ops]
    assert (kinds.count("round_nearest_even"), kinds.count("uniform_quantize")) == ((2, 0) if odd else (0, 2))
    for got, want in zip(ours, theirs, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


QLINEAR_CASES: dict[str, tuple[dict[str, Any], tuple[int, ...], tuple[int, ...], bool, bool]] = {
    # attributes, x shape, w shape, per-channel weights, bias
    "plain": ({}, (1, 3, 9, 9), (4, 3, 3, 3), False, False),
    "per_channel_pads_strides": ({"strides": [2, 2], "pads": [1, 0, 2, 1]}, (2, 3, 9, 8), (4, 3, 3, 3), True, False),
    "bias": ({"pads": [1, 1, 1, 1]}, (1, 3, 8, 8), (5, 3, 3, 3), True, True),
    "group_dilations": ({"group": 2, "dilations": [2, 1], "pads": [2, 1, 2, 1]}, (1, 4, 9, 9), (6, 2, 3, 3), False, False),
    "depthwise_same_upper": ({"group": 4, "auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 4, 9, 9), (4, 1, 3, 3), True, True),
    "conv1d": ({"strides": [2], "pads": [1, 2]}, (2, 3, 17), (4, 3, 3), True, True),
    "conv3d": ({"pads": [1, 0, 1, 1, 0, 1], "dilations": [1, 2, 1]}, (1, 2, 5, 7, 6), (3, 2, 3, 3, 3), True, False),
}


def _conv_case(case: str, x_storage: Any) -> tuple[dict[str, np.ndarray], np.float32]:
    """QLINEAR_CASES[case]'s quantization parameters and integer weights (and bias) as initializers, and y's scale:
    int8 weights, per tensor or per output channel, with a uint8 or int8 input."""
    attrs, x_shape, w_shape, per_channel, bias = QLINEAR_CASES[case]
    rng = np.random.default_rng(7)
    out = w_shape[0]
    w = rng.integers(-127, 128, w_shape).astype(np.int8)
    w_scale = (rng.uniform(0.002, 0.01, out) if per_channel else np.array(0.005)).astype(np.float32)
    x_zero = np.array(128 if x_storage is np.uint8 else 0, x_storage)
    y_scale, y_zero = np.float32(0.05), np.array(120 if x_storage is np.uint8 else -10, x_storage)
    inits = {"xs": np.array(0.03, np.float32), "xz": x_zero, "w": w, "ws": w_scale, "wz": np.zeros(w_scale.shape, np.int8),
             "ys": np.array(y_scale), "yz": y_zero}
    if bias:
        inits["b"] = rng.integers(-2000, 2000, out).astype(np.int32)
    return inits, y_scale


def _assert_one_step_apart(model: bytes, x_shape: tuple[int, ...], y_scale: float) -> convc.Graph:
    """convc (cpu target, through PJRT) and ONNX Runtime on the model's outputs y (quantized) and yd (its
    dequantized reals): at most one step apart, identical on at least 99.9% of elements."""
    graph, (ours, ours_real), (theirs, theirs_real) = _run_both(model, x_shape, seed=3)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    worst, identical = _steps_apart(ours, theirs, 1.0)
    assert worst <= 1 and identical >= 0.999, (worst, identical)
    assert len(np.unique(theirs)) > 10  # the case spreads over the output grid
    worst_real, _ = _steps_apart(ours_real, theirs_real, y_scale)
    assert worst_real <= 1
    return graph


def _convolutions(text: str) -> tuple[int, int]:
    """(integer, floating) convolutions and dot_generals in emitted StableHLO, by their result element type."""
    import re

    kinds = re.findall(r"stablehlo\.(?:convolution|dot_general)\b.*->\s*tensor<[^>]*x([a-z]+)\d+>", text)
    return sum(kind in ("i", "ui") for kind in kinds), sum(kind in ("f", "bf") for kind in kinds)


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("case", QLINEAR_CASES, ids=str)
def test_qlinear_conv_agrees_with_onnxruntime(case: str, x_storage: Any) -> None:
    """Q -> QLinearConv -> (the quantized output, and its DQ): at most one step apart from ONNX Runtime's integer
    kernel, identical on at least 99.9% of elements; int8 weights, per tensor or per output channel, with a uint8 or
    int8 input, with and without an int32 bias."""
    attrs, x_shape, _, _, _ = QLINEAR_CASES[case]
    inits, y_scale = _conv_case(case, x_storage)
    inputs = ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if "b" in inits else [])
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearConv", inputs, ["y"], **attrs),
             helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    graph = _assert_one_step_apart(_model(nodes, {"x": x_shape}, ["y", "yd"], inits), x_shape, float(y_scale))
    assert [op.kind for op in graph.ops].count("conv") == 1


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_qlinear_conv_rounds_as_onnxruntime_where_the_specs_f32_steps_round_the_other_way(target: str) -> None:
    """A QLinearConv (1x1, one channel, uint8 x = -128..127 with x_scale 1, w 1 with w_scale ws, B 2306, uint8 y
    with y_scale ys) where the spec's dequantize-add-quantize in f32 (x * ws, plus B * ws, over ys, each step rounded
    to f32) puts one output a step from ONNX Runtime's one f32 product (x + B) * (ws / ys), which the test checks
    first so that it tells the two apart: convc's output, lowered for `target`, equals ONNX Runtime's everywhere."""
    w_scale, y_scale, bias = np.float32(0.009514754), np.float32(0.0941316), 2306
    x = np.arange(-128, 128)
    onnxruntime_steps = np.rint((x + bias).astype(np.float32) * (w_scale / y_scale))
    spec_steps = np.rint((x.astype(np.float32) * w_scale + np.float32(bias * np.float64(w_scale))) / y_scale)
    assert (onnxruntime_steps != spec_steps).sum() == 1
    inits = {"xs": np.array(1.0, np.float32), "xz": np.array(128, np.uint8), "w": np.ones((1, 1, 1, 1), np.int8),
             "ws": np.array(w_scale), "wz": np.array(0, np.int8), "ys": np.array(y_scale), "yz": np.array(0, np.uint8),
             "b": np.array([bias], np.int32)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"])]
    model = _model(nodes, {"x": (1, 1, 16, 16)}, ["y"], inits)
    feeds = {"x": np.arange(-128, 128, dtype=np.float32).reshape(1, 1, 16, 16)}
    ours = convc.run(convc.load_onnx(model), feeds, platform="cpu" if target == "cpu" else None, target=target).outputs[0]
    np.testing.assert_array_equal(ours, _onnxruntime(model, feeds)[0])


def _qdq_conv_nodes(case: str, inits: dict[str, np.ndarray], x: str) -> list[Any]:
    """DQ(x), DQ(int8 w), DQ(int32 b, with its scale added to `inits`) -> Conv (QLINEAR_CASES[case]) -> Q as "y"."""
    attrs, _, _, per_channel, _ = QLINEAR_CASES[case]
    axis = {"axis": 0} if per_channel else {}
    nodes = [helper.make_node("DequantizeLinear", [x, "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], **axis)]
    conv_inputs = ["xd", "wd"]
    if "b" in inits:
        inits["bs"] = (inits["xs"] * inits["ws"]).astype(np.float32)
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], **axis))
        conv_inputs.append("bd")
    return nodes + [helper.make_node("Conv", conv_inputs, ["c"], **attrs), helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("case", QLINEAR_CASES, ids=str)
def test_qdq_conv_is_one_integer_conv_that_agrees_with_onnxruntime(case: str, x_storage: Any) -> None:
    """Q -> DQ(x), DQ(int8 w), DQ(int32 b) -> Conv -> Q -> DQ: imported as one quantized conv (the float Conv
    between casts is gone), whose cpu module convolves integers only; at most one step apart from ONNX Runtime,
    identical on at least 99.9% of elements, for every attribute form, uint8 and int8 x, per-tensor and per-channel w."""
    _, x_shape, _, _, _ = QLINEAR_CASES[case]
    inits, y_scale = _conv_case(case, x_storage)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]), *_qdq_conv_nodes(case, inits, "q"),
             helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    model = _model(nodes, {"x": x_shape}, ["y", "yd"], inits)
    graph = _assert_one_step_apart(model, x_shape, float(y_scale))
    conv = next(op for op in graph.ops if op.kind == "conv")
    assert all(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result))
    assert [op.kind for op in graph.ops].count("conv") == 1
    integer, floating = _convolutions(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"))
    assert integer >= 1 and floating == 0, (integer, floating)


@pytest.mark.parametrize(("x_storage", "w_storage", "w_zero"), [(np.uint8, np.uint8, 131), (np.uint8, np.int8, 5),
                                                               (np.int8, np.int8, -3), (np.int8, np.uint8, 128)])
def test_qdq_conv_with_weight_zero_points_agrees_with_onnxruntime(x_storage: Any, w_storage: Any, w_zero: int) -> None:
    """Q -> DQ(x), DQ(8-bit w with a nonzero zero point, of x's storage type or the other) -> Conv -> Q: one quantized
    conv (w made x's storage type), at most one step apart from ONNX Runtime, identical on at least 99.9%."""
    rng = np.random.default_rng(1)
    low, high = (0, 250) if w_storage is np.uint8 else (-120, 120)
    inits = {"xs": np.array(0.03, np.float32), "xz": np.array(128 if x_storage is np.uint8 else 0, x_storage),
             "w": rng.integers(low, high, (4, 3, 3, 3)).astype(w_storage), "ws": np.array(0.005, np.float32),
             "wz": np.array(w_zero, w_storage), "ys": np.array(0.05, np.float32), "yz": np.array(120 if x_storage is np.uint8 else -10, x_storage)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]), helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]), helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"]), helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    graph = _assert_one_step_apart(_model(nodes, {"x": (1, 3, 8, 8)}, ["y", "yd"], inits), (1, 3, 8, 8), 0.05)
    assert [op.kind for op in graph.ops if op.kind == "conv" and is_quantized(op.result.type.dtype)] == ["conv"]


# --- 8-bit graph inputs: plain integers that a node's scale and zero point quantize ---------------


def _stored(shape: tuple[int, ...], storage: Any, seed: int = 3) -> np.ndarray:
    info = np.iinfo(storage)
    return np.random.default_rng(seed).integers(info.min, int(info.max) + 1, shape).astype(storage)


def _elem_type(storage: Any) -> int:
    return TensorProto.UINT8 if storage is np.uint8 else TensorProto.INT8


def _assert_8_bit_input_one_step_apart(model: bytes, x: np.ndarray) -> convc.Graph:
    """convc (cpu target, PJRT) and ONNX Runtime on the stored integers `x`: the same output type, at most one step
    apart, identical on at least 99.9% of elements."""
    graph = convc.load_onnx(model)
    (ours,), (theirs,) = convc.run(graph, {"x": x}, platform="cpu", target="cpu").outputs, _onnxruntime(model, {"x": x})
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    worst, identical = _steps_apart(ours, theirs, 1.0)
    assert worst <= 1 and identical >= 0.999, (worst, identical)
    assert len(np.unique(theirs)) > 10
    return graph


@pytest.mark.parametrize("storage", [np.uint8, np.int8])
def test_dequantize_linear_of_an_8_bit_graph_input_equals_onnxruntime(storage: Any) -> None:
    """DequantizeLinear of an int8 or uint8 graph input (plain integers, no QuantizeLinear before it), per tensor
    and per axis 1: the same reals as ONNX Runtime, every element."""
    zeros = np.array([0, 7, 250] if storage is np.uint8 else [0, 7, -100], storage)
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]),
             helper.make_node("DequantizeLinear", ["x", "sa", "za"], ["da"], axis=1)]
    inits = {"s": np.array(0.03, np.float32), "z": np.array(5, storage), "sa": np.array([0.02, 0.05, 0.1], np.float32), "za": zeros}
    model = _model(nodes, {"x": (2, 3, 4, 4)}, ["d", "da"], inits, dtype=_elem_type(storage))
    x = _stored((2, 3, 4, 4), storage)
    for ours, theirs in zip(convc.run(convc.load_onnx(model), {"x": x}, platform="cpu", target="cpu").outputs,
                            _onnxruntime(model, {"x": x}), strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("case", ["plain", "per_channel_pads_strides", "depthwise_same_upper"], ids=str)
def test_qlinear_conv_of_an_8_bit_graph_input_agrees_with_onnxruntime(case: str, x_storage: Any) -> None:
    """QLinearConv whose x is the graph's int8 or uint8 input (stored integers, as a model that takes quantized
    images has it): one quantized conv, at most one step apart from ONNX Runtime, identical on at least 99.9%."""
    attrs, x_shape, _, _, _ = QLINEAR_CASES[case]
    inits, _ = _conv_case(case, x_storage)
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if "b" in inits else [])
    model = _model([helper.make_node("QLinearConv", inputs, ["y"], **attrs)], {"x": x_shape}, ["y"], inits,
                   dtype=_elem_type(x_storage))
    graph = _assert_8_bit_input_one_step_apart(model, _stored(x_shape, x_storage))
    assert [op.kind for op in graph.ops].count("conv") == 1


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("case", ["plain", "bias", "depthwise_same_upper"], ids=str)
def test_qdq_conv_of_an_8_bit_graph_input_is_one_quantized_conv_that_agrees_with_onnxruntime(case: str, x_storage: Any) -> None:
    """DQ(the graph's int8 or uint8 input), DQ(int8 w), DQ(int32 b) -> Conv -> Q: the pattern is fused as for a
    quantized x (one quantized conv, integer convolutions only in the cpu module), at most one step apart from ONNX
    Runtime, identical on at least 99.9% of elements."""
    _, x_shape, _, _, _ = QLINEAR_CASES[case]
    inits, _ = _conv_case(case, x_storage)
    model = _model(_qdq_conv_nodes(case, inits, "x"), {"x": x_shape}, ["y"], inits, dtype=_elem_type(x_storage))
    graph = _assert_8_bit_input_one_step_apart(model, _stored(x_shape, x_storage))
    conv = next(op for op in graph.ops if op.kind == "conv")
    assert all(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result))
    integer, floating = _convolutions(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"))
    assert integer >= 1 and floating == 0, (integer, floating)


@pytest.mark.parametrize("x_input", ["uint8", "float"])
def test_check_of_a_model_whose_output_qlinear_conv_writes_compares_with_onnxruntime(x_input: str, tmp_path: Any,
                                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`convc m.onnx --check --target cpu` where a QLinearConv writes the graph's uint8 output y, from a uint8 graph
    input or from a QuantizeLinear of a float one: the lowered module's output keeps the name y, so ONNX Runtime is
    asked for y and compared (every element equal), beside the spec oracle; exit 0 (where ONNX Runtime's 8-bit products
    saturate, the check says it did not compare with it)."""
    from convc.cli import main as convc_main

    inits, _ = _conv_case("plain", np.uint8)
    first = "x" if x_input == "uint8" else "q"
    nodes = [helper.make_node("QLinearConv", [first, "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])]
    if x_input == "float":
        nodes.insert(0, helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]))
    path = tmp_path / "m.onnx"
    path.write_bytes(_model(nodes, {"x": (1, 3, 9, 9)}, ["y"], inits, dtype=TensorProto.UINT8 if x_input == "uint8" else TensorProto.FLOAT))
    assert convc_main([str(path), "--check", "--target", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "y: 100.00% identical, at most 0 quantization steps apart vs jax.lax (ok)" in out
    _skip_where_check_did_not_compare_with_onnxruntime(path.read_bytes(), out)
    assert "y: max abs error vs onnxruntime 0 (ok)" in out


def test_dequantize_linear_of_a_value_quantized_with_other_parameters_is_one_located_o6_error() -> None:
    """QuantizeLinear (scale 0.1) -> DequantizeLinear (scale 0.2) of the same storage: one located O6 diagnostic
    naming x's quantized type and the one the node's parameters say."""
    from convc.diagnostics import ConvcError

    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), helper.make_node("DequantizeLinear", ["q", "s2", "z"], ["d"], name="dq")]
    inits = {"s": np.array(0.1, np.float32), "s2": np.array(0.2, np.float32), "z": np.array(3, np.int8)}
    with pytest.raises(ConvcError) as err:
        convc.load_onnx(_model(nodes, {"x": (1, 2, 3, 3)}, ["d"], inits), file="m.onnx")
    line = str(err.value)
    assert err.value.constraint == "O6" and "\n" not in line and line.startswith("m.onnx:/graph/node/1")
    assert "x is tensor<1x2x3x3x!quant.uniform<i8:f32, 0.1" in line and "x_zero_point (!quant.uniform<i8:f32, 0.2" in line


@pytest.mark.parametrize("storage", [np.uint8, np.int8])
def test_dequantize_linear_of_an_8_bit_graph_input_without_a_zero_point_takes_zero_of_its_type(storage: Any) -> None:
    """DequantizeLinear of an int8 or uint8 graph input with no x_zero_point (ONNX: 0 of x's type): the reals ONNX
    Runtime gives, every element."""
    model = _model([helper.make_node("DequantizeLinear", ["x", "s"], ["d"])], {"x": (2, 3, 4)}, ["d"],
                   {"s": np.array(0.25, np.float32)}, dtype=_elem_type(storage))
    x = _stored((2, 3, 4), storage)
    np.testing.assert_array_equal(convc.run(convc.load_onnx(model), {"x": x}, platform="cpu").outputs[0], _onnxruntime(model, {"x": x})[0])


def test_qdq_conv_fuses_through_identity_aliases_of_its_dequantized_operands() -> None:
    """Identity nodes between the DequantizeLinears and the Conv (the TorchScript exporter's aliases of equal
    initializers, kept by the quantizer) do not stop the fusion: one quantized conv, integer convolutions only in
    the cpu module, at most one step from ONNX Runtime."""
    inits, y_scale = _conv_case("bias", np.uint8)
    inits["bs"] = (inits["xs"] * inits["ws"]).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0), helper.make_node("Identity", ["wd"], ["wd_alias"]),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0), helper.make_node("Identity", ["bd"], ["bd_alias"]),
             helper.make_node("Identity", ["bd_alias"], ["bd_alias2"]),
             helper.make_node("Conv", ["xd", "wd_alias", "bd_alias2"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"]), helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    graph = _assert_one_step_apart(_model(nodes, {"x": (1, 3, 8, 8)}, ["y", "yd"], inits), (1, 3, 8, 8), float(y_scale))
    conv = next(op for op in graph.ops if op.kind == "conv")
    assert all(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result))
    integer, floating = _convolutions(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"))
    assert integer >= 1 and floating == 0, (integer, floating)


def test_qdq_conv_of_an_int16_activation_stays_a_float_conv() -> None:
    """An int16-quantized activation with int8 weights is no quantized conv the spec has (C31: one storage type):
    the pattern is not fused, and the float conv between casts is at most one step from ONNX Runtime's (f32 sums
    in another order round differently near half steps)."""
    inits, _ = _conv_case("plain", np.int8)
    inits |= {"xz": np.array(0, np.int16), "yz": np.array(-10, np.int16)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]), helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]), helper.make_node("Conv", ["xd", "wd"], ["c"]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"]), helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    graph, (ours, _), (theirs, _) = _run_both(_model(nodes, {"x": (1, 3, 9, 9)}, ["y", "yd"], inits, opset=21), (1, 3, 9, 9), seed=3)
    assert ours.dtype == theirs.dtype == np.int16 and _steps_apart(ours, theirs, 1.0)[0] <= 1
    conv = next(op for op in graph.ops if op.kind == "conv")
    assert not is_quantized(conv.result.type.dtype)


def test_qdq_conv_whose_bias_scale_is_not_x_scale_times_w_scale_stays_a_float_conv() -> None:
    """A DQ'd int32 bias of another scale than x_scale * w_scale is no integer bias of the conv: the pattern is
    not fused (the Conv imports as a float conv of the dequantized operands), and still agrees with ONNX Runtime."""
    graph = _biased_conv_with_bias_scale_tripled(zero_bias=False)
    conv = next(op for op in graph.ops if op.kind == "conv")
    assert not any(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result))


def _biased_conv_with_bias_scale_tripled(zero_bias: bool) -> convc.Graph:
    """Q -> DQ(x), DQ(w), DQ(b at 3 x_scale * w_scale; all zeros with `zero_bias`) -> Conv -> Q, imported and
    checked at most one step from ONNX Runtime."""
    inits, y_scale = _conv_case("bias", np.uint8)
    if zero_bias:
        inits["b"] = np.zeros_like(inits["b"])
    inits["bs"] = (inits["xs"] * inits["ws"] * 3).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"]), helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    return _assert_one_step_apart(_model(nodes, {"x": (1, 3, 8, 8)}, ["y", "yd"], inits), (1, 3, 8, 8), float(y_scale))


def test_qdq_conv_with_a_zero_bias_of_another_scale_is_one_quantized_conv() -> None:
    """An all-zero DQ'd int32 bias of another scale than x_scale * w_scale (quantize_static's one bias for convs
    whose zero float biases the TorchScript exporter aliased, as in MobileNet v3's squeeze-excite) is zero at any
    scale: the pattern is fused, one quantized conv, at most one step from ONNX Runtime."""
    graph = _biased_conv_with_bias_scale_tripled(zero_bias=True)
    (conv,) = [op for op in graph.ops if op.kind == "conv"]
    assert all(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result))


def _qdq_gemm_model(x_storage: Any, trans_b: bool, per_channel: bool, bias: bool, alpha: float = 1.0) -> bytes:
    """Q -> DQ(x [32, 48]), DQ(int8 B: [24, 48] with transB, else [48, 24]; per tensor or per output column),
    DQ(int32 C at x_scale * w_scale) -> Gemm -> Q -> DQ, as ONNX Runtime's quantizer writes a Linear layer."""
    rng = np.random.default_rng(5)
    rows, depth, columns = 32, 48, 24
    w = rng.integers(-127, 128, (columns, depth) if trans_b else (depth, columns)).astype(np.int8)
    w_scale = (rng.uniform(0.002, 0.01, columns) if per_channel else np.array(0.005)).astype(np.float32)
    inits = {"xs": np.array(0.03, np.float32), "xz": np.array(128 if x_storage is np.uint8 else 0, x_storage), "w": w,
             "ws": w_scale, "wz": np.zeros(w_scale.shape, np.int8), "ys": np.array(0.2, np.float32),
             "yz": np.array(120 if x_storage is np.uint8 else -10, x_storage)}
    axis = {"axis": 0 if trans_b else 1} if per_channel else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]), helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], **axis)]
    gemm_inputs = ["xd", "wd"]
    if bias:
        inits |= {"b": rng.integers(-4000, 4000, columns).astype(np.int32), "bs": (inits["xs"] * w_scale).astype(np.float32)}
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], **({"axis": 0} if per_channel else {})))
        gemm_inputs.append("bd")
    nodes += [helper.make_node("Gemm", gemm_inputs, ["g"], transB=int(trans_b), alpha=alpha),
              helper.make_node("QuantizeLinear", ["g", "ys", "yz"], ["y"]), helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    return _model(nodes, {"x": (rows, depth)}, ["y", "yd"], inits)


@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_column"])
@pytest.mark.parametrize("trans_b", [True, False], ids=["transB", "B"])
@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
def test_qdq_gemm_is_one_integer_product_that_agrees_with_onnxruntime(x_storage: Any, trans_b: bool, per_channel: bool, bias: bool) -> None:
    """Q -> DQ(x), DQ(int8 B), DQ(int32 C) -> Gemm -> Q -> DQ (a quantized Linear layer, B as given or transposed,
    per tensor or per output column, with and without C): imported as one quantized conv (the float Gemm between
    casts is gone, its weights stay 8-bit), whose cpu module multiplies integers only; at most one step apart from
    ONNX Runtime, identical on at least 99.9% of elements."""
    graph = _assert_one_step_apart(_qdq_gemm_model(x_storage, trans_b, per_channel, bias), (32, 48), 0.2)
    (conv,) = [op for op in graph.ops if op.kind == "conv"]
    assert all(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result))
    assert "dot_general" not in [op.kind for op in graph.ops]
    integer, floating = _convolutions(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"))
    assert integer == 1 and floating == 0, (integer, floating)


def test_qdq_gemm_with_alpha_stays_a_float_gemm() -> None:
    """A Gemm scaled by alpha is no plain product of its quantized operands: the pattern is not fused (the Gemm
    imports as a float dot_general of the dequantized operands), and still agrees with ONNX Runtime."""
    graph = _assert_one_step_apart(_qdq_gemm_model(np.uint8, True, False, True, alpha=0.5), (32, 48), 0.2)
    assert "conv" not in [op.kind for op in graph.ops] and "dot_general" in [op.kind for op in graph.ops]


# --- ConvInteger, MatMulInteger, QLinearMatMul ----------------------------------------------


def _integer_weights(shape: tuple[int, ...], storage: Any, seed: int = 11) -> np.ndarray:
    low, high = (0, 200) if storage is np.uint8 else (-100, 100)
    return np.random.default_rng(seed).integers(low, high, shape).astype(storage)


def _quantized_input(x_storage: Any) -> tuple[list[Any], dict[str, np.ndarray]]:
    """x quantized (QuantizeLinear, scale 0.05) to `x_storage` as 'q', and ConvInteger's / MatMulInteger's zero
    point for it ('xz'), 7 off the quantizer's (the integer ops read the stored integers, whatever produced them)."""
    quantizer_zero = 100 if x_storage is np.uint8 else -20
    inits = {"qs": np.array(0.05, np.float32), "qz": np.array(quantizer_zero, x_storage), "xz": np.array(quantizer_zero + 7, x_storage)}
    return [helper.make_node("QuantizeLinear", ["x", "qs", "qz"], ["q"])], inits


def _exactly_as_onnxruntime(model: bytes, x_shape: tuple[int, ...], reference: bytes | None = None) -> convc.Graph:
    """convc's integer output (cpu target, PJRT) equals ONNX Runtime's (of `reference`, when given) exactly."""
    graph = convc.load_onnx(model)
    feeds = {"x": _random(x_shape, 5) * 3}
    ours = convc.run(graph, feeds, platform="cpu", target="cpu").outputs[0]
    theirs = _onnxruntime(reference or model, feeds)[0]
    assert ours.dtype == theirs.dtype == np.int32 and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    assert len(np.unique(theirs)) > 10
    return graph


@pytest.mark.parametrize(("x_storage", "w_storage"), [(np.uint8, np.int8), (np.int8, np.uint8)])
@pytest.mark.parametrize("case", QLINEAR_CASES, ids=str)
def test_conv_integer_equals_onnxruntime_exactly(case: str, x_storage: Any, w_storage: Any) -> None:
    """ConvInteger of a quantized x (its stored integers, another zero point than its quantizer's) and 8-bit
    weights with a zero point: the same int32 sums as ONNX Runtime, for every attribute form."""
    attrs, x_shape, w_shape, _, _ = QLINEAR_CASES[case]
    nodes, inits = _quantized_input(x_storage)
    inits |= {"w": _integer_weights(w_shape, w_storage), "wz": np.array(3, w_storage)}
    nodes.append(helper.make_node("ConvInteger", ["q", "w", "xz", "wz"], ["y"], **attrs))
    graph = _exactly_as_onnxruntime(_model(nodes, {"x": x_shape}, ["y"], inits), x_shape)
    assert [op.kind for op in graph.ops].count("conv") == 1


def test_conv_integer_with_per_channel_weight_zero_points_equals_the_shifted_weights() -> None:
    """ConvInteger with one w_zero_point per output channel (which ONNX Runtime's kernel refuses) equals ONNX Runtime's
    ConvInteger of the weights shifted by them beforehand (zero point 0)."""
    nodes, inits = _quantized_input(np.uint8)
    w = np.random.default_rng(2).integers(-60, 60, (4, 3, 3, 3)).astype(np.int8)
    zero_points = np.array([-20, 0, 7, 20], np.int8)
    nodes.append(helper.make_node("ConvInteger", ["q", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1]))
    model = _model(nodes, {"x": (1, 3, 8, 8)}, ["y"], inits | {"w": w, "wz": zero_points})
    reference = _model(nodes, {"x": (1, 3, 8, 8)}, ["y"], inits | {"w": (w - zero_points[:, None, None, None]).astype(np.int8),
                                                                     "wz": np.array(0, np.int8)})
    _exactly_as_onnxruntime(model, (1, 3, 8, 8), reference)


MATMUL_SHAPES = {"matrix": ((5, 12), (12, 7)), "batched": ((2, 5, 12), (12, 7))}


@pytest.mark.parametrize(("x_storage", "w_storage"), [(np.uint8, np.int8), (np.int8, np.uint8)])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_integer_equals_onnxruntime_exactly(shapes: str, x_storage: Any, w_storage: Any) -> None:
    """MatMulInteger of a quantized A (its stored integers, another zero point) and an 8-bit B with one zero point
    per column: the same int32 sums as ONNX Runtime."""
    a_shape, b_shape = MATMUL_SHAPES[shapes]
    nodes, inits = _quantized_input(x_storage)
    zero_points = np.arange(b_shape[1], dtype=w_storage) + (3 if w_storage is np.uint8 else -3)
    inits |= {"b": _integer_weights(b_shape, w_storage), "bz": zero_points}
    nodes.append(helper.make_node("MatMulInteger", ["q", "b", "xz", "bz"], ["y"]))
    _exactly_as_onnxruntime(_model(nodes, {"x": a_shape}, ["y"], inits), a_shape)


def test_matmul_integer_of_an_int8_graph_input_equals_onnxruntime_exactly() -> None:
    """MatMulInteger of an int8 graph input (no zero point) and a uint8 B: the int32 sums ONNX Runtime gives."""
    b = _integer_weights((6, 4), np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "", "bz"], ["y"])
    model = _model([node], {"a": (3, 6)}, ["y"], {"b": b, "bz": np.array(9, np.uint8)}, dtype=TensorProto.INT8)
    a = np.random.default_rng(4).integers(-128, 128, (3, 6)).astype(np.int8)
    ours = convc.run(convc.load_onnx(model), {"a": a}, platform="cpu", target="cpu").outputs[0]
    np.testing.assert_array_equal(ours, _onnxruntime(model, {"a": a})[0])


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("per_column", [False, True], ids=["per_tensor", "per_column"])
def test_qlinear_matmul_agrees_with_onnxruntime(x_storage: Any, per_column: bool) -> None:
    """Q -> QLinearMatMul (int8 b, per tensor or per column) -> its DQ: at most one step apart from ONNX Runtime,
    identical on at least 99.9% of elements."""
    rng = np.random.default_rng(9)
    columns = 16
    b_scale = (rng.uniform(0.002, 0.01, columns) if per_column else np.array(0.005)).astype(np.float32)
    y_zero = np.array(128 if x_storage is np.uint8 else 3, x_storage)
    inits = {"xs": np.array(0.03, np.float32), "xz": np.array(120 if x_storage is np.uint8 else -4, x_storage),
             "b": _integer_weights((24, columns), np.int8), "bs": b_scale, "bz": np.zeros(b_scale.shape, np.int8),
             "ys": np.array(0.04, np.float32), "yz": y_zero}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearMatMul", ["q", "xs", "xz", "b", "bs", "bz", "ys", "yz"], ["y"]),
             helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    model = _model(nodes, {"x": (2, 9, 24)}, ["y", "yd"], inits, opset=21 if per_column else OPSET)
    _assert_one_step_apart(model, (2, 9, 24), 0.04)


# --- a QDQ pattern around a ConvTranspose ---------------------------------------------------

TransposeCase = tuple[dict[str, Any], tuple[int, ...], tuple[int, ...], bool]
TRANSPOSE_CASES: dict[str, TransposeCase] = {
    # attributes, x shape, w shape ([C, M / group, *k]), bias; each output has over 1000 elements, so that the bar
    # (identical on 99.9%) allows the one f32 rescale that lands on the other side of a half step
    "plain": ({}, (2, 3, 10, 10), (3, 4, 3, 3), False),
    "strides_pads_output_padding": ({"strides": [2, 2], "pads": [1, 0, 1, 1], "output_padding": [1, 0]}, (2, 3, 8, 7), (3, 4, 3, 3), True),
    "group_dilations": ({"group": 2, "dilations": [2, 1], "pads": [1, 1, 0, 1]}, (2, 4, 9, 9), (4, 3, 3, 3), True),
    "depthwise_same_upper": ({"group": 4, "auto_pad": "SAME_UPPER", "strides": [2, 2]}, (2, 4, 8, 8), (4, 1, 3, 3), True),
    "same_lower": ({"auto_pad": "SAME_LOWER", "strides": [2, 3]}, (1, 3, 8, 6), (3, 4, 2, 3), False),
    "valid_output_shape": ({"auto_pad": "VALID", "strides": [2, 2], "output_shape": [17, 16]}, (2, 3, 8, 8), (3, 4, 3, 3), True),
    "conv1d": ({"strides": [2], "pads": [1, 2], "output_padding": [1]}, (4, 3, 40), (3, 8, 3), True),
    "conv3d": ({"strides": [1, 2, 1], "pads": [1, 0, 1, 0, 1, 1]}, (2, 2, 4, 6, 4), (2, 3, 3, 2, 3), False),
}


def _qdq_transpose_model(case: str | TransposeCase, x_storage: Any, per_channel: bool = False) -> tuple[bytes, tuple[int, ...], float]:
    """Q -> DQ(x), DQ(int8 w, per tensor or per output channel: axis 1), DQ(int32 b, scale x_scale * w_scale, per
    output channel the per-group w_scale repeated for each group) -> ConvTranspose -> Q -> DQ, as quantize_static writes
    one (it writes no per-channel grouped one: its bias scale would be w_scale's size); the model, x's shape, y's scale."""
    attrs, x_shape, w_shape, bias = TRANSPOSE_CASES[case] if isinstance(case, str) else case
    rng = np.random.default_rng(8)
    out = w_shape[1] * attrs.get("group", 1)
    w_scale = (rng.uniform(0.002, 0.01, w_shape[1]) if per_channel else np.array(0.005)).astype(np.float32)
    y_scale = np.float32(0.05)
    inits = {"xs": np.array(0.03, np.float32), "xz": np.array(128 if x_storage is np.uint8 else 0, x_storage),
             "w": rng.integers(-127, 128, w_shape).astype(np.int8), "ws": w_scale, "wz": np.zeros(w_scale.shape, np.int8),
             "ys": np.array(y_scale), "yz": np.array(120 if x_storage is np.uint8 else -10, x_storage)}
    axis = {"axis": 1} if per_channel else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], **axis)]
    conv_inputs = ["xd", "wd"]
    if bias:
        bias_scale = np.tile(inits["xs"] * w_scale, out // w_scale.size) if per_channel else inits["xs"] * w_scale
        inits |= {"b": rng.integers(-2000, 2000, out).astype(np.int32), "bs": bias_scale.astype(np.float32),
                  "bz": np.zeros(bias_scale.shape, np.int32)}
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], **({"axis": 0} if per_channel else {})))
        conv_inputs.append("bd")
    nodes += [helper.make_node("ConvTranspose", conv_inputs, ["c"], **attrs),
              helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"]), helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["yd"])]
    return _model(nodes, {"x": x_shape}, ["y", "yd"], inits), x_shape, float(y_scale)


def _transposed_convs(graph: convc.Graph) -> list[Any]:
    return [op for op in graph.ops if op.kind == "conv_backprop_input"]


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("case", TRANSPOSE_CASES, ids=str)
def test_qdq_conv_transpose_is_one_integer_transposed_conv_that_agrees_with_onnxruntime(case: str, x_storage: Any) -> None:
    """Q -> DQ(x), DQ(int8 w per tensor), DQ(int32 b) -> ConvTranspose -> Q -> DQ: imported as one quantized
    conv_backprop_input (no float transposed conv between casts), whose cpu module convolves integers only; at most
    one step apart from ONNX Runtime, identical on at least 99.9% of elements, for every attribute form (strides, pads,
    output_padding, dilations, groups, auto_pad, output_shape, 1-D to 3-D), uint8 and int8 x."""
    model, x_shape, y_scale = _qdq_transpose_model(case, x_storage)
    graph = _assert_one_step_apart(model, x_shape, y_scale)
    (op,) = _transposed_convs(graph)
    assert all(is_quantized(v.type.dtype) for v in (*op.operands, op.result))
    assert not any(op.kind == "conv" for op in graph.ops)
    integer, floating = _convolutions(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"))
    assert integer >= 1 and floating == 0, (integer, floating)


# the cases with more than one output channel per group (depthwise's one is one scale: per tensor)
PER_CHANNEL_TRANSPOSE_CASES = [case for case, (_, _, w_shape, _) in TRANSPOSE_CASES.items() if w_shape[1] > 1]


@pytest.mark.parametrize("x_storage", [np.uint8, np.int8])
@pytest.mark.parametrize("case", PER_CHANNEL_TRANSPOSE_CASES, ids=str)
def test_qdq_conv_transpose_with_per_channel_weights_is_one_integer_lhs_dilated_conv(case: str, x_storage: Any) -> None:
    """DQ(int8 w per output channel: axis 1, as quantize_static writes it) -> ConvTranspose: StableHLO's quantized
    transposed conv cannot reverse a per-axis kernel (B8), so the pattern imports as the forward conv it is (lhs
    dilation, the kernel reversed and regrouped at import, quantized per output channel) and no conv_backprop_input;
    its cpu module convolves integers only; at most one step from ONNX Runtime, identical on at least 99.9%."""
    model, x_shape, y_scale = _qdq_transpose_model(case, x_storage, per_channel=True)
    graph = _assert_one_step_apart(model, x_shape, y_scale)
    (conv,) = [op for op in graph.ops if op.kind == "conv"]
    assert all(is_quantized(v.type.dtype) for v in (*conv.operands, conv.result)) and not _transposed_convs(graph)
    integer, floating = _convolutions(convc.compile_graph(graph, pipeline=I8_CPU_PIPELINE, target="cpu"))
    assert integer >= 1 and floating == 0, (integer, floating)


def test_qdq_conv_transpose_whose_bias_scale_is_not_x_scale_times_w_scale_stays_a_float_transposed_conv() -> None:
    """A DQ'd int32 bias of another scale than x_scale * w_scale: the ConvTranspose pattern is not fused (a float
    conv_backprop_input of the dequantized operands), and still at most one step from ONNX Runtime."""
    model, x_shape, y_scale = _qdq_transpose_model("strides_pads_output_padding", np.uint8)
    proto = onnx.load_from_string(model)
    bias_scale = next(t for t in proto.graph.initializer if t.name == "bs")
    bias_scale.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(bias_scale) * 3, "bs"))
    graph = _assert_one_step_apart(proto.SerializeToString(), x_shape, y_scale)
    (op,) = _transposed_convs(graph)
    assert not any(is_quantized(v.type.dtype) for v in (*op.operands, op.result))


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_qdq_conv_transpose_whose_pads_crop_everything_is_one_located_b7_error(per_channel: bool) -> None:
    """A fused ConvTranspose pattern whose pads leave no output (size -3): one located diagnostic, B7, naming the
    ConvTranspose as the file writes it, both for the quantized transposed conv (per tensor) and for the forward conv
    built from its plan (per channel)."""
    from convc.diagnostics import ConvcError

    crop_everything = ({"pads": [3, 3, 3, 3]}, (1, 3, 2, 2), (3, 4, 2, 2), False)
    model, _, _ = _qdq_transpose_model(crop_everything, np.uint8, per_channel=per_channel)
    with pytest.raises(ConvcError) as err:
        convc.load_onnx(model)
    assert err.value.constraint == "B7" and "(ConvTranspose (DequantizeLinear -> ConvTranspose -> QuantizeLinear))" in str(err.value)
    assert "would have size -3" in str(err.value) and "/graph/node/" in str(err.value)


# name -> (pool node type, its attributes, x shape)
QDQ_POOL_CASES: dict[str, tuple[str, dict[str, Any], tuple[int, ...]]] = {
    "avg_2x2_stride_2": ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}, (2, 8, 12, 12)),
    "avg_3x3_pads_excluded": ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, (1, 6, 9, 7)),
    "avg_3x3_pads_counted_ceil": ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0],
                                                  "count_include_pad": 1, "ceil_mode": 1}, (1, 6, 10, 9)),
    "avg_1d": ("AveragePool", {"kernel_shape": [3], "strides": [2]}, (2, 5, 17)),
    "global_2x2": ("GlobalAveragePool", {}, (2, 16, 2, 2)),
    "global_7x7": ("GlobalAveragePool", {}, (2, 16, 7, 7)),
}
# average pools over channels in blocks of 16, which ONNX Runtime (up to opset 18, its default optimizations) runs in
# its blocked-channel form on AVX2 and AVX-512 machines alike
BLOCKED_POOL_CASES: dict[str, tuple[str, dict[str, Any], tuple[int, ...]]] = {
    "avg_2x2_stride_2_c16": ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}, (2, 16, 12, 12)),
    "avg_3x3_pads_excluded_c32": ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, (1, 32, 9, 7)),
}


def _qdq_pool_model(case: str, storage: Any, y_scale: float, y_zero: int, dequantized_output: bool = False,
                    shared: bool = False, x_shared: bool = False, opset: int = OPSET) -> bytes:
    """x quantized (scale 0.05, an odd zero point) -> DequantizeLinear -> the pool -> QuantizeLinear to (y_scale,
    y_zero): the quantized y the graph's output, or with `dequantized_output` its DequantizeLinear (as in a network),
    or with `shared` that DequantizeLinear read by two nodes (a Relu and a Neg, the graph's outputs). With `x_shared`
    x's DequantizeLinear is read by a Relu too (the graph's last output). `opset` is the model's."""
    op_type, attrs, x_shape = (QDQ_POOL_CASES | BLOCKED_POOL_CASES)[case]
    shift = 0 if storage is np.uint8 else -128
    inits = {"s": np.array(0.05, np.float32), "z": np.array(131 + shift, storage), "ys": np.array(y_scale, np.float32),
             "yz": np.array(y_zero + shift, storage)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node(op_type, ["d"], ["p"], **attrs), helper.make_node("QuantizeLinear", ["p", "ys", "yz"], ["y"])]
    outputs = ["y"]
    if dequantized_output or shared:
        nodes.append(helper.make_node("DequantizeLinear", ["y", "ys", "yz"], ["real"]))
        outputs = ["real"]
    if shared:
        nodes += [helper.make_node("Relu", ["real"], ["a"]), helper.make_node("Neg", ["real"], ["b"])]
        outputs = ["a", "b"]
    if x_shared:
        nodes.append(helper.make_node("Relu", ["d"], ["x_relu"]))
        outputs.append("x_relu")
    return _model(nodes, {"x": x_shape}, outputs, inits, opset=opset)


def _pool_equals_onnxruntime(model: bytes, case: str) -> convc.Graph:
    """convc's outputs (cpu target, PJRT) of a QDQ pool model equal ONNX Runtime's on every element."""
    feeds = {"x": _random((QDQ_POOL_CASES | BLOCKED_POOL_CASES)[case][2], 3) * 3}
    graph = convc.load_onnx(model)
    for ours, theirs in zip(convc.run(graph, feeds, platform="cpu", target="cpu").outputs, _onnxruntime(model, feeds), strict=True):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
        assert len(np.unique(theirs)) > 5
    return graph


SCALES = pytest.mark.parametrize(("y_scale", "y_zero"), [(0.05, 131), (0.0213, 120)], ids=["same_scale", "other_scale"])
AVERAGE_POOLS = [case for case, (op_type, _, _) in QDQ_POOL_CASES.items() if op_type == "AveragePool"]
GLOBAL_POOLS = [case for case, (op_type, _, _) in QDQ_POOL_CASES.items() if op_type == "GlobalAveragePool"]


@SCALES
@pytest.mark.parametrize("case", QDQ_POOL_CASES, ids=str)
def test_uint8_qdq_average_pools_equal_onnxruntimes_qlinear_pools(case: str, y_scale: float, y_zero: int) -> None:
    """A uint8 DequantizeLinear -> AveragePool / GlobalAveragePool -> QuantizeLinear pattern (which ONNX Runtime runs
    as its QLinearAveragePool / QLinearGlobalAveragePool) imports as ONNX Runtime's arithmetic: every stored integer
    equal to ONNX Runtime's, with y's scale equal to x's and an odd zero point too (ties, where rounding before or
    after adding the zero point differs)."""
    graph = _pool_equals_onnxruntime(_qdq_pool_model(case, np.uint8, y_scale, y_zero), case)
    assert "sum_pool" not in [op.kind for op in graph.ops]  # the fused pool's window sums, not the AveragePool's


@pytest.mark.parametrize("case", AVERAGE_POOLS, ids=str)
def test_int8_qdq_average_pools_equal_onnxruntimes_three_ops_off_ties(case: str) -> None:
    """An int8 DequantizeLinear -> AveragePool -> QuantizeLinear whose output is the graph's, which ONNX Runtime runs
    as its three ops, imports as their arithmetic (window sums in order, QuantizeLinear's rounding): with y's scale
    not x's (no ties), every stored integer equal."""
    graph = _pool_equals_onnxruntime(_qdq_pool_model(case, np.int8, 0.0213, 120), case)
    assert "sum_pool" not in [op.kind for op in graph.ops]


@pytest.mark.parametrize("case", AVERAGE_POOLS, ids=str)
def test_int8_qdq_average_pools_on_ties_of_an_odd_zero_point_are_within_one_step_of_onnxruntime(case: str) -> None:
    """The same with y's scale x's and an odd zero point, where averages are ties, at opset 17: at most one step
    apart and at least 95% identical (measured 96-100%). Up to opset 18 ONNX Runtime's float AveragePool is MLAS's,
    whose vector kernel adds each window's column sums (its blocked-channel form, chosen by the channel count and
    the CPU's vector width, adds in rows), so which f32 sum a tie rounds from depends on the machine; convc adds in
    rows (the next test: identical at opset 19)."""
    model = _qdq_pool_model(case, np.int8, 0.05, 131)
    feeds = {"x": _random(QDQ_POOL_CASES[case][2], 3) * 3}
    ours = convc.run(convc.load_onnx(model), feeds, platform="cpu", target="cpu").outputs[0].astype(int)
    theirs = _onnxruntime(model, feeds)[0].astype(int)
    assert np.abs(ours - theirs).max() <= 1 and (ours == theirs).mean() >= 0.95


@pytest.mark.parametrize("case", BLOCKED_POOL_CASES, ids=str)
def test_int8_qdq_average_pools_on_ties_of_channels_in_blocks_of_16_equal_onnxruntimes_three_ops(case: str) -> None:
    """The tie-heavy int8 AveragePool pattern at opset 17 over 16 or 32 channels, whose float AveragePool ONNX Runtime
    runs in its blocked-channel form (on AVX2 and AVX-512 alike), which adds each window in rows as convc does: every
    stored integer equal."""
    _pool_equals_onnxruntime(_qdq_pool_model(case, np.int8, 0.05, 131), case)


@pytest.mark.parametrize("case", AVERAGE_POOLS, ids=str)
def test_int8_qdq_average_pools_on_ties_at_opset_19_equal_onnxruntimes_three_ops(case: str) -> None:
    """The tie-heavy int8 AveragePool pattern at opset 19, whose float AveragePool ONNX Runtime runs as its own loop
    over each window in rows (or in its blocked-channel form, in rows too): every stored integer equal."""
    _pool_equals_onnxruntime(_qdq_pool_model(case, np.int8, 0.05, 131, opset=19), case)


@SCALES
@pytest.mark.parametrize("case", AVERAGE_POOLS, ids=str)
def test_int8_qdq_average_pool_read_by_one_dequantize_equals_onnxruntimes_uint8_qlinear_pool(case: str, y_scale: float, y_zero: int) -> None:
    """An int8 DequantizeLinear -> AveragePool -> QuantizeLinear whose x comes from a QuantizeLinear read once and
    whose y one DequantizeLinear reads: ONNX Runtime on x86-64 makes both pairs uint8 and fuses the pool into its
    QLinearAveragePool, whose f32 arithmetic adds y's zero point plus 128; imported so (no `sum_pool`), every stored
    integer equal, ties of an odd zero point included (y's scale x's)."""
    graph = _pool_equals_onnxruntime(_qdq_pool_model(case, np.int8, y_scale, y_zero, dequantized_output=True), case)
    assert "sum_pool" not in [op.kind for op in graph.ops]


@SCALES
@pytest.mark.parametrize("case", AVERAGE_POOLS, ids=str)
def test_int8_qdq_average_pools_whose_dequantizes_are_read_twice_equal_onnxruntimes_int8_qlinear_pool(case: str, y_scale: float, y_zero: int) -> None:
    """The int8 AveragePool pattern whose x's and y's DequantizeLinear are each read by two nodes: neither pair is made
    uint8 (ONNX Runtime copies such a DequantizeLinear once per reader, and then its QuantizeLinear has two), so ONNX
    Runtime fuses the pool as int8: every output equal, ties of an odd zero point included (y's scale x's)."""
    model = _qdq_pool_model(case, np.int8, y_scale, y_zero, shared=True, x_shared=True)
    graph = _pool_equals_onnxruntime(model, case)
    assert "sum_pool" not in [op.kind for op in graph.ops]


@pytest.mark.parametrize("case", AVERAGE_POOLS, ids=str)
def test_int8_qdq_average_pool_whose_y_is_read_twice_equals_onnxruntimes_three_ops_off_ties(case: str) -> None:
    """The int8 AveragePool pattern whose x's pair ONNX Runtime makes uint8 and whose y's DequantizeLinear two nodes
    read (y's pair stays int8): types differ, so ONNX Runtime runs the three ops, and convc their arithmetic: with
    y's scale not x's (no ties), every output equal."""
    _pool_equals_onnxruntime(_qdq_pool_model(case, np.int8, 0.0213, 120, shared=True), case)


@pytest.mark.parametrize("shared", [False, True], ids=["y_read_once", "y_read_twice"])
def test_int8_qdq_global_average_pool_is_the_integer_sum_however_onnxruntime_runs_it(shared: bool) -> None:
    """An int8 GlobalAveragePool pattern whose x's DequantizeLinear is read twice (its pair stays int8) imports as
    QLinearGlobalAveragePool's integer sum either way: every output equal to ONNX Runtime's where it fuses the pool
    too (y's DequantizeLinear read twice: its pair stays int8), within one step where it runs the float ops (read
    once: y's pair made uint8, the types differ)."""
    model = _qdq_pool_model("global_7x7", np.int8, 0.0213, 120, dequantized_output=True, shared=shared, x_shared=True)
    graph = convc.load_onnx(model)
    assert [op.result.type.dtype for op in graph.ops if op.kind == "reduce_sum"] == ["i32"]
    feeds = {"x": _random(QDQ_POOL_CASES["global_7x7"][2], 3) * 3}
    ours, theirs = convc.run(graph, feeds, platform="cpu", target="cpu").outputs, _onnxruntime(model, feeds)
    if shared:
        for got, want in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(got, want)
    else:
        assert np.abs(ours[0] - theirs[0]).max() <= 0.0213 * 1.001


@SCALES
@pytest.mark.parametrize("case", GLOBAL_POOLS, ids=str)
def test_int8_qdq_global_average_pool_read_by_a_dequantize_equals_onnxruntimes_qlinear_pool(case: str, y_scale: float, y_zero: int) -> None:
    """An int8 DequantizeLinear -> GlobalAveragePool -> QuantizeLinear whose output a DequantizeLinear reads (ONNX
    Runtime fuses it then) imports as QLinearGlobalAveragePool's arithmetic: every output equal."""
    graph = _pool_equals_onnxruntime(_qdq_pool_model(case, np.int8, y_scale, y_zero, dequantized_output=True), case)
    assert [op.result.type.dtype for op in graph.ops if op.kind == "reduce_sum"] == ["i32"]  # the stored integers summed


def test_int8_qdq_global_average_pool_as_the_graphs_output_is_the_integer_sum_within_one_step() -> None:
    """The int8 GlobalAveragePool pattern whose quantized output is the graph's (ONNX Runtime leaves it its float
    ops: x's pair made uint8, y's not) is the integer sum too, within one step of ONNX Runtime."""
    model = _qdq_pool_model("global_7x7", np.int8, 0.0213, 120)
    feeds = {"x": _random(QDQ_POOL_CASES["global_7x7"][2], 3) * 3}
    graph = convc.load_onnx(model)
    assert [op.result.type.dtype for op in graph.ops if op.kind == "reduce_sum"] == ["i32"]
    ours = convc.run(graph, feeds, platform="cpu", target="cpu").outputs[0]
    assert np.abs(ours.astype(int) - _onnxruntime(model, feeds)[0].astype(int)).max() <= 1


def test_dilated_qdq_average_pool_stays_its_ops() -> None:
    """A uint8 QDQ AveragePool with dilations (opset 19), which QLinearAveragePool does not take, is not matched: its
    float pool stays a `sum_pool`, within one step of ONNX Runtime's three ops (run with its graph optimizations off:
    ONNX Runtime 1.32's own fusion makes it a QLinearAveragePool with dilations, which it then refuses to load)."""
    inits = {"s": np.array(0.05, np.float32), "z": np.array(131, np.uint8), "ys": np.array(0.0213, np.float32),
             "yz": np.array(120, np.uint8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("AveragePool", ["d"], ["p"], kernel_shape=[2, 2], dilations=[2, 2]),
             helper.make_node("QuantizeLinear", ["p", "ys", "yz"], ["y"])]
    model = _model(nodes, {"x": (1, 4, 9, 9)}, ["y"], inits, opset=19)
    feeds = {"x": _random((1, 4, 9, 9), 3) * 3}
    graph = convc.load_onnx(model)
    assert "sum_pool" in [op.kind for op in graph.ops]
    ours = convc.run(graph, feeds, platform="cpu", target="cpu").outputs[0]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (theirs,) = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 1


def test_the_saturation_probe_says_whether_onnxruntime_multiplies_uint8_by_int8_exactly() -> None:
    """`onnxruntime_saturates_u8_by_s8` (a 2-long product) agrees with ONNX Runtime's MatMulInteger of 64-long uint8 and
    int8 vectors near their limits against numpy's exact int64 sum; `onnxruntime_unfit` names a model with 8-bit
    products exactly where the probe saturates, and never one of 8-bit tensors without products or a float model."""
    from convc.frontend.onnx.check import onnxruntime_saturates_u8_by_s8, onnxruntime_unfit

    rng = np.random.default_rng(7)
    a, b = rng.integers(200, 256, (1, 64)).astype(np.uint8), rng.integers(100, 128, (64, 1)).astype(np.int8)
    product = _model([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], {"a": (1, 64)}, ["y"], {"b": b}, dtype=TensorProto.UINT8)
    session = ort.InferenceSession(product, providers=["CPUExecutionProvider"])
    exact = int((a.astype(np.int64) @ b.astype(np.int64))[0, 0])
    assert onnxruntime_saturates_u8_by_s8() == (int(session.run(None, {"a": a})[0][0, 0]) != exact)
    assert (onnxruntime_unfit(product) is not None) == onnxruntime_saturates_u8_by_s8()
    no_product = _model([helper.make_node("DequantizeLinear", ["a", "s"], ["y"])], {"a": (1, 64)}, ["y"], {"s": np.float32(0.5)},
                        dtype=TensorProto.UINT8)
    float_product = _model([helper.make_node("MatMul", ["a", "w"], ["y"])], {"a": (1, 64)}, ["y"], {"w": b.astype(np.float32)})
    assert onnxruntime_unfit(no_product) is None and onnxruntime_unfit(float_product) is None
