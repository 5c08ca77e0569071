"""`conv_transpose` end to end against `jax.lax.conv_transpose` called directly.

Every case is built with the builder, lowered by the default pipeline (after which only
`conv` and plain ops remain), emitted as verified StableHLO, run by PJRT and compared with
lax in f32. Grouped cases, which lax lacks, are compared with one lax.conv_transpose per
group (lhs features and the kernel's O dim sliced per group, outputs concatenated).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import convc
import numpy as np
import pytest
from convc.dtypes import numpy_dtype
from convc.reference import evaluate
from convc.runtime import Executable, compile_stablehlo
from jax import lax

PLAIN_KINDS = {"conv", "reverse", "reshape", "transpose"}


@functools.lru_cache(maxsize=64)
def _executable(text: str) -> Executable:
    return compile_stablehlo(text)


@dataclass(frozen=True)
class Case:
    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    strides: tuple[int, ...]
    padding: Any
    rhs_dilation: tuple[int, ...] | None = None
    dimension_numbers: tuple[str, str, str] | None = None
    transpose_kernel: bool = False
    use_consistent_padding: bool = False
    feature_group_count: int = 1

    def attrs(self) -> dict[str, Any]:
        return {"padding": self.padding, "rhs_dilation": self.rhs_dilation, "dimension_numbers": self.dimension_numbers,
                "transpose_kernel": self.transpose_kernel, "use_consistent_padding": self.use_consistent_padding}


CASES = {
    # 1-D, default NHC/HIO/NHC
    "1d_same_s1": Case((2, 5, 3), (3, 3, 4), (1,), "SAME"),
    "1d_valid_s2": Case((1, 6, 2), (3, 2, 3), (2,), "VALID"),
    "1d_same_s3_over_kernel": Case((1, 4, 2), (2, 2, 3), (3,), "SAME"),
    "1d_valid_s3_over_kernel_dilated": Case((2, 5, 3), (2, 3, 4), (3,), "VALID", rhs_dilation=(2,)),
    "1d_explicit_asymmetric": Case((1, 5, 2), (3, 2, 2), (2,), ((2, 0),)),
    "1d_explicit_negative": Case((1, 6, 2), (3, 2, 2), (2,), ((-1, 3),)),
    "1d_transpose_kernel_same_s2": Case((1, 5, 4), (3, 2, 4), (2,), "SAME", transpose_kernel=True),
    "1d_consistent_padding": Case((1, 5, 2), (4, 2, 3), (2,), ((1, 2),), use_consistent_padding=True),
    # 2-D, default NHWC/HWIO/NHWC
    "2d_same_s2": Case((1, 4, 4, 3), (3, 3, 3, 5), (2, 2), "SAME"),
    "2d_valid_s1": Case((2, 3, 4, 2), (2, 3, 2, 3), (1, 1), "VALID"),
    "2d_same_mixed_strides_dilated": Case((1, 3, 4, 2), (3, 2, 2, 3), (2, 3), "SAME", rhs_dilation=(2, 1)),
    "2d_valid_s3_over_kernel": Case((1, 3, 3, 2), (2, 2, 2, 2), (3, 3), "VALID"),
    "2d_transpose_kernel_valid_dilated": Case((1, 3, 4, 4), (3, 2, 3, 4), (2, 1), "VALID", rhs_dilation=(1, 2), transpose_kernel=True),
    "2d_transpose_kernel_explicit": Case((1, 4, 3, 2), (3, 3, 5, 2), (2, 2), ((1, 1), (0, 2)), transpose_kernel=True),
    "2d_nchw_oihw": Case((2, 3, 4, 5), (4, 3, 3, 3), (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")),
    "2d_permuted_layouts": Case((4, 2, 3, 3), (3, 3, 4, 3), (2, 1), "VALID", rhs_dilation=(1, 2),
                                dimension_numbers=("WNCH", "IHOW", "HCWN")),
    "2d_permuted_transpose_kernel": Case((3, 2, 4, 2), (2, 2, 3, 4), (1, 2), "SAME", transpose_kernel=True,
                                         dimension_numbers=("HCWN", "WOHI", "NWHC")),
    # 3-D, default NHWDC/HWDIO/NHWDC
    "3d_same_s2": Case((1, 2, 3, 2, 2), (2, 2, 2, 2, 3), (2, 1, 2), "SAME"),
    "3d_valid_dilated_transpose_kernel": Case((1, 3, 2, 2, 3), (2, 1, 2, 2, 3), (1, 2, 3), "VALID", rhs_dilation=(2, 1, 1),
                                              transpose_kernel=True),
    "3d_ncdhw_explicit": Case((1, 2, 3, 2, 3), (3, 2, 2, 2, 2), (2, 2, 1), ((1, 0), (0, 1), (1, 1)),
                              dimension_numbers=("NCDHW", "OIDHW", "NCDHW")),
}

GROUPED_CASES = {
    "1d_g2": Case((1, 5, 4), (3, 2, 6), (2,), "SAME", feature_group_count=2),
    "1d_g3_transpose_kernel": Case((2, 4, 6), (2, 2, 6), (3,), "VALID", feature_group_count=3, transpose_kernel=True),
    "2d_g2_dilated": Case((1, 3, 4, 4), (3, 3, 2, 6), (2, 2), "SAME", rhs_dilation=(1, 2), feature_group_count=2),
    "2d_g2_transpose_kernel": Case((1, 4, 3, 6), (3, 2, 2, 6), (2, 1), ((1, 2), (0, 1)), feature_group_count=2, transpose_kernel=True),
    "2d_nchw_depthwise_transpose_kernel": Case((1, 3, 4, 4), (3, 2, 3, 3), (2, 2), "SAME", feature_group_count=3, transpose_kernel=True,
                                               dimension_numbers=("NCHW", "OIHW", "NCHW")),
    "3d_g2_permuted": Case((1, 4, 2, 2, 3), (2, 2, 2, 2, 4), (1, 2, 2), "VALID", feature_group_count=2,
                           dimension_numbers=("NCHWD", "HWDIO", "NHWDC")),
}


def build(case: Case) -> tuple[convc.Graph, list[np.ndarray]]:
    b = convc.Builder("conv_transpose")
    lhs, rhs = b.input("lhs", case.lhs), b.input("rhs", case.rhs)
    b.output(b.conv_transpose(lhs, rhs, case.strides, feature_group_count=case.feature_group_count, name="y", **case.attrs()))
    rng = np.random.default_rng(sum(case.lhs) * 31 + sum(case.rhs))
    return b.build(), [rng.standard_normal(case.lhs).astype(np.float32), rng.standard_normal(case.rhs).astype(np.float32)]


def run_convc(graph: convc.Graph, arrays: Sequence[np.ndarray]) -> np.ndarray:
    text = convc.compile_graph(graph, target="generic")  # verifies the module with MLIR; the generic lowering is under test
    assert "window_reversal" not in text
    return _executable(text)(*arrays)[0]


def lax_conv_transpose(case: Case, lhs: Any, rhs: Any) -> np.ndarray:
    return np.asarray(lax.conv_transpose(lhs, rhs, case.strides, **case.attrs()))


def per_group_reference(case: Case, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """One lax.conv_transpose per group, concatenated along the output features."""
    rank = len(case.lhs)
    dims = case.dimension_numbers or {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}[rank]
    lhs_spec, rhs_spec, out_spec = lax.conv_dimension_numbers(case.lhs, case.rhs, dims)
    groups = case.feature_group_count
    lhs_parts = np.split(lhs, groups, axis=lhs_spec[1])
    rhs_parts = np.split(rhs, groups, axis=rhs_spec[0])
    return np.concatenate([lax_conv_transpose(case, x, w) for x, w in zip(lhs_parts, rhs_parts, strict=True)], axis=out_spec[1])


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * (1 + float(np.max(np.abs(want)))))


@pytest.mark.parametrize("name", CASES)
def test_matches_lax_conv_transpose(name: str) -> None:
    case = CASES[name]
    graph, arrays = build(case)
    want = lax_conv_transpose(case, *arrays)
    assert graph.outputs[0].type.shape == want.shape  # the shape rule agrees with lax
    assert_close(run_convc(graph, arrays), want)


@pytest.mark.parametrize("name", GROUPED_CASES)
def test_grouped_matches_per_group_lax(name: str) -> None:
    case = GROUPED_CASES[name]
    graph, arrays = build(case)
    want = per_group_reference(case, *arrays)
    assert_close(run_convc(graph, arrays), want)
    assert_close(evaluate(graph, arrays)[0], want)  # the --check oracle agrees with the per-group one


def test_default_pipeline_leaves_only_plain_ops() -> None:
    from convc.compile import Compiler

    graph, _ = build(GROUPED_CASES["2d_g2_transpose_kernel"])
    lowered = Compiler(target="generic").run_passes(graph.clone())
    assert {op.kind for op in lowered.ops} == PLAIN_KINDS


def test_shape_errors_are_located() -> None:
    b = convc.Builder()
    lhs, rhs = b.input("lhs", (1, 4, 4, 3)), b.input("rhs", (3, 3, 3, 8))
    with pytest.raises(convc.ConvcError, match=r"must equal lhs feature dimension 3 \[T4\]") as info:
        b.conv_transpose(lhs, rhs, (2, 2), "SAME", transpose_kernel=True)
    assert "test_conv_transpose.py" in str(info.value)


def test_precision_and_preferred_element_type_reach_the_conv() -> None:
    """bf16 operands accumulated in f32: lax on the exactly widened operands is the reference."""
    case = GROUPED_CASES["2d_g2_transpose_kernel"]
    b = convc.Builder("mixed")
    lhs, rhs = b.input("lhs", case.lhs, "bf16"), b.input("rhs", case.rhs, "bf16")
    b.output(b.conv_transpose(lhs, rhs, case.strides, feature_group_count=case.feature_group_count, precision="HIGHEST",
                              preferred_element_type="f32", **case.attrs()))
    text = convc.compile_graph(b.build(), target="generic")
    assert "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]" in text
    _, arrays = build(case)
    narrow = [a.astype(numpy_dtype("bf16")) for a in arrays]
    got = _executable(text)(*narrow)[0]
    assert got.dtype == np.float32
    assert_close(got, per_group_reference(case, *(a.astype(np.float32) for a in narrow)))
