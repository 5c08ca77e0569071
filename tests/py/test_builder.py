"""The builder API: result types are inferred (and checked) at each call, invalid
calls fail at the caller's line with the broken constraint's id, and every plain
op computes what jax.lax/numpy compute, through the full compile-and-run path."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from convc import Builder, ConvcError, Value
from convc.dtypes import from_numpy, numpy_dtype
from convc.ops import ConvDimensionNumbers
from convc.ops.conv import resolve_dimension_numbers
from convc.passes import PASSES
from jax import lax

THIS_FILE = Path(__file__).resolve()


def line_of(marker: str) -> int:
    """The line in this file that carries `marker` in a comment (exactly one)."""
    hits = [n for n, text in enumerate(THIS_FILE.read_text().splitlines(), start=1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Exact for integers; a few ulps of the element type for floats."""
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        tolerance = {2: 1e-2, 4: 1e-6, 8: 1e-12}[got.dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance)


def assert_type_is(value: Value, expected: Any) -> None:
    """A builder result's type against an array or jax.ShapeDtypeStruct from the oracle."""
    assert value.type.shape == tuple(expected.shape)
    assert value.type.dtype == from_numpy(np.dtype(expected.dtype))


# --- conv: inferred at the call, as lax infers it -------------------------------------------------

CONV_SHAPES = [
    pytest.param((2, 4, 9), (6, 2, 3), dict(window_strides=(2,), padding="SAME", feature_group_count=2), id="1d-grouped-same"),
    pytest.param((1, 7, 6, 3), (3, 2, 3, 4), dict(window_strides=(2, 1), padding=((1, 0), (-1, 2)), rhs_dilation=(1, 2),
                                                  dimension_numbers=("NHWC", "HWIO", "NHWC")), id="2d-nhwc-negative-pad"),
    pytest.param((4, 2, 5, 4), (6, 2, 2, 2), dict(lhs_dilation=(2, 1), padding=((1, 1), (0, 0)), batch_group_count=2), id="2d-batch-groups"),
    pytest.param((1, 2, 4, 3, 3), (2, 2, 2, 1, 2), dict(padding="SAME_LOWER", window_strides=(3, 1, 2),
                                                        dimension_numbers=("NCDHW", "OIDHW", "NDHWC")), id="3d-same-lower"),
    pytest.param((5, 2, 6, 4), (3, 3, 4, 2), dict(padding="VALID", dimension_numbers=("HNCW", "WOHI", "CWNH"),
                                                  feature_group_count=3), id="2d-odd-layouts"),
    pytest.param((2, 3, 5), (4, 3, 2), dict(preferred_element_type="f32", precision="HIGHEST"), id="1d-bf16-accumulate-f32"),
]


@pytest.mark.parametrize(("lhs_shape", "rhs_shape", "attrs"), CONV_SHAPES)
def test_conv_result_type_is_inferred_at_the_call(lhs_shape: tuple[int, ...], rhs_shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    dtype = "bf16" if "preferred_element_type" in attrs else "f32"
    b = Builder()
    y = b.conv(b.input("x", lhs_shape, dtype), b.input("w", rhs_shape, dtype), **attrs)
    lax_attrs = dict(attrs, precision=lax.Precision.HIGHEST if "precision" in attrs else None,
                     preferred_element_type=numpy_dtype(attrs["preferred_element_type"]) if "preferred_element_type" in attrs else None)
    strides = lax_attrs.pop("window_strides", (1,) * (len(lhs_shape) - 2))
    padding = lax_attrs.pop("padding", "VALID")
    spec = [jax.ShapeDtypeStruct(s, numpy_dtype(dtype)) for s in (lhs_shape, rhs_shape)]
    assert_type_is(y, jax.eval_shape(lambda x, w: lax.conv_general_dilated(x, w, strides, padding, **lax_attrs), *spec))


@pytest.mark.parametrize("spatial_rank", [1, 2, 3])
def test_default_dimension_numbers_follow_lax_by_rank(spatial_rank: int, rng: np.random.Generator, compile_and_run: Any) -> None:
    """No dimension_numbers: lax's default (NC..., OI..., NC...) for every rank, in shape, numbers and values."""
    lhs_shape, rhs_shape = (2, 3) + (5,) * spatial_rank, (4, 3) + (2,) * spatial_rank
    b = Builder()
    y = b.conv(b.input("x", lhs_shape), b.input("w", rhs_shape), padding="SAME")
    b.output(y)
    graph = b.build()
    assert "dimension_numbers" not in graph.ops[0].attrs
    PASSES["canonicalize-dimension-numbers"]().run(graph)
    expected = lax.conv_dimension_numbers(lhs_shape, rhs_shape, None)
    assert graph.ops[0].attrs["dimension_numbers"] == ConvDimensionNumbers(*expected)
    x, w = rng.standard_normal(lhs_shape).astype(np.float32), rng.standard_normal(rhs_shape).astype(np.float32)
    want = lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), (1,) * spatial_rank, "SAME")
    assert_type_is(y, want)
    assert_close(compile_and_run(graph, [x, w])[0], np.asarray(want))


@pytest.mark.parametrize("layouts", [
    ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW"), ("HNCW", "WOHI", "CWNH"),
    ("NWC", "WIO", "NWC"), ("CDNHW", "IHDWO", "WNDHC"),
])
def test_layout_strings_resolve_as_lax_does(layouts: tuple[str, str, str]) -> None:
    rank = len(layouts[0])
    shape = tuple(range(2, 2 + rank))
    assert resolve_dimension_numbers(layouts, rank) == ConvDimensionNumbers(*lax.conv_dimension_numbers(shape, shape, layouts))


# --- invalid calls: located at the caller's line, naming the constraint -----------------------------


@dataclass(frozen=True)
class BadConv:
    constraint: str
    attrs: dict[str, Any] = field(default_factory=dict)
    lhs: tuple[int, ...] = (2, 4, 5, 5)
    rhs: tuple[int, ...] = (6, 4, 3, 3)
    rhs_dtype: str = "f32"


BAD_CONVS = [
    BadConv("C1", rhs=(6, 4, 3)),
    BadConv("C2", {"window_strides": (1,)}),
    BadConv("C3", {"window_strides": (1, 0)}),
    BadConv("C4", {"padding": ((1, 1),)}),
    BadConv("C4", {"padding": ((1, 1, 1), (0, 0, 0))}),
    BadConv("C5", {"lhs_dilation": (1, 1, 1)}),
    BadConv("C6", {"lhs_dilation": (0, 1)}),
    BadConv("C7", {"rhs_dilation": (2,)}),
    BadConv("C8", {"rhs_dilation": (1, -1)}),
    BadConv("C10", {"batch_group_count": 3}),
    BadConv("C11", {"feature_group_count": 3}),
    BadConv("C12", {"dimension_numbers": ("NCH", "OIHW", "NCHW")}),
    BadConv("C13", {"dimension_numbers": ("NCHH", "OIHW", "NCHW")}),
    BadConv("C14", rhs=(6, 3, 3, 3)),
    BadConv("C15", {"batch_group_count": 2}, rhs=(5, 4, 3, 3)),
    BadConv("C16", {"feature_group_count": 2}, rhs=(5, 2, 3, 3)),
    BadConv("C17", {"dimension_numbers": ("NCHW", "OIH", "NCHW")}),
    BadConv("C18", {"dimension_numbers": ("NCHW", "OOHW", "NCHW")}),
    BadConv("C19", {"dimension_numbers": ("NCHW", "OIHW", "NCW")}),
    BadConv("C20", {"dimension_numbers": ("NCHW", "OIHW", "NNHW")}),
    BadConv("C21", {"feature_group_count": 0}),
    BadConv("C22", {"batch_group_count": 0}),
    BadConv("C23", {"feature_group_count": 2, "batch_group_count": 2}, rhs=(6, 2, 3, 3)),
    BadConv("C24", {"precision": ("DEFAULT", "HIGH", "HIGHEST")}),
    BadConv("C27", rhs_dtype="f16"),
    BadConv("L1", {"dimension_numbers": ("NCHW", "OIHW", "NCHX")}),
    BadConv("L2", {"padding": ((-6, 0), (0, 0))}),
]


@pytest.mark.parametrize("bad", BAD_CONVS, ids=lambda bad: f"{bad.constraint}-{'-'.join(bad.attrs) or 'shapes'}")
def test_invalid_conv_fails_at_the_call_site_with_its_constraint(bad: BadConv) -> None:
    b = Builder()
    x, w = b.input("x", bad.lhs), b.input("w", bad.rhs, bad.rhs_dtype)
    with pytest.raises(ConvcError) as caught:
        b.conv(x, w, name="c", **bad.attrs)  # conv call site
    err = caught.value
    assert err.constraint == bad.constraint
    assert (Path(err.loc.file).resolve(), err.loc.line) == (THIS_FILE, line_of("conv call site"))
    assert (err.loc.node, err.loc.op) == ("c", "conv")
    assert str(err).startswith(f"{err.loc.file}:{err.loc.line}:1: error: 'c' (conv): ")
    assert str(err).endswith(f"[{bad.constraint}]") and "\n" not in str(err)
    assert [op.name for op in b.graph.ops] == [], "a failed call must not add an op"


BAD_PLAIN_CALLS: list[tuple[str, Callable[[Builder, Value], Value], str]] = [
    ("bias_add", lambda b, x: b.bias_add(x, b.input("bias", (5,)), axis=1), r"bias must have shape \[3\]"),
    ("add", lambda b, x: b.add(x, b.input("other", (2, 3, 4), "f16")), "operand types differ"),
    ("multiply", lambda b, x: b.multiply(x, b.input("other", (2, 3))), "operand types differ"),
    ("reshape", lambda b, x: b.reshape(x, (5, 5)), "cannot reshape"),
    ("transpose", lambda b, x: b.transpose(x, (0, 0, 1)), "not a permutation"),
    ("reverse", lambda b, x: b.reverse(x, (3,)), "out of range"),
    ("pad", lambda b, x: b.pad(x, [(0, 0, 0)] * 2), "padding_config has 2 rows"),
    ("pad", lambda b, x: b.pad(x, [(0, 0, -1)] * 3), "interior padding must be non-negative"),
    ("slice", lambda b, x: b.slice(x, (0, 0, 0), (2, 4, 4)), "out of bounds"),
    ("concatenate", lambda b, x: b.concatenate([x, b.input("other", (2, 4, 5))], 1), "does not match"),
    ("convert", lambda b, x: b.convert(x, "f8"), "must be a dtype"),
    ("relu", lambda b, x: b.op("relu", x, x), "takes 1 inputs"),
    ("bogus", lambda b, x: b.op("bogus", x), "unknown op 'bogus'"),
    ("conv", lambda b, x: b.op("conv", x, x, windowstrides=(1,)), "did you mean 'window_strides'"),
]


@pytest.mark.parametrize(("kind", "call", "message"), BAD_PLAIN_CALLS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(BAD_PLAIN_CALLS)])
def test_invalid_plain_op_fails_at_the_call_site(kind: str, call: Callable[[Builder, Value], Value], message: str) -> None:
    b = Builder()
    x = b.input("x", (2, 3, 4))
    with pytest.raises(ConvcError, match=message) as caught:
        call(b, x)
    err = caught.value
    assert (Path(err.loc.file).resolve(), err.loc.line) == (THIS_FILE, call.__code__.co_firstlineno)
    assert err.loc.op == kind
    assert [op.kind for op in b.graph.ops] == []


def test_input_and_name_errors_point_at_the_caller() -> None:
    b = Builder()
    b.input("x", (2, 3))
    with pytest.raises(ConvcError, match="already defined") as duplicate:
        b.input("x", (2, 3))  # duplicate input
    with pytest.raises(ConvcError, match="unknown dtype 'float8'") as dtype:
        b.input("y", (2,), "float8")  # bad dtype
    with pytest.raises(ConvcError, match="invalid shape") as shape:
        b.input("z", (2, -1))  # bad shape
    for caught, marker in ((duplicate, "duplicate input"), (dtype, "bad dtype"), (shape, "bad shape")):
        assert caught.value.loc.line == line_of(marker)


def test_build_without_outputs_is_a_user_error_at_the_call() -> None:
    """As a JSON model without outputs: a located error at build(), not an emitter failure."""
    b = Builder("forgot")
    b.relu(b.input("x", (2, 3)))
    with pytest.raises(ConvcError, match=r"graph 'forgot' has no outputs: call output\(\.\.\.\) before build\(\)") as caught:
        b.build()  # no outputs
    assert caught.value.loc.line == line_of("no outputs")


def test_conv_takes_a_lowering_pin_as_json_does() -> None:
    b = Builder()
    x, w = b.input("x", (1, 8, 8, 4)), b.input("w", (3, 3, 4, 4))
    pinned = b.conv(x, w, dimension_numbers=("NHWC", "HWIO", "NHWC"), lowering="cpu-conv-eigen-path")
    assert b.graph.ops[-1].attrs["lowering"] == "cpu-conv-eigen-path" and pinned.type.shape == (1, 6, 6, 4)
    with pytest.raises(ConvcError, match=r"\[P1\]"):
        b.conv(x, w, dimension_numbers=("NHWC", "HWIO", "NHWC"), lowering="fastest")
    assert Builder.__doc__ and "output" in Builder.__doc__


def test_a_failed_call_leaves_its_name_free() -> None:
    """After a rejected call the user can retry with the same name."""
    b = Builder()
    x = b.input("x", (2, 3, 4))
    with pytest.raises(ConvcError):
        b.reshape(x, (5,), name="flat")
    assert b.reshape(x, (24,), name="flat").type.shape == (24,)


# --- plain ops: numbers through compile + PJRT against numpy / lax ---------------------------------


@dataclass(frozen=True)
class PlainCase:
    label: str
    inputs: Sequence[tuple[tuple[int, ...], str]]
    build: Callable[..., Value]
    oracle: Callable[..., Any]


def _int_valued(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype.startswith("i"):
        return rng.integers(-50, 50, shape).astype(numpy_dtype(dtype))
    return (rng.standard_normal(shape) * 3).astype(numpy_dtype(dtype))


PLAIN_CASES = [
    PlainCase("bias_add-axis1", [((2, 3, 4), "f32"), ((3,), "f32")],
              lambda b, x, c: b.bias_add(x, c, axis=1), lambda x, c: x + c[None, :, None]),
    PlainCase("bias_add-last-bf16", [((2, 3, 4), "bf16"), ((4,), "bf16")],
              lambda b, x, c: b.bias_add(x, c), lambda x, c: x + c),
    PlainCase("add-f32", [((3, 5), "f32"), ((3, 5), "f32")], lambda b, x, y: b.add(x, y), np.add),
    PlainCase("add-i32", [((3, 5), "i32"), ((3, 5), "i32")], lambda b, x, y: b.add(x, y), np.add),
    PlainCase("multiply-f16", [((4, 2), "f16"), ((4, 2), "f16")], lambda b, x, y: b.multiply(x, y), np.multiply),
    PlainCase("multiply-i8", [((4, 2), "i8"), ((4, 2), "i8")], lambda b, x, y: b.multiply(x, y),
              lambda x, y: (x.astype(np.int32) * y).astype(np.int8)),
    PlainCase("relu-f32", [((2, 7), "f32")], lambda b, x: b.relu(x), lambda x: np.maximum(x, 0)),
    PlainCase("relu-i32", [((9,), "i32")], lambda b, x: b.relu(x), lambda x: np.maximum(x, 0)),
    PlainCase("relu-f64", [((3, 2), "f64")], lambda b, x: b.relu(x), lambda x: np.maximum(x, 0)),
    PlainCase("reshape", [((2, 3, 4), "f32")], lambda b, x: b.reshape(x, (4, 6)), lambda x: x.reshape(4, 6)),
    PlainCase("reshape-to-scalar", [((1, 1), "f32")], lambda b, x: b.reshape(x, ()), lambda x: x.reshape(())),
    PlainCase("transpose", [((2, 3, 4), "f32")], lambda b, x: b.transpose(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1)),
    PlainCase("reverse", [((2, 3, 4), "bf16")], lambda b, x: b.reverse(x, (0, 2)), lambda x: x[::-1, :, ::-1]),
    PlainCase("pad-negative-interior", [((3, 4, 5), "f32")],
              lambda b, x: b.pad(x, [(1, -1, 1), (0, 2, 0), (-2, 0, 2)], padding_value=1.5),
              lambda x: lax.pad(x, np.float32(1.5), [(1, -1, 1), (0, 2, 0), (-2, 0, 2)])),
    PlainCase("pad-minus-inf", [((2, 3), "f16")], lambda b, x: b.pad(x, [(1, 1, 0), (0, 1, 1)], padding_value=float("-inf")),
              lambda x: lax.pad(x, np.float16(-np.inf), [(1, 1, 0), (0, 1, 1)])),
    PlainCase("slice-strided", [((3, 5, 7), "f32")], lambda b, x: b.slice(x, (0, 1, 2), (3, 4, 7), (2, 1, 3)),
              lambda x: x[0:3:2, 1:4, 2:7:3]),
    PlainCase("slice-empty", [((3, 4), "i32")], lambda b, x: b.slice(x, (1, 2), (1, 4)), lambda x: x[1:1, 2:4]),
    PlainCase("concatenate", [((2, 1, 3), "f32"), ((2, 4, 3), "f32"), ((2, 2, 3), "f32")],
              lambda b, x, y, z: b.concatenate([x, y, z], 1), lambda x, y, z: np.concatenate([x, y, z], 1)),
    PlainCase("convert-f32-bf16", [((3, 4), "f32")], lambda b, x: b.convert(x, "bf16"), lambda x: x.astype(ml_dtypes.bfloat16)),
    PlainCase("convert-f32-i32", [((3, 4), "f32")], lambda b, x: b.convert(x, "int32"), lambda x: x.astype(np.int32)),
    PlainCase("convert-i32-f16", [((5,), "i32")], lambda b, x: b.convert(x, "f16"), lambda x: x.astype(np.float16)),
    PlainCase("convert-f16-f32", [((5,), "f16")], lambda b, x: b.convert(x, "float32"), lambda x: x.astype(np.float32)),
]


@pytest.mark.parametrize("case", PLAIN_CASES, ids=lambda c: c.label)
def test_plain_op_matches_numpy_and_lax(case: PlainCase, rng: np.random.Generator, compile_and_run: Any) -> None:
    b = Builder(case.label)
    values = [b.input(f"in{i}", shape, dtype) for i, (shape, dtype) in enumerate(case.inputs)]
    result = case.build(b, *values)
    b.output(result)
    arrays = [_int_valued(shape, dtype, rng) for shape, dtype in case.inputs]
    want = np.asarray(case.oracle(*arrays))
    assert_type_is(result, want)
    assert_close(compile_and_run(b.build(), arrays)[0], want)


CONSTANTS = [
    pytest.param(np.array([[1.5, -2.0], [0.25, 3.0]], np.float32), id="f32-small"),
    pytest.param(np.linspace(-3, 3, 60, dtype=np.float32).reshape(3, 4, 5), id="f32-large"),
    pytest.param(np.full((4, 4), 0.1, np.float32), id="f32-splat"),
    pytest.param(np.array(7.25, np.float32), id="f32-scalar"),
    pytest.param(np.array([np.inf, -np.inf, 0.5], np.float32), id="f32-non-finite"),
    pytest.param(np.arange(-10, 10, dtype=np.float16).reshape(4, 5) / 3, id="f16-large"),
    pytest.param(np.array([1.0, -2.5, 1e30], ml_dtypes.bfloat16), id="bf16-small"),
    pytest.param(np.arange(-128, 128, 8, dtype=np.int8).reshape(4, 8), id="i8-large"),
    pytest.param(np.array([2**31 - 1, -(2**31), 0], np.int32), id="i32-extremes"),
    pytest.param(np.arange(18, dtype=np.float64).reshape(3, 6) / 7, id="f64-large"),
]


@pytest.mark.parametrize("value", CONSTANTS)
def test_constant_round_trips_through_stablehlo(value: np.ndarray, compile_and_run: Any) -> None:
    """A graph with no inputs returning a constant: every literal form the emitter writes, bit for bit."""
    b = Builder("constants")
    c = b.constant("c", value)
    b.output(c)
    assert_type_is(c, value)
    (got,) = compile_and_run(b.build(), [])
    assert got.dtype == value.dtype
    np.testing.assert_array_equal(got, value)


def test_constant_with_dtype_feeds_an_op(rng: np.random.Generator, compile_and_run: Any) -> None:
    b = Builder()
    x = b.input("x", (2, 3), "bf16")
    c = b.constant("c", [[1, 2, 3], [4, 5, 6]], dtype="bfloat16")
    y = b.multiply(x, c)
    b.output(y)
    arrays = [rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)]
    want = arrays[0] * np.array([[1, 2, 3], [4, 5, 6]], ml_dtypes.bfloat16)
    assert_type_is(y, want)
    assert_close(compile_and_run(b.build(), arrays)[0], want)


def test_a_small_network_matches_lax_end_to_end(rng: np.random.Generator, compile_and_run: Any) -> None:
    """conv -> bias_add -> relu -> transpose -> reshape with names like a frontend would use."""
    x_shape, w_shape = (1, 6, 6, 2), (3, 3, 2, 4)
    w = rng.standard_normal(w_shape).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    b = Builder("net")
    x = b.input("image", x_shape)
    y = b.conv(x, b.constant("kernel", w), window_strides=(2, 2), padding="SAME",
               dimension_numbers=("NHWC", "HWIO", "NHWC"), name="conv/0")
    y = b.relu(b.bias_add(y, b.constant("bias", bias), axis=3))
    y = b.reshape(b.transpose(y, (0, 3, 1, 2)), (1, 36))
    b.output(y)
    image = rng.standard_normal(x_shape).astype(np.float32)
    conv = lax.conv_general_dilated(jnp.asarray(image), jnp.asarray(w), (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    want = np.maximum(np.asarray(conv) + bias, 0).transpose(0, 3, 1, 2).reshape(1, 36)
    assert_type_is(y, want)
    assert_close(compile_and_run(b.build(), [image])[0], want)


def test_typed_helpers_restate_no_attribute_default() -> None:
    """A typed helper names its op's operands and the attributes lax takes positionally;
    every attribute parameter defaults to None (the declaration's default) or is required
    there too, so no default is written twice."""
    import inspect

    from convc.ops import OPS

    helpers = [kind for kind in OPS if hasattr(Builder, kind) and kind != "constant"]
    assert {"conv", "pad", "slice", "concatenate"} <= set(helpers)
    for kind in helpers:
        opdef = OPS[kind]
        params = [p for p in inspect.signature(getattr(Builder, kind)).parameters.values()
                  if p.name not in ("self", "name") and p.kind is not p.VAR_KEYWORD]
        operands = [p.name for p in params if p.name not in opdef.attrs]
        assert operands == list(opdef.operands), kind
        for p in params:
            if p.name in opdef.attrs:
                spec = opdef.attrs[p.name]
                assert p.default is None or (p.default is p.empty and spec.required), (kind, p.name)


# --- what the builder takes: its own Values, and numpy arrays as constants ---------------------


def test_output_of_a_name_is_refused_at_the_call() -> None:
    """`b.output("y")` names a value instead of passing it: once accepted, then compile_graph
    died with a KeyError; now a U7 error at the caller's line, and no output is added."""
    b = Builder()
    b.relu(b.input("x", (2,)), name="y")
    with pytest.raises(ConvcError, match=r"output 0 must be a Value of this Builder, got the string 'y' \(pass the Value") as caught:
        b.output("y")  # output by name
    assert caught.value.constraint == "U7"
    assert (Path(caught.value.loc.file).resolve(), caught.value.loc.line) == (THIS_FILE, line_of("output by name"))
    assert b.graph.outputs == []


def test_a_value_of_another_builder_is_refused_as_operand_output_and_sharded_value() -> None:
    """A Value from another Builder (once accepted, then a KeyError in compile_graph) is a U8
    error where it is passed; the builder is left as it was and the op's name stays free."""
    stranger = Builder("other").input("x", (2, 3))
    b = Builder(mesh={"data": 2})
    own = b.input("own", (2, 3))
    calls = [
        (lambda: b.add(own, stranger, name="sum"), "operand 1 (rhs) 'x'", "foreign operand"),  # foreign operand
        (lambda: b.output(own, stranger), "output 1 'x'", "foreign output"),  # foreign output
        (lambda: b.shard(stranger, ["data", None]), "the sharded value 'x'", "foreign shard"),  # foreign shard
    ]
    for call, subject, marker in calls:
        with pytest.raises(ConvcError, match=re.escape(f"{subject} is a Value of another Builder")) as caught:
            call()
        assert caught.value.constraint == "U8" and caught.value.loc.line == line_of(marker)
    assert b.graph.ops == [] and b.graph.outputs == [] and stranger.sharding is None
    assert b.add(own, own, name="sum").type == own.type


@pytest.mark.parametrize("operand", ["x", [1.0, 2.0], 2.0, None], ids=["string", "list", "float", "None"])
def test_an_operand_that_is_neither_a_value_nor_an_array_is_refused(operand: object) -> None:
    b = Builder()
    x = b.input("x", (2,))
    with pytest.raises(ConvcError, match=r"'m' \(multiply\): operand 1 \(rhs\) must be a Value of this Builder, got ") as caught:
        b.multiply(x, operand, name="m")  # type: ignore[arg-type]  # not a value
    assert caught.value.constraint == "U7" and caught.value.loc.line == line_of("not a value")
    assert ("not its name" in str(caught.value)) == isinstance(operand, str)
    assert ("constant(name, value)" in str(caught.value)) == (not isinstance(operand, str))
    assert b.graph.ops == []


def test_a_numpy_array_operand_becomes_a_constant_named_after_the_op(rng: np.random.Generator, compile_and_run: Any) -> None:
    """`b.conv(x, array)` (once an AttributeError): the array is the constant `conv1.rhs`,
    added just before the op, and the graph computes what lax computes with it."""
    b = Builder()
    x = b.input("x", (1, 3, 6, 6))
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    y = b.bias_add(b.conv(x, w, padding="SAME"), bias, axis=1)
    b.output(y)
    graph = b.build()
    assert [(op.name, op.kind) for op in graph.ops] == [
        ("conv1.rhs", "constant"), ("conv1", "conv"), ("bias_add2.bias", "constant"), ("bias_add2", "bias_add")]
    assert graph.ops[1].operands[1] is graph.ops[0].result
    np.testing.assert_array_equal(graph.ops[0].attrs["value"], w)
    image = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    want = np.asarray(lax.conv_general_dilated(jnp.asarray(image), jnp.asarray(w), (1, 1), "SAME")) + bias[None, :, None, None]
    assert_close(compile_and_run(graph, [image])[0], want)


def test_an_array_operand_keeps_its_dtype() -> None:
    """An f16 array next to an f16 input is an f16 constant; an f64 one is not cast to the
    input's f32 but refused by the op's type rule, and then nothing is added."""
    b = Builder()
    half = b.multiply(b.input("h", (3,), "f16"), np.array([1, 2, 3], np.float16))
    assert half.type.dtype == "f16" and b.graph.ops[0].result.type.dtype == "f16"
    x = b.input("x", (3,))
    with pytest.raises(ConvcError, match=r"operand types differ: tensor<3xf32> and tensor<3xf64> \[multiply.C1\]"):
        b.multiply(x, np.ones(3, np.float64))
    assert [op.kind for op in b.graph.ops] == ["constant", "multiply"]


def test_an_array_operand_name_avoids_taken_names_and_numbers_variadic_operands() -> None:
    b = Builder()
    x = b.input("x", (2, 3))
    b.constant("concatenate1.inputs1", np.zeros((1,), np.float32))
    joined = b.concatenate([x, np.ones((1, 3), np.float32)], 0)
    assert joined.type.shape == (3, 3)
    assert [op.name for op in b.graph.ops] == ["concatenate1.inputs1", "concatenate1.inputs1_1", "concatenate1"]


def test_a_rejected_call_adds_no_constant_and_frees_its_names() -> None:
    b = Builder()
    x = b.input("x", (1, 2, 5, 5))
    w = np.ones((4, 3, 3, 3), np.float32)
    with pytest.raises(ConvcError, match=r"\[C14\]"):
        b.conv(x, w, name="c")
    assert b.graph.ops == []
    assert b.constant("c.rhs", w).name == "c.rhs" and b.conv(x, np.ones((4, 2, 3, 3), np.float32), name="c").type.shape == (1, 4, 3, 3)


def test_output_of_its_own_values_works_as_before() -> None:
    b = Builder()
    x = b.input("x", (2, 3))
    y = b.relu(x)
    b.output(y)
    b.output(x, y)
    assert b.build().outputs == [y, x, y]


# --- every op kind is a method, documented from its declaration ----------------------------------


def test_every_op_kind_is_a_builder_method_listing_its_attributes_and_defaults() -> None:
    """No op kind is left out: the typed helpers and the methods made from the declarations
    alike name their op, operands, and each attribute's kind and default in their help."""
    import inspect

    from convc.ops import OPS

    for kind, opdef in OPS.items():
        doc = inspect.getdoc(getattr(Builder, kind)) or ""
        assert f"Op '{kind}' (convc.ops); operands: " in doc, kind
        for name, spec in opdef.attrs.items():
            default = "required" if spec.required else f"default: {spec.default_text()}"
            assert f"  {name} ({spec.kind.label}; {default})" in doc, (kind, name)
        assert ("Attributes: none." in doc) == (not opdef.attrs), kind


def test_a_declared_op_without_a_typed_helper_is_a_method_with_its_signature() -> None:
    import inspect

    signature = inspect.signature(Builder.max_pool)
    assert str(signature).startswith("(self, x, /, *, window_dimensions, window_strides=None, padding=None,")
    assert list(inspect.signature(Builder.stacked_reduce_sum).parameters)[:2] == ["self", "inputs"]


def test_an_op_registered_later_is_a_method_too() -> None:
    """`convc.ops.register` after import: the builder finds the new kind by its name."""
    from convc.ir import TensorType
    from convc.ops import OPS, OpDef, register
    from convc.ops.base import INT, Attr

    def same(v: Any) -> TensorType:
        return v.operand(0)

    register(OpDef("test_later_identity", ("x",), same, {"tag": Attr(INT, 7, doc="a number")}, doc="x itself"))
    try:
        b = Builder()
        y = b.test_later_identity(b.input("x", (2,)), tag=3)
        assert y.type.shape == (2,) and b.graph.ops[-1].attrs["tag"] == 3
        assert "  tag (int; default: 7) a number" in (b.test_later_identity.__doc__ or "")
        assert "test_later_identity" in dir(b)
    finally:
        OPS.pop("test_later_identity")
    with pytest.raises(AttributeError, match="did you mean 'max_pool'"):
        b.maxpool  # noqa: B018


GENERATED_CASES = [
    PlainCase("max_pool-same", [((1, 5, 5, 2), "f32")],
              lambda b, x: b.max_pool(x, window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1), padding="SAME"),
              lambda x: lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")),
    PlainCase("dot_general-batched", [((2, 3, 4), "i32"), ((2, 4, 5), "i32")],
              lambda b, x, y: b.dot_general(x, y, lhs_batching_dimensions=(0,), rhs_batching_dimensions=(0,),
                                            lhs_contracting_dimensions=(2,), rhs_contracting_dimensions=(1,)),
              lambda x, y: np.einsum("bij,bjk->bik", x, y)),
    PlainCase("broadcast_in_dim", [((3,), "f32")], lambda b, x: b.broadcast_in_dim(x, shape=(2, 3, 4), broadcast_dimensions=(1,)),
              lambda x: np.broadcast_to(x[None, :, None], (2, 3, 4))),
    PlainCase("reduce_sum", [((2, 3, 4), "i32")], lambda b, x: b.reduce_sum(x, axes=(0, 2)), lambda x: x.sum((0, 2), dtype=np.int32)),
    PlainCase("stacked_reduce_sum", [((2, 3), "i32"), ((2, 3), "i32")], lambda b, x, y: b.stacked_reduce_sum(x, y, axes=(1,)),
              lambda x, y: np.stack([x.sum(1, dtype=np.int32), y.sum(1, dtype=np.int32)])),
    PlainCase("relu_grad", [((3, 4), "f32"), ((3, 4), "f32")], lambda b, g, x: b.relu_grad(g, x), lambda g, x: np.where(x > 0, g, 0)),
]


@pytest.mark.parametrize("case", GENERATED_CASES, ids=lambda c: c.label)
def test_methods_made_from_declarations_compute_what_lax_computes(case: PlainCase, rng: np.random.Generator,
                                                                  compile_and_run: Any) -> None:
    test_plain_op_matches_numpy_and_lax(case, rng, compile_and_run)


def test_builder_reference_in_the_docs_has_every_method_and_is_linked() -> None:
    """docs/builder.md's generated reference (current: test_docs.py) names every op's call,
    operands and attributes; README and architecture.md link it."""
    from convc.ops import OPS

    root = THIS_FILE.parents[2]
    text = (root / "docs" / "builder.md").read_text(encoding="utf-8")
    for kind, opdef in OPS.items():
        assert f"### {kind}\n\n`b.{kind}(" in text, kind
        assert all(f"| `{name}` | " in text for name in opdef.attrs), kind
    assert "(docs/builder.md)" in (root / "README.md").read_text(encoding="utf-8")
    assert "(builder.md)" in (root / "docs" / "architecture.md").read_text(encoding="utf-8")


# --- hints that point the right way ----------------------------------------------------------------


def _error(call: Callable[[], object]) -> ConvcError:
    with pytest.raises(ConvcError) as caught:
        call()
    return caught.value


def test_output_padding_on_conv_transpose_points_to_conv_backprop_input() -> None:
    b = Builder()
    x, w = b.input("x", (1, 4, 4, 2)), b.input("w", (3, 3, 2, 2))
    err = _error(lambda: b.conv_transpose(x, w, strides=(2, 2), output_padding=(1, 1)))
    assert err.constraint == "A3" and "(did you mean 'padding'" not in str(err)
    assert "unknown attribute 'output_padding' for op 'conv_transpose' ('conv_backprop_input' takes 'output_padding'" in str(err)


def test_window_shape_on_max_pool_points_to_window_dimensions() -> None:
    b = Builder()
    err = _error(lambda: b.max_pool(b.input("x", (1, 4, 4, 2)), window_shape=(2, 2)))
    assert err.constraint == "A3"
    assert "unknown attribute 'window_shape' for op 'max_pool' (did you mean 'window_dimensions'? 'window_shape' is its name in flax;" in str(err)
    assert "batch and features included" in str(err)


def test_groups_on_conv_suggests_feature_group_count() -> None:
    b = Builder()
    err = _error(lambda: b.conv(b.input("x", (1, 4, 5, 5)), b.input("w", (4, 2, 3, 3)), groups=2))
    assert err.constraint == "A3"
    assert "unknown attribute 'groups' for op 'conv' (did you mean 'feature_group_count'? 'groups' is its name in PyTorch" in str(err)


def test_a_lowercase_layout_is_told_layouts_are_uppercase() -> None:
    b = Builder()
    x, w = b.input("x", (1, 5, 5, 2)), b.input("w", (3, 3, 2, 4))
    err = _error(lambda: b.conv(x, w, dimension_numbers=("nhwc", "HWIO", "NHWC")))
    assert err.constraint == "C13" and str(err).endswith("lhs layout 'nhwc' must contain 'N' and 'C' exactly once; "
                                                          "layout letters are uppercase: 'NHWC' [C13]")
    err = _error(lambda: b.conv(x, w, dimension_numbers=("NHWC", "hwio", "NHWC")))
    assert err.constraint == "C18" and "layout letters are uppercase: 'HWIO'" in str(err)
    assert "uppercase" not in str(_error(lambda: b.conv(x, w, dimension_numbers=("NHWW", "HWIO", "NHWC"))))


def test_bias_add_after_an_nchw_conv_without_axis_suggests_axis_1() -> None:
    b = Builder()
    y = b.conv(b.input("x", (1, 3, 8, 8)), b.input("w", (4, 3, 3, 3)))
    err = _error(lambda: b.bias_add(y, b.input("bias", (4,))))
    assert err.constraint == "bias_add.C2"
    assert str(err).endswith("got tensor<4xf32>; it fits dimension 1: give axis=1 (the default, -1, is the last dimension: "
                             "channels last) [bias_add.C2]")
    assert "fits" not in str(_error(lambda: b.bias_add(y, b.input("odd", (5,)))))


def test_every_foreign_attribute_names_a_declared_attribute() -> None:
    """The hint tables (OpDef.foreign) point at attributes that exist, of ops that exist."""
    from convc.ops import OPS

    for kind, opdef in OPS.items():
        for name, meaning in opdef.foreign.items():
            target = OPS[meaning.op or kind]
            assert name not in opdef.attrs and (meaning.attr is None or meaning.attr in target.attrs), (kind, name)
            assert meaning.attr is not None or meaning.note, (kind, name)
