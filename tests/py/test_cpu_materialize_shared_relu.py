"""cpu-materialize-shared-relu: a float relu read by several ops, not all convs or dots, becomes
maximum(x, clamp(x, 0, 0)).

Checked here: which relus it takes; its values equal jax.lax.max(x, 0) on every special f32
value, both run by XLA:CPU; and XLA then computes a residual chain's block outputs once (no
fusion of the optimized HLO reads an earlier block's conv outputs again), with the chain's
result equal to an f64 numpy evaluation. The lit test has the relus it leaves.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import convc
import numpy as np
import pytest
from convc.compile import Compiler
from convc.ir import Graph
from convc.passes import default_pipeline

RunStablehlo = Callable[..., list[np.ndarray]]  # (text, arrays, platform=None)

PASS = "cpu-materialize-shared-relu"
SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.2e-38, -1.2e-38, 3.4e38, -3.4e38,
                    1.0, -1.0, 0.5, -2.5], np.float32)


def _shared_relu_graph(size: int) -> Graph:
    """relu(x) returned and read by a multiply: two readers."""
    b = convc.Builder("shared")
    x = b.input("x", (size,))
    y = b.relu(x)
    b.output(y, b.multiply(y, y))
    return b.build()


def test_pass_rewrites_only_a_float_relu_with_several_readers() -> None:
    """A relu returned and read by a multiply becomes maximum(x, clamp(x, 0, 0)); a relu read once, and an
    integer relu read twice, stay relus."""
    shared = convc.compile_graph(_shared_relu_graph(4), pipeline=f"{default_pipeline('generic')},{PASS}")
    assert "stablehlo.clamp" in shared and shared.count("stablehlo.maximum") == 1, shared
    b = convc.Builder("single")
    b.output(b.relu(b.input("x", (4,))))
    single = convc.compile_graph(b.build(), pipeline=f"{default_pipeline('generic')},{PASS}")
    assert "stablehlo.clamp" not in single
    b = convc.Builder("integer")
    y = b.relu(b.input("x", (4,), dtype="i32"))
    b.output(y, b.add(y, y))
    integer = convc.compile_graph(b.build(), pipeline=f"{default_pipeline('generic')},{PASS}")
    assert "stablehlo.clamp" not in integer


def test_rewritten_relu_equals_lax_max_on_special_values(run_stablehlo: RunStablehlo) -> None:
    """The cpu pipeline's form of a shared relu, run by XLA:CPU on NaNs, infinities, signed zeros, subnormals, the
    largest finite values and ordinary ones, equals jax.lax.max(x, 0) jitted on the CPU (NaN where x is NaN; XLA:CPU
    flushes subnormals to zero either way), element for element, and so does the product read from it."""
    import jax

    text = convc.compile_graph(_shared_relu_graph(SPECIAL.size), target="cpu")
    assert "stablehlo.clamp" in text, text
    relu, square = run_stablehlo(text, [SPECIAL], "cpu")
    x = jax.device_put(SPECIAL, jax.devices("cpu")[0])
    want_relu, want_square = jax.jit(lambda v: (jax.lax.max(v, 0.0), jax.lax.max(v, 0.0) * jax.lax.max(v, 0.0)))(x)
    np.testing.assert_array_equal(relu, np.asarray(want_relu))
    np.testing.assert_array_equal(square, np.asarray(want_square))


def _residual_chain(rng: np.random.Generator, blocks: int, features: int) -> tuple[Graph, list[np.ndarray]]:
    """NHWC 1x1 conv blocks y = relu(conv(x) + x), as a ResNet stage's identity blocks (the kernels returned)."""
    b = convc.Builder("residual")
    x = b.input("x", (2, 6, 6, features))
    kernels = []
    for index in range(blocks):
        kernel = (rng.standard_normal((1, 1, features, features)) / np.sqrt(features)).astype(np.float32)
        kernels.append(kernel)
        conv = b.conv(x, b.constant(f"w{index}", kernel), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = b.relu(b.add(conv, x))
    b.output(x)
    return b.build(), kernels


def _loop_fusion_operands(hlo: str) -> list[int]:
    """How many non-constant operands each loop fusion of the entry computation reads."""
    entry = hlo[hlo.index("\nENTRY"):]
    counts = []
    for line in entry.splitlines():
        match = re.search(r" fusion\((.*?)\), kind=kLoop", line)
        if match:
            counts.append(sum(1 for name in re.findall(r"%([\w.\-]+)", match.group(1)) if not name.startswith("constant")))
    return counts


@pytest.mark.parametrize("blocks", [2, 4])
def test_residual_chain_reads_each_block_output_once(blocks: int, rng: np.random.Generator) -> None:
    """A chain of `blocks` residual 1x1-conv blocks compiled for the cpu target (its pipeline and XLA options): no
    loop fusion of XLA's optimized HLO reads more than two arrays (a block's conv output and the previous block's
    output, computed once), and the result equals numpy's f64 evaluation of the chain."""
    graph, kernels = _residual_chain(rng, blocks, 16)
    compiler = Compiler(target="cpu")
    executable = compiler.executable(compiler.run_passes(graph.clone()), "cpu")
    counts = _loop_fusion_operands(executable.hlo_text())
    assert counts and max(counts) <= 2, f"loop fusions' operand counts {counts}:\n{executable.hlo_text()}"
    x = rng.standard_normal((2, 6, 6, 16)).astype(np.float32)
    (got,) = executable(x)
    want = x.astype(np.float64)
    for kernel in kernels:
        want = np.maximum(want @ kernel[0, 0].astype(np.float64) + want, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
