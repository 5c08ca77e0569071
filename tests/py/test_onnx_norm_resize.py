"""The ONNX normalization converters (InstanceNormalization, LayerNormalization,
GroupNormalization in compiler/frontend/onnx/normalization.py) and Resize/Upsample
(resize.py): each op built with onnx.helper over several axes, epsilons, modes, coordinate
modes, scales and sizes, run through convc (default pipeline, PJRT on the CPU) and compared
with ONNX Runtime on the same inputs; a torch-exported segmentation head; `convc.grad`
through LayerNorm and bilinear Resize against jax.vjp; and the attribute values the
converters refuse (O5, O6)."""

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


@pytest.mark.parametrize(("shape", "groups"), [((2, 6, 4, 3), 3), ((2, 4, 5), 1), ((1, 4, 2, 3, 2), 4)], ids=str)
def test_group_normalization_18_scale_and_bias_per_group_agree_with_onnxruntime(shape: tuple[int, ...], groups: int) -> None:
    """Opset 18's GroupNormalization (scale and bias one per group, which onnx deprecated and its
    checker refuses, but ONNX Runtime runs) agrees with ONNX Runtime: each group's parameters
    spread over its channels, with the parameters as initializers or graph inputs."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-3)
    initializers = {"s": _random((groups,), 1), "b": _random((groups,), 2)}
    _agree_on(_typed_like_x(_model([node], {"x": shape}, ["y"], initializers, opset=18)), {"x": _shifted(shape)})
    _agree_on(_typed_like_x(_model([node], {"x": shape, "s": (groups,), "b": (groups,)}, ["y"], opset=18)),
              {"x": _shifted(shape), **initializers})


def test_group_normalization_18_without_num_groups_is_refused() -> None:
    """An opset-18 GroupNormalization (which the checker does not see) without its required num_groups: O6, no traceback."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn")
    initializers = {"s": np.ones(2, np.float32), "b": np.ones(2, np.float32)}
    message = _raises("O6", convc.load_onnx, _typed_like_x(_model([node], {"x": (1, 4, 3)}, ["y"], initializers, opset=18)))
    assert "'gn' (GroupNormalization): num_groups is required" in message


def test_group_normalization_18_with_per_channel_parameters_is_refused() -> None:
    """Opset 18's GroupNormalization given parameters per channel instead of per group: O6 naming the shape."""
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    initializers = {"s": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
    message = _raises("O6", convc.load_onnx, _typed_like_x(_model([node], {"x": (1, 4, 3)}, ["y"], initializers, opset=18)))
    assert "(GroupNormalization): a per-group parameter tensor<4xf32> has shape [4], expected [2]" in message


def test_layer_normalization_float16_computes_statistics_in_float() -> None:
    """A float16 LayerNormalization (stash_type 1) widens to float for its statistics and gives float16 back,
    within float16's precision of ONNX Runtime."""
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)
    model = _model([node], {"x": (2, 3, 8), "s": (8,), "b": (8,)}, ["y"], dtype=onnx.TensorProto.FLOAT16)
    feeds = {"x": _shifted((2, 3, 8)).astype(np.float16), "s": _random((8,), 1).astype(np.float16), "b": _random((8,), 2).astype(np.float16)}
    graph = _agree_on(model, feeds, rtol=2e-3)
    assert "convert" in _kinds(graph) and graph.outputs[0].type.dtype == "f16"


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


# --- Resize --------------------------------------------------------------------------------------


def _resize_model(shape: Sequence[int], scales: Sequence[float] | None = None, sizes: Sequence[int] | None = None,
                  opset: int = 19, roi: Sequence[float] | None = None, **attrs: Any) -> bytes:
    """One Resize of a graph input `x`, its roi (when given), scales or sizes as initializers."""
    initializers: dict[str, np.ndarray] = {} if roi is None else {"roi": np.asarray(roi, np.float32)}
    if scales is not None:
        initializers["scales"] = np.asarray(scales, np.float32)
    if sizes is not None:
        initializers["sizes"] = np.asarray(sizes, np.int64)
    node = helper.make_node("Resize", ["x", "" if roi is None else "roi", "scales" if scales is not None else "",
                                       "sizes" if sizes is not None else ""], ["y"], **attrs)
    return _model([node], {"x": shape}, ["y"], initializers, opset=opset)


COORDINATE_MODES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]
SCALES = {"up2": [1, 1, 2, 2], "up-odd": [1, 1, 1.5, 2.5], "down": [1, 1, 0.5, 0.6], "mixed": [1, 1, 3, 0.75]}


@pytest.mark.parametrize("scales", sorted(SCALES))
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
def test_resize_linear_scales_agrees_with_onnxruntime(coordinate_mode: str, scales: str) -> None:
    """Bilinear Resize of an NCHW input by scales, up and down, in each coordinate transformation mode."""
    model = _resize_model((2, 3, 5, 4), SCALES[scales], mode="linear", coordinate_transformation_mode=coordinate_mode)
    graph = _agree_on(model, {"x": _random((2, 3, 5, 4))})
    assert "dot_general" in _kinds(graph)


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
@pytest.mark.parametrize("scales", ["up-odd", "down", "mixed"])
def test_resize_nearest_modes_agree_with_onnxruntime(coordinate_mode: str, nearest_mode: str, scales: str) -> None:
    """Nearest Resize by scales, in each nearest_mode and coordinate transformation mode."""
    model = _resize_model((1, 2, 5, 4), SCALES[scales], mode="nearest", coordinate_transformation_mode=coordinate_mode,
                          nearest_mode=nearest_mode)
    _agree_on(model, {"x": _random((1, 2, 5, 4))}, rtol=1e-6)


@pytest.mark.parametrize("nearest_mode", ["floor", "round_prefer_floor"])
@pytest.mark.parametrize("scales", ["up-odd", "down", "mixed"])
def test_resize_tf_half_pixel_for_nn_as_tf2onnx_writes_it(nearest_mode: str, scales: str) -> None:
    """Nearest Resize with opset 11's tf_half_pixel_for_nn coordinate mode (x_original =
    (x_resized + 0.5) / scale) in an opset-17 model, as tf2onnx writes TensorFlow's nearest
    resize (with nearest_mode floor): the same picks as ONNX Runtime."""
    model = _resize_model((1, 2, 5, 4), SCALES[scales], opset=17, mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn",
                          nearest_mode=nearest_mode)
    _agree_on(model, {"x": _random((1, 2, 5, 4))}, rtol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
@pytest.mark.parametrize("sizes", [[2, 3, 9, 7], [2, 3, 3, 2], [2, 3, 1, 6]], ids=str)
def test_resize_by_sizes_agrees_with_onnxruntime(mode: str, coordinate_mode: str, sizes: list[int]) -> None:
    """Resize to given sizes (up, down, and a size of 1), nearest and linear, in each coordinate mode."""
    model = _resize_model((2, 3, 5, 4), sizes=sizes, mode=mode, coordinate_transformation_mode=coordinate_mode)
    graph = _agree_on(model, {"x": _random((2, 3, 5, 4))})
    assert graph.outputs[0].type.shape == tuple(sizes)


@pytest.mark.parametrize("exclude_outside", [0, 1])
@pytest.mark.parametrize("cubic_a", [-0.75, -0.5])
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
@pytest.mark.parametrize("scales", sorted(SCALES))
def test_resize_cubic_agrees_with_onnxruntime(scales: str, coordinate_mode: str, cubic_a: float, exclude_outside: int) -> None:
    """Bicubic Resize (four Keys weights per output, cubic_coeff_a -0.75 as ONNX's default and -0.5 as
    TensorFlow's; exclude_outside renormalizing without the taps past the edges) by scales up and down, in each
    coordinate mode, is one constant interpolation matrix per axis."""
    model = _resize_model((2, 3, 5, 4), SCALES[scales], mode="cubic", coordinate_transformation_mode=coordinate_mode,
                          cubic_coeff_a=cubic_a, exclude_outside=exclude_outside)
    graph = _agree_on(model, {"x": _random((2, 3, 5, 4))})
    assert _kinds(graph) <= {"dot_general", "transpose", "constant"}


def test_resize_cubic_by_sizes_and_its_gradient() -> None:
    """Bicubic Resize to given sizes agrees with ONNX Runtime; `convc.grad` through it agrees with jax.vjp."""
    model = _resize_model((1, 2, 4, 5), sizes=[1, 2, 7, 3], mode="cubic", coordinate_transformation_mode="pytorch_half_pixel")
    _agree_on(model, {"x": _random((1, 2, 4, 5))})
    check_grad(convc.load_onnx(model), ["x"], "generic")


def test_cubic_weights_interpolate_a_cubic_and_sum_to_one() -> None:
    """Each row of Keys' weights sums to 1, and at a = -0.5 the cubic convolution reproduces a quadratic exactly
    (Keys' third-order accuracy) away from the edges."""
    from convc.frontend.onnx.resize import interpolation_matrix, source_coordinates

    matrix = interpolation_matrix("cubic", "asymmetric", "floor", 25, 10, 2.5, -0.5)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, rtol=1e-12)
    grid = np.arange(10.0)
    coordinates = source_coordinates("asymmetric", 25, 10, 2.5).astype(np.float64)  # float32, as ONNX Runtime's
    inside = (coordinates >= 1) & (coordinates <= 7)
    np.testing.assert_allclose((matrix @ grid**2)[inside], coordinates[inside] ** 2, rtol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_5d_trilinear_and_nearest(mode: str) -> None:
    """A 5-D NCDHW Resize (trilinear, or nearest) by scales: three resized axes."""
    model = _resize_model((1, 2, 3, 4, 5), [1, 1, 2, 1.5, 0.8], mode=mode, coordinate_transformation_mode="half_pixel")
    _agree_on(model, {"x": _random((1, 2, 3, 4, 5))})


def test_grad_through_bilinear_resize_matches_jax_vjp() -> None:
    """`convc.grad` of an imported bilinear Resize (its `dot_general`s and `transpose`s) agrees with jax.vjp of its oracle."""
    graph = convc.load_onnx(_resize_model((1, 2, 3, 4), [1, 1, 2, 1.5], mode="linear", coordinate_transformation_mode="align_corners"))
    check_grad(graph, ["x"], "generic")


ANTIALIAS_SCALES = {"down": [1, 1, 0.3, 0.6], "down-up": [1, 1, 0.4, 1.5]}


@pytest.mark.parametrize("scales", sorted(ANTIALIAS_SCALES))
@pytest.mark.parametrize("coordinate_mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias_agrees_with_onnxruntime(mode: str, coordinate_mode: str, scales: str) -> None:
    """Opset 18's antialias: linear and cubic kernels stretched by 1 / scale on a downsampled axis (more taps per
    row, each row normalized), unchanged on an upsampled one, in each coordinate mode."""
    model = _resize_model((1, 2, 10, 6), ANTIALIAS_SCALES[scales], mode=mode, coordinate_transformation_mode=coordinate_mode,
                          antialias=1)
    _agree_on(model, {"x": _random((1, 2, 10, 6))})


@pytest.mark.parametrize(("cubic_a", "exclude_outside"), [(-0.75, 1), (-0.5, 0)])
def test_resize_cubic_antialias_by_sizes_with_exclude_outside(cubic_a: float, exclude_outside: int) -> None:
    """Antialiased bicubic Resize to given sizes (axes 2 and 3, opset 18) with cubic_coeff_a and exclude_outside
    (the stretched taps outside the input weigh 0, each row renormalized)."""
    model = _resize_model((1, 1, 9, 8), sizes=[4, 3], opset=18, axes=[2, 3], mode="cubic", antialias=1,
                          cubic_coeff_a=cubic_a, exclude_outside=exclude_outside)
    _agree_on(model, {"x": _random((1, 1, 9, 8))})


# roi (starts of N, C, H and W, then ends), and scales or sizes: inside the input, reaching past it (and on a
# nearest rounding edge: H's third coordinate is 1.5), reversed (flipping), one output on H and past the start on W.
CROPS = {
    "inside": ([0, 0, 0.2, 0.1, 1, 1, 0.9, 0.7], [1, 1, 0.5, 1.7], None),
    "past_both_ends": ([0, 0, -0.3, 0.4, 1, 1, 0.8, 1.3], None, [1, 2, 5, 4]),
    "reversed": ([0, 0, 0.9, 0.6, 1, 1, 0.1, 0.2], None, [1, 2, 3, 5]),
    "single_output": ([0, 0, 0.5, -0.2, 1, 1, 0.5, 0.6], None, [1, 2, 1, 3]),
}


@pytest.mark.parametrize(("crop", "extrapolation_value"), [("inside", 2.5), ("past_both_ends", 0.0), ("past_both_ends", 2.5),
                                                           ("reversed", 0.0), ("single_output", 2.5)])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize_agrees_with_onnxruntime(mode: str, crop: str, extrapolation_value: float) -> None:
    """tf_crop_and_resize: the roi's region of each spatial axis resampled (coordinates in float64 from float32 roi,
    as ONNX Runtime: a nearest pick on 1.5 agrees), extrapolation_value wherever a coordinate falls outside the input."""
    roi, scales, sizes = CROPS[crop]
    model = _resize_model((1, 2, 7, 6), scales, sizes, roi=roi, mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
                          extrapolation_value=extrapolation_value)
    graph = _agree_on(model, {"x": _random((1, 2, 7, 6))})
    assert ("add" in _kinds(graph)) == (extrapolation_value != 0 and crop in ("past_both_ends", "single_output"))


def test_resize_tf_crop_and_resize_axes_and_gradient() -> None:
    """tf_crop_and_resize with opset 18's axes (roi of W, then H) agrees with ONNX Runtime; `convc.grad` through its
    extrapolated crop agrees with jax.vjp."""
    model = _resize_model((1, 2, 5, 6), sizes=[4, 3], opset=18, roi=[-0.2, 0.1, 0.9, 1.2], axes=[3, 2], mode="linear",
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)
    _agree_on(model, {"x": _random((1, 2, 5, 6))})
    check_grad(convc.load_onnx(model), ["x"], "generic")


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_resize_18_axes_and_keep_aspect_ratio_policy(policy: str) -> None:
    """Opset 18's axes (the spatial ones only) with sizes and each keep_aspect_ratio_policy."""
    model = _resize_model((1, 2, 4, 6), sizes=[7, 8], opset=18, axes=[2, 3], mode="linear", keep_aspect_ratio_policy=policy)
    _agree_on(model, {"x": _random((1, 2, 4, 6))})


def test_resize_13_default_attributes() -> None:
    """Opset 13's Resize with every attribute left out (nearest, half_pixel, round_prefer_floor)."""
    _agree_on(_resize_model((1, 1, 3, 3), [1, 1, 2, 2], opset=13), {"x": _random((1, 1, 3, 3))})


@pytest.mark.parametrize("opset", [7, 9])
def test_upsample_is_brought_up_to_resize(opset: int) -> None:
    """An Upsample (opset 7: scales an attribute; 9: an initializer), nearest, goes through onnx's version
    converter to a Resize and repeats each pixel."""
    if opset == 7:
        node, initializers = helper.make_node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]), {}
    else:
        node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
        initializers = {"scales": np.array([1, 1, 2, 2], np.float32)}
    graph = convc.load_onnx(_model([node], {"x": (1, 2, 3, 3)}, ["y"], initializers, opset=opset))
    x = _random((1, 2, 3, 3))
    np.testing.assert_array_equal(convc.run(graph, {"x": x}, platform="cpu").outputs[0], x.repeat(2, 2).repeat(2, 3))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_segmentation_head_conv_then_bilinear_resize_matches_torch() -> None:
    """A PyTorch-style segmentation head (conv, then bilinear interpolate align_corners=False to the input size),
    exported by torch.onnx, agrees with ONNX Runtime and with the torch module."""
    torch = pytest.importorskip("torch")

    class Head(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, stride=4, padding=1)

        def forward(self, x: Any) -> Any:
            return torch.nn.functional.interpolate(self.conv(x), size=x.shape[-2:], mode="bilinear", align_corners=False)

    torch.manual_seed(0)
    module = Head().eval()
    x = _random((1, 3, 16, 12))
    import io
    buffer = io.BytesIO()
    torch.onnx.export(module, (torch.from_numpy(x),), buffer, opset_version=17, dynamo=False)
    graph = _agree_on(buffer.getvalue(), {_input_name(buffer.getvalue()): x})
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(convc.run(graph, {graph.inputs[0].name: x}, platform="cpu").outputs[0], want, rtol=1e-4, atol=1e-5)


def _input_name(model: bytes) -> str:
    return str(onnx.load_from_string(model).graph.input[0].name)


@pytest.mark.parametrize(("attrs", "scales", "fragment"), [
    ({"mode": "lanczos"}, [1, 1, 2, 2], "mode 'lanczos' is not one of nearest, linear, cubic"),
    ({"mode": "linear", "exclude_outside": 1}, [1, 1, 2, 2], "exclude_outside 1 is supported with mode cubic only, not 'linear'"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2], "tf_crop_and_resize needs roi known at import"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "roi": [0, 0, 0, 1, 1, 1]}, [1, 1, 2, 2], "with 8 entries"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize", "roi": [0, 0.5, 0, 0, 1, 1, 1, 1]}, [1, 1, 2, 2], "axis 1"),
    ({"antialias": 1}, [1, 1, 0.5, 0.5], "antialias 1 is supported with modes linear and cubic, not 'nearest'"),
    ({}, [1, 2, 2, 2], "axis 1"),
    ({}, [2, 1, 1, 1], "axis 0"),
], ids=["lanczos", "exclude_outside_linear", "crop_without_roi", "crop_roi_short", "crop_channels", "antialias_nearest",
        "channels", "batch"])
def test_O6_resize_forms_refused(attrs: dict[str, Any], scales: list[float], fragment: str) -> None:
    """A mode ONNX lacks, exclude_outside outside cubic mode, tf_crop_and_resize without a whole roi or cropping the
    channels, antialias in nearest mode, and resizing the batch or channel axis: O6 naming what."""
    assert fragment in _raises("O6", convc.load_onnx, _resize_model((1, 2, 4, 4), scales, **attrs))


def test_O6_resize_scales_not_known_at_import() -> None:
    """Scales that are a graph input (not known at import): O6."""
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"])
    model = _model([node], {"x": (1, 1, 2, 2), "scales": (4,)}, ["y"])
    assert "scales" in _raises("O6", convc.load_onnx, model)
