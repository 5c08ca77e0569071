"""`sum_pool` against `jax.lax.reduce_window(x, 0, lax.add, ...)` and `reduce_max` against
`jax.lax.reduce_max`: the default pipeline to verified StableHLO run by PJRT on the CPU, the
oracle rules (`convc.reference`), and their gradients (`convc.grad`: sum_pool's pad + sum_pool,
reduce_max's `reduce_max_grad`) against the test's own `jax.vjp` for every target pipeline;
reduce_max's ties share the cotangent equally, as JAX's rule does. `reduce_min` and
`reduce_prod` likewise against `jax.lax.reduce_min` / `reduce_prod`, and their gradients
(reduce_min's: reduce_max's of -x; reduce_prod's `reduce_prod_grad`, with zeros in x) against jax.vjp."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import convc
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from convc.passes import TARGETS
from convc.reference import evaluate, evaluate_vjp
from convc.runtime import compile_stablehlo
from jax import lax

# name: (input shape, dtype, sum_pool attributes)
SUM_CASES: dict[str, tuple[tuple[int, ...], str, dict[str, Any]]] = {
    "nchw-3x3-s2-same": ((2, 3, 7, 7), "f32", {"window_dimensions": (1, 1, 3, 3), "window_strides": (1, 1, 2, 2), "padding": "SAME"}),
    "nhwc-2x2-valid": ((1, 6, 5, 2), "f32", {"window_dimensions": (1, 2, 2, 1), "window_strides": (1, 2, 2, 1)}),
    "same-lower-strided": ((1, 6, 7, 2), "f32", {"window_dimensions": (1, 2, 3, 1), "window_strides": (1, 2, 3, 1),
                                                 "padding": "SAME_LOWER"}),
    "explicit-crop-and-pad": ((1, 5, 6, 2), "f32", {"window_dimensions": (1, 2, 3, 1),
                                                    "padding": ((0, 0), (-1, 2), (1, -1), (0, 0))}),
    "base-dilated": ((1, 4, 5, 2), "f32", {"window_dimensions": (1, 3, 3, 1), "base_dilation": (1, 2, 2, 1),
                                           "window_strides": (1, 1, 2, 1)}),
    "base-dilated-crop": ((1, 2, 5, 4), "f32", {"window_dimensions": (1, 1, 2, 3), "base_dilation": (1, 1, 3, 2),
                                                "padding": ((0, 0), (0, 0), (-2, 1), (1, -1))}),
    "window-dilated-strided": ((2, 2, 9, 8), "f32", {"window_dimensions": (1, 1, 3, 2), "window_dilation": (1, 1, 2, 3),
                                                     "window_strides": (1, 1, 2, 1), "padding": ((0, 0), (0, 0), (1, 2), (0, 1))}),
    "3d-pool-leftover": ((1, 2, 5, 6, 7), "f32", {"window_dimensions": (1, 1, 2, 3, 2), "window_strides": (1, 1, 2, 2, 3)}),
    "f16": ((1, 5, 5, 4), "f16", {"window_dimensions": (1, 3, 3, 1), "padding": "SAME"}),
}
TOLERANCE = {"f32": 1e-5, "f16": 1e-2}  # of 1 + the largest value: windows sum in the element type


def sum_pool_graph(shape: Sequence[int], dtype: str, attrs: dict[str, Any]) -> convc.Graph:
    b = convc.Builder("sum_pool")
    b.output(b.op("sum_pool", b.input("x", tuple(shape), dtype), name="pool", **attrs))
    return b.build()


def lax_sum_pool(attrs: dict[str, Any]) -> Callable[[Any], Any]:
    """x -> lax's sum pool with `attrs`; cropping pads applied first by lax.pad (jax.vjp of a
    reduce_window that crops fails on the CPU), with the base dilation."""

    def pool(x: Any) -> Any:
        zero = np.array(0, x.dtype)  # concrete: lax takes it for the sum JAX differentiates
        pads, spread = attrs.get("padding", "VALID"), attrs.get("base_dilation")
        if not isinstance(pads, str) and any(lo < 0 or hi < 0 for lo, hi in pads):
            x = lax.pad(x, zero, [(min(lo, 0), min(hi, 0), d - 1) for (lo, hi), d in zip(pads, spread or [1] * x.ndim, strict=True)])
            pads, spread = [(max(lo, 0), max(hi, 0)) for lo, hi in pads], None
        return lax.reduce_window(x, zero, lax.add, attrs["window_dimensions"], attrs.get("window_strides", (1,) * x.ndim),
                                 pads if isinstance(pads, str) else [tuple(row) for row in pads], spread, attrs.get("window_dilation"))
    return pool


def lax_vjp(function: Callable[[Any], Any], x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """function(x) and jax.vjp's cotangent of x, in f64 on the CPU."""
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        y, pullback = jax.vjp(function, jnp.asarray(x, jnp.float64))
        (dx,) = pullback(jnp.asarray(g, jnp.float64))
    return np.asarray(y), np.asarray(dx)


def assert_close(got: np.ndarray, want64: np.ndarray, dtype: str, what: str) -> None:
    assert got.shape == want64.shape, f"{what}: shape {got.shape} != {want64.shape}"
    error = float(np.abs(np.asarray(got, np.float64) - want64).max(initial=0.0))
    scale = 1.0 + float(np.abs(want64).max(initial=0.0))
    assert error <= TOLERANCE[dtype] * scale, f"{what}: max abs error {error:.3g} > {TOLERANCE[dtype]:.0g} * {scale:.3g}"


def draw(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(shape).astype({"f32": np.float32, "f16": np.float16}[dtype])


@pytest.mark.parametrize("case", SUM_CASES)
def test_sum_pool_runs_as_lax_reduce_window_add_and_so_does_its_oracle(case: str, rng: np.random.Generator) -> None:
    shape, dtype, attrs = SUM_CASES[case]
    graph = sum_pool_graph(shape, dtype, attrs)
    x = draw(shape, dtype, rng)
    (got,) = compile_stablehlo(convc.compile_graph(graph), "cpu")(x)
    want, _ = lax_vjp(lax_sum_pool(attrs), x, np.zeros(graph.outputs[0].type.shape))
    assert got.dtype == x.dtype
    assert_close(got, want, dtype, "sum_pool")
    (oracle,) = evaluate(graph, [x])
    assert oracle.dtype == x.dtype
    assert_close(oracle, want, dtype, "oracle")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", SUM_CASES)
def test_sum_pool_gradient_is_jax_vjp_of_reduce_window_add(case: str, target: str, rng: np.random.Generator) -> None:
    """convc.grad of a sum pool compiled for `target`, run on the CPU: x.grad is jax.vjp's (a
    pad and a sum_pool of the cotangent, no select)."""
    shape, dtype, attrs = SUM_CASES[case]
    graph = sum_pool_graph(shape, dtype, attrs)
    step = convc.grad(graph, ["x"])
    assert [op.kind for op in step.ops].count("sum_pool") == 2
    x, g = draw(shape, dtype, rng), draw(graph.outputs[0].type.shape, dtype, rng)
    pooled, dx = compile_stablehlo(convc.compile_graph(step, target=target), "cpu")(x, g)
    want_pool, want_dx = lax_vjp(lax_sum_pool(attrs), x, g)
    assert_close(pooled, want_pool, dtype, "sum_pool")
    assert dx.dtype == x.dtype
    assert_close(dx, want_dx, dtype, "x.grad")


def test_sum_pool_gradient_oracle_is_jax_vjp(rng: np.random.Generator) -> None:
    """`--grad --check`'s oracle (jax.vjp of the oracle graph) agrees with the test's own jax.vjp."""
    shape, dtype, attrs = SUM_CASES["base-dilated-crop"]
    graph = sum_pool_graph(shape, dtype, attrs)
    x, g = draw(shape, dtype, rng), draw(graph.outputs[0].type.shape, dtype, rng)
    _, dx = evaluate_vjp(graph, ["x"], [x, g])
    assert_close(dx, lax_vjp(lax_sum_pool(attrs), x, g)[1], dtype, "x.grad")


# --- reduce_max ------------------------------------------------------------------------

# name: (input shape, dtype, axes, how x is drawn)
MAX_CASES: dict[str, tuple[tuple[int, ...], str, tuple[int, ...], str]] = {
    "spatial-nchw": ((2, 3, 4, 5), "f32", (2, 3), "normal"),
    "one-axis-ties": ((3, 6, 2), "f32", (1,), "ties"),
    "all-axes-ties": ((4, 5), "f32", (0, 1), "ties"),
    "constant-input": ((2, 3, 4), "f32", (0, 2), "constant"),
    "no-axes": ((2, 3), "f32", (), "ties"),
    "f16-ties": ((2, 8, 3), "f16", (1, 2), "ties"),
}


def max_graph(shape: Sequence[int], dtype: str, axes: tuple[int, ...]) -> convc.Graph:
    b = convc.Builder("reduce_max")
    b.output(b.op("reduce_max", b.input("x", tuple(shape), dtype), name="top", axes=axes))
    return b.build()


def max_input(shape: Sequence[int], dtype: str, fill: str, rng: np.random.Generator) -> np.ndarray:
    """Normal draws, many ties (three values) or one value throughout."""
    numpy_type = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[dtype]
    if fill == "constant":
        return np.full(shape, 1.5, numpy_type)
    if fill == "ties":
        return rng.integers(0, 3, size=shape).astype(numpy_type)
    return rng.standard_normal(shape).astype(numpy_type)


@pytest.mark.parametrize("case", [*MAX_CASES, "i32"])
def test_reduce_max_runs_as_lax_reduce_max_and_so_does_its_oracle(case: str, rng: np.random.Generator) -> None:
    shape, dtype, axes, fill = MAX_CASES.get(case, ((3, 4, 5), "i32", (0, 2), "normal"))
    x = max_input(shape, dtype, fill, rng) if dtype != "i32" else rng.integers(-1000, 1000, size=shape, dtype=np.int32)
    graph = max_graph(shape, dtype, axes)
    (got,) = compile_stablehlo(convc.compile_graph(graph), "cpu")(x)
    want = np.asarray(lax.reduce_max(jnp.asarray(x), axes))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # a max picks one of its inputs: exact
    np.testing.assert_array_equal(evaluate(graph, [x])[0], want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", MAX_CASES)
def test_reduce_max_gradient_shares_ties_equally_as_jax_vjp(case: str, target: str, rng: np.random.Generator) -> None:
    shape, dtype, axes, fill = MAX_CASES[case]
    graph = max_graph(shape, dtype, axes)
    step = convc.grad(graph, ["x"])
    assert [op.kind for op in step.ops].count("reduce_max_grad") == 1
    x = max_input(shape, dtype, fill, rng)
    g = draw(graph.outputs[0].type.shape, dtype, rng)
    top, dx = compile_stablehlo(convc.compile_graph(step, target=target), "cpu")(x, g)
    want_top, want_dx = lax_vjp(lambda x: lax.reduce_max(x, axes), x, g)
    np.testing.assert_array_equal(np.asarray(top, np.float64), want_top)
    assert dx.dtype == x.dtype
    assert_close(dx, want_dx, dtype, "x.grad")
    assert_close(evaluate_vjp(graph, ["x"], [x, g])[1], want_dx, dtype, "oracle x.grad")


def test_reduce_max_of_two_tied_maxima_gives_each_half() -> None:
    """The rule by hand: [1, 3, 3, 0] has two maxima, each gets half of the cotangent 2."""
    step = convc.grad(max_graph((4,), "f32", (0,)), ["x"])
    _, dx = compile_stablehlo(convc.compile_graph(step), "cpu")(np.array([1, 3, 3, 0], np.float32), np.array(2, np.float32))
    np.testing.assert_array_equal(dx, [0, 1, 1, 0])


# --- reduce_min and reduce_prod -----------------------------------------------------------


def reduce_graph(kind: str, shape: Sequence[int], dtype: str, axes: tuple[int, ...]) -> convc.Graph:
    b = convc.Builder(kind)
    b.output(b.op(kind, b.input("x", tuple(shape), dtype), name="r", axes=axes))
    return b.build()


@pytest.mark.parametrize("kind", ["reduce_min", "reduce_prod"])
@pytest.mark.parametrize("case", [*MAX_CASES, "i32"])
def test_reduce_min_and_prod_run_as_lax_and_so_do_their_oracles(kind: str, case: str, rng: np.random.Generator) -> None:
    """reduce_min and reduce_prod on PJRT and by their oracle rules against jax.lax.reduce_min /
    reduce_prod: a min exactly; a product within the type's rounding (the oracle computes in f64)."""
    shape, dtype, axes, fill = MAX_CASES.get(case, ((3, 4, 5), "i32", (0, 2), "normal"))
    x = max_input(shape, dtype, fill, rng) if dtype != "i32" else rng.integers(-9, 9, size=shape, dtype=np.int32)
    graph = reduce_graph(kind, shape, dtype, axes)
    (got,) = compile_stablehlo(convc.compile_graph(graph), "cpu")(x)
    want = np.asarray(getattr(lax, kind)(jnp.asarray(x), axes))
    oracle = evaluate(graph, [x])[0]
    assert got.dtype == want.dtype == oracle.dtype
    if kind == "reduce_min" or dtype == "i32":
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(oracle, want)
        return
    with jax.enable_x64(True):
        exact = np.asarray(lax.reduce_prod(jnp.asarray(x, jnp.float64), axes))
    assert_close(got, exact, dtype, "reduce_prod")
    assert_close(oracle, exact, dtype, "oracle reduce_prod")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", MAX_CASES)
def test_reduce_min_gradient_shares_ties_equally_as_jax_vjp(case: str, target: str, rng: np.random.Generator) -> None:
    """convc.grad through reduce_min (a negate and a reduce_max_grad) against jax.vjp of lax.reduce_min."""
    shape, dtype, axes, fill = MAX_CASES[case]
    graph = reduce_graph("reduce_min", shape, dtype, axes)
    step = convc.grad(graph, ["x"])
    assert [op.kind for op in step.ops].count("reduce_max_grad") == 1
    x = max_input(shape, dtype, fill, rng)
    g = draw(graph.outputs[0].type.shape, dtype, rng)
    low, dx = compile_stablehlo(convc.compile_graph(step, target=target), "cpu")(x, g)
    want_low, want_dx = lax_vjp(lambda x: lax.reduce_min(x, axes), x, g)
    np.testing.assert_array_equal(np.asarray(low, np.float64), want_low)
    assert dx.dtype == x.dtype
    assert_close(dx, want_dx, dtype, "x.grad")
    assert_close(evaluate_vjp(graph, ["x"], [x, g])[1], want_dx, dtype, "oracle x.grad")


# name: (input shape, dtype, axes, the positions set to 0: none, one per row of some groups, or two in a group)
PROD_CASES: dict[str, tuple[tuple[int, ...], str, tuple[int, ...], tuple[tuple[int, ...], ...]]] = {
    "no-zeros": ((2, 3, 4), "f32", (1,), ()),
    "one-zero-per-group": ((3, 4, 2), "f32", (0, 2), ((0, 1, 0), (2, 3, 1))),
    "two-zeros-in-a-group": ((3, 4, 2), "f32", (1,), ((1, 0, 0), (1, 2, 0), (0, 3, 1))),
    "all-axes": ((2, 3), "f32", (0, 1), ((1, 1),)),
    "no-axes": ((2, 3), "f32", (), ((0, 2),)),
    "f16": ((2, 5, 3), "f16", (1,), ((1, 4, 2),)),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", PROD_CASES)
def test_reduce_prod_gradient_is_the_product_of_the_others_as_jax_vjp(case: str, target: str, rng: np.random.Generator) -> None:
    """convc.grad through reduce_prod (one reduce_prod_grad) against jax.vjp of lax.reduce_prod: each element's
    cotangent is out_grad times the product of the others, exact where a group holds one zero (only that
    element's is non-zero) or two (all 0); the oracle rule too."""
    shape, dtype, axes, zeros = PROD_CASES[case]
    graph = reduce_graph("reduce_prod", shape, dtype, axes)
    step = convc.grad(graph, ["x"])
    assert [op.kind for op in step.ops].count("reduce_prod_grad") == 1
    x = (rng.uniform(0.5, 1.5, shape) * rng.choice([-1, 1], shape)).astype(numpy_type(dtype))
    for position in zeros:
        x[position] = 0
    g = draw(graph.outputs[0].type.shape, dtype, rng)
    _, dx = compile_stablehlo(convc.compile_graph(step, target=target), "cpu")(x, g)
    _, want_dx = lax_vjp(lambda x: lax.reduce_prod(x, axes), x, g)
    assert dx.dtype == x.dtype
    assert_close(dx, want_dx, dtype, "x.grad")
    assert_close(evaluate_vjp(graph, ["x"], [x, g])[1], want_dx, dtype, "oracle x.grad")
    if case == "two-zeros-in-a-group":
        assert not np.any(dx[1, :, 0])


def numpy_type(dtype: str) -> type:
    return {"f32": np.float32, "f16": np.float16}[dtype]
