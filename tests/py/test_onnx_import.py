"""The ONNX frontend (convc.load_onnx, `convc model.onnx`): each supported op, built with
onnx.helper with its attributes, and small networks exported from PyTorch, run through
convc (default pipeline, PJRT on the CPU) and compared with ONNX Runtime on the same
inputs; and one negative test per O diagnostic, each a located one-line error (exit 1)."""

from __future__ import annotations

import io
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.cli import main as convc_main
from convc.diagnostics import ConvcError
from convc.frontend.onnx import registry
from convc.frontend.onnx.shared import ONNX_DTYPES

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_files import make_model  # noqa: E402

OPSET = 17
F32 = TensorProto.FLOAT


def _model(nodes: Sequence[Any], inputs: Mapping[str, Sequence[int | str]], outputs: Sequence[str],
           initializers: Mapping[str, np.ndarray] | None = None, opset: int = OPSET, dtype: int = F32) -> bytes:
    """A one-graph model: inputs by shape (a str is a symbolic dim); the outputs' types are
    onnx.shape_inference's, or the first input's where it cannot infer them (a model meant to fail)."""
    graph = helper.make_graph(
        list(nodes), "g",
        [helper.make_tensor_value_info(name, dtype, list(shape)) for name, shape in inputs.items()],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        [numpy_helper.from_array(np.asarray(array), name) for name, array in (initializers or {}).items()])
    model = make_model(graph, opset)
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True).SerializeToString()  # type: ignore[no-any-return]
    except onnx.shape_inference.InferenceError:
        for output in model.graph.output:
            output.type.CopyFrom(model.graph.input[0].type)
        return model.SerializeToString()  # type: ignore[no-any-return]


def _random(shape: Sequence[int], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _onnxruntime(model: bytes, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """ONNX Runtime's outputs; a skip (counted and printed) where it is no oracle for the model
    on this host (`onnxruntime_unfit`: 8-bit products that saturate)."""
    from convc.frontend.onnx.check import onnxruntime_unfit

    unfit = onnxruntime_unfit(model)
    if unfit is not None:
        pytest.skip(f"ONNX Runtime is no oracle for this model here: {unfit}")
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, dict(feeds))  # type: ignore[no-any-return]


def _skip_where_check_did_not_compare_with_onnxruntime(model: bytes, out: str) -> None:
    """Where ONNX Runtime is no oracle for `model` on this host (`onnxruntime_unfit`), `--check`'s output says it did
    not compare with it, and the test skips, saying why; elsewhere nothing."""
    from convc.frontend.onnx.check import onnxruntime_unfit

    unfit = onnxruntime_unfit(model)
    if unfit is not None:
        assert f"(not compared with onnxruntime: {unfit})" in out
        pytest.skip(f"ONNX Runtime is no oracle for this model here: {unfit}; only the spec oracle compared")


def _agree(model: bytes, rtol: float = 1e-4, **load: Any) -> convc.Graph:
    """Import `model`, run it through convc on random inputs and assert ONNX Runtime gives the same outputs."""
    graph = convc.load_onnx(model, **load)
    feeds = {value.name: _random(value.type.shape, seed) for seed, value in enumerate(graph.inputs)}
    got = convc.run(graph, feeds, platform="cpu").outputs
    want = _onnxruntime(model, feeds)
    assert [v.name for v in graph.outputs] == [o.name for o in onnx.load_from_string(model).graph.output]
    for ours, theirs in zip(got, want, strict=True):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * float(np.abs(theirs).max(initial=1.0)))
    return graph


def _kinds(graph: convc.Graph) -> list[str]:
    return [op.kind for op in graph.ops]


# --- Conv ------------------------------------------------------------------------------------

CONV_CASES = {
    "bias": ({}, (1, 3, 9, 9), (4, 3, 3, 3), True),
    "strides_pads": ({"strides": [2, 2], "pads": [0, 1, 2, 1]}, (2, 3, 9, 8), (4, 3, 3, 3), True),
    "dilations": ({"dilations": [2, 1], "pads": [2, 1, 2, 1]}, (1, 3, 9, 9), (4, 3, 3, 3), False),
    "group": ({"group": 2, "pads": [1, 1, 1, 1]}, (1, 4, 8, 8), (6, 2, 3, 3), True),
    "depthwise": ({"group": 4, "strides": [2, 2]}, (1, 4, 9, 9), (4, 1, 3, 3), True),
    "same_upper": ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 3, 8, 8), (4, 3, 4, 4), True),
    "same_lower": ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 3, 8, 8), (4, 3, 4, 4), True),
    "valid": ({"auto_pad": "VALID", "strides": [2, 2], "kernel_shape": [3, 3]}, (1, 3, 9, 8), (4, 3, 3, 3), False),
    "1d": ({"pads": [1, 2], "strides": [2]}, (2, 3, 11), (4, 3, 3), True),
    "3d": ({"pads": [1, 1, 1, 1, 1, 1], "dilations": [1, 2, 1]}, (1, 2, 5, 6, 5), (3, 2, 3, 3, 3), True),
}


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_attributes_agree_with_onnxruntime(case: str) -> None:
    """Conv with group, strides, dilations, explicit pads, every auto_pad, 1-D to 3-D, with and without B."""
    attrs, x_shape, w_shape, bias = CONV_CASES[case]
    weights = {"w": _random(w_shape, 1), **({"b": _random(w_shape[:1], 2)} if bias else {})}
    node = helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], ["y"], **attrs)
    graph = _agree(_model([node], {"x": x_shape}, ["y"], weights))
    assert _kinds(graph).count("conv") == 1 and ("bias_add" in _kinds(graph)) == bias


# --- pooling ----------------------------------------------------------------------------------

POOL_CASES = {
    "pads": ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 9, 9)),
    "ceil_mode": ({"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 10, 10)),
    "ceil_mode_pads": ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}, (1, 2, 8, 8)),
    "ceil_mode_window_in_padding": ({"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}, (1, 1, 5, 5)),
    "dilations": ({"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [1, 2]}, (1, 2, 9, 9)),
    "same_upper": ({"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 2, 7, 7)),
    "same_lower": ({"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"}, (1, 2, 7, 7)),
    "1d": ({"kernel_shape": [3], "strides": [2], "pads": [1, 0]}, (2, 3, 10)),
}


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool_attributes_agree_with_onnxruntime(case: str) -> None:
    """MaxPool with pads (padded cells never win: -inf), ceil_mode, dilations, SAME_UPPER/SAME_LOWER, 1-D."""
    attrs, x_shape = POOL_CASES[case]
    graph = _agree(_model([helper.make_node("MaxPool", ["x"], ["y"], **attrs)], {"x": x_shape}, ["y"]))
    assert _kinds(graph) == ["max_pool"]


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools_agree_with_onnxruntime(op: str) -> None:
    """GlobalAveragePool (a sum times 1/N) and GlobalMaxPool (one window) keep the spatial dims as 1s."""
    _agree(_model([helper.make_node(op, ["x"], ["y"])], {"x": (2, 3, 5, 7)}, ["y"]))


def test_batch_normalization_is_folded_into_one_scale_and_shift() -> None:
    """Inference BatchNormalization with constant statistics becomes multiply + bias_add, values folded at import."""
    channels = 4
    stats = {"scale": _random((channels,), 1), "bias": _random((channels,), 2), "mean": _random((channels,), 3),
             "var": np.abs(_random((channels,), 4)) + 0.1}
    node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], epsilon=1e-3)
    graph = _agree(_model([node], {"x": (2, channels, 5, 5)}, ["y"], stats))
    assert _kinds(graph) == ["constant", "broadcast_in_dim", "multiply", "constant", "bias_add"]


# --- elementwise and broadcasting ------------------------------------------------------------

BROADCAST_CASES = {
    "channel_bias": ((2, 3, 4, 4), (1, 3, 1, 1)),
    "trailing": ((2, 3, 4, 4), (3, 1, 1)),
    "both_sides": ((2, 1, 4), (3, 1)),
    "scalar": ((2, 3), ()),
    "same": ((2, 3), (2, 3)),
}


@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("case", BROADCAST_CASES, ids=str)
def test_add_and_mul_broadcast_as_numpy(op: str, case: str) -> None:
    """Add and Mul of two graph inputs whose shapes broadcast by numpy's rule, either side spreading."""
    lhs, rhs = BROADCAST_CASES[case]
    _agree(_model([helper.make_node(op, ["a", "b"], ["y"])], {"a": lhs, "b": rhs}, ["y"]))


def test_relu_and_a_constant_operand() -> None:
    """Relu of x times a Constant node's scalar: the Constant becomes a convc constant where Mul reads it."""
    nodes = [helper.make_node("Constant", [], ["half"], value_float=0.5), helper.make_node("Mul", ["x", "half"], ["m"]),
             helper.make_node("Relu", ["m"], ["y"])]
    graph = _agree(_model(nodes, {"x": (2, 3, 4)}, ["y"]))
    assert "relu" in _kinds(graph) and "constant" in _kinds(graph)


# --- Gemm and MatMul ------------------------------------------------------------------------

GEMM_CASES = {
    "plain": ({}, (3, 4), (4, 5), None),
    "transposed": ({"transA": 1, "transB": 1}, (4, 3), (5, 4), (5,)),
    "alpha_beta": ({"alpha": 0.5, "beta": 2.0, "transB": 1}, (3, 4), (5, 4), (3, 5)),
    "row_bias": ({"beta": 0.25}, (3, 4), (4, 5), (1, 5)),
}


@pytest.mark.parametrize("case", GEMM_CASES, ids=str)
def test_gemm_attributes_agree_with_onnxruntime(case: str) -> None:
    """Gemm with transA/transB, alpha, beta and C of shapes [N], [M, N], [1, N] or none."""
    attrs, a_shape, b_shape, c_shape = GEMM_CASES[case]
    weights = {"b": _random(b_shape, 1), **({"c": _random(c_shape, 2)} if c_shape else {})}
    node = helper.make_node("Gemm", ["a", "b", *(["c"] if c_shape else [])], ["y"], **attrs)
    _agree(_model([node], {"a": a_shape}, ["y"], weights))


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4,)),
                                                 ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4,))], ids=str)
def test_matmul_with_broadcast_batch_dims(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    """MatMul of 2-D and batched operands, batch dims spread by numpy broadcasting, and of 1-D
    operands (numpy's rule: A a row, B a column, that dim dropped from the result; 1-D by 1-D a scalar)."""
    _agree(_model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": a_shape, "b": b_shape}, ["y"]))


# --- tensor plumbing --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, 4])
def test_flatten_axis(axis: int) -> None:
    """Flatten at every axis, negative and the rank included."""
    _agree(_model([helper.make_node("Flatten", ["x"], ["y"], axis=axis)], {"x": (2, 3, 4, 5)}, ["y"]))


@pytest.mark.parametrize("shape", [[0, -1], [2, 0, 5, 4], [-1, 10], [0, 3, 0, 5]], ids=str)
def test_reshape_with_zero_and_minus_one(shape: list[int]) -> None:
    """Reshape to a constant shape where 0 copies the input's dim and -1 is inferred."""
    _agree(_model([helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": (2, 3, 4, 5)}, ["y"],
                  {"shape": np.array(shape, np.int64)}))


def test_shape_arithmetic_is_folded_at_import() -> None:
    """PyTorch's `x.view(x.size(0), -1)`: Shape, Gather, Unsqueeze and Concat of constants fold to the
    Reshape's shape at import, so the graph holds one reshape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]), helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
             helper.make_node("Cast", ["shape"], ["shape64"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "shape64"], ["y"])]
    initializers = {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64), "minus_one": np.array([-1], np.int64)}
    graph = _agree(_model(nodes, {"x": (2, 3, 4, 4)}, ["y"], initializers))
    assert _kinds(graph) == ["reshape"]


def test_ops_without_a_converter_are_evaluated_when_their_inputs_are_known() -> None:
    """ConstantOfShape (no converter) of a Shape is evaluated at import by onnx.reference."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"], value=numpy_helper.from_array(np.array([2.0], np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y"])]
    graph = _agree(_model(nodes, {"x": (2, 3)}, ["y"]))
    assert _kinds(graph) == ["constant", "add"]


def test_transpose_squeeze_unsqueeze_concat_gather_cast() -> None:
    """The tensor ops on graph inputs: Transpose, Unsqueeze/Squeeze with axes, Concat at a negative axis,
    Gather of a scalar and of a 1-D index, Cast to double."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
             helper.make_node("Unsqueeze", ["t", "axes"], ["u"]),
             helper.make_node("Squeeze", ["u", "axes"], ["s"]),
             helper.make_node("Concat", ["s", "t"], ["c"], axis=-1),
             helper.make_node("Gather", ["c", "picks"], ["g"], axis=1),
             helper.make_node("Gather", ["c", "one"], ["g1"], axis=2),
             helper.make_node("Cast", ["g1"], ["d"], to=TensorProto.DOUBLE)]
    model = _model(nodes, {"x": (2, 3, 4)}, ["g", "d"],
                   {"axes": np.array([-1, 1], np.int64), "picks": np.array([[3, 0], [-1, 1]], np.int64), "one": np.array(1, np.int64)})
    proto = onnx.load_from_string(model)
    proto.graph.output[1].type.tensor_type.elem_type = TensorProto.DOUBLE
    _agree(proto.SerializeToString())


def test_castlike_takes_the_element_type_of_an_initializer_or_a_computed_value() -> None:
    """CastLike (as the dynamo exporter writes it unoptimized) converts to target_type's element type, whether
    that is an initializer (double, then float16) or a value computed at run time (a Cast to float16); only its
    type is read."""
    nodes = [helper.make_node("CastLike", ["x", "like64"], ["d"]),
             helper.make_node("CastLike", ["d", "like16"], ["h"]),
             helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.FLOAT16),
             helper.make_node("Neg", ["x16"], ["n16"]),
             helper.make_node("CastLike", ["x", "n16"], ["y"])]
    model = _model(nodes, {"x": (2, 3)}, ["d", "h", "y"],
                   {"like64": np.array([1.5], np.float64), "like16": np.array(0, np.float16)}, opset=18)
    graph = _agree(model)
    assert [v.type.dtype for v in graph.outputs] == ["f64", "f16", "f16"] and _kinds(graph).count("convert") == 4  # three CastLike, one Cast


def test_castlike_to_a_type_convc_lacks_is_located() -> None:
    """CastLike whose target_type is an int64 initializer is refused by name (O6): convc has no int64 tensors."""
    node = helper.make_node("CastLike", ["x", "like"], ["y"], name="to_long")
    line = _raises("O6", convc.load_onnx, _model([node], {"x": (2,)}, ["y"], {"like": np.array([1], np.int64)}, opset=18))
    assert "to_long" in line and "target_type has element type int64" in line


def test_identity_and_dropout_pass_their_input_through() -> None:
    """Identity and inference Dropout add no op; an output that is a graph input's alias is copied under its own name."""
    nodes = [helper.make_node("Identity", ["x"], ["i"]), helper.make_node("Dropout", ["i"], ["d"], seed=3),
             helper.make_node("Relu", ["d"], ["y"])]
    graph = _agree(_model(nodes, {"x": (2, 3)}, ["y", "i"]))
    assert [v.name for v in graph.outputs] == ["y", "i"] and _kinds(graph) == ["relu", "reshape"]


# --- opsets, inputs, initializers ------------------------------------------------------------


def test_lookup_picks_the_newest_converter_not_above_the_opset() -> None:
    """Two converters of one op type: an opset between them picks the older, one above both the newer."""
    def old(node: registry.Node, ctx: registry.Context) -> list[registry.Operand]:
        return []

    def new(node: registry.Node, ctx: registry.Context) -> list[registry.Operand]:
        return []

    registry.converter("TestOnlyOp", since=16)(new)
    registry.converter("TestOnlyOp", since=13)(old)
    try:
        assert registry.lookup("TestOnlyOp", 12) is None
        assert registry.lookup("TestOnlyOp", 15).convert is old  # type: ignore[union-attr]
        assert registry.lookup("TestOnlyOp", 16).convert is new  # type: ignore[union-attr]
        assert registry.lookup("TestOnlyOp", 21).convert is new  # type: ignore[union-attr]
    finally:
        del registry.CONVERTERS["TestOnlyOp"]


def test_an_opset_11_model_is_upgraded_by_the_version_converter() -> None:
    """Unsqueeze took axes as an attribute before opset 13: onnx.version_converter brings the model up."""
    nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[1]), helper.make_node("Relu", ["u"], ["y"])]
    _agree(_model(nodes, {"x": (2, 3)}, ["y"], opset=11))


def test_onnx_element_type_numbers_match_the_onnx_package() -> None:
    """The converters' table of ONNX element type numbers is onnx.TensorProto's."""
    names = {"f32": "FLOAT", "ui8": "UINT8", "i8": "INT8", "i32": "INT32", "f16": "FLOAT16", "f64": "DOUBLE", "bf16": "BFLOAT16"}
    assert {number: getattr(TensorProto, names[dtype]) for number, dtype in ONNX_DTYPES.items()} == {n: n for n in ONNX_DTYPES}


def test_symbolic_dims_take_input_shapes_else_one_with_a_note() -> None:
    """A symbolic batch dim is 1 with one note on the log, or what input_shapes says, silently."""
    model = _model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("batch", 3)}, ["y"])
    notes: list[str] = []
    assert convc.load_onnx(model, log=notes.append).inputs[0].type.shape == (1, 3)
    assert len(notes) == 1 and "input 'x' has symbolic dimensions (batch), taken as 1" in notes[0]
    notes.clear()
    assert convc.load_onnx(model, input_shapes={"x": (4, 3)}, log=notes.append).inputs[0].type.shape == (4, 3)
    assert notes == []


def test_keep_as_inputs_makes_initializers_inputs_that_grad_can_name() -> None:
    """A kept initializer is an input after the graph's own; run with its value it agrees with ONNX Runtime, and
    convc.grad differentiates with respect to it."""
    w = _random((3, 2, 3, 3), 1)
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], {"x": (1, 2, 6, 6)}, ["y"], {"w": w})
    graph = convc.load_onnx(model, keep_as_inputs=["w"])
    assert [v.name for v in graph.inputs] == ["x", "w"]
    x = _random((1, 2, 6, 6))
    np.testing.assert_allclose(convc.run(graph, {"x": x, "w": w}, platform="cpu").outputs[0], _onnxruntime(model, {"x": x})[0],
                               rtol=1e-4, atol=1e-4)
    assert [v.name for v in convc.grad(graph, ["w"]).outputs] == ["y", "w.grad"]


def test_initializers_become_constants_named_as_in_onnx() -> None:
    """Without keep_as_inputs, an initializer is a `constant` carrying the initializer's name."""
    model = _model([helper.make_node("Add", ["x", "bias"], ["y"])], {"x": (2, 3)}, ["y"], {"bias": _random((3,), 1)})
    graph = convc.load_onnx(model)
    assert [v.name for v in graph.inputs] == ["x"]
    assert [(op.kind, op.name) for op in graph.ops if op.kind == "constant"] == [("constant", "bias")]


def test_external_data_is_read_from_the_model_directory(tmp_path: Path) -> None:
    """Initializers saved as external data next to the model load with it."""
    proto = onnx.load_from_string(_model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": (2, 3)}, ["y"],
                                         {"w": _random((3, 4), 1)}))
    onnx.save_model(proto, tmp_path / "m.onnx", save_as_external_data=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").exists()
    x = _random((2, 3))
    got = convc.run(convc.load_onnx(tmp_path / "m.onnx"), {"x": x}, platform="cpu").outputs[0]
    np.testing.assert_allclose(got, _onnxruntime(onnx.load(tmp_path / "m.onnx").SerializeToString(), {"x": x})[0], rtol=1e-5)


# --- networks exported from PyTorch ---------------------------------------------------------


def _export(module: Any, shape: Sequence[int], **options: Any) -> bytes:
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (torch.randn(*shape),), buffer, dynamo=False, opset_version=17, input_names=["x"],
                          output_names=["y"], **options)
    return buffer.getvalue()


def _with_random_statistics(module: Any) -> Any:
    """Eval-mode BatchNorms with non-trivial running statistics (fresh ones are the identity)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for layer in module.modules():
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.running_mean.uniform_(-0.5, 0.5)
            layer.running_var.uniform_(0.5, 1.5)
            layer.weight.data.uniform_(0.5, 1.5)
    return module


def _resnet_block() -> Any:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)

    class Block(nn.Module):
        """A ResNet basic block with a strided 1x1 downsample, a ResNet stem and head."""

        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            self.conv1, self.bn1 = nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16)
            self.conv2, self.bn2 = nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)
            self.down = nn.Sequential(nn.Conv2d(8, 16, 1, 2, bias=False), nn.BatchNorm2d(16))
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

        def forward(self, x: Any) -> Any:
            x = self.stem(x)
            y = torch.relu(self.bn1(self.conv1(x)))
            return self.head(torch.relu(self.bn2(self.conv2(y)) + self.down(x)))

    return _with_random_statistics(Block())


def _tiny_vgg() -> Any:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(1)

    class VGG(nn.Module):
        """VGG's pattern at small widths, a SqueezeNet fire module (concat of 1x1 and 3x3 expands, ceil_mode pooling),
        and a classifier behind `x.view(x.size(0), -1)`."""

        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                          nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                          nn.MaxPool2d(3, 2, ceil_mode=True))
            self.squeeze, self.expand1, self.expand3 = nn.Conv2d(16, 4, 1), nn.Conv2d(4, 8, 1), nn.Conv2d(4, 8, 3, padding=1)
            self.classifier = nn.Sequential(nn.Dropout(), nn.Linear(16 * 8 * 8, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x: Any) -> Any:
            x = self.features(x)
            s = torch.relu(self.squeeze(x))
            x = torch.cat([torch.relu(self.expand1(s)), torch.relu(self.expand3(s))], 1)
            return self.classifier(x.view(x.size(0), -1))

    return _with_random_statistics(VGG())


@pytest.fixture(scope="module")
def resnet_block() -> bytes:
    return _export(_resnet_block(), (1, 3, 32, 32))


@pytest.fixture(scope="module")
def tiny_vgg_unfolded() -> bytes:
    """Exported without constant folding: BatchNormalization, Identity of weights and the shape arithmetic stay in the file."""
    return _export(_tiny_vgg(), (1, 3, 32, 32), do_constant_folding=False, dynamic_axes={"x": {0: "batch"}})


def test_resnet_block_exported_by_pytorch_agrees_with_onnxruntime(resnet_block: bytes) -> None:
    """A ResNet stem, basic block with downsample, and head (TorchScript exporter, opset 17)."""
    graph = _agree(resnet_block)
    assert _kinds(graph).count("conv") == 4


def test_tiny_vgg_with_dynamic_batch_agrees_with_onnxruntime(tiny_vgg_unfolded: bytes) -> None:
    """VGG + fire module exported with a dynamic batch and unfolded BatchNorm and shape arithmetic, run at batch 3."""
    graph = _agree(tiny_vgg_unfolded, input_shapes={"x": (3, 3, 32, 32)})
    assert graph.inputs[0].type.shape == (3, 3, 32, 32)
    assert {"Shape", "BatchNormalization"} <= {n.op_type for n in onnx.load_from_string(tiny_vgg_unfolded).graph.node}


def test_convc_run_check_on_an_onnx_file(resnet_block: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc model.onnx --check` compares with the jax.lax oracle and with ONNX Runtime and exits 0; `--grad`
    names an initializer (compared with jax.vjp only)."""
    path = tmp_path / "block.onnx"
    path.write_bytes(resnet_block)
    assert convc_main([str(path), "--check", "--target", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "y: max abs error vs jax.lax" in out and "y: max abs error vs onnxruntime" in out
    assert convc_main([str(path), "--check", "--target", "cpu", "--grad", "head.2.weight"]) == 0
    assert "head.2.weight.grad: max abs error vs jax.lax" in capsys.readouterr().out


def test_convc_run_with_check_compares_an_onnx_file_with_onnxruntime(tmp_path: Path) -> None:
    """convc.run(path, check=True) on an .onnx file: one line against jax.lax and one against ONNX Runtime per output."""
    path = tmp_path / "m.onnx"
    path.write_bytes(_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (2, 3)}, ["y"]))
    result = convc.run(path, check=True, platform="cpu")
    assert result.ok and result.check is not None
    found = [re.fullmatch(r"y: max abs error vs (\S+) \S+ \(ok\)", line) for line in result.check.lines]
    assert [match.group(1) if match else line for match, line in zip(found, result.check.lines, strict=True)] == ["jax.lax", "onnxruntime"]


def test_an_onnx_file_is_recognised_by_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model file without the .onnx suffix is read as ONNX from its first byte; --emit convc prints its ops."""
    path = tmp_path / "model.bin"
    path.write_bytes(_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (2, 3)}, ["y"]))
    assert convc_main([str(path), "--emit", "convc"]) == 0
    assert '"convc.relu"(%x)' in capsys.readouterr().out


# --- diagnostics (O1-O10) -------------------------------------------------------------------


def _cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], model: bytes, expected_id: str, *flags: str,
               name: str = "m.onnx") -> str:
    """Run `convc FILE FLAGS -o out.mlir` on `model`: exit 1, one line ending with the id, nothing written."""
    path = tmp_path / name
    path.write_bytes(model)
    output = tmp_path / "out.mlir"
    assert convc_main([str(path), *flags, "-o", str(output)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.strip().endswith(f"[{expected_id}]"), err
    assert err.startswith(str(path)) and not output.exists()
    return err


def _raises(expected_id: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ConvcError) as caught:
        call(*args, **kwargs)
    assert caught.value.constraint == expected_id and "\n" not in str(caught.value)
    return str(caught.value)


def _relu_model(**options: Any) -> bytes:
    return _model([helper.make_node("Relu", ["x"], ["y"])], {"x": (2, 3)}, ["y"], **options)


def test_O1_truncated_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (2, 3)}, ["y"], {"b": _random((3,))})
    assert "not an ONNX model" in _cli_error(tmp_path, capsys, model[:len(model) - 7], "O1")


def test_O1_not_an_onnx_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not an ONNX model" in _cli_error(tmp_path, capsys, b"hello, this is text\n", "O1")


def test_O2_inconsistent_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model([helper.make_node("Add", ["a", "b"], ["y"])], {"a": (2, 3), "b": (4, 5)}, ["y"])
    assert "onnx.shape_inference" in _cli_error(tmp_path, capsys, model, "O2")


def test_O2_checker_rejects_an_undefined_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model([helper.make_node("Add", ["x", "nowhere"], ["y"])], {"x": (2, 3)}, ["y"])
    assert "onnx.checker" in _cli_error(tmp_path, capsys, model, "O2")


def test_O2_tensors_of_unknown_element_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proto = onnx.load_from_string(_model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (2, 3)}, ["y"], {"b": _random((3,))}))
    proto.graph.initializer[0].data_type = 113
    assert "'b': invalid initializer: unknown data type 113" in _cli_error(tmp_path, capsys, proto.SerializeToString(), "O2")
    node = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.zeros(3, np.float32)), name="k")
    node.attribute[0].t.data_type = 78
    model = _model([node, helper.make_node("Add", ["x", "c"], ["y"])], {"x": (2, 3)}, ["y"])
    assert "'k' (Constant): invalid attribute 'value'" in _cli_error(tmp_path, capsys, model, "O2")


def test_damaged_onnx_files_load_or_fail_with_one_located_line() -> None:
    """Bytes flipped, cut or inserted at random (fixed seed) in a small model: it loads, or raises a
    one-line ConvcError naming its rule; never another exception."""
    data = _model([helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
                   helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], ceil_mode=1),
                   helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)],
                  {"x": ("n", 2, 6, 6)}, ["y"], {"w": _random((3, 2, 3, 3)), "fc": _random((4, 12))})
    rng = np.random.default_rng(7)
    for trial in range(300):
        damaged = bytearray(data)
        position = int(rng.integers(0, len(data)))
        if trial % 3 == 0:
            damaged[position] = int(rng.integers(0, 256))
        elif trial % 3 == 1:
            del damaged[position:]
        else:
            damaged[position:position] = rng.integers(0, 256, int(rng.integers(1, 8))).astype(np.uint8).tobytes()
        try:
            convc.load_onnx(bytes(damaged), log=lambda line: None)
        except ConvcError as err:
            assert err.constraint is not None and "\n" not in str(err), (trial, str(err))


def test_O3_opset_newer_than_onnx_knows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _cli_error(tmp_path, capsys, _relu_model(opset=onnx.defs.onnx_opset_version() + 1), "O3")
    assert "newer than the installed onnx package knows" in err


def test_O4_ops_of_other_domains_are_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [helper.make_node("FusedConv", ["x"], ["c"], domain="com.microsoft", name="fused"),
             helper.make_node("LinearRegressor", ["c"], ["y"], domain="ai.onnx.ml", name="reg")]
    proto = onnx.load_from_string(_model(nodes, {"x": (2, 3)}, ["y"]))
    proto.opset_import.extend([helper.make_opsetid("com.microsoft", 1), helper.make_opsetid("ai.onnx.ml", 3)])
    err = _cli_error(tmp_path, capsys, proto.SerializeToString(), "O4")
    assert "'fused' (com.microsoft.FusedConv), 'reg' (ai.onnx.ml.LinearRegressor)" in err


def test_O5_every_unsupported_node_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [helper.make_node("Hardmax", ["x"], ["s"], name="gate"), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Frobnicate", ["r"], ["y"], name="mystery")]
    err = _cli_error(tmp_path, capsys, _model(nodes, {"x": (2, 3)}, ["y"]), "O5")
    assert "2 node(s) with unsupported ops at opset 17: 'gate' (Hardmax), 'mystery' (Frobnicate)" in err
    assert ":/graph/node/0: error: 'gate' (Hardmax)" in err


def test_O5_unknown_ops_and_bad_attribute_values_in_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two ops without a converter and two nodes with attribute values their converters refuse
    (a Conv's auto_pad; a Resize's mode, its first bad one of two) are one O5 line from the
    command line, listing all four in graph order, located at the first; nothing is written."""
    nodes = [helper.make_node("Hardmax", ["x"], ["s"], name="gate"),
             helper.make_node("Conv", ["s", "w"], ["c"], auto_pad="SAME_MIDDLE", name="c1"),
             helper.make_node("Resize", ["c", "", "scales"], ["r"], mode="lanczos", antialias=1, name="up"),
             helper.make_node("Frobnicate", ["r"], ["y"], name="mystery")]
    model = _model(nodes, {"x": (1, 2, 5, 5)}, ["y"], {"w": _random((2, 2, 3, 3)), "scales": np.ones(4, np.float32)}, opset=19)
    err = _cli_error(tmp_path, capsys, model, "O5")
    assert ":/graph/node/0: error: 'gate' (Hardmax): 4 node(s) unsupported at opset 19: 'gate' (Hardmax), " \
           "'c1' (Conv: auto_pad 'SAME_MIDDLE' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID), " \
           "'up' (Resize: mode 'lanczos' is not one of nearest, linear, cubic), 'mystery' (Frobnicate)" in err


def test_O6_bad_attribute_values_are_all_found_before_anything_is_built() -> None:
    """Attribute refusals alone are one O6 from the library listing each node, found before
    conversion: the Reshape before them, whose shape is not known at import (a conversion-time
    O6), is never reached."""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="flat"),
             helper.make_node("Gelu", ["r"], ["g"], approximate="sigmoid", name="act"),
             helper.make_node("Pad", ["g", "pads"], ["y"], mode="mirror", name="pad")]
    model = _model(nodes, {"x": (2, 3), "shape": (2,)}, ["y"], {"pads": np.zeros(4, np.int64)}, opset=20)
    message = _raises("O6", convc.load_onnx, model)
    assert message.startswith("<model>:/graph/node/1: error: 'act' (Gelu): 2 node(s) unsupported at opset 20: ")
    assert "'act' (Gelu: approximate 'sigmoid' is not one of none, tanh), " \
           "'pad' (Pad: mode 'mirror' is not one of constant, reflect, edge, wrap)" in message


def test_O2_an_attribute_of_the_wrong_type_is_the_checkers_to_report() -> None:
    """An LpPool whose p is a string: the up-front attribute check cannot compare it, so onnx.checker reports it (O2)."""
    model = _model([helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p="x")], {"x": (1, 1, 4, 4)}, ["y"])
    assert "Mismatched attribute type" in _raises("O2", convc.load_onnx, model)


def test_O6_bad_attribute_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_MIDDLE", name="c1")], {"x": (1, 2, 5, 5)}, ["y"],
                   {"w": _random((3, 2, 3, 3))})
    err = _cli_error(tmp_path, capsys, model, "O6")
    assert ":/graph/node/0: error: 'c1' (Conv): auto_pad 'SAME_MIDDLE' is not one of" in err


def test_O6_an_input_that_must_be_known_at_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stats = {name: np.ones(2, np.float32) for name in ("b", "m", "v")}
    node = helper.make_node("BatchNormalization", ["x", "scale", "b", "m", "v"], ["y"], name="bn")
    err = _cli_error(tmp_path, capsys, _model([node], {"x": (1, 2, 3, 3), "scale": (2,)}, ["y"], stats), "O6")
    assert "'bn' (BatchNormalization): scale (input 1, 'scale') must be known at import" in err


def test_O7_input_shapes_that_do_not_fit() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("n", 3)}, ["y"])
    assert "no graph input" in _raises("O7", convc.load_onnx, model, input_shapes={"z": (1, 3)})
    assert "does not fit its declared shape" in _raises("O7", convc.load_onnx, model, input_shapes={"x": (1, 4)})
    assert "no initializer" in _raises("O7", convc.load_onnx, model, keep_as_inputs=["x"])


def test_O8_without_the_onnx_package(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError, as where it is not installed
    err = _cli_error(tmp_path, capsys, _relu_model(), "O8")
    assert "pip install 'convc[onnx]'" in err


def test_O9_initializers_over_max_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (2, 8)}, ["y"], {"b": _random((8,))})
    assert "over the limit of 16 (--max-bytes)" in _cli_error(tmp_path, capsys, model, "O9", "--max-bytes", "16")


def test_O10_external_data_outside_the_model_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proto = onnx.load_from_string(_model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (2, 3)}, ["y"], {"b": _random((3,))}))
    tensor = proto.graph.initializer[0]
    (tmp_path / "b.bin").write_bytes(tensor.raw_data)
    onnx.external_data_helper.set_external_data(tensor, location="../b.bin")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    (tmp_path / "models").mkdir()
    err = _cli_error(tmp_path / "models", capsys, proto.SerializeToString(), "O10")
    assert "external data file '../b.bin' is outside the model's directory" in err
    next(entry for entry in tensor.external_data if entry.key == "location").value = "missing.bin"
    assert "cannot read external data file 'missing.bin'" in _cli_error(tmp_path / "models", capsys, proto.SerializeToString(), "O10")


def test_O11_check_finds_a_translation_that_onnxruntime_disagrees_with(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With a wrong Relu converter (x + x) the jax.lax oracle of the imported graph agrees with the run, and
    only ONNX Runtime, reading the .onnx itself, catches the mistranslation."""
    def doubled(node: registry.Node, ctx: registry.Context) -> list[registry.Operand]:
        x = ctx.operand(node, 0)
        return [ctx.op("add", x, x)]

    monkeypatch.setitem(registry.CONVERTERS, "Relu", [registry.Converter("Relu", 13, doubled, False)])
    path = tmp_path / "m.onnx"
    path.write_bytes(_relu_model())
    assert convc_main([str(path), "--check"]) == 1
    captured = capsys.readouterr()
    assert "vs jax.lax" in captured.out and "(ok)" in captured.out and "vs onnxruntime" in captured.out and "MISMATCH" in captured.out
    assert captured.err.strip() == f"{path}: error: --check: outputs differ from ONNX Runtime beyond tolerance [O11]"


def test_O6_unsupported_training_mode_batch_normalization(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stats = {name: np.ones(2, np.float32) for name in ("s", "b", "m", "v")}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "mean", "var"], training_mode=1,
                            name="bn")
    assert "training_mode 1 is not supported (only 0)" in _cli_error(tmp_path, capsys, _model([node], {"x": (1, 2, 3, 3)}, ["y"], stats), "O6")
