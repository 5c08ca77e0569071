"""convc.builders: each step builds the one op it names, only along the dims it is given,
and a step that would do nothing builds none."""

from __future__ import annotations

import numpy as np
from convc import Builder, Graph
from convc.builders import leading, pad_along, relayout, slice_along, zeros
from convc.ir import Value
from convc.rewrite import Rewriter


def _anchored(shape: tuple[int, ...]) -> tuple[Graph, Rewriter, Value]:
    """A graph `x -> relu -> out` and a rewriter anchored at the relu."""
    b = Builder("g")
    x = b.input("x", shape, "f32")
    b.output(b.relu(x, name="r"))
    graph = b.build()
    return graph, Rewriter(graph, graph.ops[-1]), graph.inputs[0]


def test_slice_along_names_only_the_sliced_dims_and_strides_only_when_given() -> None:
    graph, rewriter, x = _anchored((2, 6, 5))
    plain = slice_along(rewriter, x, {1: (1, 4)}, "s")
    strided = slice_along(rewriter, x, {2: (0, 5, 2)}, "t")
    assert plain.type.shape == (2, 3, 5) and dict(plain.producer.attrs) == {
        "start_indices": (0, 1, 0), "limit_indices": (2, 4, 5)}
    assert strided.type.shape == (2, 6, 3) and strided.producer.attrs["strides"] == (1, 1, 2)


def test_steps_that_would_do_nothing_build_nothing() -> None:
    graph, rewriter, x = _anchored((2, 3))
    assert leading(rewriter, x, (2, 3), "l") is x and pad_along(rewriter, x, {1: (0, 0, 0)}, "p") is x
    assert relayout(rewriter, x, (0, 1), (0, 1), "r") is x
    assert len(graph.ops) == 1


def test_relayout_moves_each_role_to_its_target_dim() -> None:
    graph, rewriter, x = _anchored((2, 3, 4, 5))  # laid out N, C, H, W
    nhwc = relayout(rewriter, x, (0, 1, 2, 3), (0, 3, 1, 2), "nhwc")
    assert nhwc.type.shape == (2, 4, 5, 3) and nhwc.producer.attrs["permutation"] == (0, 2, 3, 1)


def test_zeros_and_pad_along() -> None:
    graph, rewriter, x = _anchored((2, 3))
    padded = pad_along(rewriter, x, {1: (1, 2, 1)}, "p")
    z = zeros(rewriter, (4, 1), "f64", "z")
    assert padded.type.shape == (2, 8) and padded.producer.attrs["padding_config"] == ((0, 0, 0), (1, 2, 1))
    assert z.type.shape == (4, 1) and str(z.type.dtype) == "f64"
    assert [op.kind for op in graph.ops[:-1]] == ["pad", "constant", "broadcast_in_dim"]
    assert np.asarray(graph.ops[1].attrs["value"]).dtype == np.float64


def test_rounded_quotient_is_ieee_f32_division_through_xla() -> None:
    """`rounded_quotient` twice in a row (a pool's average over its count, then over a scale: the constants XLA
    turns into products with their reciprocals, and the chain it turns into one division), run by XLA on the CPU:
    every quotient bit for bit numpy's f32 division, step by step, on 200,000 values of every magnitude."""
    from convc import run
    from convc.builders import rounded_quotient

    rng = np.random.default_rng(0)
    values = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-3, 4, 200_000)).astype(np.float32)
    counts = rng.integers(1, 10, values.shape).astype(np.float32)
    graph, rewriter, x = _anchored(values.shape)
    count = rewriter.create("constant", suffix="count", value=counts)
    scale = rewriter.create("broadcast_in_dim", rewriter.create("constant", suffix="scale", value=np.float32(0.0437)),
                            suffix="scale_b", shape=values.shape, broadcast_dimensions=())
    average = rounded_quotient(rewriter, x, count, "average")
    rewriter.replace_anchor(rounded_quotient(rewriter, average, scale, "steps"))
    (got,) = run(graph, [values], platform="cpu").outputs
    want = (values / counts).astype(np.float32) / np.float32(0.0437)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
