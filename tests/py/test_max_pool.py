"""`max_pool` against `jax.lax.reduce_window(x, -inf, lax.max, ...)`: the whole path a user
takes (a JSON model -> default pipeline -> verified StableHLO -> PJRT), on every padding
form, dilations, strides and element types; and the oracle's own rule against lax.

Its gradient (`convc.grad`, the `max_pool_grad` op) against the test's own `jax.vjp` of
`lax.reduce_window` for every target pipeline (run on the CPU), on the command line
(`--grad ... --check`, sharded too) and its refusal of a window dilation (G7)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import convc
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from convc.cli import main as convc_main
from convc.passes import TARGETS
from convc.reference import evaluate
from convc.runtime import compile_stablehlo
from jax import lax

# name: (input shape, dtype, attributes as a JSON model spells them)
CASES: dict[str, tuple[tuple[int, ...], str, dict[str, Any]]] = {
    "nhwc-3x3-s2-same": ((2, 7, 7, 3), "f32", {"window_dimensions": [1, 3, 3, 1], "window_strides": [1, 2, 2, 1], "padding": "SAME"}),
    "nchw-2x2-s2-valid": ((1, 2, 6, 5), "f32", {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2]}),
    "same-lower": ((1, 6, 6, 1), "f32", {"window_dimensions": [1, 2, 2, 1], "padding": "SAME_LOWER"}),
    "explicit-crop-and-pad": ((1, 5, 6, 2), "f32", {"window_dimensions": [1, 2, 3, 1], "padding": [[0, 0], [-1, 2], [1, 0], [0, 0]]}),
    "dilated-same": ((1, 9, 8, 2), "f32", {"window_dimensions": [1, 3, 2, 1], "window_dilation": [1, 2, 3, 1], "padding": "SAME"}),
    "base-dilated": ((1, 4, 5, 1), "f32", {"window_dimensions": [1, 3, 3, 1], "base_dilation": [1, 2, 2, 1], "window_strides": [1, 1, 2, 1]}),
    "3d-pool": ((1, 4, 6, 6, 2), "f32", {"window_dimensions": [1, 2, 2, 2, 1], "window_strides": [1, 2, 2, 2, 1]}),
    "all-padding-window": ((1, 3, 3, 1), "f32", {"window_dimensions": [1, 2, 2, 1], "padding": [[0, 0], [2, 0], [0, 0], [0, 0]]}),
    "f16": ((1, 5, 5, 4), "f16", {"window_dimensions": [1, 3, 3, 1], "padding": "SAME"}),
    "bf16": ((1, 5, 5, 4), "bf16", {"window_dimensions": [1, 3, 3, 1], "window_strides": [1, 2, 2, 1]}),
    "i32": ((2, 5, 4), "i32", {"window_dimensions": [1, 2, 3], "padding": [[0, 0], [1, 1], [1, 1]]}),
}


def model(shape: Sequence[int], dtype: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """A one-node JSON model: what a user writes to max-pool an input."""
    return {"inputs": [{"name": "x", "shape": list(shape), "dtype": dtype}],
            "nodes": [{"name": "pool", "op": "max_pool", "inputs": ["x"], **attrs}],
            "outputs": ["pool"]}


def lax_max_pool(x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """jax.lax's own max pool, with lax's defaults for what the model leaves out."""
    rank = x.ndim
    padding = attrs.get("padding", "VALID")
    lowest = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    out = lax.reduce_window(jnp.asarray(x), jnp.array(lowest, x.dtype), lax.max, attrs["window_dimensions"],
                            attrs.get("window_strides", (1,) * rank),
                            padding if isinstance(padding, str) else [tuple(row) for row in padding],
                            attrs.get("base_dilation"), attrs.get("window_dilation"))
    return np.asarray(out)


def random_input(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype == "i32":
        return rng.integers(-1000, 1000, size=shape, dtype=np.int32)
    return rng.standard_normal(shape).astype(jnp.dtype({"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[dtype]))


@pytest.mark.parametrize("case", CASES)
def test_max_pool_runs_as_jax_lax_reduce_window(case: str, write_model: Callable[..., Path],
                                                 compile_and_run: Callable[..., list[np.ndarray]],
                                                 rng: np.random.Generator) -> None:
    shape, dtype, attrs = CASES[case]
    graph = convc.load_model(str(write_model(model(shape, dtype, attrs))))
    x = random_input(shape, dtype, rng)
    (got,) = compile_and_run(graph, [x])
    want = lax_max_pool(x, attrs)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # a max picks one of its inputs: exact on every platform


@pytest.mark.parametrize("case", ["nhwc-3x3-s2-same", "explicit-crop-and-pad", "i32"])
def test_the_oracle_rule_is_lax_reduce_window(case: str, write_model: Callable[..., Path], rng: np.random.Generator) -> None:
    shape, dtype, attrs = CASES[case]
    x = random_input(shape, dtype, rng)
    (got,) = evaluate(convc.load_model(str(write_model(model(shape, dtype, attrs)))), [x])
    with jax.default_device(jax.devices("cpu")[0]):
        np.testing.assert_array_equal(got, lax_max_pool(x, attrs))


def test_a_json_max_pool_runs_and_checks_from_the_command_line(write_model: Callable[..., Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = write_model(model((1, 8, 8, 3), "f32", {"window_dimensions": [1, 3, 3, 1], "window_strides": [1, 2, 2, 1],
                                                   "padding": "SAME"}))
    assert convc_main([str(path), "--run", "--check", "--platform", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "pool: [1, 4, 4, 3] f32" in out and "max abs error vs jax.lax 0 (ok)" in out


# --- the gradient: convc.grad through max_pool, against jax.vjp of lax.reduce_window ---------

# name: (input shape, dtype, attributes as a JSON model spells them, how x is drawn)
GRAD_CASES: dict[str, tuple[tuple[int, ...], str, dict[str, Any], str]] = {
    "nhwc-3x3-s2-same-overlapping": ((2, 7, 7, 3), "f32", {"window_dimensions": [1, 3, 3, 1], "window_strides": [1, 2, 2, 1],
                                                             "padding": "SAME"}, "normal"),
    "nchw-2x2-s2-valid": ((2, 3, 6, 5), "f32", {"window_dimensions": [1, 1, 2, 2], "window_strides": [1, 1, 2, 2]}, "normal"),
    "nchw-3x3-s1-explicit-overlapping": ((1, 2, 5, 6), "f32", {"window_dimensions": [1, 1, 3, 3],
                                                                "padding": [[0, 0], [0, 0], [1, 1], [2, 0]]}, "normal"),
    "same-lower-strided": ((1, 6, 7, 2), "f32", {"window_dimensions": [1, 2, 3, 1], "window_strides": [1, 2, 3, 1],
                                                 "padding": "SAME_LOWER"}, "normal"),
    "explicit-crop-and-pad": ((1, 5, 6, 2), "f32", {"window_dimensions": [1, 2, 3, 1],
                                                    "padding": [[0, 0], [-1, 2], [1, -1], [0, 0]]}, "normal"),
    "base-dilated": ((1, 4, 5, 2), "f32", {"window_dimensions": [1, 3, 3, 1], "base_dilation": [1, 2, 2, 1],
                                           "window_strides": [1, 1, 2, 1]}, "normal"),
    "base-dilated-crop-same": ((1, 2, 5, 4), "f32", {"window_dimensions": [1, 1, 2, 3], "base_dilation": [1, 1, 3, 2],
                                                     "padding": [[0, 0], [0, 0], [-2, 1], [1, -1]]}, "normal"),
    "windows-of-padding-alone": ((1, 3, 3, 1), "f32", {"window_dimensions": [1, 2, 2, 1],
                                                       "padding": [[0, 0], [2, 0], [0, 0], [0, 0]]}, "normal"),
    "pads-wider-than-the-window": ((2, 4, 6), "f32", {"window_dimensions": [2, 2, 2],  # jax-ml/jax#4690 crashed XLA:CPU
                                                      "padding": [[1, 2], [2, 3], [3, 4]]}, "normal"),
    "3d-pool": ((1, 4, 6, 5, 2), "f32", {"window_dimensions": [1, 2, 3, 2, 1], "window_strides": [1, 2, 2, 1, 1]}, "normal"),
    "window-dilation-on-unit-windows": ((2, 5, 5, 3), "f32", {"window_dimensions": [1, 3, 3, 1], "window_dilation": [2, 1, 1, 3],
                                                              "padding": "SAME"}, "normal"),
    "ties-constant-input": ((1, 6, 6, 2), "f32", {"window_dimensions": [1, 3, 3, 1], "padding": "SAME"}, "constant"),
    "ties-three-values": ((2, 2, 7, 6), "f32", {"window_dimensions": [1, 1, 3, 2], "window_strides": [1, 1, 2, 1]}, "ties"),
    "f16-overlapping": ((1, 7, 7, 4), "f16", {"window_dimensions": [1, 3, 3, 1], "window_strides": [1, 2, 2, 1],
                                              "padding": "SAME"}, "normal"),
    "bf16-ties": ((2, 6, 6, 3), "bf16", {"window_dimensions": [1, 3, 3, 1], "window_strides": [1, 2, 2, 1]}, "ties"),
}
GRAD_TOLERANCE = {"f32": 1e-6, "f16": 1e-2, "bf16": 6e-2}  # of 1 + the largest gradient: overlapping windows sum in the type


def lax_pool_of(attrs: dict[str, Any]) -> Callable[[Any], Any]:
    """x -> jax.lax's max pool with `attrs`. jax.vjp of a reduce_window that crops fails on the
    CPU, so cropping pads are applied first by lax.pad (with the base dilation: the same values);
    nor does it take a window dilation, which changes nothing where the window is 1 wide."""

    def pool(x: Any) -> Any:
        lowest = np.array(-np.inf, x.dtype)  # concrete, so that lax takes it for the max reducer JAX differentiates
        pads, spread, dilation = attrs.get("padding", "VALID"), attrs.get("base_dilation"), attrs.get("window_dilation")
        if not isinstance(pads, str) and any(lo < 0 or hi < 0 for lo, hi in pads):
            x = lax.pad(x, lowest, [(min(lo, 0), min(hi, 0), d - 1) for (lo, hi), d in zip(pads, spread or [1] * x.ndim, strict=True)])
            pads, spread = [(max(lo, 0), max(hi, 0)) for lo, hi in pads], None
        return lax.reduce_window(x, lowest, lax.max, attrs["window_dimensions"], attrs.get("window_strides", (1,) * x.ndim),
                                 pads if isinstance(pads, str) else [tuple(row) for row in pads], spread,
                                 [d if w > 1 else 1 for w, d in zip(attrs["window_dimensions"], dilation, strict=True)] if dilation else None)
    return pool


def lax_pool_vjp(x: np.ndarray, g: np.ndarray, attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The pool and jax.vjp's cotangent of x, in f64 (every element of x exactly, so the same
    windows pick the same maxima) on the CPU."""
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        y, pullback = jax.vjp(lax_pool_of(attrs), jnp.asarray(x, jnp.float64))
        (dx,) = pullback(jnp.asarray(g, jnp.float64))
    return np.asarray(y), np.asarray(dx)


def grad_input(shape: Sequence[int], dtype: str, fill: str, rng: np.random.Generator) -> np.ndarray:
    """x for a gradient case: normal draws, or many ties (three values), or one value."""
    numpy_type = jnp.dtype({"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[dtype])
    if fill == "constant":
        return np.full(shape, 1.5, numpy_type)
    if fill == "ties":
        return rng.integers(0, 3, size=shape).astype(numpy_type)
    return rng.standard_normal(shape).astype(numpy_type)


def assert_gradient_close(got: np.ndarray, want64: np.ndarray, dtype: str, what: str) -> None:
    assert got.shape == want64.shape, f"{what}: shape {got.shape} != {want64.shape}"
    error = float(np.abs(np.asarray(got, np.float64) - want64).max(initial=0.0))
    scale = 1.0 + float(np.abs(want64).max(initial=0.0))
    assert error <= GRAD_TOLERANCE[dtype] * scale, f"{what}: max abs error {error:.3g} > {GRAD_TOLERANCE[dtype]:.0g} * {scale:.3g}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", GRAD_CASES)
def test_max_pool_gradient_is_jax_vjp_of_reduce_window(case: str, target: str, write_model: Callable[..., Path],
                                                       rng: np.random.Generator) -> None:
    """convc.grad of a JSON max pool, compiled for `target` and run on the CPU: the pool equals
    lax's exactly, x.grad jax.vjp's (to the element type's rounding of overlapping sums)."""
    shape, dtype, attrs, fill = GRAD_CASES[case]
    graph = convc.load_model(str(write_model(model(shape, dtype, attrs))))
    step = convc.grad(graph, ["x"])
    assert [op.kind for op in step.ops].count("max_pool_grad") == 1
    x = grad_input(shape, dtype, fill, rng)
    g = rng.standard_normal(graph.outputs[0].type.shape).astype(x.dtype)
    pooled, dx = compile_stablehlo(convc.compile_graph(step, target=target), "cpu")(x, g)
    want_pool, want_dx = lax_pool_vjp(x, g, attrs)
    np.testing.assert_array_equal(np.asarray(pooled, np.float64), want_pool)
    assert dx.dtype == x.dtype
    assert_gradient_close(dx, want_dx, dtype, "x.grad")


def test_tied_windows_send_their_cotangent_to_their_first_element(rng: np.random.Generator) -> None:
    """On a constant input every element of a window ties: select_and_scatter's GE select keeps
    the first (row-major), as XLA and JAX do, so 2x2 windows at stride 1 add into their
    top-left element only."""
    b = convc.Builder("ties")
    x = b.input("x", (1, 4, 5, 1))
    b.output(b.op("max_pool", x, window_dimensions=(1, 2, 2, 1), name="pool"))
    g = rng.standard_normal((1, 3, 4, 1)).astype(np.float32)
    for target in TARGETS:
        _, dx = compile_stablehlo(convc.compile_graph(convc.grad(b.build(), ["x"]), target=target), "cpu")(
            np.zeros((1, 4, 5, 1), np.float32), g)
        np.testing.assert_array_equal(dx[:, :3, :4], g)
        assert not dx[:, 3].any() and not dx[:, :, 4].any()


def test_max_pool_grad_oracle_rule_is_jax_vjp(write_model: Callable[..., Path], rng: np.random.Generator) -> None:
    """convc.reference's max_pool_grad (`--check` of a model that holds one) equals the test's
    own jax.vjp, with cropping pads."""
    attrs = {"window_dimensions": [1, 3, 2, 1], "window_strides": [1, 2, 1, 1], "padding": [[0, 0], [-1, 2], [1, 0], [0, 0]]}
    x = rng.standard_normal((2, 7, 5, 3)).astype(np.float32)
    out_shape = jax.eval_shape(lax_pool_of(attrs), x).shape
    g = rng.standard_normal(out_shape).astype(np.float32)
    doc = {"inputs": [{"name": "x", "shape": list(x.shape), "dtype": "f32"}, {"name": "g", "shape": list(out_shape), "dtype": "f32"}],
           "nodes": [{"name": "dx", "op": "max_pool_grad", "inputs": ["x", "g"], **attrs}], "outputs": ["dx"]}
    (got,) = evaluate(convc.load_model(str(write_model(doc))), [x, g])
    assert_gradient_close(got, lax_pool_vjp(x, g, attrs)[1], "f32", "dx")


# --- the command line: --grad through a max pool ------------------------------------------


def stem_model(mesh: dict[str, int] | None = None) -> dict[str, Any]:
    """A CNN stem as a user writes it: conv -> bias -> relu -> 3x3/2 SAME max pool (NHWC),
    optionally batch-split over a mesh."""
    doc: dict[str, Any] = {
        "name": "stem",
        "inputs": [{"name": "x", "shape": [8, 9, 9, 3], "dtype": "f32"}, {"name": "w", "shape": [3, 3, 3, 4], "dtype": "f32"},
                   {"name": "b", "shape": [4], "dtype": "f32"}],
        "nodes": [{"name": "conv", "op": "conv", "inputs": ["x", "w"], "padding": "SAME", "dimension_numbers": ["NHWC", "HWIO", "NHWC"]},
                  {"name": "bias", "op": "bias_add", "inputs": ["conv", "b"], "axis": 3},
                  {"name": "relu", "op": "relu", "inputs": ["bias"]},
                  {"name": "pool", "op": "max_pool", "inputs": ["relu"], "window_dimensions": [1, 3, 3, 1],
                   "window_strides": [1, 2, 2, 1], "padding": "SAME"}],
        "outputs": ["pool"],
    }
    if mesh is not None:
        doc["mesh"] = mesh
        doc["shardings"] = {"x": ["data"], "pool": ["data"]}
    return doc


@pytest.mark.parametrize("target", TARGETS)
def test_grad_of_a_max_pool_model_runs_and_checks_from_the_command_line(target: str, write_model: Callable[..., Path],
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`convc stem.json --grad x,w,b --run --check`: the pool and every gradient match jax.vjp of the oracle."""
    path = write_model(stem_model())
    assert convc_main([str(path), "--grad", "x,w,b", "--target", target, "--run", "--check", "--platform", "cpu"]) == 0
    checks = [line for line in capsys.readouterr().out.splitlines() if "vs jax.lax" in line]
    assert [line.split(":")[0] for line in checks] == ["pool", "x.grad", "w.grad", "b.grad"]
    assert all(line.endswith("(ok)") for line in checks)


def test_a_json_max_pool_grad_runs_and_checks_from_the_command_line(write_model: Callable[..., Path],
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A model holding max_pool_grad itself (as a gradient step's JSON would): --check uses its oracle rule."""
    doc = {"inputs": [{"name": "x", "shape": [1, 8, 8, 3], "dtype": "f32"}, {"name": "g", "shape": [1, 4, 4, 3], "dtype": "f32"}],
           "nodes": [{"name": "dx", "op": "max_pool_grad", "inputs": ["x", "g"], "window_dimensions": [1, 3, 3, 1],
                      "window_strides": [1, 2, 2, 1], "padding": "SAME"}],
           "outputs": ["dx"]}
    assert convc_main([str(write_model(doc)), "--run", "--check", "--platform", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "dx: [1, 8, 8, 3] f32" in out and out.rstrip().endswith("(ok)")


def test_window_dilated_max_pool_has_no_gradient_G7(write_model: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    """select_and_scatter has no window dilation: one located line at the attribute, exit 1."""
    path = write_model(model((1, 9, 9, 2), "f32", {"window_dimensions": [1, 3, 3, 1], "window_dilation": [1, 2, 2, 1]}))
    assert convc_main([str(path), "--grad", "x"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"{path}:/nodes/0/window_dilation: error: 'pool' (max_pool): grad: max_pool's gradient is a "
                            "select_and_scatter, which has no window dilation; window_dilation [1, 2, 2, 1] dilates a window of "
                            "[1, 3, 3, 1] [G7]\n")


def test_batch_split_max_pool_gradient_runs_sharded_and_checks(write_model: Callable[..., Path], tmp_path: Path) -> None:
    """The stem's gradient step on a 4-device batch split (the CLI arranges host devices; a fresh
    process, since this one's JAX has one): it emits sdy shardings and matches the oracle."""
    path = write_model(stem_model(mesh={"data": 4}))
    out = tmp_path / "step.mlir"
    done = subprocess.run([str(Path(sys.executable).parent / "convc"), str(path), "--grad", "x,w,b", "--target", "cpu", "--check",
                           "-o", str(out)], env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    checks = [line for line in done.stdout.splitlines() if "vs jax.lax" in line]
    assert len(checks) == 4 and all(line.endswith("(ok)") for line in checks)
    text = out.read_text()
    assert "stablehlo.select_and_scatter" in text and "sdy.sharding" in text
