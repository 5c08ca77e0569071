"""The ONNX normalization converters (InstanceNormalization, LayerNormalization,
GroupNormalization in compiler/frontend/onnx/normalization.py): each op built with
onnx.helper over several axes and epsilons, run through convc (default pipeline, PJRT on the
CPU) and compared with ONNX Runtime on the same inputs; `convc.grad` through LayerNorm against
jax.vjp; and the attribute values the converters refuse (O6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import convc
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import helper  # noqa: E402
from test_grad import check_grad  # noqa: E402
from test_onnx_import import _model, _onnxruntime, _raises, _random  # noqa: E402


def _agree_on(model: bytes, feeds: Mapping[str, np.ndarray], rtol: float = 1e-4) -> convc.Graph:
    """Import `model`, run it through convc on `feeds` and assert ONNX Runtime gives the same outputs."""
    graph = convc.load_onnx(model)
    got = convc.run(graph, dict(feeds), platform="cpu").outputs
    for ours, theirs in zip(got, _onnxruntime(model, feeds), strict=True):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * float(np.abs(theirs).max(initial=1.0)))
    return graph


def _typed_like_x(model: bytes) -> bytes:
    """`model` with its outputs typed as input 0 where shape inference left them untyped (onnx
    infers no type for GroupNormalization, a function op)."""
    proto = onnx.load_from_string(model)
    for output in proto.graph.output:
        if not output.type.HasField("tensor_type"):
            output.type.CopyFrom(proto.graph.input[0].type)
    return proto.SerializeToString()  # type: ignore[no-any-return]


def _kinds(graph: convc.Graph) -> set[str]:
    return {op.kind for op in graph.ops}


def _shifted(shape: Sequence[int], seed: int = 0) -> np.ndarray:
    """Random values with an offset and spread, so a wrong mean or variance shows."""
    return (3.0 + 2.5 * _random(shape, seed)).astype(np.float32)


# --- normalizations ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 3, 5), (1, 2, 3, 2, 4)], ids=str)
@pytest.mark.parametrize("epsilon", [1e-5, 0.5])
def test_instance_normalization_agrees_with_onnxruntime(shape: tuple[int, ...], epsilon: float) -> None:
    """InstanceNormalization over 1-D to 3-D spatial dims, scale and B per channel as initializers."""
    channels = shape[1]
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=epsilon)
    model = _model([node], {"x": shape}, ["y"], {"s": _random((channels,), 1), "b": _random((channels,), 2)})
    graph = _agree_on(model, {"x": _shifted(shape)})
    assert {"reduce_sum", "rsqrt", "subtract"} <= _kinds(graph)


@pytest.mark.parametrize("axis", [-1, -2, 1, 0])
@pytest.mark.parametrize("epsilon", [1e-5, 0.25])
def test_layer_normalization_axes_and_epsilons(axis: int, epsilon: float) -> None:
    """LayerNormalization of a (2, 3, 4, 5) input from `axis` on, Scale and B the normalized shape (graph inputs)."""
    shape = (2, 3, 4, 5)
    normalized = shape[axis % 4:]
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis, epsilon=epsilon)
    model = _model([node], {"x": shape, "s": normalized, "b": normalized}, ["y"])
    _agree_on(model, {"x": _shifted(shape), "s": _random(normalized, 1), "b": _random(normalized, 2)})


def test_layer_normalization_mean_and_inv_std_dev_outputs() -> None:
    """LayerNormalization's Mean and InvStdDev outputs (the axes kept as 1s) agree with ONNX Runtime's."""
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=1, epsilon=1e-2)
    model = _model([node], {"x": (2, 3, 4)}, ["y", "mean", "inv"], {"s": _random((3, 4), 1), "b": _random((3, 4), 2)})
    graph = _agree_on(model, {"x": _shifted((2, 3, 4))})
    assert [v.type.shape for v in graph.outputs] == [(2, 3, 4), (2, 1, 1), (2, 1, 1)]


def test_layer_normalization_without_bias_and_a_broadcast_scale() -> None:
    """LayerNormalization without B, its Scale of shape (1, 5) spread over the normalized (4, 5) by numpy broadcasting."""
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-2)
    model = _model([node], {"x": (3, 4, 5)}, ["y"], {"s": _random((1, 5), 1)})
    _agree_on(model, {"x": _shifted((3, 4, 5))})


@pytest.mark.parametrize(("shape", "groups"), [((2, 6, 4, 3), 3), ((2, 4, 5), 1), ((1, 4, 2, 3, 2), 4), ((2, 4, 3), 2)], ids=str)
def test_group_normalization_agrees_with_onnxruntime(shape: tuple[int, ...], groups: int) -> None:
    """GroupNormalization (opset 21: scale and bias one per channel) over 1-D to 3-D spatial dims."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-3)
    initializers = {"s": _random((shape[1],), 1), "b": _random((shape[1],), 2)}
    graph = _agree_on(_typed_like_x(_model([node], {"x": shape}, ["y"], initializers, opset=21)), {"x": _shifted(shape)})
    assert "reshape" in _kinds(graph)


def test_group_normalization_18_is_refused_as_onnx_deprecated_it() -> None:
    """Opset 18's GroupNormalization (scale and bias per group), which onnx deprecated, has no converter: O5."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    initializers = {"s": np.ones(2, np.float32), "b": np.ones(2, np.float32)}
    message = _raises("O5", convc.load_onnx, _typed_like_x(_model([node], {"x": (1, 4, 3)}, ["y"], initializers, opset=18)))
    assert "GroupNormalization" in message


def test_grad_through_layer_normalization_matches_jax_vjp() -> None:
    """`convc.grad` of an imported LayerNormalization, by X and by Scale and B, agrees with jax.vjp of its oracle."""
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-3)
    graph = convc.load_onnx(_model([node], {"x": (2, 3, 6), "s": (6,), "b": (6,)}, ["y"]))
    check_grad(graph, ["x", "s", "b"], "generic")


@pytest.mark.parametrize(("node", "inputs", "initializers", "opset", "fragment"), [
    (helper.make_node("LayerNormalization", ["x", "s"], ["y"], stash_type=11), {"x": (2, 3)}, {"s": np.ones(3, np.float32)}, 17,
     "stash_type 11"),
    (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3), {"x": (1, 4, 2)},
     {"s": np.ones(4, np.float32), "b": np.ones(4, np.float32)}, 21, "num_groups 3"),
], ids=["stash_type", "groups"])
def test_O6_normalization_forms_refused(node: Any, inputs: dict[str, tuple[int, ...]], initializers: dict[str, np.ndarray],
                                        opset: int, fragment: str) -> None:
    """A stash_type other than 1, num_groups not dividing the channels: O6."""
    outputs = list(node.output)
    model = _typed_like_x(_model([node], inputs, outputs, initializers, opset=opset))
    assert fragment in _raises("O6", convc.load_onnx, model)
