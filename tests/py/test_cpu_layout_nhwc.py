"""cpu-layout-nhwc against the jax.lax oracle: for every op kind the pass moves to channels
last, an NCHW graph with that op between two convs is rewritten by the pass, compiled and run
by PJRT (XLA CPU), and compared with `convc.reference.evaluate` of the graph as written.
Each case also counts the transposes left in the rewritten graph, so a case whose op the
pass stopped at (a transpose back before it and one after) fails rather than passing
vacuously. Last, the structure the pass exists for: XLA's optimized HLO of a 3-conv NCHW
chain compiled for `--target cpu` holds at most 2 transposes (one in, one out)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import convc
import numpy as np
import pytest
from convc.compile import Compiler
from convc.ir import Value
from convc.ops import OPS
from convc.passes import default_pipeline
from convc.passes.cpu_layout_nhwc import MOVES, CpuLayoutNhwc
from convc.reference import evaluate
from convc.runtime import compile_stablehlo

PIPELINE = default_pipeline("generic") + ",cpu-layout-nhwc"
RunStablehlo = Callable[..., list[np.ndarray]]
NCHW = ("NCHW", "OIHW", "NCHW")
LAYOUTS = {3: ("NCH", "OIH", "NCH"), 4: NCHW, 5: ("NCDHW", "OIDHW", "NCDHW")}


def conv(b: convc.Builder, x: Value, out_features: int, rng: np.random.Generator, kernel: int = 3) -> Value:
    """A channels-first SAME conv of `x` with a constant kernel (which the pass folds to HWIO)."""
    rank = x.type.rank
    shape = (out_features, x.type.shape[1], *(kernel,) * (rank - 2))
    w = b.constant(f"w{len(b.graph.ops)}", (0.3 * rng.standard_normal(shape)).astype(np.float32))
    return b.conv(x, w, padding="SAME", dimension_numbers=LAYOUTS[rank])


def positive(b: convc.Builder, h: Value) -> Value:
    """exp(h): an operand log, sqrt, rsqrt, divide and power are defined on."""
    return b.exp(h)


@dataclass(frozen=True)
class Case:
    """An op kind between two convs: `body` takes the builder, the first conv's NCHW result
    and a second NCHW value of the same type, and returns an NCHW value for the last conv."""

    name: str
    body: Callable[[convc.Builder, Value, Value], Value]
    transposes: int = 2  # what the rewritten graph may hold: the input's and the output's
    shape: tuple[int, ...] = (2, 3, 7, 6)


def _unary(kind: str, **attrs: object) -> Case:
    return Case(kind, lambda b, h, g: getattr(b, kind)(h, **attrs))


def _binary(kind: str, lhs_positive: bool = False) -> Case:
    return Case(kind, lambda b, h, g: getattr(b, kind)(positive(b, h) if lhs_positive else h, g))


CASES = (
    _unary("relu"), _unary("exp"), _unary("tanh"), _unary("logistic"), _unary("negate"), _unary("abs"), _unary("erf"),
    _unary("clamp", min=-0.5, max=0.25),
    Case("log", lambda b, h, g: b.log(positive(b, h))),
    Case("sqrt", lambda b, h, g: b.sqrt(positive(b, h))),
    Case("rsqrt", lambda b, h, g: b.rsqrt(positive(b, h))),
    _binary("add"), _binary("multiply"), _binary("subtract"), _binary("maximum"), _binary("minimum"),
    Case("divide", lambda b, h, g: b.divide(g, positive(b, h))),
    Case("power", lambda b, h, g: b.power(positive(b, h), g)),
    Case("relu_grad", lambda b, h, g: b.relu_grad(g, h)),
    Case("convert", lambda b, h, g: b.convert(b.relu(b.convert(h, new_dtype="f64")), new_dtype="f32")),
    Case("bias_add", lambda b, h, g: b.bias_add(h, b.constant("bias", np.arange(1.0, 5.0, dtype=np.float32)), axis=1)),
    Case("bias_add_negative_axis", lambda b, h, g: b.bias_add(h, b.constant("bias", np.arange(4.0, dtype=np.float32)), axis=-3)),
    Case("broadcast_operand", lambda b, h, g: b.multiply(h, b.broadcast_in_dim(
        b.constant("scale", np.linspace(0.5, 2.0, 4, dtype=np.float32)), shape=h.type.shape, broadcast_dimensions=(1,)))),
    Case("constant_operand", lambda b, h, g: b.add(h, b.constant(
        "offset", np.linspace(-1.0, 1.0, int(np.prod(h.type.shape)), dtype=np.float32).reshape(h.type.shape)))),
    Case("concatenate_channels", lambda b, h, g: b.concatenate([h, g], dimension=1)),
    Case("concatenate_rows", lambda b, h, g: b.concatenate([h, g], dimension=2)),
    Case("max_pool", lambda b, h, g: b.max_pool(h, window_dimensions=(1, 1, 3, 2), window_strides=(1, 1, 2, 1),
                                                padding=((0, 0), (0, 0), (1, 1), (0, 1)), window_dilation=(1, 1, 1, 2))),
    Case("max_pool_same", lambda b, h, g: b.max_pool(h, window_dimensions=(1, 1, 3, 3), window_strides=(1, 1, 2, 2), padding="SAME")),
    Case("sum_pool", lambda b, h, g: b.sum_pool(h, window_dimensions=(1, 1, 2, 2), window_strides=(1, 1, 2, 2), base_dilation=(1, 1, 2, 1))),
    Case("pad", lambda b, h, g: b.pad(h, padding_config=((0, 0, 0), (1, 0, 0), (2, -1, 1), (0, 1, 0)), padding_value=0.5)),
    Case("slice", lambda b, h, g: b.slice(h, start_indices=(0, 1, 1, 0), limit_indices=(2, 4, 7, 5), strides=(1, 1, 2, 2))),
    Case("reverse", lambda b, h, g: b.reverse(h, dimensions=(1, 3))),
    # the kept dims [N, C] or [N, H, W] come out in the written order: nothing to put back
    Case("reduce_sum_spatial", lambda b, h, g: b.broadcast_in_dim(b.reduce_sum(h, axes=(2, 3)), shape=h.type.shape,
                                                                 broadcast_dimensions=(0, 1))),
    Case("reduce_sum_channels", lambda b, h, g: b.broadcast_in_dim(b.reduce_sum(h, axes=(1,)), shape=h.type.shape,
                                                                  broadcast_dimensions=(0, 2, 3))),
    # [N, C, H] kept, [N, H, C] computed: a transpose puts it back (rank 3: it is held in turn)
    Case("reduce_max_width", lambda b, h, g: b.broadcast_in_dim(b.reduce_max(h, axes=(3,)), shape=h.type.shape,
                                                               broadcast_dimensions=(0, 1, 2)), transposes=3),
    Case("transpose_to_nhwc_and_back", lambda b, h, g: b.transpose(b.relu(b.transpose(h, permutation=(0, 2, 3, 1))),
                                                                   permutation=(0, 3, 1, 2))),
    Case("transpose_swapping_rows", lambda b, h, g: b.transpose(h, permutation=(0, 1, 3, 2)), transposes=3, shape=(2, 3, 6, 6)),
    Case("conv1d_chain", lambda b, h, g: b.add(h, g), shape=(2, 3, 9)),
    Case("conv3d_chain", lambda b, h, g: b.relu(b.add(h, g)), shape=(1, 2, 4, 5, 3)),
)


def network(case: Case, rng: np.random.Generator) -> convc.Graph:
    """x -> conv -> (the case's op, with a second conv's result as its other operand) -> conv."""
    b = convc.Builder(case.name)
    x = b.input("x", case.shape)
    h = conv(b, x, 4, rng)
    g = conv(b, x, 4, rng)
    y = case.body(b, h, g)
    b.output(conv(b, y, 5, rng))
    return b.build()


def _max_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max(initial=0.0) / (1.0 + np.abs(want).max(initial=0.0)))


def _transposes(graph: convc.Graph) -> int:
    return sum(op.kind == "transpose" for op in graph.ops)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_moved_op_matches_lax(case: Case, rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """The graph rewritten by cpu-layout-nhwc, run by XLA CPU, matches jax.lax on the graph
    as written, and holds no more transposes than the case allows (one in, one out)."""
    graph = network(case, rng)
    lowered = Compiler(pipeline=PIPELINE).run_passes(graph.clone())
    assert _transposes(lowered) <= case.transposes, f"{case.name}: {_transposes(lowered)} transposes left"
    assert all(op.attrs["dimension_numbers"].out_spec[1] == op.result.type.rank - 1 for op in lowered.ops if op.kind == "conv"), \
        "a conv still writes channels-first"
    inputs = [rng.standard_normal(case.shape).astype(np.float32)]
    (want,) = evaluate(graph, inputs)
    (got,) = run_stablehlo(convc.compile_graph(graph, pipeline=PIPELINE), inputs, "cpu")
    assert got.shape == want.shape
    assert _max_error(got, want) < 2e-5, f"{case.name} differs from jax.lax"


def test_op_it_does_not_know_stops_it(rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """A reshape between two convs is computed as written: the conv before it is transposed
    back first, and the conv after it reads the reshaped NCHW value (a transpose of its
    own); the numbers match jax.lax."""
    b = convc.Builder("boundary")
    x = b.input("x", (1, 4, 6, 6))
    h = conv(b, x, 4, rng)
    y = b.reshape(h, new_sizes=(1, 8, 6, 3))
    b.output(conv(b, y, 2, rng))
    graph = b.build()
    lowered = Compiler(pipeline=PIPELINE).run_passes(graph.clone())
    reshape = next(op for op in lowered.ops if op.kind == "reshape")
    source = reshape.operands[0].producer
    assert source is not None and source.kind == "transpose" and reshape.operands[0].type.shape == (1, 4, 6, 6)
    inputs = [rng.standard_normal((1, 4, 6, 6)).astype(np.float32)]
    (want,) = evaluate(graph, inputs)
    (got,) = run_stablehlo(convc.compile_graph(graph, pipeline=PIPELINE), inputs, "cpu")
    assert _max_error(got, want) < 2e-5


def test_gradient_step_matches_lax(rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """The gradient step of an NCHW network (`grad` with respect to the input and every
    kernel: its backward convs read forward activations and cotangents, some as the kernel
    operand) rewritten by the pass, run by XLA CPU, matches jax.lax on the gradient graph as
    written; the transposes the pass leaves are at most one per graph input and output."""
    case = Case("grad", lambda b, h, g: b.max_pool(b.relu(b.add(h, g)), window_dimensions=(1, 1, 2, 2), window_strides=(1, 1, 2, 2)))
    graph = network(case, rng)
    wrt = ",".join(["x", *(op.result.name for op in graph.ops if op.kind == "constant")])
    grad = f"grad{{wrt={wrt}}}," + default_pipeline("generic")
    written = Compiler(pipeline=grad).run_passes(graph.clone())
    moved = Compiler(pipeline=grad + ",cpu-layout-nhwc,dce").run_passes(graph.clone())
    assert _transposes(moved) <= len(moved.inputs) + len(moved.outputs)
    assert any(op.kind == "conv" and op.attrs["dimension_numbers"].out_spec[1] == 3 for op in moved.ops)
    inputs = [rng.standard_normal(v.type.shape).astype(np.float32) for v in written.inputs]
    want = evaluate(written, inputs)
    got = run_stablehlo(convc.compile_graph(graph, pipeline=grad + ",cpu-layout-nhwc"), inputs, "cpu")
    for name, g, w in zip((v.name for v in written.outputs), got, want, strict=True):
        assert g.shape == w.shape and _max_error(g, w) < 2e-5, f"{name} differs from jax.lax"


def test_the_pass_accounts_for_every_attribute_of_the_kinds_it_moves() -> None:
    """Each op kind the pass moves declares only attributes its rewrite moves or knows to name
    no dim: a new attribute on one of them must be taught to the pass (until then, an op
    carrying it stays as written)."""
    for kind, move in MOVES.items():
        assert set(OPS[kind].attrs) <= move.attrs, f"{kind}: {sorted(set(OPS[kind].attrs) - move.attrs)} unknown to the pass"


def test_an_op_with_an_attribute_it_does_not_know_stays_as_written(rng: np.random.Generator) -> None:
    """A relu that carries an attribute outside the pass's table (a made-up one, set behind
    the verifier's back) is not moved: the conv's result is transposed back before it."""
    graph = Compiler(pipeline=default_pipeline("generic")).run_passes(network(Case("relu", lambda b, h, g: b.relu(h)), rng))
    relu = next(op for op in graph.ops if op.kind == "relu")
    relu.attrs["made_up"] = 1
    CpuLayoutNhwc().run(graph)
    relu = next(op for op in graph.ops if op.kind == "relu")
    assert relu.result.type.shape == (2, 4, 7, 6)
    source = relu.operands[0].producer
    assert source is not None and source.kind == "transpose"


def _hlo_ops(text: str, opcode: str) -> int:
    """How many instructions of `opcode` the HLO text holds, fused computations included."""
    return len(re.findall(rf"= \S+ {opcode}\(", text))


def conv_chain(rng: np.random.Generator, sizes: Sequence[int] = (3, 16, 16, 16)) -> convc.Graph:
    """Three NCHW 3x3 convs with bias_add and relu after each, as an ONNX import writes them."""
    b = convc.Builder("chain")
    h = b.input("x", (1, sizes[0], 20, 20))
    for out_features in sizes[1:]:
        bias = b.constant(f"b{len(b.graph.ops)}", rng.standard_normal(out_features).astype(np.float32))
        h = b.relu(b.bias_add(conv(b, h, out_features, rng), bias, axis=1))
    b.output(h)
    return b.build()


def test_nchw_chain_compiles_to_at_most_two_transposes(rng: np.random.Generator) -> None:
    """XLA's optimized HLO of a 3-conv NCHW chain lowered for `--target cpu` transposes at
    most twice (the input to NHWC, the result back), not around every conv."""
    graph = conv_chain(rng)
    compiler = Compiler(target="cpu")
    text = compiler.emit(compiler.run_passes(graph.clone()), "stablehlo").decode()
    hlo = compile_stablehlo(text, "cpu").hlo_text()
    assert _hlo_ops(hlo, "transpose") <= 2, f"{_hlo_ops(hlo, 'transpose')} transposes in XLA's optimized HLO"
