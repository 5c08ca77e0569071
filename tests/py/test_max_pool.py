"""`max_pool` against `jax.lax.reduce_window(x, -inf, lax.max, ...)`: the whole path a user
takes (a JSON model -> default pipeline -> verified StableHLO -> PJRT), on every padding
form, dilations, strides and element types; and the oracle's own rule against lax."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import convc
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from convc.cli import main as convc_main
from convc.reference import evaluate
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
