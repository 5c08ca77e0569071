"""Keras models converted to ONNX by tf2onnx in the test session, imported by convc
(`load_onnx`, default pipeline, PJRT on the CPU) and compared with ONNX Runtime on the same
file and with the Keras model itself: networks in the style of Keras applications written
here (MobileNetV2 inverted residuals with depthwise convs and ReLU6, ResNet blocks with
BatchNorm, EfficientNet blocks with swish and squeeze-excite, a Conv2DTranspose decoder, a
mix of the remaining common layers) and two applications at cut widths (MobileNetV3Small,
EfficientNet), all on 32x32 NHWC inputs, so the models carry the Transposes tf2onnx puts
around each NCHW Conv. Each network is converted once per session; BatchNorm statistics and
all weights are randomized first (fresh ones make BatchNorm an identity and biases zero).

tf2onnx converts a frozen graph: `convert_variables_to_constants_v2` of the model's concrete
function also folds the constants a layer computed when it was built (Keras' Normalization,
in EfficientNet), which `tf2onnx.convert.from_function` would leave as graph inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.cli import main as convc_main
from optional_oracles import oracle
from suite_census import record
from test_grad import check_grad
from test_onnx_models import _max_error, _onnxruntime, _random

onnx = oracle("onnx")
ort = oracle("onnxruntime")
tf2onnx = oracle("tf2onnx")  # first: it imports TensorFlow, so a required tf2onnx fails where TensorFlow is missing
tf = oracle("tensorflow")
keras = oracle("keras")
layers = keras.layers

OPSET = 17
CENSUS: dict[str, str] = {}


# --- the networks (functional Keras models, input 'x', NHWC) ----------------------------------


def _conv_bn(x: Any, filters: int, kernel: int, stride: int = 1, activation: str | None = None) -> Any:
    """Conv2D (no bias, 'same' padding) + BatchNorm + an optional activation."""
    x = layers.Conv2D(filters, kernel, strides=stride, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation(activation)(x) if activation else x


def _mobilenet_v2_blocks() -> Any:
    """A MobileNetV2 stem and two inverted residuals: 1x1 expand, 3x3 depthwise (strided once,
    with the explicit ZeroPadding2D Keras applications use), ReLU6, linear 1x1 projection."""
    x = inp = keras.Input((32, 32, 3), batch_size=1, name="x")
    x = layers.ReLU(6.0)(_conv_bn(x, 8, 3, 2))
    for stride, cout in ((1, 8), (2, 16)):
        y = layers.ReLU(6.0)(_conv_bn(x, 24, 1))
        if stride == 2:
            y = layers.ZeroPadding2D(((0, 1), (0, 1)))(y)
        y = layers.DepthwiseConv2D(3, strides=stride, padding="same" if stride == 1 else "valid", use_bias=False)(y)
        y = _conv_bn(layers.ReLU(6.0)(layers.BatchNormalization()(y)), cout, 1)
        x = layers.Add()([x, y]) if stride == 1 else y
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10)(x))


def _resnet_blocks() -> Any:
    """A ResNet stem (ZeroPadding2D, 7x7/2 conv with bias, BatchNorm, ReLU, 3x3/2 max pool),
    a strided block with a 1x1 conv shortcut, average pooling, Flatten and Dense; batch 2."""
    x = inp = keras.Input((32, 32, 3), batch_size=2, name="x")
    x = layers.Conv2D(8, 7, strides=2)(layers.ZeroPadding2D(3)(x))
    x = layers.Activation("relu")(layers.BatchNormalization(epsilon=1.001e-5)(x))
    x = layers.MaxPooling2D(3, 2)(layers.ZeroPadding2D(1)(x))
    shortcut = layers.BatchNormalization()(layers.Conv2D(16, 1, strides=2)(x))
    y = _conv_bn(x, 16, 3, 2, "relu")
    y = _conv_bn(y, 16, 3)
    x = layers.Activation("relu")(layers.Add()([shortcut, y]))
    x = layers.Flatten()(layers.AveragePooling2D(2)(x))
    return keras.Model(inp, layers.Dense(10)(x))


def _efficientnet_blocks() -> Any:
    """An EfficientNet stem and an MBConv block: swish, 5x5 depthwise conv, squeeze-excite
    (global pool kept 4-D, 1x1 convs, sigmoid gate multiplied in), dropout, residual; softmax head."""
    x = inp = keras.Input((32, 32, 3), batch_size=1, name="x")
    x = _conv_bn(x, 16, 3, 2, "swish")
    y = _conv_bn(x, 32, 1, activation="swish")
    y = layers.DepthwiseConv2D(5, padding="same", use_bias=False)(y)
    y = layers.Activation("swish")(layers.BatchNormalization()(y))
    gate = layers.GlobalAveragePooling2D(keepdims=True)(y)
    gate = layers.Conv2D(32, 1, activation="sigmoid")(layers.Conv2D(4, 1, activation="swish")(gate))
    y = _conv_bn(layers.Multiply()([y, gate]), 16, 1)
    x = layers.Add()([x, layers.Dropout(0.2)(y)])
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10, activation="softmax")(x))


def _decoder() -> Any:
    """A decoder from a 4x4x16 code: strided Conv2DTranspose ('same', with and without bias),
    BatchNorm, LeakyReLU, nearest UpSampling2D (tf2onnx: Tile), a 'valid' Conv2DTranspose, tanh."""
    x = inp = keras.Input((4, 4, 16), batch_size=2, name="x")
    x = layers.Conv2DTranspose(16, 4, strides=2, padding="same", use_bias=False)(x)
    x = layers.LeakyReLU(0.2)(layers.BatchNormalization()(x))
    x = layers.ReLU()(layers.Conv2DTranspose(8, 3, strides=2, padding="same")(x))
    x = layers.UpSampling2D(2)(x)
    return keras.Model(inp, layers.Conv2DTranspose(3, 5, padding="valid", activation="tanh")(x))


def _layer_mix() -> Any:
    """The other common layers: SeparableConv2D with ELU, a dilated conv with tanh-form GELU,
    hard_sigmoid, bilinear UpSampling2D (Resize), Concatenate, LayerNormalization, PReLU,
    Cropping2D, Resizing by an integer factor and nearest Resizing by 1.5 and 2.5 (tf2onnx
    writes opset 11's tf_half_pixel_for_nn coordinate mode), hard_swish, ReLU6, GlobalMaxPooling2D, a
    slice, Reshape, a causal Conv1D, softplus and softsign."""
    x = inp = keras.Input((32, 32, 3), batch_size=1, name="x")
    a = layers.SeparableConv2D(8, 3, padding="same", activation="elu")(x)
    a = layers.Conv2D(8, 3, padding="same", dilation_rate=2)(a)
    a = layers.Activation(lambda t: keras.activations.gelu(t, approximate=True))(a)
    b = layers.Conv2D(8, 3, strides=2, padding="same", activation="hard_sigmoid")(x)
    c = layers.Concatenate()([a, layers.UpSampling2D(2, interpolation="bilinear")(b)])
    c = layers.PReLU(shared_axes=[1, 2])(layers.LayerNormalization()(c))
    c = layers.Resizing(8, 8)(layers.Cropping2D(((1, 3), (2, 2)))(c))
    c = layers.Resizing(12, 20, interpolation="nearest")(c)
    c = layers.Activation("relu6")(layers.Activation("hard_swish")(c))
    d = layers.Reshape((4, 4))(layers.GlobalMaxPooling2D()(c)[:, :16])
    d = layers.Flatten()(layers.Conv1D(4, 3, padding="causal")(d))
    d = layers.Activation("softsign")(layers.Activation("softplus")(d))
    return keras.Model(inp, layers.Dense(10)(d))


def _mobilenet_v3_small() -> Any:
    """keras.applications.MobileNetV3Small at alpha 0.25 (its Rescaling preprocessing,
    hard-swish, squeeze-excite with hard-sigmoid gates), 10 classes, no softmax."""
    return keras.applications.MobileNetV3Small(input_shape=(32, 32, 3), alpha=0.25, weights=None, classes=10,
                                               classifier_activation=None)


def _efficientnet() -> Any:
    """Keras' EfficientNet (the builder behind EfficientNetB0-B7; its Rescaling and
    Normalization preprocessing) at width and depth coefficients 0.25, 10 classes, no softmax."""
    from keras.src.applications.efficientnet import EfficientNet  # the public B0-B7 fix the widths

    return EfficientNet(0.25, 0.25, 32, input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None)


NETWORKS: dict[str, Callable[[], Any]] = {
    "mobilenet_v2_blocks": _mobilenet_v2_blocks,
    "resnet_blocks": _resnet_blocks,
    "efficientnet_blocks": _efficientnet_blocks,
    "decoder": _decoder,
    "layer_mix": _layer_mix,
    "mobilenet_v3_small": _mobilenet_v3_small,
    "efficientnet": _efficientnet,
}


# --- converting -----------------------------------------------------------------------------


def _randomized(model: Any, seed: int = 0) -> Any:
    """`model` with BatchNorm statistics and affine weights drawn away from the identity and
    every other float weight perturbed (biases are zero when fresh)."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        weights = layer.get_weights()
        if isinstance(layer, layers.BatchNormalization):
            gamma, beta, mean, variance = (w.shape for w in weights)
            layer.set_weights([rng.uniform(0.5, 1.5, gamma), rng.uniform(-0.5, 0.5, beta), rng.uniform(-0.5, 0.5, mean),
                               rng.uniform(0.5, 1.5, variance)])
        elif weights:
            layer.set_weights([w + rng.uniform(-0.1, 0.1, w.shape).astype(w.dtype) if w.dtype == np.float32 else w
                               for w in weights])
    return model


def _to_onnx(model: Any, shape: tuple[int | None, ...], opset: int = OPSET) -> bytes:
    """`model` in inference mode traced at input `shape` (None: a symbolic dim), frozen, and
    converted by tf2onnx at `opset`: input 'x:0', output 'Identity:0' (TensorFlow's names)."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    spec = tf.TensorSpec(shape, tf.float32, name="x")
    frozen = convert_variables_to_constants_v2(tf.function(lambda x: model(x, training=False)).get_concrete_function(spec))
    proto, _ = tf2onnx.convert.from_graph_def(frozen.graph.as_graph_def(), input_names=["x:0"],
                                              output_names=[t.name for t in frozen.outputs], opset=opset)
    return proto.SerializeToString()  # type: ignore[no-any-return]


@functools.cache
def _converted(name: str) -> tuple[Any, bytes]:
    """NETWORKS[name] (Keras' initializers seeded) randomized and its tf2onnx conversion, once per session."""
    keras.utils.set_random_seed(0)
    model = _randomized(NETWORKS[name]())
    return model, _to_onnx(model, tuple(model.inputs[0].shape))


def _keras_output(model: Any, x: np.ndarray) -> np.ndarray:
    return np.asarray(model(x, training=False))


@pytest.fixture(autouse=True, scope="module")
def _census() -> Any:
    yield
    record("Keras models converted by tf2onnx (tests/py/test_onnx_keras.py)", [f"{label:>34}: {line}" for label, line in CENSUS.items()])


# --- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NETWORKS)
def test_tf2onnx_network_agrees_with_onnxruntime_and_keras(name: str) -> None:
    """NETWORKS[name] converted by tf2onnx (NHWC input, Transposes around the convs): convc's
    output agrees with ONNX Runtime's on the same file and with the Keras model's own (rtol
    1e-4 of the largest output), and keeps TensorFlow's input and output names."""
    model, onnx_model = _converted(name)
    graph = convc.load_onnx(onnx_model, file=f"{name}.onnx")
    assert [v.name for v in graph.inputs] == ["x:0"] and [v.name for v in graph.outputs] == ["Identity:0"]
    x = _random(graph.inputs[0].type.shape)
    got = convc.run(graph, {"x:0": x}, platform="cpu").outputs
    vs_ort = _max_error(got, _onnxruntime(onnx_model, {"x:0": x}))
    vs_keras = _max_error(got, [_keras_output(model, x)])
    transposes = sum(node.op_type == "Transpose" for node in onnx.load_from_string(onnx_model).graph.node)
    scale = float(np.abs(got[0]).max())
    assert scale > 1e-2, f"outputs too small to compare: {scale}"
    CENSUS[name] = f"agrees with ONNX Runtime ({vs_ort:.2g}) and Keras ({vs_keras:.2g}) of max |y| {scale:.2g}; {transposes} Transposes"


@pytest.mark.parametrize("opset", [11, 15, 18])
def test_tf2onnx_layer_mix_at_other_opsets(opset: int) -> None:
    """The layer mix converted at opset 11 (brought up to 13 by onnx's version converter), 15
    (tf2onnx's default) and 18 (its newest: ReduceMean's axes as an input, Resize 18):
    convc agrees with ONNX Runtime and Keras at each."""
    model = _converted("layer_mix")[0]
    onnx_model = _to_onnx(model, tuple(model.inputs[0].shape), opset)
    assert max(entry.version for entry in onnx.load_from_string(onnx_model).opset_import if entry.domain in ("", "ai.onnx")) == opset
    x = _random(tuple(model.inputs[0].shape), 2)
    got = convc.run(convc.load_onnx(onnx_model), {"x:0": x}, platform="cpu").outputs
    _max_error(got, _onnxruntime(onnx_model, {"x:0": x}))
    _max_error(got, [_keras_output(model, x)])


def test_tf2onnx_dynamic_batch_takes_its_batch_from_input_shapes() -> None:
    """The ResNet blocks traced with a symbolic batch dim (tf2onnx names it 'unk__N'):
    input_shapes makes it 3, and the result agrees with ONNX Runtime and Keras at batch 3."""
    model = _converted("resnet_blocks")[0]
    onnx_model = _to_onnx(model, (None, 32, 32, 3))
    assert onnx.load_from_string(onnx_model).graph.input[0].type.tensor_type.shape.dim[0].dim_param
    graph = convc.load_onnx(onnx_model, input_shapes={"x:0": (3, 32, 32, 3)})
    assert graph.outputs[0].type.shape == (3, 10)
    x = _random((3, 32, 32, 3), 1)
    got = convc.run(graph, {"x:0": x}, platform="cpu").outputs
    _max_error(got, _onnxruntime(onnx_model, {"x:0": x}))
    _max_error(got, [_keras_output(model, x)])


def test_tf2onnx_file_runs_and_checks_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc m.onnx --run --check` on the EfficientNet blocks' tf2onnx file exits 0 and
    compares with both oracles, jax.lax and ONNX Runtime, under TensorFlow's output name."""
    (tmp_path / "m.onnx").write_bytes(_converted("efficientnet_blocks")[1])
    assert convc_main([str(tmp_path / "m.onnx"), "--run", "--check", "--target", "cpu", "-o", str(tmp_path / "m.mlir")]) == 0
    out = capsys.readouterr().out
    assert "Identity:0: max abs error vs jax.lax" in out and "Identity:0: max abs error vs onnxruntime" in out


def test_grad_through_a_tf2onnx_network_matches_jax_vjp() -> None:
    """`convc.grad` of the imported EfficientNet blocks (Transposes, depthwise conv, swish,
    squeeze-excite, softmax) with respect to the input and the first Conv's weight (kept as an
    input), compiled for the cpu target, agrees with jax.vjp of the imported graph's oracle."""
    onnx_model = _converted("efficientnet_blocks")[1]
    weight = next(node.input[1] for node in onnx.load_from_string(onnx_model).graph.node if node.op_type == "Conv")
    check_grad(convc.load_onnx(onnx_model, keep_as_inputs=[weight]), ["x:0", weight], "cpu")
