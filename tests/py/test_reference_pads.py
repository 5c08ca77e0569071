"""The `--check` oracle (convc.reference) on pads that XLA:CPU misreads in a conv: negative
low next to positive high padding (openxla/xla#48713).

jax.vjp of a forward conv and lax.conv_transpose build convs of their own. Taken as is, the
input gradient of a 1x1 conv padded (2, -1), its kernel gradient for (-2, 1) and a transposed
conv padded (-2, 1) each handed XLA:CPU a conv padded (-2, 1), and `convc --run --check`
reported a false MISMATCH on every target. Expected numbers here come from numpy (explicit
dilation, zero padding and cropping, a sum over kernel taps), never from jax or convc. Every
case also checks that the oracle's lowering holds no such conv: XLA:CPU computes the strided
and lhs-dilated ones right by luck of its code path, and that check is what fails for them.
Layouts are NC.../OI.../NC... throughout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import convc
import jax
import numpy as np
import pytest
from convc.reference import evaluate, lax_function
from strategies import run_cli
from test_differential import xla_cpu_misreads

Pads = Sequence[tuple[int, int]]
ONES = (1, 1)
X_SHAPE = (2, 8, 6, 7)  # N, C, H, W of the forward input (the transposed conv's lhs); 8 channels, as XLA:CPU's misread needs
OUT_FEATURES = 8


# --- numpy: a conv is a sum over kernel taps of strided slices of the dilated, padded input ---


def along(axis: int, index: slice) -> tuple[slice, ...]:
    """An index that applies `index` to one axis and keeps the others whole."""
    return (slice(None),) * axis + (index,)


def dilate_and_pad(x: np.ndarray, pads: Pads, lhs_dilation: Sequence[int]) -> np.ndarray:
    """x as a conv reads it: d - 1 zeros between neighbours, then lo/hi zeros on each side,
    where a negative pad drops that many elements instead."""
    for axis, (lo, hi), d in zip(range(2, x.ndim), pads, lhs_dilation, strict=True):
        dilated = np.zeros(x.shape[:axis] + ((x.shape[axis] - 1) * d + 1,) + x.shape[axis + 1:], x.dtype)
        dilated[along(axis, slice(None, None, d))] = x
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        padded = np.pad(dilated, widths)
        x = padded[along(axis, slice(max(-lo, 0), padded.shape[axis] - max(-hi, 0)))]
    return x


def undo_dilate_and_pad(grad: np.ndarray, pads: Pads, lhs_dilation: Sequence[int]) -> np.ndarray:
    """The adjoint of dilate_and_pad: dropped elements get zeros, padding and the dilation's
    zeros are dropped."""
    for axis, (lo, hi), d in zip(range(2, grad.ndim), pads, lhs_dilation, strict=True):
        widths = [(0, 0)] * grad.ndim
        widths[axis] = (max(-lo, 0), max(-hi, 0))
        uncropped = np.pad(grad, widths)
        grad = uncropped[along(axis, slice(max(lo, 0), uncropped.shape[axis] - max(hi, 0)))][along(axis, slice(None, None, d))]
    return grad


def tap_window(taps: Sequence[int], out: Sequence[int], strides: Sequence[int], rhs_dilation: Sequence[int]) -> tuple[slice, ...]:
    """The input elements kernel tap `taps` meets, one per output position."""
    return (slice(None), slice(None), *(slice(t * r, t * r + (o - 1) * s + 1, s)
                                        for t, o, s, r in zip(taps, out, strides, rhs_dilation, strict=True)))


def conv_valid(xp: np.ndarray, w: np.ndarray, strides: Sequence[int], rhs_dilation: Sequence[int]) -> np.ndarray:
    out = [(n - (k - 1) * r - 1) // s + 1 for n, k, s, r in zip(xp.shape[2:], w.shape[2:], strides, rhs_dilation, strict=True)]
    y = np.zeros((xp.shape[0], w.shape[0], *out))
    for taps in np.ndindex(*w.shape[2:]):
        y += np.einsum("nc...,oc->no...", xp[tap_window(taps, out, strides, rhs_dilation)], w[(..., *taps)])
    return y


def input_gradient(g: np.ndarray, w: np.ndarray, padded_shape: Sequence[int], strides: Sequence[int],
                   rhs_dilation: Sequence[int]) -> np.ndarray:
    """d/dxp of sum(g * conv_valid(xp, w)): each tap scatters g back onto the elements it read."""
    grad = np.zeros(padded_shape)
    for taps in np.ndindex(*w.shape[2:]):
        grad[tap_window(taps, g.shape[2:], strides, rhs_dilation)] += np.einsum("no...,oc->nc...", g, w[(..., *taps)])
    return grad


def kernel_gradient(xp: np.ndarray, g: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                    rhs_dilation: Sequence[int]) -> np.ndarray:
    """d/dw of sum(g * conv_valid(xp, w))."""
    grad = np.zeros((g.shape[1], xp.shape[1], *kernel))
    for taps in np.ndindex(*kernel):
        window = xp[tap_window(taps, g.shape[2:], strides, rhs_dilation)]
        grad[(..., *taps)] = np.einsum("nop,ncp->oc", g.reshape(g.shape[:2] + (-1,)), window.reshape(window.shape[:2] + (-1,)))
    return grad


# --- the oracle ------------------------------------------------------------------------------


def oracle(graph: convc.Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """convc.reference's outputs, after checking that no conv it hands XLA is one XLA:CPU misreads."""
    assert not xla_cpu_misreads(jax.jit(lax_function(graph)).lower(*arrays).as_text())
    return evaluate(graph, arrays)


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * (1 + float(np.abs(want).max())))


def randn(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def forward_out(padded: Sequence[int], kernel: Sequence[int], strides: Sequence[int], rhs_dilation: Sequence[int]) -> list[int]:
    return [(n - (k - 1) * r - 1) // s + 1 for n, k, s, r in zip(padded, kernel, strides, rhs_dilation, strict=True)]


GRADIENT_CASES = [  # (pads, kernel, strides, lhs dilation, rhs dilation)
    pytest.param([(0, 0), (2, -1)], ONES, ONES, ONES, ONES, id="1x1-lo2-hi-1"),  # the input vjp's conv: (-2, 1)
    pytest.param([(0, 0), (-2, 1)], ONES, ONES, ONES, ONES, id="1x1-lo-2-hi1"),  # the kernel vjp's conv: (-2, 1)
    pytest.param([(3, 0), (1, 1)], (2, 2), ONES, ONES, ONES, id="2x2-lo3"),
    pytest.param([(-2, 2), (-3, 3)], (3, 3), ONES, ONES, ONES, id="3x3-crop-low-pad-high"),
    pytest.param([(0, 0), (3, -1)], (1, 2), (1, 2), (1, 2), (1, 1), id="strided-lhs-dilated"),
    pytest.param([(-1, 1), (-3, 2)], (2, 2), ONES, (2, 2), (1, 2), id="both-dilations"),
]


@pytest.mark.parametrize(("pads", "kernel", "strides", "lhs_dilation", "rhs_dilation"), GRADIENT_CASES)
def test_gradients_equal_numpy(pads: Pads, kernel: tuple[int, int], strides: tuple[int, int], lhs_dilation: tuple[int, int],
                               rhs_dilation: tuple[int, int], rng: np.random.Generator) -> None:
    """dx by input_shape and, where that spelling exists, by output_padding; dw by kernel_shape."""
    padded_shape = dilate_and_pad(np.zeros(X_SHAPE), pads, lhs_dilation).shape
    w_shape = (OUT_FEATURES, X_SHAPE[1], *kernel)
    g_shape = (X_SHAPE[0], OUT_FEATURES, *forward_out(padded_shape[2:], kernel, strides, rhs_dilation))
    forward = {"window_strides": strides, "padding": pads, "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation}
    b = convc.Builder("gradients")
    x, w, g = b.input("x", X_SHAPE), b.input("w", w_shape), b.input("g", g_shape)
    outputs = [b.conv_backprop_input(g, w, input_shape=X_SHAPE, name="dx", **forward),
               b.conv_backprop_filter(x, g, w_shape, name="dw", **forward)]
    if strides == ONES:  # the scatter's extent is then the input's: output_padding 0
        outputs.append(b.conv_backprop_input(g, w, output_padding=(0, 0), name="dx_scatter", **forward))
    b.output(*outputs)
    arrays = [randn(rng, X_SHAPE), randn(rng, w_shape), randn(rng, g_shape)]
    got = oracle(b.build(), arrays)
    x64, w64, g64 = (a.astype(np.float64) for a in arrays)
    dx = undo_dilate_and_pad(input_gradient(g64, w64, padded_shape, strides, rhs_dilation), pads, lhs_dilation)
    assert_close(got[0], dx)
    assert_close(got[1], kernel_gradient(dilate_and_pad(x64, pads, lhs_dilation), g64, kernel, strides, rhs_dilation))
    if len(got) == 3:
        assert_close(got[2], dx)


def lax_transpose_pads(pads: Pads, kernel: Sequence[int], consistent: bool) -> list[tuple[int, int]]:
    """The pads of the lhs-dilated conv lax.conv_transpose computes: as given, or (PyTorch's
    meaning) the forward conv's, k - 1 - p on each side (no rhs dilation here)."""
    return [(k - 1 - lo, k - 1 - hi) if consistent else (lo, hi) for k, (lo, hi) in zip(kernel, pads, strict=True)]


TRANSPOSE_CASES = [  # (pads, kernel, strides, use_consistent_padding, transpose_kernel, feature groups)
    pytest.param([(0, 0), (-2, 1)], ONES, ONES, False, False, 1, id="1x1-lo-2-hi1"),
    pytest.param([(0, 0), (2, -1)], ONES, ONES, True, False, 1, id="consistent-lo2-hi-1"),
    pytest.param([(-1, 2), (-2, 3)], (2, 3), ONES, False, True, 1, id="transpose-kernel"),
    pytest.param([(0, 0), (-3, 1)], (1, 2), (1, 2), False, False, 1, id="strided"),
    pytest.param([(0, 0), (-2, 1)], (1, 1), ONES, False, False, 2, id="feature-groups"),
]


@pytest.mark.parametrize(("pads", "kernel", "strides", "consistent", "transpose_kernel", "groups"), TRANSPOSE_CASES)
def test_conv_transpose_equals_numpy(pads: Pads, kernel: tuple[int, int], strides: tuple[int, int], consistent: bool,
                                     transpose_kernel: bool, groups: int, rng: np.random.Generator) -> None:
    """lax.conv_transpose: a conv with lhs dilation `strides` over the kernel (flipped and O/I
    swapped with transpose_kernel); with feature groups, one per group, concatenated."""
    in_features = X_SHAPE[1] * groups
    x_shape = (X_SHAPE[0], in_features, *X_SHAPE[2:])
    w_shape = (in_features, OUT_FEATURES, *kernel) if transpose_kernel else (OUT_FEATURES * groups, X_SHAPE[1], *kernel)
    b = convc.Builder("transposed")
    x, w = b.input("x", x_shape), b.input("w", w_shape)
    b.output(b.conv_transpose(x, w, strides=strides, padding=pads, dimension_numbers=("NCHW", "OIHW", "NCHW"),
                              transpose_kernel=transpose_kernel, use_consistent_padding=consistent,
                              feature_group_count=groups, name="y"))
    arrays = [randn(rng, x_shape), randn(rng, w_shape)]
    (got,) = oracle(b.build(), arrays)
    w64 = arrays[1].astype(np.float64)
    kernel_used = np.flip(w64, (2, 3)).swapaxes(0, 1) if transpose_kernel else w64
    xp = dilate_and_pad(arrays[0].astype(np.float64), lax_transpose_pads(pads, kernel, consistent), strides)
    per_group = [conv_valid(xp[:, i * X_SHAPE[1]:(i + 1) * X_SHAPE[1]], kernel_used[i * OUT_FEATURES:(i + 1) * OUT_FEATURES],
                            ONES, ONES) for i in range(groups)]
    assert_close(got, np.concatenate(per_group, axis=1))


# --- through the command line ----------------------------------------------------------------

CHECK_OK = re.compile(r"(dx|dw|t): max abs error vs jax\.lax \S+ \(ok\)")


def gradient_model() -> dict[str, Any]:
    """The three 1x1 ops whose oracle convs were padded (-2, 1), on 1x8x6x6 inputs."""
    inputs = {"x": [1, 8, 6, 6], "w": [8, 8, 1, 1], "dy": [1, 8, 6, 7], "dz": [1, 8, 6, 5]}
    return {"name": "gradients", "inputs": [{"name": name, "shape": shape} for name, shape in inputs.items()],
            "nodes": [{"name": "dx", "op": "conv_backprop_input", "inputs": ["dy", "w"], "padding": [[0, 0], [2, -1]],
                       "input_shape": inputs["x"]},
                      {"name": "dw", "op": "conv_backprop_filter", "inputs": ["x", "dz"], "padding": [[0, 0], [-2, 1]],
                       "kernel_shape": inputs["w"]},
                      {"name": "t", "op": "conv_transpose", "inputs": ["x", "w"], "padding": [[0, 0], [-2, 1]],
                       "dimension_numbers": ["NCHW", "OIHW", "NCHW"]}],
            "outputs": ["dx", "dw", "t"]}


@pytest.mark.parametrize("target", ["cpu", "generic"])
def test_check_passes_and_outputs_equal_numpy(target: str, tmp_path: Path, rng: np.random.Generator) -> None:
    """Before the fix: `dx: max abs error vs jax.lax 6.84 (MISMATCH)` and the like, exit 1."""
    model = gradient_model()
    (tmp_path / "model.json").write_text(json.dumps(model))
    arrays = {spec["name"]: randn(rng, spec["shape"]) for spec in model["inputs"]}
    np.savez(tmp_path / "in.npz", **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as allow_pickle
    result = run_cli([str(tmp_path / "model.json"), "--check", "--target", target, "--platform", "cpu",
                      "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz"), "-o", str(tmp_path / "out.mlir")])
    assert result.code == 0, result.stdout + result.stderr
    checked = [line for line in result.stdout.splitlines() if "jax.lax" in line]
    assert len(checked) == 3 and all(CHECK_OK.fullmatch(line) for line in checked), result.stdout
    x, w, dy, dz = (arrays[name].astype(np.float64) for name in ("x", "w", "dy", "dz"))
    with np.load(tmp_path / "out.npz") as out:
        assert_close(out["dx"], undo_dilate_and_pad(input_gradient(dy, w, (1, 8, 6, 7), ONES, ONES), [(0, 0), (2, -1)], ONES))
        assert_close(out["dw"], kernel_gradient(dilate_and_pad(x, [(0, 0), (-2, 1)], ONES), dz, ONES, ONES, ONES))
        assert_close(out["t"], conv_valid(dilate_and_pad(x, [(0, 0), (-2, 1)], ONES), w, ONES, ONES))
