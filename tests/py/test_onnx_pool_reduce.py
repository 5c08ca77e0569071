"""The ONNX importer's average and Lp pooling and reductions (AveragePool, LpPool, GlobalAveragePool,
GlobalLpPool, GlobalMaxPool, ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, and ReduceSumSquare,
ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp), each built with onnx.helper with its
attributes at the opsets where they change, run through convc (default pipeline, PJRT on
the CPU) and compared with ONNX Runtime on the same inputs; the ops they become; `--grad`
through them against jax.vjp of the oracle; and their refusals (O6)."""

from __future__ import annotations

from pathlib import Path

import convc
import numpy as np
import pytest
from convc.cli import main as convc_main
from convc.diagnostics import ConvcError

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import import _agree, _kinds, _model, _random  # noqa: E402

# name: (attributes, x shape, opset)
AVERAGE_POOL_CASES = {
    "valid": ({"kernel_shape": [2, 2], "strides": [2, 2]}, (1, 2, 6, 7), 17),
    "pads_excluded": ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 9, 9), 17),
    "pads_included": ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 2, 1, 0], "count_include_pad": 1}, (2, 2, 8, 9), 17),
    "ceil_mode_excluded": ({"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 10, 10), 17),
    "ceil_mode_pads_included": ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
                                 "count_include_pad": 1}, (1, 2, 8, 8), 17),
    "ceil_mode_pads_excluded": ({"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 0], "ceil_mode": 1},
                                (1, 1, 8, 7), 17),
    "same_upper_excluded": ({"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 2, 8, 8), 17),
    "same_lower_included": ({"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER", "count_include_pad": 1}, (1, 2, 7, 7), 17),
    "valid_auto_pad": ({"kernel_shape": [3, 3], "auto_pad": "VALID", "strides": [2, 1]}, (1, 2, 9, 8), 17),
    "1d": ({"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, (2, 3, 10), 17),
    "3d": ({"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "pads": [1, 0, 1, 0, 1, 0]}, (1, 2, 5, 6, 5), 17),
    "dilations_opset19": ({"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 7, 7), 19),
    "dilations_included_opset19": ({"kernel_shape": [2, 3], "dilations": [2, 1], "pads": [1, 1, 1, 1], "strides": [2, 1],
                                    "count_include_pad": 1}, (1, 2, 7, 7), 19),
}


@pytest.mark.parametrize("case", AVERAGE_POOL_CASES, ids=str)
def test_average_pool_attributes_agree_with_onnxruntime(case: str) -> None:
    """AveragePool with pads counted or not (count_include_pad), ceil_mode (its extra padding never counted),
    auto_pad, 1-D to 3-D, dilations (opset 19): one sum_pool and a multiply by each window's 1/count."""
    attrs, x_shape, opset = AVERAGE_POOL_CASES[case]
    graph = _agree(_model([helper.make_node("AveragePool", ["x"], ["y"], **attrs)], {"x": x_shape}, ["y"], opset=opset))
    assert _kinds(graph).count("sum_pool") == 1 and _kinds(graph).count("multiply") == 1


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("x_shape", [(2, 3, 5, 4), (1, 2, 7), (1, 2, 3, 4, 2)], ids=str)
def test_global_pools_of_every_spatial_rank_agree_with_onnxruntime(op: str, x_shape: tuple[int, ...]) -> None:
    _agree(_model([helper.make_node(op, ["x"], ["y"])], {"x": x_shape}, ["y"]))


# name: (attributes, x shape, opset)
LP_POOL_CASES = {
    "p2_pads_strided": ({"kernel_shape": [3, 3], "p": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 7, 7), 17),
    "p1_valid": ({"kernel_shape": [2, 2], "p": 1}, (2, 2, 5, 5), 17),
    "p3_ceil_mode_opset18": ({"kernel_shape": [2, 2], "p": 3, "ceil_mode": 1, "strides": [2, 2]}, (1, 2, 5, 5), 18),
    "p2_dilations_opset18": ({"kernel_shape": [2, 2], "p": 2, "dilations": [2, 2], "pads": [1, 0, 1, 0]}, (1, 2, 6, 6), 18),
    "p2_same_upper": ({"kernel_shape": [3, 3], "p": 2, "auto_pad": "SAME_UPPER"}, (1, 2, 6, 6), 17),
    "p2_same_lower_strided": ({"kernel_shape": [2, 2], "p": 2, "auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 2, 5, 5), 17),
    "1d_default_p": ({"kernel_shape": [3]}, (2, 3, 8), 17),
    "3d_p1": ({"kernel_shape": [2, 2, 2], "p": 1, "strides": [2, 1, 2]}, (1, 2, 4, 3, 4), 17),
}


@pytest.mark.parametrize("case", LP_POOL_CASES, ids=str)
def test_lp_pool_agrees_with_onnxruntime(case: str) -> None:
    """LpPool (p 1, 2, 3; pads, strides, auto_pad, 1-D to 3-D, opset 18's ceil_mode and dilations) is the p-th root
    of a sum_pool of |x|^p: a sqrt for p 2, none for p 1. (ONNX Runtime's SAME with dilations sizes its output
    unlike ONNX's shape inference, so that pair is not compared.)"""
    attrs, x_shape, opset = LP_POOL_CASES[case]
    graph = _agree(_model([helper.make_node("LpPool", ["x"], ["y"], **attrs)], {"x": x_shape}, ["y"], opset=opset))
    p = attrs.get("p", 2)
    assert "sum_pool" in _kinds(graph) and ("sqrt" in _kinds(graph)) == (p == 2) and ("power" in _kinds(graph)) == (p > 2)


@pytest.mark.parametrize(("p", "x_shape"), [(2, (2, 3, 4, 5)), (1, (2, 3, 4)), (3, (2, 3, 4, 2, 2))], ids=str)
def test_global_lp_pool_agrees_with_onnxruntime(p: int, x_shape: tuple[int, ...]) -> None:
    """GlobalLpPool: the p-th root of a reduce_sum of |x|^p over every spatial dim, kept as 1s."""
    graph = _agree(_model([helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)], {"x": x_shape}, ["y"], opset=17))
    assert "reduce_sum" in _kinds(graph)


def test_lp_pool_differentiates_as_jax_vjp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc model.onnx --grad x --check` through LpPool with p 2 and p 3 (sqrt, power, abs, sum_pool)."""
    nodes = [helper.make_node("LpPool", ["x"], ["a"], kernel_shape=[2, 2], strides=[2, 2], p=2),
             helper.make_node("LpPool", ["x"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], p=3)]
    path = tmp_path / "model.onnx"
    path.write_bytes(_model(nodes, {"x": (1, 2, 6, 6)}, ["a", "b"]))
    np.savez(tmp_path / "inputs.npz", x=_random((1, 2, 6, 6)) + 0.5, **{"a.grad": _random((1, 2, 3, 3), 1),
                                                                         "b.grad": _random((1, 2, 6, 6), 2)})
    assert convc_main([str(path), "--grad", "x", "--inputs", str(tmp_path / "inputs.npz"), "--check", "--platform", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "x.grad: max abs error vs jax.lax" in out and "(ok)" in out.rsplit("x.grad: max abs error", 1)[1]


@pytest.mark.parametrize("op", ["LpPool", "GlobalLpPool"])
def test_O6_lp_pool_of_order_zero(op: str) -> None:
    """p 0 is no norm: O6 naming p, found before anything is built."""
    attrs = {"kernel_shape": [2, 2]} if op == "LpPool" else {}
    model = _model([helper.make_node(op, ["x"], ["y"], p=0, name="lp", **attrs)], {"x": (1, 2, 4, 4)}, ["y"])
    with pytest.raises(ConvcError) as error:
        convc.load_onnx(model)
    assert error.value.constraint == "O6" and f"'lp' ({op}): p 0 is not a positive order" in str(error.value)


# name: (op type, opset, axes (None: not given), attributes, x shape)
REDUCE_CASES = {
    "sum_axes_input_keepdims": ("ReduceSum", 13, [1, -1], {}, (2, 3, 4, 5)),
    "sum_no_keepdims": ("ReduceSum", 17, [0, 2], {"keepdims": 0}, (2, 3, 4)),
    "sum_no_axes_all": ("ReduceSum", 17, None, {"keepdims": 0}, (2, 3, 4)),
    "sum_empty_axes_noop": ("ReduceSum", 17, [], {"noop_with_empty_axes": 1}, (2, 3)),
    "mean_axes_attribute": ("ReduceMean", 17, [2, 3], {}, (2, 3, 4, 5)),
    "mean_attribute_no_keepdims": ("ReduceMean", 13, [-1], {"keepdims": 0}, (3, 6)),
    "mean_no_axes_attribute": ("ReduceMean", 17, None, {}, (2, 3, 4)),
    "mean_axes_input_opset18": ("ReduceMean", 18, [1], {"keepdims": 0}, (2, 3, 4)),
    "mean_empty_axes_noop_opset18": ("ReduceMean", 18, [], {"noop_with_empty_axes": 1}, (2, 3)),
    "max_axes_attribute": ("ReduceMax", 17, [1], {}, (2, 5, 3)),
    "max_no_axes_no_keepdims": ("ReduceMax", 17, None, {"keepdims": 0}, (2, 5, 3)),
    "max_axes_input_opset18": ("ReduceMax", 18, [0, 2], {"keepdims": 0}, (2, 5, 3)),
    "max_no_axes_input_opset18": ("ReduceMax", 18, None, {}, (2, 5, 3)),
    "min_axes_attribute": ("ReduceMin", 17, [1, -1], {}, (2, 5, 3)),
    "min_no_axes_no_keepdims": ("ReduceMin", 13, None, {"keepdims": 0}, (2, 5, 3)),
    "min_axes_input_opset18": ("ReduceMin", 18, [0], {"keepdims": 0}, (2, 5, 3)),
    "min_empty_axes_noop_opset18": ("ReduceMin", 18, [], {"noop_with_empty_axes": 1}, (2, 3)),
    "prod_axes_attribute": ("ReduceProd", 17, [2], {}, (2, 3, 4)),
    "prod_no_axes_no_keepdims": ("ReduceProd", 13, None, {"keepdims": 0}, (2, 3)),
    "prod_axes_input_opset18": ("ReduceProd", 18, [-1, 0], {"keepdims": 0}, (2, 3, 4)),
    "prod_no_axes_input_opset18": ("ReduceProd", 18, None, {}, (3, 4)),
}
REDUCED_BY = {"ReduceMax": "reduce_max", "ReduceMin": "reduce_min", "ReduceProd": "reduce_prod"}  # else reduce_sum


def _reduce_model(op: str, opset: int, axes: list[int] | None, attrs: dict[str, int], x_shape: tuple[int, ...],
                  dtype: int = TensorProto.FLOAT) -> bytes:
    """A one-node reduction: axes as the attribute before opset 18 (ReduceSum: 13), else as an initializer input."""
    as_input = op == "ReduceSum" or opset >= 18
    inputs, initializers, extra = ["x"], {}, dict(attrs)
    if axes is not None and as_input:
        inputs.append("axes")
        initializers["axes"] = np.array(axes, np.int64)
    elif axes is not None:
        extra["axes"] = axes
    return _model([helper.make_node(op, inputs, ["y"], **extra)], {"x": x_shape}, ["y"], initializers, opset=opset, dtype=dtype)


@pytest.mark.parametrize("case", REDUCE_CASES, ids=str)
def test_reductions_agree_with_onnxruntime(case: str) -> None:
    """ReduceSum/ReduceMean/ReduceMax/ReduceMin/ReduceProd: axes as attribute or input, negative axes, keepdims,
    no axes (all), and noop_with_empty_axes (the input itself); each becomes its one convc reduction."""
    op, opset, axes, attrs, x_shape = REDUCE_CASES[case]
    graph = _agree(_reduce_model(op, opset, axes, attrs, x_shape))
    noop = attrs.get("noop_with_empty_axes") == 1
    for kind in ("reduce_max", "reduce_min", "reduce_prod", "reduce_sum"):
        assert (kind in _kinds(graph)) == (REDUCED_BY.get(op, "reduce_sum") == kind and not noop), kind


# name: (op type, opset, axes (None: not given), attributes, x shape), the reductions with elementwise steps
COMPOSED_CASES = {
    f"{op}_{form}": (op, opset, axes, attrs, shape)
    for op in ("ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")
    for form, (opset, axes, attrs, shape) in {
        "axes_attribute": (17, [1, -1], {}, (2, 3, 4)),
        "no_axes_no_keepdims": (13, None, {"keepdims": 0}, (2, 3)),
        "axes_input_opset18": (18, [0], {"keepdims": 0}, (3, 4)),
        "empty_axes_noop_opset18": (18, [], {"noop_with_empty_axes": 1}, (2, 3)),
    }.items()
}


@pytest.mark.parametrize("case", COMPOSED_CASES, ids=str)
def test_composed_reductions_agree_with_onnxruntime(case: str) -> None:
    """ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum (of positive data) and ReduceLogSumExp (of data up to 80,
    where a plain exp overflows float): axes as attribute or input, keepdims, all axes, and noop_with_empty_axes
    (the elementwise steps alone, as ONNX Runtime does); a reduce_sum, and a reduce_max for LogSumExp."""
    op, opset, axes, attrs, x_shape = COMPOSED_CASES[case]
    model = _reduce_model(op, opset, axes, attrs, x_shape)
    x = np.abs(_random(x_shape)) + 0.1 if op == "ReduceLogSum" else _random(x_shape) * (40 if op == "ReduceLogSumExp" else 1) + (
        40 if op == "ReduceLogSumExp" else 0)
    graph = convc.load_onnx(model)
    (got,) = convc.run(graph, [x.astype(np.float32)], platform="cpu").outputs
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x.astype(np.float32)})
    assert got.shape == want.shape and np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    noop = attrs.get("noop_with_empty_axes") == 1
    assert ("reduce_sum" in _kinds(graph)) == (not noop)
    assert ("reduce_max" in _kinds(graph)) == (op == "ReduceLogSumExp" and not noop)


def test_composed_reductions_differentiate_as_jax_vjp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc model.onnx --grad x --check` through ReduceL2, ReduceLogSumExp, ReduceL1 and ReduceSumSquare."""
    nodes = [helper.make_node("ReduceL2", ["x"], ["l2"], axes=[1]), helper.make_node("ReduceLogSumExp", ["x"], ["lse"], axes=[2]),
             helper.make_node("ReduceL1", ["x"], ["l1"], axes=[0, 2], keepdims=0),
             helper.make_node("ReduceSumSquare", ["x"], ["sq"], keepdims=0)]
    path = tmp_path / "model.onnx"
    path.write_bytes(_model(nodes, {"x": (2, 3, 4)}, ["l2", "lse", "l1", "sq"]))
    np.savez(tmp_path / "inputs.npz", x=_random((2, 3, 4)) + 0.25, **{"l2.grad": _random((2, 1, 4), 1), "lse.grad": _random((2, 3, 1), 2),
                                                                      "l1.grad": _random((3,), 3), "sq.grad": np.float32(0.5)})
    assert convc_main([str(path), "--grad", "x", "--inputs", str(tmp_path / "inputs.npz"), "--check", "--platform", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "x.grad: max abs error vs jax.lax" in out and "(ok)" in out.rsplit("x.grad: max abs error", 1)[1]


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceLogSum", "ReduceLogSumExp"])
def test_O6_floating_only_reductions_of_integers(op: str) -> None:
    """A sqrt, log or exp of int32 data has no convc op: O6 naming the element type."""
    model = _reduce_model(op, 18, [1], {}, (2, 4), dtype=TensorProto.INT32)
    with pytest.raises(ConvcError) as error:
        convc.load_onnx(model)
    assert error.value.constraint == "O6" and f"({op}): data has element type i32; {op} takes floating tensors" in str(error.value)


@pytest.mark.parametrize("op", ["ReduceMin", "ReduceProd", "ReduceMax", "ReduceL1", "ReduceSumSquare"])
def test_integer_reductions_agree_with_onnxruntime_exactly(op: str) -> None:
    """ReduceMin, ReduceProd, ReduceMax, ReduceL1 and ReduceSumSquare of int32 data (small values: the products fit)
    equal ONNX Runtime's."""
    model = _reduce_model(op, 18, [1], {"keepdims": 0}, (3, 4, 2), dtype=TensorProto.INT32)
    x = np.random.default_rng(3).integers(-5, 6, size=(3, 4, 2), dtype=np.int32)
    (got,) = convc.run(convc.load_onnx(model), [x], platform="cpu").outputs
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert got.dtype == want.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_reduce_max_of_ties_and_average_pool_differentiate_as_jax_vjp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc model.onnx --grad x --check`: AveragePool (a sum_pool times counts), ReduceMax and ReduceMin over
    ties (shared equally), ReduceMean and ReduceProd (over zeros too), against jax.vjp of the imported graph's oracle."""
    nodes = [helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("ReduceMax", ["p"], ["m"], axes=[2, 3], keepdims=0),
             helper.make_node("ReduceMean", ["p"], ["a"], axes=[1]),
             helper.make_node("ReduceMin", ["p"], ["n"], axes=[1, 3], keepdims=0),
             helper.make_node("ReduceProd", ["p"], ["q"], axes=[2], keepdims=0)]
    path = tmp_path / "model.onnx"
    path.write_bytes(_model(nodes, {"x": (1, 2, 6, 6)}, ["m", "a", "n", "q"]))
    x = np.zeros((1, 2, 6, 6), np.float32)
    x[0, 0, 2:4, 2:4] = 9  # channel 0 has one pooled maximum; channel 1 is zeros: its nine pooled values tie
    np.savez(tmp_path / "inputs.npz", x=x, **{"m.grad": _random((1, 2), 1), "a.grad": _random((1, 1, 3, 3), 2),
                                                "n.grad": _random((1, 3), 3), "q.grad": _random((1, 2, 3), 4)})
    assert convc_main([str(path), "--grad", "x", "--inputs", str(tmp_path / "inputs.npz"), "--check", "--platform", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "x.grad: max abs error vs jax.lax" in out and "(ok)" in out.rsplit("x.grad: max abs error", 1)[1]


def test_O6_reduction_axes_that_repeat_a_dimension() -> None:
    """[1, -1] names dimension 1 twice (onnx's shape inference lets it through; an out-of-range axis is O2)."""
    node = helper.make_node("ReduceMax", ["x"], ["y"], axes=[1, -1], name="r")
    with pytest.raises(ConvcError) as error:
        convc.load_onnx(_model([node], {"x": (2, 3)}, ["y"]))
    assert error.value.constraint == "O6" and "'r' (ReduceMax): axes [1, -1] repeat a dimension" in str(error.value)


def test_O6_reduce_mean_of_integers() -> None:
    """ONNX allows an integer ReduceMean (rounding as the runtime does); convc's mean is a float scale, so it refuses."""
    model = _model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], name="m")], {"x": (2, 4)}, ["y"], dtype=TensorProto.INT32)
    with pytest.raises(ConvcError) as error:
        convc.load_onnx(model)
    assert error.value.constraint == "O6" and "'m' (ReduceMean): data has element type i32" in str(error.value)
