"""Each row of the framework mapping in docs/transposed-convs.md (and the forward-conv notes in
docs/model-format.md), written as convc ops and compared with that framework's own op.

The frameworks are optional test dependencies; a test whose framework is absent skips (fails
where CONVC_REQUIRE_ORACLES names it, as in CI's oldest environment):
torch (`pip install torch==2.13.0`), TensorFlow and Keras (`pip install tensorflow-cpu==2.21.*
keras==3.15.*`), ONNX (`pip install onnx`). JAX oracles run in f64 at HIGHEST precision, the
others in f64 too where the framework takes it, so the f32 convc result is checked against a
more precise reference. convc runs on the CPU platform.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import convc
import jax
import numpy as np
import pytest
from convc.runtime import Executable, compile_stablehlo
from jax import lax
from optional_oracles import oracle

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's start-up banner, when it is imported


@functools.lru_cache(maxsize=64)
def _executable(text: str) -> Executable:
    return compile_stablehlo(text, "cpu")


def run(b: convc.Builder, *arrays: np.ndarray) -> np.ndarray:
    """The builder's single output, compiled by the default pipeline and run on CPU."""
    return _executable(convc.compile_graph(b.build()))(*arrays)[0]


def assert_close(got: np.ndarray, want: Any) -> None:
    """f32 result vs an f64 reference: error within 5e-5 of the reference's scale."""
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * (1 + float(np.max(np.abs(want), initial=0.0))))


def arrays(seed: int, *shapes: Sequence[int]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def f64(*xs: np.ndarray) -> list[np.ndarray]:
    return [x.astype(np.float64) for x in xs]


def dilate(size: int, d: int) -> int:
    return (size - 1) * d + 1


@pytest.fixture(scope="module")
def torch() -> ModuleType:
    return oracle("torch")


@pytest.fixture(scope="module")
def tf() -> ModuleType:
    return oracle("tensorflow")


@pytest.fixture(scope="module")
def keras() -> ModuleType:
    return oracle("keras")


@pytest.fixture(scope="module")
def onnx() -> ModuleType:
    return oracle("onnx")


# --- JAX ---------------------------------------------------------------------


@pytest.mark.parametrize("padding, transpose_kernel, consistent", [("SAME", True, False), ([(2, 0), (1, 1)], False, True)])
def test_jax_conv_transpose(padding: Any, transpose_kernel: bool, consistent: bool) -> None:
    x, w = arrays(1, (2, 4, 5, 3), (3, 2, 4, 3) if transpose_kernel else (3, 2, 3, 4))
    attrs = {"strides": (2, 3), "padding": padding, "rhs_dilation": (1, 2), "dimension_numbers": ("NHWC", "HWIO", "NHWC"),
             "transpose_kernel": transpose_kernel, "use_consistent_padding": consistent}
    b = convc.Builder()
    b.output(b.conv_transpose(b.input("x", x.shape), b.input("w", w.shape), **attrs))
    with jax.enable_x64(True):
        want = lax.conv_transpose(*f64(x, w), precision=lax.Precision.HIGHEST, **attrs)
    assert_close(run(b, x, w), want)


FORWARD = {"window_strides": (2, 1), "padding": "SAME", "rhs_dilation": (1, 2), "dimension_numbers": ("NHWC", "HWIO", "NHWC"),
           "feature_group_count": 2}


def _jax_vjp(x: np.ndarray, w: np.ndarray, ct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with jax.enable_x64(True):
        _, pullback = jax.vjp(lambda a, k: lax.conv_general_dilated(a, k, precision=lax.Precision.HIGHEST, **FORWARD), *f64(x, w))
        dx, dw = pullback(ct.astype(np.float64))
    return np.asarray(dx), np.asarray(dw)


def test_jax_vjp_wrt_input() -> None:
    x, w, ct = arrays(2, (2, 7, 6, 4), (3, 2, 2, 6), (2, 4, 6, 6))
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("ct", ct.shape), b.input("w", w.shape), input_shape=x.shape, **FORWARD))
    assert_close(run(b, ct, w), _jax_vjp(x, w, ct)[0])


def test_jax_vjp_wrt_kernel() -> None:
    x, w, ct = arrays(3, (2, 7, 6, 4), (3, 2, 2, 6), (2, 4, 6, 6))
    b = convc.Builder()
    b.output(b.conv_backprop_filter(b.input("x", x.shape), b.input("ct", ct.shape), kernel_shape=w.shape, **FORWARD))
    assert_close(run(b, x, ct), _jax_vjp(x, w, ct)[1])


# --- TensorFlow ----------------------------------------------------------------


TF_CASES = {  # (input NHWC, filter HWIO, strides, padding, dilations); TF's CPU backprop kernels refuse dilations > 1
    "same_stride": ((2, 7, 8, 3), (3, 2, 3, 4), (2, 3), "SAME", (1, 1)),
    "valid": ((1, 9, 7, 2), (3, 2, 2, 3), (3, 1), "VALID", (1, 1)),
    "explicit": ((1, 6, 7, 2), (2, 3, 2, 3), (2, 2), [(1, 0), (2, 1)], (1, 1)),
}


def _tf_padding(padding: Any) -> tuple[str, list[int]]:
    """TF's (padding, explicit_paddings) for NHWC."""
    if isinstance(padding, str):
        return padding, []
    return "EXPLICIT", [0, 0, *[p for row in padding for p in row], 0, 0]


def _forward_out_shape(x_shape: Sequence[int], w_shape: Sequence[int], strides: Sequence[int], padding: Any,
                       dilations: Sequence[int], layouts: tuple[str, str, str]) -> tuple[int, ...]:
    out = lax.conv_general_dilated(np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32), strides, padding,
                                   rhs_dilation=dilations, dimension_numbers=layouts,
                                   feature_group_count=x_shape[-1] // w_shape[-2])
    return tuple(out.shape)


@pytest.mark.parametrize("name", TF_CASES)
def test_tf_conv2d_backprop_input(tf: ModuleType, name: str) -> None:
    x_shape, w_shape, strides, padding, dilations = TF_CASES[name]
    layouts = ("NHWC", "HWIO", "NHWC")
    w, g = arrays(4, w_shape, _forward_out_shape(x_shape, w_shape, strides, padding, dilations, layouts))
    tf_padding, explicit = _tf_padding(padding)
    want = tf.raw_ops.Conv2DBackpropInput(input_sizes=x_shape, filter=w.astype(np.float64), out_backprop=g.astype(np.float64),
                                          strides=[1, *strides, 1], padding=tf_padding, explicit_paddings=explicit,
                                          dilations=[1, *dilations, 1], data_format="NHWC")
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("g", g.shape), b.input("w", w.shape), strides, padding, rhs_dilation=dilations,
                                   dimension_numbers=layouts, input_shape=x_shape))
    assert_close(run(b, g, w), want.numpy())


def test_tf_conv2d_transpose(tf: ModuleType) -> None:
    """filters [h, w, out, in] read as the forward HWIO kernel; output_shape is input_shape."""
    x, filters = arrays(5, (2, 4, 5, 3), (3, 3, 2, 3))
    output_shape = (2, 8, 10, 2)
    want = tf.nn.conv2d_transpose(x.astype(np.float64), filters.astype(np.float64), output_shape, strides=2, padding="SAME")
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("x", x.shape), b.input("f", filters.shape), (2, 2), "SAME",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"), input_shape=output_shape))
    assert_close(run(b, x, filters), want.numpy())


def test_tf_conv3d_backprop_input_v2(tf: ModuleType) -> None:
    x_shape, layouts = (1, 5, 6, 7, 2), ("NDHWC", "DHWIO", "NDHWC")
    w, g = arrays(6, (2, 3, 2, 2, 3), _forward_out_shape(x_shape, (2, 3, 2, 2, 3), (2, 1, 3), "SAME", (1, 1, 1), layouts))
    want = tf.raw_ops.Conv3DBackpropInputV2(input_sizes=x_shape, filter=w.astype(np.float64), out_backprop=g.astype(np.float64),
                                            strides=[1, 2, 1, 3, 1], padding="SAME", data_format="NDHWC")
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("g", g.shape), b.input("w", w.shape), (2, 1, 3), "SAME", dimension_numbers=layouts,
                                   input_shape=x_shape))
    assert_close(run(b, g, w), want.numpy())


DEPTHWISE = ((2, 7, 6, 3), (3, 3, 3, 2), (2, 2), "SAME")  # input, filter [h, w, C, M], strides, padding


def _depthwise_grad(tf: ModuleType, op: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    x_shape, f_shape, strides, padding = DEPTHWISE
    h, w_, c, m = f_shape
    x, f, g = arrays(7, x_shape, f_shape, _forward_out_shape(x_shape, (h, w_, 1, c * m), strides, padding, (1, 1),
                                                              ("NHWC", "HWIO", "NHWC")))
    common = {"out_backprop": g.astype(np.float64), "strides": [1, *strides, 1], "padding": padding}
    if op == "input":
        want = tf.raw_ops.DepthwiseConv2dNativeBackpropInput(input_sizes=x_shape, filter=f.astype(np.float64), **common)
    else:
        want = tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(input=x.astype(np.float64), filter_sizes=f_shape, **common)
    return x, f, g, want.numpy()


def test_tf_depthwise_conv2d_backprop_input(tf: ModuleType) -> None:
    x, f, g, want = _depthwise_grad(tf, "input")
    h, w_, c, m = f.shape
    b = convc.Builder()
    kernel = b.reshape(b.input("f", f.shape), (h, w_, 1, c * m))
    b.output(b.conv_backprop_input(b.input("g", g.shape), kernel, DEPTHWISE[2], DEPTHWISE[3], feature_group_count=c,
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"), input_shape=x.shape))
    assert_close(run(b, f, g), want)


def test_tf_conv2d_backprop_filter(tf: ModuleType) -> None:
    x_shape, w_shape, strides, padding, dilations = TF_CASES["explicit"]
    layouts = ("NHWC", "HWIO", "NHWC")
    x, g = arrays(8, x_shape, _forward_out_shape(x_shape, w_shape, strides, padding, dilations, layouts))
    tf_padding, explicit = _tf_padding(padding)
    want = tf.raw_ops.Conv2DBackpropFilter(input=x.astype(np.float64), filter_sizes=w_shape, out_backprop=g.astype(np.float64),
                                           strides=[1, *strides, 1], padding=tf_padding, explicit_paddings=explicit,
                                           data_format="NHWC")
    b = convc.Builder()
    b.output(b.conv_backprop_filter(b.input("x", x.shape), b.input("g", g.shape), w_shape, strides, padding,
                                    dimension_numbers=layouts))
    assert_close(run(b, x, g), want.numpy())


def test_tf_depthwise_conv2d_backprop_filter(tf: ModuleType) -> None:
    x, f, g, want = _depthwise_grad(tf, "filter")
    h, w_, c, m = f.shape
    b = convc.Builder()
    grad = b.conv_backprop_filter(b.input("x", x.shape), b.input("g", g.shape), (h, w_, 1, c * m), DEPTHWISE[2], DEPTHWISE[3],
                                  feature_group_count=c, dimension_numbers=("NHWC", "HWIO", "NHWC"))
    b.output(b.reshape(grad, f.shape))
    assert_close(run(b, x, g), want)


# --- Keras ---------------------------------------------------------------------


def keras_size(n: int, window: int, stride: int, padding: str, output_padding: int | None) -> int:
    """Keras's Conv*Transpose output length (its `deconv_output_length`)."""
    if output_padding is None:
        return n * stride + (max(window - stride, 0) if padding == "valid" else 0)
    return (n - 1) * stride + window - 2 * (window // 2 if padding == "same" else 0) + output_padding


def keras_pads(window: int, stride: int, padding: str, output_padding: int | None) -> tuple[int, int]:
    """The (low, high) pads of Keras's lhs-dilated conv (its JAX backend's padding rule)."""
    if padding == "valid":
        extra = max(window, stride) - window if output_padding is None else output_padding
        return window - 1, window - 1 + extra
    total = stride + window - 2 if output_padding is None else window + window % 2 - 2 + output_padding
    low = min(-(-total // 2), window - 1)
    return low, total - low


KERAS_CASES = {  # (input NHWC, kernel (kh, kw), strides, padding, output_padding)
    "same": ((1, 5, 4, 2), (3, 2), (2, 3), "same", None),
    "same_output_padding": ((1, 5, 4, 2), (3, 3), (2, 2), "same", (0, 1)),   # Keras 9 x 8; convc's SAME + output_padding: 10 x 9
    "valid_kernel_below_stride": ((1, 5, 4, 2), (1, 2), (3, 3), "valid", None),  # Keras 15 x 12; convc's inferred VALID size: 13 x 11
    "valid_output_padding": ((1, 4, 5, 2), (3, 2), (2, 3), "valid", (1, 2)),
}


def _keras_conv2d_transpose(keras: ModuleType, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x_shape, kernel_size, strides, padding, output_padding = KERAS_CASES[name]
    layer = keras.layers.Conv2DTranspose(3, kernel_size, strides=strides, padding=padding, output_padding=output_padding,
                                         use_bias=False, dtype="float64")
    layer.build(x_shape)
    x, kernel = arrays(9, x_shape, tuple(layer.kernel.shape))
    layer.kernel.assign(kernel.astype(np.float64))
    return x, kernel, np.asarray(layer(x.astype(np.float64)))


@pytest.mark.parametrize("name", KERAS_CASES)
def test_keras_conv2d_transpose_is_backprop_input_with_keras_size(keras: ModuleType, name: str) -> None:
    x_shape, kernel_size, strides, padding, output_padding = KERAS_CASES[name]
    x, kernel, want = _keras_conv2d_transpose(keras, name)
    extra = output_padding or (None, None)
    sizes = [keras_size(n, k, s, padding, p) for n, k, s, p in zip(x_shape[1:3], kernel_size, strides, extra, strict=True)]
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("x", x.shape), b.input("k", kernel.shape), strides, padding.upper(),
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"), input_shape=(x_shape[0], *sizes, kernel.shape[2])))
    assert_close(run(b, x, kernel), want)


@pytest.mark.parametrize("name", KERAS_CASES)
def test_keras_conv2d_transpose_is_conv_transpose_with_keras_pads(keras: ModuleType, name: str) -> None:
    _, kernel_size, strides, padding, output_padding = KERAS_CASES[name]
    x, kernel, want = _keras_conv2d_transpose(keras, name)
    extra = output_padding or (None, None)
    pads = padding.upper() if output_padding is None else [keras_pads(k, s, padding, p) for k, s, p in zip(kernel_size, strides, extra, strict=True)]
    b = convc.Builder()
    b.output(b.conv_transpose(b.input("x", x.shape), b.input("k", kernel.shape), strides, pads,
                              dimension_numbers=("NHWC", "HWIO", "NHWC"), transpose_kernel=True))
    assert_close(run(b, x, kernel), want)


# --- PyTorch -------------------------------------------------------------------


TORCH_TRANSPOSED = {  # input, weight [C_in, C_out / groups, *k], stride, padding, output_padding, groups, dilation
    "2d_groups": ((2, 4, 4, 5), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), 2, (1, 1)),
    # output_padding >= stride, allowed because dilation exceeds the stride
    "1d_output_padding_above_stride": ((2, 3, 6), (3, 2, 3), (1,), (1,), (1,), 1, (2,)),
    "2d_output_padding_above_stride": ((1, 2, 4, 5), (2, 4, 2, 3), (2, 1), (0, 2), (2, 1), 2, (3, 2)),
}


def _torch_transposed(torch: ModuleType, name: str) -> tuple[list[np.ndarray], list[np.ndarray], Any]:
    """(x, weight, bias, output grad) and torch's (y, dx, dweight), all from f64 autograd."""
    x_shape, w_shape, stride, padding, output_padding, groups, dilation = TORCH_TRANSPOSED[name]
    fn = (torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d)[len(stride) - 1]
    x, w, bias = arrays(10, x_shape, w_shape, (w_shape[1] * groups,))
    tx, tw = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w))
    y = fn(tx, tw, torch.from_numpy(bias.astype(np.float64)), stride=stride, padding=padding, output_padding=output_padding,
           groups=groups, dilation=dilation)
    (g,) = arrays(11, tuple(y.shape))
    y.backward(torch.from_numpy(g.astype(np.float64)))
    return [x, w, bias, g], [y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()], TORCH_TRANSPOSED[name]


def torch_transposed_pads(padding: Sequence[int], output_padding: Sequence[int], stride: Sequence[int]) -> list[tuple[int, int]]:
    """The forward conv's pads for a conv_transpose's gradients: `(p, p - s * (op // s))`."""
    return [(p, p - s * (op // s)) for p, op, s in zip(padding, output_padding, stride, strict=True)]


@pytest.mark.parametrize("name", TORCH_TRANSPOSED)
def test_torch_conv_transpose(torch: ModuleType, name: str) -> None:
    (x, w, bias, _), (y, _, _), (_, _, stride, padding, output_padding, groups, dilation) = _torch_transposed(torch, name)
    b = convc.Builder()
    out = b.conv_backprop_input(b.input("x", x.shape), b.input("w", w.shape), stride, [(p, p) for p in padding],
                                rhs_dilation=dilation, feature_group_count=groups, output_padding=output_padding)
    b.output(b.bias_add(out, b.input("bias", bias.shape), axis=1))
    assert_close(run(b, x, w, bias), y)


@pytest.mark.parametrize("name", TORCH_TRANSPOSED)
def test_torch_conv_transpose_input_gradient_is_forward_conv(torch: ModuleType, name: str) -> None:
    (_, w, _, g), (_, dx, _), (_, _, stride, padding, output_padding, groups, dilation) = _torch_transposed(torch, name)
    b = convc.Builder()
    b.output(b.conv(b.input("g", g.shape), b.input("w", w.shape), stride, torch_transposed_pads(padding, output_padding, stride),
                    rhs_dilation=dilation, feature_group_count=groups))
    assert_close(run(b, g, w), dx)


@pytest.mark.parametrize("name", TORCH_TRANSPOSED)
def test_torch_conv_transpose_weight_gradient_is_backprop_filter(torch: ModuleType, name: str) -> None:
    (x, w, _, g), (_, _, dw), (_, _, stride, padding, output_padding, groups, dilation) = _torch_transposed(torch, name)
    b = convc.Builder()
    b.output(b.conv_backprop_filter(b.input("g", g.shape), b.input("x", x.shape), w.shape, stride,
                                    torch_transposed_pads(padding, output_padding, stride), rhs_dilation=dilation,
                                    feature_group_count=groups))
    assert_close(run(b, g, x), dw)


def test_torch_conv_transpose_weight_gradient_needs_the_lowered_high_pad() -> None:
    """With output_padding >= stride the symmetric pads name a forward conv one element too long: F3."""
    _, w_shape, stride, padding, output_padding, groups, dilation = TORCH_TRANSPOSED["1d_output_padding_above_stride"]
    b = convc.Builder()
    g, x = b.input("g", (2, 2, 9)), b.input("x", (2, 3, 6))  # 9 = (6 - 1) * 1 - 2 + 5 + 1
    with pytest.raises(convc.ConvcError, match=r"\[F3\]"):
        b.conv_backprop_filter(g, x, w_shape, stride, [(p, p) for p in padding], rhs_dilation=dilation, feature_group_count=groups)


TORCH_GRAD = ((2, 4, 7, 6), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2)  # input, weight, stride, padding, dilation, groups


def _torch_forward_grads(torch: ModuleType) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    x_shape, w_shape, stride, padding, dilation, groups = TORCH_GRAD
    x, w = arrays(12, x_shape, w_shape)
    y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, stride, padding, dilation, groups)
    (g,) = arrays(13, tuple(y.shape))
    tx, tw, tg = (torch.from_numpy(a.astype(np.float64)) for a in (x, w, g))
    dx = torch.nn.grad.conv2d_input(x_shape, tw, tg, stride, padding, dilation, groups)
    dw = torch.nn.grad.conv2d_weight(tx, w_shape, tg, stride, padding, dilation, groups)
    return [x, w, g], dx.numpy(), dw.numpy()


def test_torch_nn_grad_conv2d_input(torch: ModuleType) -> None:
    (x, w, g), dx, _ = _torch_forward_grads(torch)
    _, _, stride, padding, dilation, groups = TORCH_GRAD
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("g", g.shape), b.input("w", w.shape), stride, [(p, p) for p in padding],
                                   rhs_dilation=dilation, feature_group_count=groups, input_shape=x.shape))
    assert_close(run(b, g, w), dx)


def test_torch_nn_grad_conv2d_weight(torch: ModuleType) -> None:
    (x, w, g), _, dw = _torch_forward_grads(torch)
    _, _, stride, padding, dilation, groups = TORCH_GRAD
    b = convc.Builder()
    b.output(b.conv_backprop_filter(b.input("x", x.shape), b.input("g", g.shape), w.shape, stride, [(p, p) for p in padding],
                                    rhs_dilation=dilation, feature_group_count=groups))
    assert_close(run(b, x, g), dw)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize("kernel, dilation", [((3, 4), (1, 1)), ((2, 3), (3, 2))])
def test_torch_conv_padding_same_is_same(torch: ModuleType, kernel: tuple[int, int], dilation: tuple[int, int]) -> None:
    """torch's 'same' (stride 1 only) puts the odd pad element high, as SAME does."""
    x, w, bias = arrays(14, (1, 2, 6, 7), (4, 2, *kernel), (4,))
    want = torch.nn.functional.conv2d(*(torch.from_numpy(a.astype(np.float64)) for a in (x, w, bias)), padding="same",
                                      dilation=dilation)
    b = convc.Builder()
    out = b.conv(b.input("x", x.shape), b.input("w", w.shape), padding="SAME", rhs_dilation=dilation)
    b.output(b.bias_add(out, b.input("b", bias.shape), axis=1))
    assert_close(run(b, x, w, bias), want.numpy())


def test_torch_unbatched_conv_is_reshaped(torch: ModuleType) -> None:
    """An unbatched (C, *spatial) input: reshape to (1, C, *spatial), conv, reshape back."""
    x, w = arrays(15, (3, 8), (4, 3, 3))
    want = torch.nn.functional.conv1d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)), stride=2)
    b = convc.Builder()
    out = b.conv(b.reshape(b.input("x", x.shape), (1, *x.shape)), b.input("w", w.shape), (2,))
    b.output(b.reshape(out, out.type.shape[1:]))
    assert_close(run(b, x, w), want.numpy())


# --- ONNX ----------------------------------------------------------------------


def _onnx_conv_transpose(onnx: ModuleType, x: np.ndarray, w: np.ndarray, group: int = 1, **attrs: Any) -> np.ndarray:
    """ONNX's reference evaluator on a one-node ConvTranspose model, in f64. The evaluator has
    no groups, so each group runs alone (ONNX's definition of `group`) and they concatenate."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], **attrs)
    x_group, w_group = (x.shape[0], x.shape[1] // group, *x.shape[2:]), (w.shape[0] // group, *w.shape[1:])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, x_group),
                                            helper.make_tensor_value_info("W", TensorProto.DOUBLE, w_group)],
                              [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, None)])
    evaluator = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    outs = [evaluator.run(None, {"X": xg.astype(np.float64), "W": wg.astype(np.float64)})[0]
            for xg, wg in zip(np.split(x, group, axis=1), np.split(w, group, axis=0), strict=True)]
    return np.concatenate(outs, axis=1)


ONNX_X, ONNX_W = (1, 4, 4, 5), (4, 3, 3, 2)  # W [C, M / group, *k], group 2


def test_onnx_conv_transpose_pads(onnx: ModuleType) -> None:
    x, w = arrays(16, ONNX_X, ONNX_W)
    want = _onnx_conv_transpose(onnx, x, w, strides=[2, 3], pads=[1, 0, 0, 1], output_padding=[1, 2], dilations=[1, 2], group=2)
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("x", x.shape), b.input("w", w.shape), (2, 3), [(1, 0), (0, 1)],
                                   rhs_dilation=(1, 2), feature_group_count=2, output_padding=(1, 2)))
    assert_close(run(b, x, w), want)


def _onnxruntime_conv_transpose(x: np.ndarray, w: np.ndarray, **attrs: Any) -> np.ndarray:
    """onnxruntime on a one-node ConvTranspose model. Its CPU kernel is f32 only; the reference
    evaluator, f64, ignores `output_shape` without `auto_pad` (it keeps zero pads)."""
    ort = oracle("onnxruntime")
    from onnx import TensorProto, helper

    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape),
                                            helper.make_tensor_value_info("W", TensorProto.FLOAT, w.shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x, "W": w})[0]


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "NOTSET"])
def test_onnx_conv_transpose_output_shape(onnx: ModuleType, auto_pad: str) -> None:
    x, w = arrays(17, ONNX_X, ONNX_W)
    strides, output_shape, window = (2, 2), (8, 10), (3, 2)
    want = _onnxruntime_conv_transpose(x, w, strides=list(strides), output_shape=list(output_shape), group=2, auto_pad=auto_pad)
    pads = []
    for n, s, k, out in zip(x.shape[2:], strides, window, output_shape, strict=True):
        total = s * (n - 1) + k - out
        pads.append((total // 2, total - total // 2) if auto_pad == "SAME_UPPER" else (total - total // 2, total // 2))
    assert pads == ([(0, 1), (0, 0)] if auto_pad == "SAME_UPPER" else [(1, 0), (0, 0)])  # the odd element's side differs
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("x", x.shape), b.input("w", w.shape), strides, pads, feature_group_count=2,
                                   input_shape=(1, 6, *output_shape)))
    assert_close(run(b, x, w), want)


@pytest.mark.parametrize("auto_pad, padding", [("SAME_UPPER", "SAME"), ("SAME_LOWER", "SAME_LOWER"), ("VALID", "VALID")])
def test_onnx_conv_transpose_auto_pad(onnx: ModuleType, auto_pad: str, padding: str) -> None:
    x, w = arrays(18, ONNX_X, ONNX_W)
    want = _onnx_conv_transpose(onnx, x, w, strides=[2, 2], group=2, auto_pad=auto_pad)
    b = convc.Builder()
    b.output(b.conv_backprop_input(b.input("x", x.shape), b.input("w", w.shape), (2, 2), padding, feature_group_count=2))
    assert_close(run(b, x, w), want)
