"""The ONNX elementwise and activation converters (compiler/frontend/onnx/elementwise.py,
activations.py): each op built with onnx.helper, with its attributes and broadcasting
shapes, run through convc (default pipeline, PJRT on the CPU) and compared with ONNX Runtime
on the same inputs; `convc.grad` through the activations against jax.vjp; and the attribute
values and input forms the converters refuse (O6)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import convc
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402
from test_grad import check_grad  # noqa: E402
from test_onnx_import import BROADCAST_CASES, _model, _onnxruntime, _raises, _random  # noqa: E402


def _agree_on(model: bytes, feeds: Mapping[str, np.ndarray], rtol: float = 1e-5, **load: Any) -> convc.Graph:
    """Import `model`, run it through convc on `feeds` and assert ONNX Runtime gives the same outputs."""
    graph = convc.load_onnx(model, **load)
    got = convc.run(graph, dict(feeds), platform="cpu").outputs
    for ours, theirs in zip(got, _onnxruntime(model, feeds), strict=True):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * float(np.abs(theirs).max(initial=1.0)))
    return graph


def _positive(shape: Sequence[int], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.25, 4.0, shape).astype(np.float32)


def _kinds(graph: convc.Graph) -> set[str]:
    return {op.kind for op in graph.ops}


# --- binary ops, with numpy broadcasting --------------------------------------------------------


@pytest.mark.parametrize("op", ["Sub", "Div", "Pow"])
@pytest.mark.parametrize("case", BROADCAST_CASES, ids=str)
def test_sub_div_pow_broadcast_as_numpy(op: str, case: str) -> None:
    """Sub, Div and Pow of two graph inputs whose shapes broadcast by numpy's rule (positive
    operands, so Pow is defined and Div is well conditioned)."""
    lhs, rhs = BROADCAST_CASES[case]
    model = _model([helper.make_node(op, ["a", "b"], ["y"])], {"a": lhs, "b": rhs}, ["y"])
    graph = _agree_on(model, {"a": _positive(lhs, 0), "b": _positive(rhs, 1)})
    assert {"subtract", "divide", "power"} & _kinds(graph) == {op.lower().replace("sub", "subtract").replace("div", "divide").replace("pow", "power")}


def test_pow_with_an_integer_exponent_and_a_square() -> None:
    """Pow of a float base by an int64 initializer converts the exponent; a known exponent of 2 is x * x (negative bases too)."""
    cube = _model([helper.make_node("Pow", ["x", "e"], ["y"])], {"x": (2, 3)}, ["y"], initializers={"e": np.array(3, np.int64)})
    assert "power" in _kinds(_agree_on(cube, {"x": _random((2, 3))}))
    square = _model([helper.make_node("Pow", ["x", "e"], ["y"])], {"x": (2, 3)}, ["y"], initializers={"e": np.array([2.0], np.float32)})
    graph = _agree_on(square, {"x": _random((2, 3))})
    assert "power" not in _kinds(graph) and "multiply" in _kinds(graph)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_variadic_max_and_min_broadcast_every_input(op: str) -> None:
    """Max and Min of three inputs of different broadcasting shapes, and of one input (itself)."""
    three = _model([helper.make_node(op, ["a", "b", "c"], ["y"])], {"a": (2, 1, 4), "b": (3, 1), "c": ()}, ["y"])
    _agree_on(three, {"a": _random((2, 1, 4), 0), "b": _random((3, 1), 1), "c": _random((), 2)})
    one = _model([helper.make_node(op, ["a"], ["y"])], {"a": (2, 3)}, ["y"])
    _agree_on(one, {"a": _random((2, 3))})


# --- unary ops -----------------------------------------------------------------------------------

UNARY = {"Exp": _random, "Log": _positive, "Tanh": _random, "Sigmoid": _random, "Sqrt": _positive, "Neg": _random,
         "Abs": _random, "Erf": lambda shape: 3 * _random(shape), "Reciprocal": _positive}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_ops_agree_with_onnxruntime(op: str) -> None:
    """Each one-op unary function on inputs in its domain (Erf over [-9, 9] or so, past saturation)."""
    model = _model([helper.make_node(op, ["x"], ["y"])], {"x": (2, 3, 5)}, ["y"])
    _agree_on(model, {"x": UNARY[op]((2, 3, 5))})


_ERF = np.vectorize(math.erf)  # CPython's erf: libm's, correctly rounded or within an ulp
DOUBLE_ORACLES = {  # ONNX's definitions, in double
    "Erf": _ERF,
    "Gelu": lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2))),
    "Gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
}


@pytest.mark.parametrize("name", DOUBLE_ORACLES)
def test_double_erf_and_gelu_agree_with_their_definitions(name: str) -> None:
    """Erf and Gelu (both forms) on double, through convc's f64 erf, agree to 1e-14 with ONNX's
    definitions computed in double with math.erf (absolute 1e-14 where 1 + tanh cancels). Neither ONNX Runtime (no double Erf kernel;
    double Gelu's tanh form in float) nor onnx.reference (Erf in float) is exact in double."""
    op, attrs, opset = ("Erf", {}, 13) if name == "Erf" else ("Gelu", {"approximate": "tanh"} if "tanh" in name else {}, 20)
    model = _model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": (3, 40)}, ["y"], opset=opset, dtype=onnx.TensorProto.DOUBLE)
    x = np.linspace(-7, 7, 120).reshape(3, 40)
    (got,) = convc.run(convc.load_onnx(model), [x], platform="cpu").outputs
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, DOUBLE_ORACLES[name](x), rtol=1e-14, atol=1e-14)  # atol: 1 + tanh cancels below -3


CLIP_CASES: dict[str, tuple[dict[str, np.ndarray], list[str]]] = {
    "both": ({"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}, ["x", "lo", "hi"]),
    "max_only": ({"hi": np.array(0.3, np.float32)}, ["x", "", "hi"]),
    "min_only": ({"lo": np.array(0.0, np.float32)}, ["x", "lo"]),
    "unbounded": ({}, ["x"]),
}


@pytest.mark.parametrize("case", CLIP_CASES, ids=str)
def test_clip_with_known_bounds_is_one_clamp(case: str) -> None:
    """Clip whose min and max are initializers (or absent: unbounded) is one `clamp`."""
    initializers, inputs = CLIP_CASES[case]
    model = _model([helper.make_node("Clip", inputs, ["y"])], {"x": (2, 3, 4)}, ["y"], initializers=initializers)
    graph = _agree_on(model, {"x": _random((2, 3, 4))})
    assert [op.kind for op in graph.ops if op.kind not in ("constant",)] == ["clamp"]


def test_clip_with_a_bound_from_the_graph_is_maximum_and_minimum() -> None:
    """A min that is a graph input (not known at import) makes Clip `maximum` then `minimum`."""
    model = _model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (2, 3), "lo": ()}, ["y"],
                   initializers={"hi": np.array(0.5, np.float32)})
    graph = _agree_on(model, {"x": _random((2, 3)), "lo": np.array(-0.25, np.float32)})
    assert {"maximum", "minimum"} <= _kinds(graph)


def test_clip_of_integers_is_maximum_and_minimum() -> None:
    """An int32 Clip with known bounds (no integer `clamp`): `maximum` and `minimum` with the bounds."""
    model = _model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (2, 5)}, ["y"], dtype=onnx.TensorProto.INT32,
                   initializers={"lo": np.array(-2, np.int32), "hi": np.array(3, np.int32)})
    graph = _agree_on(model, {"x": np.arange(-5, 5, dtype=np.int32).reshape(2, 5)})
    assert {"maximum", "minimum"} <= _kinds(graph) and "clamp" not in _kinds(graph)


# --- activations ------------------------------------------------------------------------------


ACTIVATIONS: dict[str, tuple[dict[str, Any], int]] = {  # op type -> (attributes, opset)
    "LeakyRelu": ({"alpha": 0.2}, 17),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.4}, 17),
    "HardSwish": ({}, 17),
    "Elu": ({"alpha": 0.7}, 17),
    "Selu": ({}, 17),
    "Softplus": ({}, 17),
    "Softsign": ({}, 17),
    "Gelu": ({}, 20),
    "Gelu_tanh": ({"approximate": "tanh"}, 20),
    "Softmax": ({}, 17),
    "Softmax_axis0": ({"axis": 0}, 17),
    "LogSoftmax": ({"axis": 1}, 17),
}


def _activation(name: str, shape: Sequence[int] = (2, 3, 4, 5)) -> bytes:
    attrs, opset = ACTIVATIONS[name]
    return _model([helper.make_node(name.split("_")[0], ["x"], ["y"], **attrs)], {"x": shape}, ["y"], opset=opset)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_agree_with_onnxruntime(name: str) -> None:
    """Each activation, attributes given or defaulted, on inputs spanning both sides of its kinks."""
    _agree_on(_activation(name), {"x": 4 * _random((2, 3, 4, 5))})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_subtracts_the_maximum_so_large_inputs_do_not_overflow(op: str) -> None:
    """Inputs near 1000 (exp overflows f32 at 89) give ONNX Runtime's finite results."""
    model = _model([helper.make_node(op, ["x"], ["y"], axis=-1)], {"x": (3, 7)}, ["y"])
    graph = _agree_on(model, {"x": 1000 + 10 * _random((3, 7))})
    assert "reduce_max" in _kinds(graph)


def test_softplus_of_large_inputs_does_not_overflow() -> None:
    """Softplus of inputs around +-200 (exp overflows f32 at 89): x above, 0 below, as ONNX Runtime gives."""
    model = _model([helper.make_node("Softplus", ["x"], ["y"])], {"x": (2, 7)}, ["y"])
    x = np.array([[200.0, -200.0, 89.5, -89.5, 0.0, 1e-3, -30.0], [150.0, -150.0, 20.0, -20.0, 5.0, -5.0, 100.0]], np.float32)
    graph = _agree_on(model, {"x": x})
    got = convc.run(graph, {"x": x}, platform="cpu").outputs[0]
    assert np.isfinite(got).all() and got[0, 0] == 200.0 and got[0, 1] == 0.0


def test_softplus_far_below_zero_keeps_its_precision() -> None:
    """Softplus of -5 to -25, where log(1 + exp(x)) rounds 1 + exp(x) away (ONNX Runtime's
    formula does): within 1e-6 relative of float64 log1p(exp(x)), as ONNX's expected outputs are."""
    model = _model([helper.make_node("Softplus", ["x"], ["y"])], {"x": (21,)}, ["y"])
    x = np.linspace(-25, -5, 21).astype(np.float32)
    got = convc.run(convc.load_onnx(model), {"x": x}, platform="cpu").outputs[0]
    np.testing.assert_allclose(got, np.log1p(np.exp(x.astype(np.float64))), rtol=1e-6)


@pytest.mark.parametrize("slope_shape", [(3, 1, 1), (1,), (5,)], ids=str)
def test_prelu_slope_broadcasts(slope_shape: tuple[int, ...]) -> None:
    """PRelu's slope, an initializer, spread to X by numpy's rule (per channel, one, per last dim)."""
    slope = np.random.default_rng(3).uniform(0, 0.5, slope_shape).astype(np.float32)
    model = _model([helper.make_node("PRelu", ["x", "slope"], ["y"])], {"x": (2, 3, 4, 5)}, ["y"], initializers={"slope": slope})
    _agree_on(model, {"x": _random((2, 3, 4, 5))})


@pytest.mark.parametrize("name", ["LeakyRelu", "HardSwish", "Gelu", "Gelu_tanh", "Elu", "Softplus", "Softsign", "Softmax", "LogSoftmax"])
def test_grad_through_imported_activations_matches_jax_vjp(name: str) -> None:
    """`convc.grad` of an imported activation agrees with jax.vjp of its oracle."""
    check_grad(convc.load_onnx(_activation(name, (2, 3, 4))), ["x"], "generic")


def test_tanh_sigmoid_erf_chain_gradient_matches_jax_vjp() -> None:
    """A chain of the one-op functions (Tanh, Sigmoid, Erf, Exp, Neg, Abs) differentiates as jax.vjp."""
    nodes = [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["s"]),
             helper.make_node("Erf", ["s"], ["e"]), helper.make_node("Neg", ["e"], ["n"]),
             helper.make_node("Abs", ["n"], ["a"]), helper.make_node("Exp", ["a"], ["y"])]
    check_grad(convc.load_onnx(_model(nodes, {"x": (3, 4)}, ["y"])), ["x"], "generic")


# --- refused forms (O6) --------------------------------------------------------------------------


def test_O6_gelu_approximate_unknown() -> None:
    model = _model([helper.make_node("Gelu", ["x"], ["y"], approximate="fast")], {"x": (2, 3)}, ["y"], opset=20)
    assert "approximate 'fast' is not one of none, tanh" in _raises("O6", convc.load_onnx, model)


def test_O6_clip_bound_not_a_scalar() -> None:
    model = _model([helper.make_node("Clip", ["x", "lo"], ["y"])], {"x": (2, 3)}, ["y"],
                   initializers={"lo": np.zeros(3, np.float32)})
    assert "min (input 1) must be a scalar, got 3 elements" in _raises("O6", convc.load_onnx, model)


def test_O6_pow_of_an_integer_base() -> None:
    model = _model([helper.make_node("Pow", ["x", "x"], ["y"])], {"x": (2, 3)}, ["y"], dtype=onnx.TensorProto.INT32)
    assert "an integer base (i32) is not supported" in _raises("O6", convc.load_onnx, model)


def test_O6_prelu_of_an_integer_input() -> None:
    model = _model([helper.make_node("PRelu", ["x", "x"], ["y"])], {"x": (2, 3)}, ["y"], dtype=onnx.TensorProto.INT32)
    assert "X has element type i32; PRelu needs a floating one" in _raises("O6", convc.load_onnx, model)
