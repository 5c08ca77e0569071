"""What `--check` compares and how close (docs/cli.md): the oracle computes exact math, and
the tolerance follows the least precise thing the checked module computes on the platform
that runs it (TF32 for an f32 conv or dot below HIGHEST on a GPU). The rule is a pure
function of a graph and a platform name, so it is tested here without a GPU; TF32 itself is
simulated in numpy (f32 inputs rounded to a 10-bit significand, exact products and sums).
"""

from __future__ import annotations

from typing import Any

import convc
import numpy as np
import pytest
from convc.reference import evaluate
from convc.runtime_inputs import TOLERANCE, compare, tolerance_for

NHWC = ("NHWC", "HWIO", "NHWC")


def conv_graph(dtype: str = "f32", **attrs: Any) -> convc.Graph:
    b = convc.Builder("one_conv")
    x, w = b.input("x", (1, 8, 8, 16), dtype), b.input("w", (3, 3, 16, 8), dtype)
    b.output(b.conv(x, w, padding="SAME", dimension_numbers=NHWC, name="y", **attrs))
    return b.build()


def dot_graph(dtype: str = "f32", **attrs: Any) -> convc.Graph:
    b = convc.Builder("one_dot")
    x, w = b.input("x", (4, 32), dtype), b.input("w", (32, 8), dtype)
    b.output(b.op("dot_general", x, w, name="y", lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0], **attrs))
    return b.build()


@pytest.mark.parametrize(("graph", "platform", "expected"), [
    (conv_graph(), "gpu", "tf32"),
    (conv_graph(), "cuda", "tf32"),  # PJRT's own name for the platform
    (conv_graph(precision="HIGH"), "gpu", "tf32"),
    (conv_graph(precision="HIGHEST"), "gpu", "f32"),
    (conv_graph(precision=("HIGHEST", "DEFAULT")), "gpu", "tf32"),  # the less precise operand decides
    (conv_graph(), "cpu", "f32"),
    (conv_graph(), "tpu", "bf16"),
    (conv_graph(precision="HIGH"), "tpu", "tf32"),
    (dot_graph(), "gpu", "tf32"),
    (dot_graph(precision="HIGHEST"), "gpu", "f32"),
    (conv_graph("bf16"), "cpu", "bf16"),
    (conv_graph("bf16", preferred_element_type="f32"), "gpu", "bf16"),  # bf16 inputs round, whatever the accumulator
    (conv_graph("f16"), "gpu", "f16"),
    (conv_graph("f64"), "gpu", "f64"),  # only f32 contractions are computed below their type
    (dot_graph("i8", preferred_element_type="i32"), "gpu", "i8"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_tolerance_follows_dtype_platform_and_precision(graph: convc.Graph, platform: str, expected: str) -> None:
    assert tolerance_for([graph], platform) == expected


def test_the_least_precise_graph_decides() -> None:
    """--check passes the source and what was lowered from it: a lowering that dropped HIGHEST
    would be computed in TF32 on a GPU, and the tolerance says so."""
    assert tolerance_for([conv_graph(precision="HIGHEST"), conv_graph()], "gpu") == "tf32"
    assert tolerance_for([conv_graph(precision="HIGHEST"), conv_graph()], "cpu") == "f32"


def tf32(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to nearest (ties to even) at TF32's 10-bit significand, as f64.
    (Hardware that truncates instead errs twice as much: still far inside the bound.)"""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    dropped = 13  # 23 - 10 significand bits
    half, mask = 1 << (dropped - 1), (1 << dropped) - 1
    odd = (bits >> dropped) & 1
    rounded = ((bits + half - 1 + odd) & ~np.uint64(mask)).astype(np.uint32)
    return rounded.view(np.float32).astype(np.float64)


def nhwc_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A SAME 3x3 conv in f64, a sum over taps."""
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    h, wd = x.shape[1:3]
    return sum(np.einsum("nhwc,co->nhwo", padded[:, i:i + h, j:j + wd], w[i, j]) for i in range(3) for j in range(3))


def test_tf32_rounding_passes_and_a_wrong_result_fails(rng: np.random.Generator) -> None:
    """What a GPU's DEFAULT f32 conv computes is within the tf32 bound of the exact result, and
    a conv that lost one kernel tap is far outside it: on a GPU, --check says "ok" for a
    right model and MISMATCH for a wrong one."""
    x, w = rng.standard_normal((2, 12, 12, 64)).astype(np.float32), rng.standard_normal((3, 3, 64, 32)).astype(np.float32)
    exact = nhwc_conv(x.astype(np.float64), w.astype(np.float64))
    on_tensor_cores = nhwc_conv(tf32(x), tf32(w)).astype(np.float32)
    dropped_tap = w.copy()
    dropped_tap[1, 1] = 0
    wrong = nhwc_conv(x.astype(np.float64), dropped_tap.astype(np.float64)).astype(np.float32)
    assert compare("y", "tf32", on_tensor_cores, exact)[1]
    assert not compare("y", "f32", on_tensor_cores, exact)[1]  # why f32's bound gave false MISMATCHes on a GPU
    line, passed = compare("y", "tf32", wrong, exact)
    assert not passed and line.endswith("(MISMATCH)")
    assert TOLERANCE["f32"] < TOLERANCE["tf32"] < TOLERANCE["bf16"]


def test_the_oracle_ignores_a_default_precision_and_rounds_once(rng: np.random.Generator) -> None:
    """The --check oracle computes a DEFAULT-precision f32 conv as exact math rounded to f32
    (f64 accumulation on the CPU): at most one f32 ulp from numpy's f64 result."""
    x, w = rng.standard_normal((1, 8, 8, 16)).astype(np.float32), rng.standard_normal((3, 3, 16, 8)).astype(np.float32)
    (got,) = evaluate(conv_graph(precision="DEFAULT"), [x, w])
    assert got.dtype == np.float32
    np.testing.assert_array_max_ulp(got, nhwc_conv(x.astype(np.float64), w.astype(np.float64)).astype(np.float32), maxulp=1)


def test_the_oracle_keeps_the_result_type_of_a_widened_op(rng: np.random.Generator) -> None:
    """bf16 inputs with an f32 preferred_element_type: an f32 result, the exact sum of the
    (exactly representable) bf16 products rounded once."""
    import ml_dtypes

    x, w = (rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for shape in ((4, 32), (32, 8)))
    (got,) = evaluate(dot_graph("bf16", preferred_element_type="f32"), [x, w])
    assert got.dtype == np.float32
    np.testing.assert_array_max_ulp(got, (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32), maxulp=1)
