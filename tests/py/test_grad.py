"""`convc.grad` against `jax.vjp` of the same graph evaluated by the jax.lax oracle.

Each case builds a model, takes its gradient graph, compiles it for a target, runs it with
PJRT on random inputs and cotangents, and compares every result with `jax.vjp` of
`convc.reference`'s function of the same model (the `wrt` values as its arguments). One
negative test per constraint id G1..G7; a fixed-seed property test over the drawn models.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import convc
import jax
import numpy as np
import pytest
from convc import Builder, ConvcError, Graph
from convc.dtypes import numpy_dtype
from convc.reference import vjp_function
from convc.runtime import compile_stablehlo
from hypothesis import given
from strategies import budget, conv_models, run_cli

TOLERANCE = {"f32": 1e-4, "f16": 1e-2, "bf16": 6e-2}
TARGETS = ("generic", "cpu")


# --- the oracle: jax.vjp of the reference function --------------------------------------


def reference_vjp(graph: Graph, wrt: Sequence[str], inputs: Sequence[np.ndarray],
                  cotangents: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The model's outputs, then jax.vjp's gradient of each `wrt` value (input or constant),
    computed in the model's own element types."""
    return [np.asarray(x) for x in jax.jit(vjp_function(graph, wrt))(*inputs, *cotangents)]


def random_like(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(tuple(shape)).astype(numpy_dtype(dtype))


def assert_close(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, f"{what}: {got.shape} {got.dtype} != {want.shape} {want.dtype}"
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = 1.0 + (float(np.abs(want64).max()) if want64.size else 0.0)
    error = float(np.abs(got64 - want64).max()) if want64.size else 0.0
    assert error <= tol * scale, f"{what}: max abs error {error:.3g} > {tol:.1g} * {scale:.3g}"


def check_grad(graph: Graph, wrt: Sequence[str], target: str, tol: float | None = None, seed: int = 0) -> Graph:
    """Compile `convc.grad(graph, wrt)` for `target`, run it, compare with the oracle."""
    gradient = convc.grad(graph, wrt)
    rng = np.random.default_rng(seed)
    inputs = [random_like(v.type.shape, v.type.dtype, rng) for v in graph.inputs]
    cotangents = [random_like(v.type.shape, v.type.dtype, rng) for v in graph.outputs]
    got = compile_stablehlo(convc.compile_graph(gradient, target=target), "cpu")(*inputs, *cotangents)
    want = reference_vjp(graph, wrt, inputs, cotangents)
    names = [v.name for v in gradient.outputs]
    assert names == [v.name for v in graph.outputs] + [f"{name}.grad" for name in wrt]
    dtypes = {v.type.dtype for v in graph.values()}
    tolerance = tol if tol is not None else max(TOLERANCE.get(d, 1e-4) for d in dtypes)
    for name, g, w in zip(names, got, want, strict=True):
        assert_close(g, w, tolerance, name)
    return gradient


# --- cases: each builds a model and names what to differentiate by ------------------------

Case = Callable[[], tuple[Graph, list[str]]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def _unary(op: str, input_shape: Sequence[int], **attrs: Any) -> tuple[Graph, list[str]]:
    b = Builder(op)
    x = b.input("x", input_shape)
    b.output(b.op(op, x, name="y", **attrs))
    return b.build(), ["x"]


@case
def bias_add() -> tuple[Graph, list[str]]:
    b = Builder("bias")
    x, bias = b.input("x", (2, 3, 4, 5)), b.input("bias", (3,))
    b.output(b.bias_add(x, bias, axis=1))
    return b.build(), ["x", "bias"]


@case
def add_multiply() -> tuple[Graph, list[str]]:
    b = Builder("arith")
    x, y = b.input("x", (3, 4)), b.input("y", (3, 4))
    b.output(b.multiply(b.add(x, y), y))
    return b.build(), ["x", "y"]


@case
def relu_at_zero() -> tuple[Graph, list[str]]:
    """Padding puts exact zeros under relu: its gradient there is 0 (jax.nn.relu's)."""
    b = Builder("relu")
    x = b.input("x", (2, 5))
    b.output(b.relu(b.relu(b.pad(x, [(1, 1, 1), (0, 2, 0)]))))
    return b.build(), ["x"]


@case
def reshape() -> tuple[Graph, list[str]]:
    return _unary("reshape", (2, 3, 4), new_sizes=(6, 4))


@case
def transpose() -> tuple[Graph, list[str]]:
    return _unary("transpose", (2, 3, 4), permutation=(2, 0, 1))


@case
def reverse() -> tuple[Graph, list[str]]:
    return _unary("reverse", (2, 3, 4), dimensions=(0, 2))


@case
def pad_negative_interior() -> tuple[Graph, list[str]]:
    return _unary("pad", (3, 5, 4), padding_config=((1, -2, 2), (-1, 3, 0), (0, 0, 1)), padding_value=1.5)


@case
def slice_strided() -> tuple[Graph, list[str]]:
    return _unary("slice", (7, 6), start_indices=(1, 0), limit_indices=(7, 5), strides=(2, 3))


@case
def concatenate() -> tuple[Graph, list[str]]:
    b = Builder("concat")
    x, y = b.input("x", (2, 3)), b.input("y", (2, 4))
    b.output(b.concatenate([x, y, x], dimension=1))
    return b.build(), ["x", "y"]


@case
def convert_round_trip() -> tuple[Graph, list[str]]:
    b = Builder("convert")
    x = b.input("x", (3, 4))
    b.output(b.convert(b.multiply(b.convert(x, "f16"), b.convert(x, "f16")), "f32"))
    return b.build(), ["x"]


@case
def dot_general() -> tuple[Graph, list[str]]:
    b = Builder("dot")
    x, y = b.input("x", (2, 3, 4, 5)), b.input("y", (5, 2, 6, 3))
    b.output(b.op("dot_general", x, y, lhs_batching_dimensions=(0,), rhs_batching_dimensions=(1,),
                  lhs_contracting_dimensions=(3, 1), rhs_contracting_dimensions=(0, 3)))
    return b.build(), ["x", "y"]


@case
def dot_general_preferred_f32() -> tuple[Graph, list[str]]:
    b = Builder("dot_wide")
    x, y = b.input("x", (3, 4), "bf16"), b.input("y", (4, 5), "bf16")
    b.output(b.op("dot_general", x, y, lhs_contracting_dimensions=(1,), rhs_contracting_dimensions=(0,),
                  preferred_element_type="f32"))
    return b.build(), ["x", "y"]


@case
def broadcast_in_dim() -> tuple[Graph, list[str]]:
    return _unary("broadcast_in_dim", (3, 1), shape=(2, 3, 4), broadcast_dimensions=(1, 2))


@case
def reduce_sum() -> tuple[Graph, list[str]]:
    return _unary("reduce_sum", (2, 3, 4), axes=(0, 2))


@case
def max_pool_overlapping_same() -> tuple[Graph, list[str]]:
    """3x3 windows at stride 2 overlap: an element that is the maximum of two gets both cotangents."""
    return _unary("max_pool", (2, 7, 7, 3), window_dimensions=(1, 3, 3, 1), window_strides=(1, 2, 2, 1), padding="SAME")


@case
def max_pool_base_dilated_cropped() -> tuple[Graph, list[str]]:
    return _unary("max_pool", (1, 3, 5, 4), window_dimensions=(1, 1, 3, 2), base_dilation=(1, 1, 2, 2),
                  padding=((0, 0), (0, 0), (-1, 1), (1, -2)))


def _conv_case(lhs: Sequence[int], rhs: Sequence[int], dtype: str = "f32", **attrs: Any) -> tuple[Graph, list[str]]:
    b = Builder("conv")
    x, w = b.input("x", lhs, dtype), b.input("w", rhs, dtype)
    b.output(b.conv(x, w, name="y", **attrs))
    return b.build(), ["x", "w"]


CONVS: dict[str, Callable[[], tuple[Graph, list[str]]]] = {
    "1d_strided_same": lambda: _conv_case((2, 3, 9), (4, 3, 3), window_strides=(2,), padding="SAME"),
    "2d_nhwc_dilated": lambda: _conv_case((2, 7, 8, 3), (3, 2, 3, 4), window_strides=(2, 1), padding="SAME_LOWER",
                                          rhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "NHWC")),
    "2d_lhs_dilated": lambda: _conv_case((1, 2, 4, 5), (3, 2, 3, 2), lhs_dilation=(2, 3), padding=((1, 2), (0, 1))),
    "2d_lhs_dilated_same_lower": lambda: _conv_case((2, 2, 5, 4), (3, 2, 3, 3), lhs_dilation=(2, 2), window_strides=(1, 2),
                                                    padding="SAME_LOWER", rhs_dilation=(2, 1)),
    "2d_negative_pads": lambda: _conv_case((2, 2, 8, 7), (4, 2, 3, 3), window_strides=(3, 2), padding=((-1, 2), (2, -2))),
    "2d_stride_above_kernel": lambda: _conv_case((1, 2, 9, 9), (2, 2, 2, 2), window_strides=(4, 3)),
    "2d_feature_groups": lambda: _conv_case((2, 6, 5, 5), (4, 3, 3, 3), feature_group_count=2, padding="SAME"),
    "2d_depthwise_multiplier": lambda: _conv_case((2, 5, 6, 3), (3, 3, 1, 6), feature_group_count=3, padding="SAME",
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC")),
    "2d_batch_groups": lambda: _conv_case((4, 3, 6, 6), (6, 3, 3, 3), batch_group_count=2, window_strides=(2, 2)),
    "3d": lambda: _conv_case((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), window_strides=(1, 2, 1), padding="SAME",
                             rhs_dilation=(1, 1, 2)),
    "2d_f16": lambda: _conv_case((2, 3, 6, 6), (4, 3, 3, 3), "f16", padding="SAME"),
    "2d_bf16": lambda: _conv_case((2, 3, 6, 6), (4, 3, 3, 3), "bf16", window_strides=(2, 2)),
    "2d_bf16_preferred_f32": lambda: _conv_case((2, 3, 6, 6), (4, 3, 3, 3), "bf16", preferred_element_type="f32",
                                                precision="HIGHEST"),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_rule(name: str, target: str) -> None:
    check_grad(*CASES[name](), target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_rule(name: str, target: str) -> None:
    check_grad(*CONVS[name](), target)


def test_conv_gradient_nodes_carry_the_forward_attributes() -> None:
    graph, wrt = CONVS["2d_feature_groups"]()
    gradient = convc.grad(graph, wrt)
    by_name = {op.name: op for op in gradient.ops}
    d_x, d_w = by_name["x.grad"], by_name["w.grad"]
    assert (d_x.kind, d_w.kind) == ("conv_backprop_input", "conv_backprop_filter")
    for op in (d_x, d_w):
        assert op.attrs["padding"] == ((1, 1), (1, 1)) and op.attrs["feature_group_count"] == 2
    assert d_x.attrs["input_shape"] == (2, 6, 5, 5) and d_w.attrs["kernel_shape"] == (4, 3, 3, 3)


# --- the transposed and gradient convs as primal ops -----------------------------------


def _two_operand_case(kind: str, lhs: Sequence[int], rhs: Sequence[int], **attrs: Any) -> tuple[Graph, list[str]]:
    b = Builder(kind)
    x, w = b.input("x", lhs), b.input("w", rhs)
    b.output(b.op(kind, x, w, name="y", **attrs))
    return b.build(), ["x", "w"]


ADJOINTS: dict[str, Callable[[], tuple[Graph, list[str]]]] = {
    "conv_transpose": lambda: _two_operand_case("conv_transpose", (2, 4, 5, 3), (3, 3, 3, 4), strides=(2, 1), padding="SAME"),
    "conv_transpose_kernel_groups": lambda: _two_operand_case(
        "conv_transpose", (1, 3, 3, 4), (2, 2, 3, 4), strides=(2, 2), padding=((1, 0), (2, 1)), transpose_kernel=True,
        feature_group_count=2),
    "conv_transpose_consistent_dilated": lambda: _two_operand_case(
        "conv_transpose", (1, 5, 4, 2), (3, 2, 2, 3), strides=(2, 3), padding=((1, 2), (0, 1)), rhs_dilation=(1, 2),
        use_consistent_padding=True),
    "conv_backprop_input": lambda: _two_operand_case(
        "conv_backprop_input", (2, 4, 3, 3), (4, 3, 3, 3), window_strides=(2, 2), padding="SAME", input_shape=(2, 3, 6, 5)),
    "conv_backprop_input_batch_groups": lambda: _two_operand_case(
        "conv_backprop_input", (2, 6, 2, 2), (6, 3, 3, 3), window_strides=(2, 2), batch_group_count=2, input_shape=(4, 3, 6, 6)),
    "conv_backprop_filter_groups": lambda: _two_operand_case(
        "conv_backprop_filter", (2, 6, 5, 5), (2, 4, 5, 5), padding="SAME", feature_group_count=2, kernel_shape=(4, 3, 3, 3)),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(ADJOINTS))
def test_adjoint_rule(name: str, target: str) -> None:
    check_grad(*ADJOINTS[name](), target)


# --- graph-level contract ------------------------------------------------------------------


def test_diamond_sums_cotangents_and_constant_wrt() -> None:
    """A value used twice gets the sum of its cotangents; a constant's gradient is returned."""
    b = Builder("diamond")
    x = b.input("x", (2, 3, 6, 6))
    w = b.constant("w", np.random.default_rng(1).standard_normal((3, 3, 3, 3)).astype(np.float32))
    y = b.conv(x, w, padding="SAME", name="y")
    z = b.add(b.relu(y), b.conv(y, w, padding="SAME"))
    b.output(z, y)
    gradient = check_grad(b.build(), ["w", "x"], "generic")
    assert [v.name for v in gradient.inputs] == ["x", f"{z.name}.grad", "y.grad"]
    assert any(op.kind == "constant" and op.name == "w" for op in gradient.ops)


def test_unused_wrt_gets_zeros() -> None:
    b = Builder("unused")
    x = b.input("x", (2, 3))
    b.input("unused", (4,))
    b.output(b.relu(x))
    gradient = check_grad(b.build(), ["unused", "x"], "cpu")
    assert gradient.outputs[1].name == "unused.grad" and gradient.outputs[1].type.shape == (4,)


def test_output_that_is_the_wrt_value() -> None:
    """An input passed straight out (and used twice) still gets its own named gradient."""
    b = Builder("identity")
    x = b.input("x", (3,))
    b.output(b.add(x, x), b.multiply(x, x))
    check_grad(b.build(), ["x"], "generic")


def test_grad_is_an_ordinary_model() -> None:
    """Its text form reads back, and the printed module names every gradient."""
    graph, wrt = CONVS["2d_batch_groups"]()
    text = convc.print_graph(convc.grad(graph, wrt))
    assert "convc.conv_backprop_filter" in text and "%w.grad" in text
    assert convc.print_graph(convc.parse_ir(text)) == text


# --- errors: one per constraint id ---------------------------------------------------------


def _small_model() -> Graph:
    b = Builder("small")
    x = b.input("x", (2, 3))
    k = b.constant("k", np.ones((2, 3), np.float32))
    n = b.input("n", (2,), "i32")
    b.output(b.multiply(x, k, name="y"), n)
    return b.build()


@pytest.mark.parametrize(("wrt", "constraint", "words"), [
    (["z"], "G1", "wrt names 'z', which is no value of 'small'"),
    (["y"], "G2", "wrt names 'y', the result of a multiply node"),
    (["n"], "G3", "wrt names 'n' of integer type"),
    (["x", "k", "x"], "G4", "wrt lists 'x' twice"),
])
def test_wrt_errors(wrt: list[str], constraint: str, words: str) -> None:
    with pytest.raises(ConvcError) as err:
        convc.grad(_small_model(), wrt)
    assert err.value.constraint == constraint and words in err.value.message
    assert "\n" not in str(err.value)


def test_grad_name_clash_G5() -> None:
    b = Builder("clash")
    x = b.input("x", (2,))
    b.output(b.relu(x, name="x.grad"))
    with pytest.raises(ConvcError) as err:
        convc.grad(b.build(), ["x"])
    assert err.value.constraint == "G5" and "'x.grad' clashes" in str(err.value)


def test_op_without_rule_G6() -> None:
    b = Builder("norule")
    x = b.input("x", (2, 3))
    b.output(b.op("stacked_reduce_sum", x, x, axes=(1,), name="s"))
    with pytest.raises(ConvcError) as err:
        convc.grad(b.build(), ["x"])
    assert err.value.constraint == "G6" and "'s' (stacked_reduce_sum)" in str(err.value)
    assert "op 'stacked_reduce_sum' has no gradient rule" in str(err.value)


def test_rule_that_does_not_cover_the_attributes_G7() -> None:
    """max_pool's rule (select_and_scatter) has no window dilation."""
    b = Builder("dilated")
    x = b.input("x", (1, 7, 7, 2))
    b.output(b.op("max_pool", x, window_dimensions=(1, 2, 2, 1), window_dilation=(1, 3, 1, 1), name="p"))
    with pytest.raises(ConvcError) as err:
        convc.grad(b.build(), ["x"])
    assert err.value.constraint == "G7" and err.value.loc.node == "p"
    assert "max_pool's gradient is a select_and_scatter, which has no window dilation; window_dilation [1, 3, 1, 1]" in str(err.value)


def test_the_table_of_rules_has_a_row_per_op_saying_whether_it_has_one() -> None:
    """docs/autodiff.md's generated table: every op kind once, its rule's docstring line, or G6."""
    from convc.ops import OPS, gradient_rules_table

    rows = gradient_rules_table().splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == list(OPS)
    by_op = {row.split("`")[1]: row for row in rows}
    assert "| none (G6) |" in by_op["stacked_reduce_sum"] and "| none (G6) |" in by_op["max_pool_grad"]
    assert "| `pool.py` | x: `max_pool_grad(x, g)`" in by_op["max_pool"]
    assert "| not needed |" in by_op["constant"]
    assert all(OPS[op].vjp is None or "none (G6)" not in row for op, row in by_op.items())


def test_op_without_rule_off_the_gradient_path_is_fine() -> None:
    b = Builder("offpath")
    x, other = b.input("x", (2, 3)), b.input("other", (2, 3))
    b.output(b.relu(x), b.op("stacked_reduce_sum", other, other, axes=(1,)))
    check_grad(b.build(), ["x"], "generic")


# --- the command line: --grad ------------------------------------------------------------

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("target", TARGETS)
def test_cli_grad_runs_and_checks(target: str) -> None:
    model = str(EXAMPLES / "resnet_block.json")
    done = run_cli([model, "--grad", "x,w1,b1,w2,b2,wp", "--target", target, "--check"])
    assert done.code == 0, done.stderr
    names = [line.split(":")[0] for line in done.stdout.splitlines()]
    assert names[:7] == ["out", "x.grad", "w1.grad", "b1.grad", "w2.grad", "b2.grad", "wp.grad"]
    assert done.stdout.count("(ok)") == 7


def test_cli_grad_prints_the_step_after_grad() -> None:
    done = run_cli([str(EXAMPLES / "dcgan_generator.json"), "--grad", "w3", "--target", "generic", "--print-ir-after-all",
                    "-o", "/dev/null"])
    assert done.code == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert first == "// -----// IR Dump After grad{wrt=w3} //----- //"
    assert "%image.grad: tensor<1x32x32x3xf32>" in done.stderr and "%w3.grad = " in done.stderr


def test_cli_grad_error_is_one_located_line() -> None:
    model = str(EXAMPLES / "resnet_block.json")
    done = run_cli([model, "--grad", "w1,w9"])
    assert done.code == 1 and done.stdout == ""
    assert done.stderr == f"{model}: error: grad: wrt names 'w9', which is no value of 'resnet_block' [G1]\n"


@pytest.mark.parametrize("names", ["", ","])
def test_cli_grad_without_names_is_a_usage_error(names: str) -> None:
    done = run_cli([str(EXAMPLES / "resnet_block.json"), "--grad", names])
    assert done.code == 2 and done.stdout == ""
    assert "--grad: expected one or more input or constant names" in done.stderr


GRAD_EXAMPLES = {
    "grad/resnext_block.json": "x,w",
    "grad/resnext_bottleneck.json": "x,w_reduce,b_reduce,w_group,b_group,w_expand",
    "dcgan_generator.json": "z,w1,b1,w2,b2,w3",
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", sorted(GRAD_EXAMPLES))
def test_grad_examples_run_and_check(model: str, target: str) -> None:
    """examples/grad/README.md's commands: each training step passes --run --check."""
    done = run_cli([str(EXAMPLES / model), "--grad", GRAD_EXAMPLES[model], "--target", target, "--check"])
    assert done.code == 0, done.stderr
    checks = [line for line in done.stdout.splitlines() if "vs jax.lax" in line]
    assert len(checks) == 1 + len(GRAD_EXAMPLES[model].split(",")) and all(line.endswith("(ok)") for line in checks)


def test_grad_builds_the_hand_written_resnext_step() -> None:
    """`--grad x,w` of the ResNeXt block computes the y, dx, dw that resnext_grad_step.json spells by hand."""
    step = convc.grad(convc.load_model(EXAMPLES / "grad" / "resnext_block.json"), ["x", "w"])
    by_hand = convc.load_model(EXAMPLES / "resnext_grad_step.json")
    rng = np.random.default_rng(3)
    x, w, dy = (random_like(v.type.shape, "f32", rng) for v in by_hand.inputs)
    ours = compile_stablehlo(convc.compile_graph(step, target="cpu"), "cpu")(x, w, dy)
    theirs = compile_stablehlo(convc.compile_graph(by_hand, target="cpu"), "cpu")(x, w, dy)
    for name, got, want in zip(("y", "dx", "dw"), ours, theirs[:3], strict=True):
        assert_close(got, want, 1e-5, name)


# --- property: drawn models -------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@budget(ci=6, soak=300)
@given(model=conv_models(max_convs=2, max_plain_ops=2))
def test_drawn_models_match_jax_vjp(model: dict[str, Any], target: str) -> None:
    graph = convc.load_model_text(json.dumps(model))
    outputs = {v.name for v in graph.outputs}  # an output's cotangent input already takes `<name>.grad` (G5)
    sources = [*graph.inputs, *(op.result for op in graph.ops if op.kind == "constant")]
    wrt = [v.name for v in sources if v.type.dtype.startswith(("f", "bf")) and v.name not in outputs]
    dtypes = {v.type.dtype for v in graph.values()}
    tol = 6e-2 if "bf16" in dtypes else 2e-2 if "f16" in dtypes else 1e-3
    check_grad(graph, wrt, target, tol=tol)
