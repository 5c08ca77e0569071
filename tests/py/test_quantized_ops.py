"""uniform_quantize, uniform_dequantize and conv on quantized types: declared, emitted as
StableHLO's own ops (which MLIR's verifier, quant dialect included, accepts), evaluated by
the oracle as the spec defines them (dequantize, float op, quantize), which a plain numpy
transcription of the spec's formulas reproduces exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from convc import Builder, ConvcError, compile_graph, grad
from convc.mlir import parse_module
from convc.reference import evaluate
from strategies import run_cli

F32 = np.float32
X_TYPE = "!quant.uniform<i8:f32, 0.5:-3>"
W_TYPE = "!quant.uniform<i8:f32:0, {0.1:1, 0.2:-2, 0.05}>"
Y_TYPE = "!quant.uniform<i8:f32, 0.25:4>"


def _spec_quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, low: int, high: int) -> np.ndarray:
    """The spec's `quantize`, in f32: divide, add the zero point, clamp, round half to even."""
    scaled = x.astype(F32) / scale.astype(F32) + zero_point.astype(F32)
    return np.round(np.clip(scaled, F32(low), F32(high)))


def _spec_dequantize(q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    return (q.astype(np.int64) - zero_point).astype(F32) * scale.astype(F32)


def _conv_nchw(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """A plain loop conv in f64 (stride 1, OIHW kernel, symmetric zero padding)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = xp.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i:i + kh, j:j + kw], w.astype(np.float64))
    return out


def _quantized_conv_graph() -> Builder:
    b = Builder("qconv")
    x = b.input("x", (1, 2, 5, 5))
    w = b.input("w", (3, 2, 3, 3), W_TYPE)
    xq = b.uniform_quantize(x, name="xq", new_dtype=X_TYPE)
    c = b.conv(xq, w, name="c", padding="SAME", preferred_element_type=Y_TYPE)
    b.output(c, b.uniform_dequantize(c, name="y"))
    return b


def test_oracle_is_the_spec_dequantize_conv_quantize() -> None:
    """The oracle's quantized conv equals a numpy transcription of the spec, element for element."""
    graph = _quantized_conv_graph().build()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 5)).astype(F32) * 8  # some values saturate i8 at scale 0.5
    w = rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    stored, real = evaluate(graph, [x, w])

    xq = _spec_quantize(x, np.array(0.5), np.array(-3), -128, 127)
    w_scale, w_zero = np.array([0.1, 0.2, 0.05]).reshape(3, 1, 1, 1), np.array([1, -2, 0]).reshape(3, 1, 1, 1)
    conv = _conv_nchw(_spec_dequantize(xq, np.array(0.5), np.array(-3)), _spec_dequantize(w, w_scale, w_zero), 1).astype(F32)
    expected = _spec_quantize(conv, np.array(0.25), np.array(4), -128, 127)
    assert stored.dtype == np.int8
    np.testing.assert_array_equal(stored, expected.astype(np.int8))
    np.testing.assert_array_equal(real, _spec_dequantize(expected, np.array(0.25), np.array(4)))
    assert (stored == 127).any() or (stored == -128).any(), "the case should reach the storage limits"


def test_quantize_rounds_half_to_even_and_clamps_to_the_storage_limits() -> None:
    b = Builder("q")
    x = b.input("x", (8,))
    b.output(b.uniform_quantize(x, name="q", new_dtype="!quant.uniform<i8<-10:10>:f32, 0.5:1>"))
    values = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 100.0, -100.0, 4.5], F32)  # x / 0.5 + 1: 1.5, 2.5, 0.5, -0.5, 3.5, ...
    (q,) = evaluate(b.build(), [values])
    np.testing.assert_array_equal(q, np.array([2, 2, 0, 0, 4, 10, -10, 10], np.int8))


def test_requantize_dequantizes_with_the_operand_type_first() -> None:
    """The spec's second example: [10, 10] per-axis {0.1:-30, 0.5:-20} -> {0.1:-20, 0.2:-30} is [20, 45]."""
    b = Builder("rq")
    x = b.input("x", (2,), "!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>")
    b.output(b.uniform_quantize(x, name="q", new_dtype="!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>"),
             b.uniform_dequantize(x, name="d"))
    q, d = evaluate(b.build(), [np.array([10, 10], np.int8)])
    np.testing.assert_array_equal(q, [20, 45])
    np.testing.assert_allclose(d, [4.0, 15.0], rtol=1e-6)


def test_hybrid_conv_is_the_float_conv_of_the_dequantized_kernel() -> None:
    b = Builder("hybrid")
    x = b.input("x", (1, 2, 4, 4))
    w = b.input("w", (3, 2, 3, 3), "!quant.uniform<i8:f32:0, {0.1, 0.2, 0.3}>")
    b.output(b.conv(x, w, name="c"))
    rng = np.random.default_rng(1)
    xs, ws = rng.standard_normal((1, 2, 4, 4)).astype(F32), rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    (out,) = evaluate(b.build(), [xs, ws])
    kernel = _spec_dequantize(ws, np.array([0.1, 0.2, 0.3]).reshape(3, 1, 1, 1), np.zeros((3, 1, 1, 1), np.int64))
    np.testing.assert_array_equal(out, _conv_nchw(xs, kernel, 0).astype(F32))


def test_generic_target_emits_quantized_stablehlo_that_mlir_accepts() -> None:
    """--target generic keeps the quantized ops and types; jaxlib's MLIR parses and verifies it."""
    text = compile_graph(_quantized_conv_graph().build(), target="generic")
    assert "stablehlo.uniform_quantize" in text and "stablehlo.uniform_dequantize" in text
    assert "-> tensor<1x3x5x5x!quant.uniform<i8:f32, 2.500000e-01:4>>" in text
    parse_module(text)


def test_hybrid_conv_gradient_is_refused_at_the_conv() -> None:
    """A float lhs flows into a conv with a quantized kernel: its rule refuses (G7); a
    quantized value, like an integer one, carries no gradient at all."""
    b = Builder("g")
    x = b.input("x", (1, 2, 4, 4))
    w = b.input("w", (3, 2, 3, 3), "!quant.uniform<i8:f32, 0.5>")
    b.output(b.conv(x, w, name="c"))
    with pytest.raises(ConvcError) as err:
        grad(b.build(), ["x"])
    assert err.value.constraint == "G7"
    assert "quantized conv has no gradient rule" in str(err.value)


# Each conv-family op with a float first operand and a quantized second one (the hybrid form
# of the conv it lowers to), its node name, and its attributes.
HYBRID_CONVS = {
    "conv": ((1, 2, 4, 4), (3, 2, 3, 3), {}),
    "conv_transpose": ((1, 4, 4, 2), (3, 3, 2, 3), {"strides": (2, 2)}),
    "conv_backprop_input": ((1, 3, 2, 2), (3, 2, 3, 3), {"input_shape": (1, 2, 4, 4)}),
    "conv_backprop_filter": ((1, 2, 4, 4), (1, 3, 2, 2), {"kernel_shape": (3, 2, 3, 3)}),
}


@pytest.mark.parametrize("kind", list(HYBRID_CONVS))
def test_gradient_through_a_quantized_conv_family_op_is_refused_at_it(kind: str) -> None:
    """grad of a float input through a conv-family op with a quantized second operand: the
    conv rule every one of them is differentiated by refuses, located at the op (G7)."""
    lhs, rhs, attrs = HYBRID_CONVS[kind]
    b = Builder("g")
    node = getattr(b, kind)(b.input("x", lhs), b.input("w", rhs, "!quant.uniform<i8:f32, 0.5>"), name="q", **attrs)
    b.output(node)
    with pytest.raises(ConvcError) as err:
        grad(b.build(), ["x"])
    assert err.value.constraint == "G7"
    assert f"'q' ({kind}): grad: a quantized conv has no gradient rule: its kernel is quantized" in str(err.value)


def test_cli_grad_through_a_quantized_conv_is_one_located_line(tmp_path: Path) -> None:
    """`convc MODEL --grad x` through a conv of a quantized kernel: exit 1, one line naming the
    JSON node and G7, nothing on stdout (no traceback)."""
    model = tmp_path / "hybrid.json"
    model.write_text(json.dumps({
        "name": "hybrid",
        "inputs": [{"name": "x", "shape": [1, 2, 4, 4], "dtype": "f32"}],
        "constants": [{"name": "w", "shape": [3, 2, 3, 3], "dtype": "f32", "value": 0.5}],
        "nodes": [{"name": "wq", "op": "uniform_quantize", "inputs": ["w"], "new_dtype": "!quant.uniform<i8:f32, 0.25>"},
                  {"name": "c", "op": "conv", "inputs": ["x", "wq"]}],
        "outputs": ["c"],
    }))
    done = run_cli([str(model), "--grad", "x", "--target", "cpu"])
    assert done.code == 1 and done.stdout == ""
    assert done.stderr == (f"{model}:/nodes/1: error: 'c' (conv): grad: a quantized conv has no gradient rule: its kernel is "
                           "quantized, and convc builds no gradient through a quantized kernel [G7]\n")
