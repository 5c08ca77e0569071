"""The elementwise primitives (compiler/ops/elementwise.py) run through PJRT against their
jax.lax oracles, and their gradient rules against `jax.vjp` of the oracle, in f32 and f16,
on inputs inside each op's domain and at the ties where a rule's mask decides (max/min of
equal operands, abs at 0, clamp at its bounds)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import convc
import jax
import numpy as np
import pytest
from convc import Builder, Graph
from convc.dtypes import numpy_dtype
from convc.reference import evaluate, lax_function
from convc.runtime import compile_stablehlo
from test_grad import assert_close, reference_vjp

TOLERANCE = {"f32": 1e-5, "f16": 2e-3}

Inputs = Callable[[np.random.Generator, tuple[int, ...]], list[np.ndarray]]


def _normal(count: int) -> Inputs:
    return lambda rng, shape: [rng.standard_normal(shape) for _ in range(count)]


def _positive(rng: np.random.Generator, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [rng.uniform(0.2, 3.0, shape)]


def _base_and_exponent(rng: np.random.Generator, shape: tuple[int, ...]) -> list[np.ndarray]:
    return [rng.uniform(0.2, 3.0, shape), rng.uniform(-2.0, 2.0, shape)]


def _with_ties(rng: np.random.Generator, shape: tuple[int, ...]) -> list[np.ndarray]:
    """Two operands equal in every other element."""
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    y.reshape(-1)[::2] = x.reshape(-1)[::2]
    return [x, y]


def _with_zeros(rng: np.random.Generator, shape: tuple[int, ...]) -> list[np.ndarray]:
    x = rng.standard_normal(shape)
    x.reshape(-1)[::3] = 0.0
    return [x]


def _at_bounds(rng: np.random.Generator, shape: tuple[int, ...]) -> list[np.ndarray]:
    x = rng.standard_normal(shape)
    x.reshape(-1)[::4], x.reshape(-1)[1::4] = -0.5, 0.75
    return [x]


# op -> (attributes, its inputs' generator)
CASES: dict[str, tuple[dict[str, float], Inputs]] = {
    "subtract": ({}, _normal(2)),
    "divide": ({}, lambda rng, shape: [rng.standard_normal(shape), rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)]),
    "maximum": ({}, _with_ties),
    "minimum": ({}, _with_ties),
    "power": ({}, _base_and_exponent),
    "exp": ({}, _normal(1)),
    "log": ({}, _positive),
    "tanh": ({}, _normal(1)),
    "logistic": ({}, _normal(1)),
    "sqrt": ({}, _positive),
    "rsqrt": ({}, _positive),
    "negate": ({}, _normal(1)),
    "abs": ({}, _with_zeros),
    "optimization_barrier": ({}, _normal(1)),
    "erf": ({}, lambda rng, shape: [rng.uniform(-5.0, 5.0, shape)]),
    "clamp": ({"min": -0.5, "max": 0.75}, _at_bounds),
}


def _model(op: str, dtype: str, count: int, attrs: dict[str, float]) -> Graph:
    b = Builder(op)
    names = ["lhs", "rhs"][:count] if count == 2 else ["x"]
    operands = [b.input(name, (3, 8), dtype) for name in names]
    b.output(b.op(op, *operands, name="y", **attrs))
    return b.build()


def _inputs(op: str, dtype: str, seed: int = 0) -> list[np.ndarray]:
    return [x.astype(numpy_dtype(dtype)) for x in CASES[op][1](np.random.default_rng(seed), (3, 8))]


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("op", sorted(CASES))
def test_forward_matches_lax(op: str, dtype: str) -> None:
    """The compiled op's result equals its jax.lax function's on the same inputs (erf too:
    convc emits the approximation XLA uses for jax.lax.erf)."""
    inputs = _inputs(op, dtype)
    graph = _model(op, dtype, len(inputs), CASES[op][0])
    got = compile_stablehlo(convc.compile_graph(graph), "cpu")(*inputs)[0]
    want = np.asarray(jax.jit(lax_function(graph))(*inputs)[0])
    assert_close(np.asarray(got), want, TOLERANCE[dtype], op)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("op", sorted(CASES))
def test_gradient_matches_jax_vjp(op: str, dtype: str) -> None:
    """`convc.grad` of the op equals jax.vjp of its oracle, for every operand, ties included."""
    inputs = _inputs(op, dtype)
    graph = _model(op, dtype, len(inputs), CASES[op][0])
    wrt = [v.name for v in graph.inputs]
    cotangent = np.random.default_rng(1).standard_normal((3, 8)).astype(numpy_dtype(dtype))
    got = compile_stablehlo(convc.compile_graph(convc.grad(graph, wrt)), "cpu")(*inputs, cotangent)
    want = reference_vjp(graph, wrt, inputs, [cotangent])
    for name, g, w in zip(["y", *wrt], got, want, strict=True):
        assert_close(np.asarray(g), w, TOLERANCE[dtype], f"{op} {name}")


def test_erf_is_jax_lax_erf_to_an_ulp_in_f32() -> None:
    """XLA's erf approximation, emitted as StableHLO, gives jax.lax.erf's f32 values on XLA:CPU
    to within an ulp (XLA computes each of its polynomial steps as one FMA), and exactly +-1
    where jax.lax.erf saturates."""
    x = np.linspace(-6, 6, 2001, dtype=np.float32).reshape(1, -1)
    b = Builder("erf")
    b.output(b.op("erf", b.input("x", x.shape), name="y"))
    got = np.asarray(compile_stablehlo(convc.compile_graph(b.build()), "cpu")(x)[0])
    want = np.asarray(jax.jit(jax.lax.erf)(jax.device_put(x, jax.devices("cpu")[0])))  # on XLA:CPU too, where a GPU is the default
    np.testing.assert_array_max_ulp(got, want, maxulp=1)
    np.testing.assert_array_equal(got[want == 1.0], 1.0)


def test_erf_f64_is_jax_lax_erf_to_two_ulps_and_so_is_its_oracle() -> None:
    """erf of f64 (Cephes' expansion, emitted as StableHLO) gives jax.lax.erf's f64 values on
    XLA:CPU to within 2 ulps over [-30, 30] (both branches, the |x| = 1 and 8 joins, the
    underflow of exp(-x^2)), exactly +-1 and 0 at +-inf and 0, NaN for NaN; the oracle rule is jax.lax.erf."""
    x = np.concatenate([np.linspace(-30, 30, 6001), [0.0, -1.0, 1.0, 8.0, -8.0, 1e-300, 26.6, -27.0]]).reshape(1, -1)
    b = Builder("erf")
    b.output(b.op("erf", b.input("x", x.shape, "f64"), name="y"))
    graph = b.build()
    got = np.asarray(compile_stablehlo(convc.compile_graph(graph), "cpu")(x)[0])
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):  # XLA:CPU's erf, as the docstring says
        want = np.asarray(jax.jit(jax.lax.erf)(x))
    assert got.dtype == np.float64
    np.testing.assert_array_max_ulp(got, want, maxulp=2)
    special = np.array([[np.inf, -np.inf, 0.0, np.nan]])
    b = Builder("erf")
    b.output(b.op("erf", b.input("x", special.shape, "f64"), name="y"))
    edges = np.asarray(compile_stablehlo(convc.compile_graph(b.build()), "cpu")(special)[0])
    np.testing.assert_array_equal(edges, [[1.0, -1.0, 0.0, np.nan]])
    np.testing.assert_array_max_ulp(np.asarray(evaluate(graph, [x])[0]), want, maxulp=0)


@pytest.mark.parametrize(("op", "dtype", "constraint"), [
    ("exp", "i32", "exp.C1"), ("erf", "i32", "erf.C1"), ("power", "i32", "power.C2"), ("clamp", "i8", "clamp.C1"),
])
def test_floating_only_ops_refuse_other_types(op: str, dtype: str, constraint: str) -> None:
    """An op defined on floating types only is refused, with its id, for an integer."""
    count = 2 if op == "power" else 1
    b = Builder(op)
    operands = [b.input(f"x{i}", (2,), dtype) for i in range(count)]
    with pytest.raises(convc.ConvcError, match=rf"\[{constraint}\]"):
        b.op(op, *operands, name="y")


def test_integer_maximum_and_divide_have_no_gradient_but_run() -> None:
    """maximum and divide of i32 run (divide rounds toward zero, as lax.div)."""
    b = Builder("ints")
    x, y = b.input("x", (4,), "i32"), b.input("y", (4,), "i32")
    b.output(b.op("divide", x, y, name="q"))
    b.output(b.op("maximum", x, y, name="m"))
    a, d = np.array([7, -7, 9, 0], np.int32), np.array([2, 2, -4, 3], np.int32)
    q, m = compile_stablehlo(convc.compile_graph(b.build()), "cpu")(a, d)
    np.testing.assert_array_equal(np.asarray(q), np.array([3, -3, -2, 0], np.int32))
    np.testing.assert_array_equal(np.asarray(m), np.maximum(a, d))


DOCS = Path(__file__).resolve().parents[2] / "docs"
LIT = Path(__file__).resolve().parents[1] / "lit"
# Each op's constraint ids (written as f-strings in compiler/ops/elementwise.py, which
# test_docs.py's scan of literal ids cannot see).
IDS = {f"{op}.C1" for op in ("subtract", "divide", "maximum", "minimum", "power", "exp", "log", "tanh", "logistic", "sqrt",
                             "rsqrt", "erf", "clamp")} | {"power.C2"}


def test_every_elementwise_id_is_documented_and_has_a_negative_lit_test() -> None:
    """docs/diagnostics.md names each id, and a lit case expects its error."""
    docs = (DOCS / "diagnostics.md").read_text(encoding="utf-8")
    lit = (LIT / "verify-elementwise.mlir").read_text(encoding="utf-8")
    assert {i for i in IDS if f"`{i}`" not in docs} == set()
    assert {i for i in IDS if f"[{i}]" not in lit} == set()


def test_clamp_names_min_for_numpys_a_min() -> None:
    """numpy.clip's `a_min` on clamp is refused (A3) with a hint naming `min`."""
    b = Builder("clip")
    with pytest.raises(convc.ConvcError, match=r"did you mean 'min'\? 'a_min' is its name in numpy.clip\) \[A3\]"):
        b.op("clamp", b.input("x", (2,)), a_min=0.0)
