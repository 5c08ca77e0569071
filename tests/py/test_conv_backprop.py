"""`conv_backprop_input` / `conv_backprop_filter` against `jax.vjp` of `lax.conv_general_dilated`.

Forward convs are drawn by hypothesis (fixed seed, bounded examples; CONVC_SOAK=1 draws many
more): every layout permutation, strides 1-3, both dilations, SAME/SAME_LOWER/VALID and
explicit pads (negative and asymmetric), feature groups, batch groups and depthwise with a
channel multiplier. Each example compiles one module (input gradient sized by `input_shape`,
and where the padding is explicit or VALID also by the equivalent `output_padding`, plus the
kernel gradient), runs it with PJRT and compares in f32 with the vjp.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import convc
import jax
import numpy as np
import pytest
from convc.reference import evaluate
from convc.runtime import Executable, compile_stablehlo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax

SOAK = os.environ.get("CONVC_SOAK") == "1"
SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=100 if SOAK else 8,
                    suppress_health_check=[HealthCheck.too_slow])
SPATIAL_LETTERS = "HWD"


@functools.lru_cache(maxsize=64)
def _executable(text: str) -> Executable:
    return compile_stablehlo(text)


def dilate(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


@dataclass(frozen=True)
class Forward:
    """A forward conv: layouts, shapes and lax.conv_general_dilated's attributes."""

    layouts: tuple[str, str, str]
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    strides: tuple[int, ...]
    padding: Any
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_group_count: int = 1
    batch_group_count: int = 1

    def attrs(self) -> dict[str, Any]:
        """The forward attributes, as both gradient ops take them."""
        return {"window_strides": self.strides, "padding": self.padding, "lhs_dilation": self.lhs_dilation,
                "rhs_dilation": self.rhs_dilation, "dimension_numbers": self.layouts,
                "feature_group_count": self.feature_group_count, "batch_group_count": self.batch_group_count}

    @property
    def specs(self) -> Any:
        return lax.conv_dimension_numbers(self.lhs_shape, self.rhs_shape, self.layouts)

    def spatial(self, shape: Sequence[int], spec: Sequence[int]) -> list[int]:
        return [shape[d] for d in spec[2:]]

    def windows(self) -> list[int]:
        return [dilate(k, d) for k, d in zip(self.spatial(self.rhs_shape, self.specs.rhs_spec), self.rhs_dilation, strict=True)]

    def lax_padding(self) -> Any:
        """lax refuses string padding with lhs dilation; resolve it as lax does without it."""
        if isinstance(self.padding, str):
            return lax.padtype_to_pads(self.spatial(self.lhs_shape, self.specs.lhs_spec), self.windows(), self.strides, self.padding)
        return self.padding

    def conv(self, x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(x, w, self.strides, self.lax_padding(), self.lhs_dilation, self.rhs_dilation,
                                        self.layouts, self.feature_group_count, self.batch_group_count,
                                        precision=lax.Precision.HIGHEST)

    def out_shape(self) -> tuple[int, ...]:
        x = jax.ShapeDtypeStruct(self.lhs_shape, np.float32)
        w = jax.ShapeDtypeStruct(self.rhs_shape, np.float32)
        return tuple(jax.eval_shape(self.conv, x, w).shape)

    def output_padding(self) -> tuple[int, ...] | None:
        """The PyTorch-style spelling of input_shape: extra elements over the scatter's extent."""
        if isinstance(self.padding, str) and self.padding != "VALID":
            return None
        specs = self.specs
        pads = self.lax_padding()
        out = self.spatial(self.out_shape(), specs.out_spec)
        sizes = self.spatial(self.lhs_shape, specs.lhs_spec)
        return tuple(dilate(n, ld) - ((o - 1) * s + w - lo - hi)
                     for n, ld, o, s, w, (lo, hi) in zip(sizes, self.lhs_dilation, out, self.strides, self.windows(), pads, strict=True))


def shape_in(layout: str, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(sizes[letter] for letter in layout)


GROUPINGS = ("none", "feature", "depthwise", "batch")


@st.composite
def group_sizes(draw: Any, kind: str) -> dict[str, int]:
    """Batch N, features C, kernel I and O, and the group counts, for one grouping kind."""
    groups = draw(st.integers(2, 3))
    small = st.integers(1, 2)
    if kind == "feature":
        features = groups * draw(small)
        return {"N": draw(small), "C": features, "I": features // groups, "O": groups * draw(small), "fgc": groups, "bgc": 1}
    if kind == "depthwise":  # one input channel per group, a channel multiplier of 1 or 2
        return {"N": draw(small), "C": groups, "I": 1, "O": groups * draw(small), "fgc": groups, "bgc": 1}
    if kind == "batch":
        features = draw(st.integers(1, 3))
        return {"N": groups * draw(small), "C": features, "I": features, "O": groups * draw(small), "fgc": 1, "bgc": groups}
    features = draw(st.integers(1, 3))
    return {"N": draw(small), "C": features, "I": features, "O": draw(st.integers(1, 3)), "fgc": 1, "bgc": 1}


@st.composite
def spatial_dim(draw: Any, mode: str, max_size: int) -> tuple[int, int, int, int, int, tuple[int, int]]:
    """(input size, kernel, stride, lhs dilation, rhs dilation, explicit pads) with >= 1 output."""
    kernel, stride = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    lhs_dilation, rhs_dilation = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    window = dilate(kernel, rhs_dilation)
    size = draw(st.integers(1, max_size))
    if mode == "VALID":
        size = max(size, -(-(window - 1) // lhs_dilation) + 1)
    low = draw(st.integers(-min(2, dilate(size, lhs_dilation) - 1), 2))
    high = max(draw(st.integers(-2, 3)), window - dilate(size, lhs_dilation) - low)
    return size, kernel, stride, lhs_dilation, rhs_dilation, (low, high)


@st.composite
def forward_convs(draw: Any, grouping: str) -> Forward:
    rank = draw(st.sampled_from((2, 1, 3, 2, 1)))
    letters = SPATIAL_LETTERS[:rank]
    mode = draw(st.sampled_from(("explicit", "SAME", "explicit", "VALID", "SAME_LOWER")))
    dims = [draw(spatial_dim(mode, 4 if rank == 3 else 7)) for _ in letters]
    sizes = draw(group_sizes(grouping))
    layouts = tuple("".join(draw(st.permutations(roles + letters))) for roles in ("NC", "OI", "NC"))
    lhs_sizes = {"N": sizes["N"], "C": sizes["C"], **{c: d[0] for c, d in zip(letters, dims, strict=True)}}
    rhs_sizes = {"O": sizes["O"], "I": sizes["I"], **{c: d[1] for c, d in zip(letters, dims, strict=True)}}
    # window attributes follow the kernel layout's spatial order, as lax's do
    order = [letters.index(c) for c in layouts[1] if c in letters]
    return Forward(
        layouts=layouts,  # type: ignore[arg-type]
        lhs_shape=shape_in(layouts[0], lhs_sizes),
        rhs_shape=shape_in(layouts[1], rhs_sizes),
        strides=tuple(dims[i][2] for i in order),
        padding=tuple(dims[i][5] for i in order) if mode == "explicit" else mode,
        lhs_dilation=tuple(dims[i][3] for i in order),
        rhs_dilation=tuple(dims[i][4] for i in order),
        feature_group_count=sizes["fgc"],
        batch_group_count=sizes["bgc"],
    )


def build_gradients(fwd: Forward) -> tuple[convc.Graph, list[np.ndarray]]:
    """One module: dx (by input_shape), dw, and dx by output_padding where that spelling exists."""
    b = convc.Builder("grads")
    x, w, g = b.input("x", fwd.lhs_shape), b.input("w", fwd.rhs_shape), b.input("g", fwd.out_shape())
    outputs = [b.conv_backprop_input(g, w, input_shape=fwd.lhs_shape, name="dx", **fwd.attrs()),
               b.conv_backprop_filter(x, g, fwd.rhs_shape, name="dw", **fwd.attrs())]
    output_padding = fwd.output_padding()
    if output_padding is not None:
        outputs.append(b.conv_backprop_input(g, w, output_padding=output_padding, name="dx_padded", **fwd.attrs()))
    b.output(*outputs)
    rng = np.random.default_rng(len(fwd.lhs_shape) * 1000 + sum(fwd.lhs_shape) * 10 + sum(fwd.rhs_shape))
    return b.build(), [rng.standard_normal(v.type.shape).astype(np.float32) for v in b.graph.inputs]


def vjp_gradients(fwd: Forward, x: np.ndarray, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _, pullback = jax.vjp(fwd.conv, x, w)
    dx, dw = pullback(g)
    return np.asarray(dx), np.asarray(dw)


def run_convc(graph: convc.Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    text = convc.compile_graph(graph, target="generic")  # verified by MLIR; the generic lowering is under test
    assert "window_reversal" not in text
    assert "stablehlo.reverse" in text  # the input gradient's kernel reversal is explicit
    return _executable(text)(*arrays)


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-5 * (1 + float(np.max(np.abs(want), initial=0.0))))


def check_against_vjp(fwd: Forward) -> tuple[convc.Graph, list[np.ndarray]]:
    graph, arrays = build_gradients(fwd)
    want_dx, want_dw = vjp_gradients(fwd, *arrays)
    got = run_convc(graph, arrays)
    assert_close(got[0], want_dx)
    assert_close(got[1], want_dw)
    if len(got) == 3:
        assert_close(got[2], want_dx)
    return graph, arrays


# Named corners, beside the drawn ones.
DEPTHWISE_MULTIPLIER = Forward(("NHWC", "HWIO", "NHWC"), (2, 5, 6, 3), (3, 2, 1, 6), (2, 1), "SAME", (1, 1), (1, 2), 3)
BATCH_GROUPS = Forward(("NCHW", "OIHW", "NCHW"), (4, 3, 5, 4), (4, 3, 2, 2), (1, 2), ((1, 0), (0, 1)), (1, 1), (2, 1), 1, 2)
NEGATIVE_PADS = Forward(("NCH", "OIH", "NCH"), (1, 2, 7), (3, 2, 2), (2,), ((-1, 2),), (2,), (2,))
PERMUTED_3D = Forward(("DNHCW", "WIDOH", "HWNDC"), (2, 1, 3, 4, 3), (2, 2, 2, 6, 2), (1, 2, 1), "SAME_LOWER", (1, 1, 2), (2, 1, 1), 2)


@pytest.mark.parametrize("fwd", [DEPTHWISE_MULTIPLIER, BATCH_GROUPS, NEGATIVE_PADS, PERMUTED_3D],
                         ids=["depthwise", "batch_groups", "negative_pads", "permuted_3d"])
def test_named_corners_match_vjp(fwd: Forward) -> None:
    check_against_vjp(fwd)


@pytest.mark.parametrize("grouping", GROUPINGS)
@SETTINGS
@given(data=st.data())
def test_gradients_match_vjp(grouping: str, data: st.DataObject) -> None:
    check_against_vjp(data.draw(forward_convs(grouping), label="forward conv"))


@pytest.mark.parametrize("fwd", [DEPTHWISE_MULTIPLIER, BATCH_GROUPS, NEGATIVE_PADS], ids=["depthwise", "batch_groups", "negative_pads"])
def test_check_oracle_agrees_with_vjp(fwd: Forward) -> None:
    """`--check` evaluates the gradient ops with convc.reference; it must be the vjp too."""
    graph, arrays = build_gradients(fwd)
    got = evaluate(graph, arrays)
    want_dx, want_dw = vjp_gradients(fwd, *arrays)
    assert_close(got[0], want_dx)
    assert_close(got[1], want_dw)


def test_default_pipeline_leaves_only_plain_ops() -> None:
    from convc.compile import Compiler

    graph, _ = build_gradients(BATCH_GROUPS)
    lowered = Compiler(target="generic").run_passes(graph.clone())
    assert {op.kind for op in lowered.ops} == {"conv", "reverse", "reshape", "transpose"}
    assert {op.attrs.get("batch_group_count", 1) for op in lowered.ops if op.kind == "conv"} == {1}  # dw: feature groups now
    assert {op.attrs.get("feature_group_count", 1) for op in lowered.ops if op.kind == "conv"} == {2}


# --- TF's input_sizes: a strided forward conv maps several input sizes to one output size ---


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_input_shape_picks_among_ambiguous_sizes(padding: str) -> None:
    """Stride 2, kernel 3: VALID maps 7 and 8 to 3, SAME maps 7 and 8 to 4; each input_shape
    gives that size's gradient; 9 maps elsewhere and is an error naming both sizes."""
    out = 3 if padding == "VALID" else 4
    for size in (7, 8):
        fwd = Forward(("NHWC", "HWIO", "NHWC"), (1, size, 5, 2), (3, 3, 2, 3), (2, 2), padding, (1, 1), (1, 1))
        assert fwd.out_shape()[1] == out
        check_against_vjp(fwd)
    b = convc.Builder()
    g, w = b.input("g", (1, out, 3 if padding == "VALID" else 4, 3)), b.input("w", (3, 3, 2, 3))
    message = rf"Size of out_backprop doesn't match computed: actual = {out}, computed = {out + 1} .*input_shape size 9.* \[B4\]"
    with pytest.raises(convc.ConvcError, match=message):
        b.conv_backprop_input(g, w, (2, 2), padding, dimension_numbers=("NHWC", "HWIO", "NHWC"), input_shape=(1, 9, 5, 2))


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER"])
def test_same_without_sizes_is_out_times_stride(padding: str) -> None:
    """Neither input_shape nor output_padding: a SAME family gives out * stride (Keras, ONNX)."""
    b = convc.Builder()
    g, w = b.input("g", (2, 5, 4, 3)), b.input("w", (5, 2, 3, 2))
    dx = b.conv_backprop_input(g, w, (2, 3), padding)
    assert dx.type.shape == (2, 2, 8, 9)
    b.output(dx)
    fwd = Forward(("NCHW", "OIHW", "NCHW"), (2, 2, 8, 9), (5, 2, 3, 2), (2, 3), padding, (1, 1), (1, 1))
    arrays = [np.random.default_rng(7).standard_normal(v.type.shape).astype(np.float32) for v in b.graph.inputs]
    want_dx, _ = vjp_gradients(fwd, np.zeros(fwd.lhs_shape, np.float32), arrays[1], arrays[0])
    assert_close(run_convc(b.build(), arrays)[0], want_dx)


def test_f16_gradients_accumulate_in_preferred_element_type() -> None:
    """f16 operands with preferred_element_type f32: the vjp of the exactly widened operands."""
    fwd = BATCH_GROUPS
    b = convc.Builder("mixed")
    x, w, g = b.input("x", fwd.lhs_shape, "f16"), b.input("w", fwd.rhs_shape, "f16"), b.input("g", fwd.out_shape(), "f16")
    b.output(b.conv_backprop_input(g, w, input_shape=fwd.lhs_shape, preferred_element_type="f32", **fwd.attrs()),
             b.conv_backprop_filter(x, g, fwd.rhs_shape, preferred_element_type="f32", precision="HIGHEST", **fwd.attrs()))
    rng = np.random.default_rng(11)
    narrow = [rng.standard_normal(v.type.shape).astype(np.float16) for v in b.graph.inputs]
    got = run_convc(b.build(), narrow)
    want_dx, want_dw = vjp_gradients(fwd, *(a.astype(np.float32) for a in narrow))
    assert got[0].dtype == got[1].dtype == np.float32
    assert_close(got[0], want_dx)
    assert_close(got[1], want_dw)
