"""Each `cpu-*` rewrite (and drop-padding-taps, which the cpu and gpu pipelines run before
them) against the canonical form it replaces, over seeded random small convs: both forms
are compiled by PJRT (XLA CPU) and run on the same inputs.

Every case also checks that the rewrite fired (the slow form is gone), so a matcher
that silently stops matching fails here instead of passing vacuously. Pads are
non-negative, except for `cpu-crop-negative-padding`: XLA CPU misreads negative conv pads
(openxla/xla#48713), so that rewrite is compared with the jax.lax oracle on the graph
(`convc.reference.evaluate`, which crops with lax.pad) instead of XLA's run of the canonical form.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import convc
import numpy as np
import pytest
from convc.passes import PASSES, TARGETS, default_pipeline
from convc.passes.drop_padding_taps import dead_ends
from convc.reference import evaluate

CASES_PER_PASS = 10
RunStablehlo = Callable[..., list[np.ndarray]]  # (text, arrays, platform=None)
SPATIAL_LETTERS = "HWDT"


@dataclass(frozen=True)
class Conv:
    """A conv as the Builder takes it; layouts are strings such as ("NHWC", "HWIO", "NHWC")."""

    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    layouts: tuple[str, str, str]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_group_count: int = 1
    batch_group_count: int = 1

    def graph(self) -> convc.Graph:
        b = convc.Builder("case")
        x, w = b.input("x", self.lhs_shape), b.input("w", self.rhs_shape)
        b.output(b.conv(x, w, window_strides=self.strides, padding=self.padding, lhs_dilation=self.lhs_dilation,
                        rhs_dilation=self.rhs_dilation, dimension_numbers=self.layouts,
                        feature_group_count=self.feature_group_count, batch_group_count=self.batch_group_count))
        return b.build()


def _layouts(rng: np.random.Generator, n: int) -> tuple[str, str, str]:
    letters = SPATIAL_LETTERS[:n]

    def shuffled(roles: str) -> str:
        return "".join(rng.permutation(list(roles + letters)))

    return shuffled("NC"), shuffled("OI"), shuffled("NC")


def _place(layout: str, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(sizes[letter] for letter in layout)


def random_conv(rng: np.random.Generator, *, batch: int, in_features: int, out_features: int, kernel: tuple[int, ...],
                strides: tuple[int, ...], pads: tuple[tuple[int, int], ...], lhs_dilation: tuple[int, ...],
                rhs_dilation: tuple[int, ...], groups: int = 1, batch_groups: int = 1) -> Conv:
    """A conv in random layouts whose input is big enough for at least one output window."""
    n = len(kernel)
    lhs_layout, rhs_layout, out_layout = _layouts(rng, n)
    letters = [c for c in rhs_layout if c not in "OI"]  # the order of every per-spatial-dim attribute
    spatial = []
    for k, (lo, hi), ld, rd in zip(kernel, pads, lhs_dilation, rhs_dilation, strict=True):
        window = (k - 1) * rd + 1
        dilated_min = max(1, window - lo - hi)
        spatial.append(-(-(dilated_min - 1) // ld) + 1 + int(rng.integers(0, 4)))
    lhs_sizes = {"N": batch, "C": in_features, **dict(zip(letters, spatial, strict=True))}
    rhs_sizes = {"O": out_features, "I": in_features // groups, **dict(zip(letters, kernel, strict=True))}
    return Conv(_place(lhs_layout, lhs_sizes), _place(rhs_layout, rhs_sizes), (lhs_layout, rhs_layout, out_layout),
                strides, pads, lhs_dilation, rhs_dilation, groups, batch_groups)


def _ints(rng: np.random.Generator, n: int, lo: int, hi: int) -> tuple[int, ...]:
    return tuple(int(v) for v in rng.integers(lo, hi + 1, n))


def _pads(rng: np.random.Generator, n: int, most: int) -> tuple[tuple[int, int], ...]:
    return tuple((int(rng.integers(0, most + 1)), int(rng.integers(0, most + 1))) for _ in range(n))


# --- one generator per rewrite: the forms it must match ------------------------------


def conv_1x1(rng: np.random.Generator) -> Conv:
    n = int(rng.integers(1, 4))
    return random_conv(rng, batch=int(rng.integers(1, 4)), in_features=int(rng.integers(1, 7)),
                       out_features=int(rng.integers(1, 7)), kernel=(1,) * n, strides=_ints(rng, n, 1, 3),
                       pads=((0, 0),) * n, lhs_dilation=(1,) * n, rhs_dilation=_ints(rng, n, 1, 2))


def full_window_conv(rng: np.random.Generator) -> Conv:
    """A kernel as large as the input (a 1x1 conv's kernel gradient), random layouts and strides."""
    n = int(rng.integers(1, 4))
    lhs_layout, rhs_layout, out_layout = _layouts(rng, n)
    letters = [c for c in rhs_layout if c not in "OI"]
    spatial = dict(zip(letters, _ints(rng, n, 1, 5), strict=True))
    in_features = int(rng.integers(1, 7))
    lhs = _place(lhs_layout, {"N": int(rng.integers(1, 4)), "C": in_features, **spatial})
    rhs = _place(rhs_layout, {"O": int(rng.integers(1, 7)), "I": in_features, **spatial})
    return Conv(lhs, rhs, (lhs_layout, rhs_layout, out_layout), _ints(rng, n, 1, 3), ((0, 0),) * n, (1,) * n, (1,) * n)


def grouped_conv(rng: np.random.Generator) -> Conv:
    n = int(rng.integers(1, 3))
    groups, per_in, per_out = int(rng.integers(2, 5)), int(rng.choice([1, 1, 2, 3])), int(rng.integers(1, 3))
    return random_conv(rng, batch=int(rng.integers(1, 3)), in_features=groups * per_in, out_features=groups * per_out,
                       kernel=_ints(rng, n, 1, 3), strides=_ints(rng, n, 1, 2), pads=_pads(rng, n, 2),
                       lhs_dilation=(1,) * n, rhs_dilation=_ints(rng, n, 1, 2), groups=groups)


def batch_grouped_conv(rng: np.random.Generator) -> Conv:
    n = int(rng.integers(1, 3))
    groups, per_batch, per_out = int(rng.integers(2, 5)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    return random_conv(rng, batch=groups * per_batch, in_features=int(rng.integers(1, 4)), out_features=groups * per_out,
                       kernel=_ints(rng, n, 1, 4), strides=_ints(rng, n, 1, 2), pads=_pads(rng, n, 2),
                       lhs_dilation=_ints(rng, n, 1, 2), rhs_dilation=_ints(rng, n, 1, 2), batch_groups=groups)


def depthwise_weight_grad_like(rng: np.random.Generator) -> Conv:
    """One lhs batch and one output feature per batch group; few output windows."""
    n = int(rng.integers(1, 3))
    groups = int(rng.integers(2, 6))
    return random_conv(rng, batch=groups, in_features=int(rng.integers(1, 4)), out_features=groups,
                       kernel=_ints(rng, n, 2, 5), strides=_ints(rng, n, 1, 2), pads=_pads(rng, n, 2),
                       lhs_dilation=_ints(rng, n, 1, 2), rhs_dilation=_ints(rng, n, 1, 2), batch_groups=groups)


def lhs_dilated_conv(rng: np.random.Generator) -> Conv:
    """A transposed conv as lowered: stride 1, lhs dilation 1-3 per dim, any kernel and pads."""
    n = int(rng.integers(1, 3))
    groups = int(rng.choice([1, 1, 2]))
    return random_conv(rng, batch=int(rng.integers(1, 3)), in_features=groups * int(rng.integers(1, 4)),
                       out_features=groups * int(rng.integers(1, 3)), kernel=_ints(rng, n, 1, 4), strides=(1,) * n,
                       pads=_pads(rng, n, 3), lhs_dilation=tuple(max(2, d) if i == 0 else d for i, d in enumerate(_ints(rng, n, 1, 3))),
                       rhs_dilation=(1,) * n, groups=groups)


def volumetric_conv(rng: np.random.Generator) -> Conv:
    """3 or 4 spatial dims, any strides, dilations and (feature) groups."""
    n = int(rng.choice([3, 3, 4]))
    groups = int(rng.choice([1, 1, 2]))
    return random_conv(rng, batch=int(rng.integers(1, 3)), in_features=groups * int(rng.integers(1, 3)),
                       out_features=groups * int(rng.integers(1, 3)), kernel=_ints(rng, n, 1, 3), strides=_ints(rng, n, 1, 2),
                       pads=_pads(rng, n, 1), lhs_dilation=(1,) * n, rhs_dilation=_ints(rng, n, 1, 2), groups=groups)


def negatively_padded_conv(rng: np.random.Generator) -> Conv:
    """Pads in [-3, 2], at least one negative (sometimes negative low next to positive high,
    the form XLA CPU misreads), with lhs dilation sometimes, so that crops land between
    dilated elements too."""
    n = int(rng.integers(1, 4))
    pads = [(int(rng.integers(-3, 3)), int(rng.integers(-3, 3))) for _ in range(n)]
    dim = int(rng.integers(0, n))
    pads[dim] = (-int(rng.integers(1, 4)), pads[dim][1])
    return random_conv(rng, batch=int(rng.integers(1, 3)), in_features=int(rng.integers(1, 4)),
                       out_features=int(rng.integers(1, 4)), kernel=_ints(rng, n, 1, 3), strides=_ints(rng, n, 1, 2),
                       pads=tuple(pads), lhs_dilation=_ints(rng, n, 1, 2), rhs_dilation=_ints(rng, n, 1, 2))


def dense_2d_conv(rng: np.random.Generator) -> Conv:
    """What YNNPACK would take, but small: 2-D, ungrouped, no lhs dilation, any layout, pads
    no wider than the window (so the output is no larger than the input)."""
    kernel, rhs_dilation = _ints(rng, 2, 1, 3), _ints(rng, 2, 1, 2)
    pads = []
    for k, d in zip(kernel, rhs_dilation, strict=True):
        lo = int(rng.integers(0, (k - 1) * d + 1))
        pads.append((lo, int(rng.integers(0, (k - 1) * d - lo + 1))))
    return random_conv(rng, batch=int(rng.integers(1, 3)), in_features=int(rng.integers(1, 5)),
                       out_features=int(rng.integers(1, 5)), kernel=kernel, strides=_ints(rng, 2, 1, 2),
                       pads=tuple(pads), lhs_dilation=(1, 1), rhs_dilation=rhs_dilation)


def channels_first_conv(rng: np.random.Generator) -> Conv:
    """A conv whose output is channels-first (NC then the spatial dims in the kernel's order,
    what an ONNX import writes), any lhs and kernel layout, 1-3 spatial dims, any strides,
    pads, dilations and feature groups."""
    n = int(rng.integers(1, 4))
    groups = int(rng.choice([1, 1, 2]))
    conv = random_conv(rng, batch=int(rng.integers(1, 3)), in_features=groups * int(rng.integers(1, 4)),
                       out_features=groups * int(rng.integers(1, 3)), kernel=_ints(rng, n, 1, 3), strides=_ints(rng, n, 1, 2),
                       pads=_pads(rng, n, 2), lhs_dilation=_ints(rng, n, 1, 2), rhs_dilation=_ints(rng, n, 1, 2), groups=groups)
    lhs_layout, rhs_layout, _ = conv.layouts
    out_layout = "NC" + "".join(c for c in rhs_layout if c not in "OI")
    return Conv(conv.lhs_shape, conv.rhs_shape, (lhs_layout, rhs_layout, out_layout), conv.strides, conv.padding,
                conv.lhs_dilation, conv.rhs_dilation, conv.feature_group_count)


def window_larger_than_input_conv(rng: np.random.Generator) -> Conv:
    """A channels-last conv (N...C, ...IO) whose window is larger than its input in its first spatial dim (padded
    there, so that some window fits), pads below the window's span, strides 1-2, rhs dilations, 1-3 spatial dims."""
    n = int(rng.integers(1, 4))
    letters = SPATIAL_LETTERS[:n]
    kernel, rhs_dilation = _ints(rng, n, 2, 4), _ints(rng, n, 1, 2)
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, rhs_dilation, strict=True)]
    pads = tuple((int(rng.integers(1 if i == 0 else 0, span)), int(rng.integers(0, span))) for i, span in enumerate(spans))
    strides = _ints(rng, n, 1, 2)
    sizes = [int(rng.integers(max(1, span - lo - hi), span)) if i == 0 else int(rng.integers(max(1, span - lo - hi), span + 3))
             for i, (span, (lo, hi)) in enumerate(zip(spans, pads, strict=True))]
    in_features, out_features = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    lhs = (int(rng.integers(1, 4)), *sizes, in_features)
    rhs = (*kernel, in_features, out_features)
    layouts = ("N" + letters + "C", letters + "IO", "N" + letters + "C")
    return Conv(lhs, rhs, layouts, strides, pads, (1,) * n, rhs_dilation)


def winograd_conv(rng: np.random.Generator) -> Conv:
    """A 3x3 stride-1 undilated conv, channels-last input and output in the kernel's spatial
    order, the kernel in any layout, pads 0-3 per side (whole or partial 2x2 output blocks)."""
    kernel_layout = "".join(rng.permutation(list("OIHW")))
    letters = "".join(c for c in kernel_layout if c in "HW")
    pads = _pads(rng, 2, 3)
    spatial = {letter: int(rng.integers(max(1, 3 - lo - hi), 8)) for letter, (lo, hi) in zip(letters, pads, strict=True)}
    in_features, out_features = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    lhs = (int(rng.integers(1, 3)), *spatial.values(), in_features)
    rhs = _place(kernel_layout, {"O": out_features, "I": in_features, "H": 3, "W": 3})
    layout = "N" + letters + "C"
    return Conv(lhs, rhs, (layout, kernel_layout, layout), (1, 1), pads, (1, 1), (1, 1))


def _drops_taps(conv: Conv) -> bool:
    """Whether some spatial dim of `conv` has a kernel tap at either end that meets only padding
    and that padding covers (drop-padding-taps's `dead_ends`)."""
    lhs_layout, rhs_layout, _ = conv.layouts
    letters = [c for c in rhs_layout if c not in "OI"]
    for i, letter in enumerate(letters):
        size, taps = conv.lhs_shape[lhs_layout.index(letter)], conv.rhs_shape[rhs_layout.index(letter)]
        (lo, hi), stride, dilation = conv.padding[i], conv.strides[i], conv.rhs_dilation[i]
        outputs = (size + lo + hi - (taps - 1) * dilation - 1) // stride + 1
        if dead_ends(size, taps, stride, dilation, (lo, hi), outputs) != (0, 0):
            return True
    return False


def padded_small_map_conv(rng: np.random.Generator) -> Conv:
    """A conv over a map not much larger than its padded window (pads up to the window's span,
    any strides, rhs dilations and feature groups, 1-3 spatial dims), drawn until a kernel tap
    at some end meets only padding."""
    for _ in range(1000):
        n = int(rng.integers(1, 4))
        groups = int(rng.choice([1, 1, 2]))
        kernel, rhs_dilation = _ints(rng, n, 2, 4), _ints(rng, n, 1, 2)
        pads = tuple((int(rng.integers(0, (k - 1) * d + 1)), int(rng.integers(0, (k - 1) * d + 1)))
                     for k, d in zip(kernel, rhs_dilation, strict=True))
        conv = random_conv(rng, batch=int(rng.integers(1, 3)), in_features=groups * int(rng.integers(1, 3)),
                           out_features=groups * int(rng.integers(1, 3)), kernel=kernel, strides=_ints(rng, n, 1, 3),
                           pads=pads, lhs_dilation=(1,) * n, rhs_dilation=rhs_dilation, groups=groups)
        if _drops_taps(conv):
            return conv
    raise AssertionError("no conv with a dead tap drawn")


def _convs(text: str) -> list[str]:
    return re.findall(r"stablehlo\.convolution.*", text)


def no_conv_left(text: str) -> bool:
    return not _convs(text)


def no_lhs_dilation_left(text: str) -> bool:
    return bool(_convs(text)) and all(re.search(r"lhs_dilate = \[(1, )*1\]", line) for line in _convs(text))


def only_2d_convs_left(text: str) -> bool:
    strides = [re.findall(r"stride = \[([^\]]*)\]", line)[0] for line in _convs(text)]
    return bool(strides) and all(s.count(",") == 1 for s in strides)


def output_rows_sliced_off(text: str) -> bool:
    return bool(_convs(text)) and "stablehlo.slice" in text.split("stablehlo.convolution", 1)[1]


def channels_last_outputs(text: str) -> bool:
    """Every conv writes its features last (`->[b, 0, ..., f]`)."""
    return bool(_convs(text)) and all(re.search(r"->\[b, [^\]]*f\]", line) for line in _convs(text))


def no_negative_pad_left(text: str) -> bool:
    """No conv pads negatively (a conv whose crops leave nothing is replaced by zeros)."""
    return not any("-" in pads for pads in re.findall(r"pad = (\[\[.*?\]\])", text))


def kernel_sliced(text: str) -> bool:
    """The conv's kernel (a graph input here) reaches it through a slice."""
    return bool(_convs(text)) and "stablehlo.slice" in text.split("stablehlo.convolution", 1)[0]


def no_batch_groups_left(text: str) -> bool:
    return bool(_convs(text)) and all("batch_group_count = 1 :" in line for line in _convs(text))


@dataclass(frozen=True)
class Rewrite:
    name: str
    draw: Callable[[np.random.Generator], Conv]
    fired: Callable[[str], bool]
    options: str = ""  # pipeline options: the numeric test checks the rewrite on every match
    xla_runs_canonical_right: bool = True  # else the reference is jax.lax on the graph, not XLA's run of the canonical form

    def spelling(self) -> str:
        return f"{self.name}{{{self.options}}}" if self.options else self.name


REWRITES = (
    Rewrite("cpu-conv-1x1-to-dot", conv_1x1, no_conv_left),
    Rewrite("cpu-conv-1x1-to-dot", full_window_conv, no_conv_left),
    Rewrite("cpu-depthwise-tap-sum", grouped_conv, no_conv_left),
    Rewrite("cpu-batch-group-to-feature-group", batch_grouped_conv, no_batch_groups_left),
    Rewrite("cpu-batch-group-tap-reduce", depthwise_weight_grad_like, no_conv_left),
    Rewrite("cpu-transposed-conv-phases", lhs_dilated_conv, no_lhs_dilation_left, "unbalanced=true"),
    Rewrite("cpu-conv3d-as-conv2d-sum", volumetric_conv, only_2d_convs_left),
    Rewrite("cpu-conv-eigen-path", dense_2d_conv, output_rows_sliced_off, "max_extra=1000000 min_features=1"),
    Rewrite("cpu-crop-negative-padding", negatively_padded_conv, no_negative_pad_left, xla_runs_canonical_right=False),
    Rewrite("cpu-layout-nhwc", channels_first_conv, channels_last_outputs),
    Rewrite("cpu-small-map-im2col", window_larger_than_input_conv, no_conv_left),
    Rewrite("cpu-conv-winograd", winograd_conv, no_conv_left, "min_features=1 any_kernel=true"),
    Rewrite("drop-padding-taps", padded_small_map_conv, kernel_sliced),
)


def _inputs(rng: np.random.Generator, graph: convc.Graph) -> list[np.ndarray]:
    return [rng.standard_normal(v.type.shape).astype(np.float32) for v in graph.inputs]


def _max_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max(initial=0.0) / (1.0 + np.abs(want).max(initial=0.0)))


@pytest.mark.parametrize("seed", range(CASES_PER_PASS))
@pytest.mark.parametrize("rewrite", REWRITES, ids=lambda r: r.name)
def test_rewrite_matches_canonical_form(rewrite: Rewrite, seed: int, run_stablehlo: RunStablehlo) -> None:
    """The rewrite fires on a drawn conv, and XLA CPU's run of the rewritten module matches its
    run of the canonical form (or, where XLA CPU misreads that, jax.lax on the graph)."""
    rng = np.random.default_rng(seed)
    conv = rewrite.draw(rng)
    graph = conv.graph()
    canonical = convc.compile_graph(graph, target="generic")
    rewritten = convc.compile_graph(graph, pipeline=f"{default_pipeline('generic')},{rewrite.spelling()}")
    assert rewrite.fired(rewritten), f"{rewrite.name} did not fire on {conv}"
    inputs = _inputs(rng, graph)
    (want,) = run_stablehlo(canonical, inputs, "cpu") if rewrite.xla_runs_canonical_right else evaluate(graph, inputs)
    (got,) = run_stablehlo(rewritten, inputs, "cpu")
    assert got.shape == want.shape
    reference = "the canonical form" if rewrite.xla_runs_canonical_right else "jax.lax"
    assert _max_error(got, want) < 2e-5, f"{rewrite.name} differs from {reference} on {conv}"


# the cpu rewrites of ops other than convs, each with its own numeric test: one in this file, or a test file of its own
NON_CONV_REWRITES = {"cpu-integer-sum-as-dot": "test_integer_sum_as_dot_equals_numpy",
                     "cpu-float-sum-as-dot": "test_float_sum_as_dot_equals_an_f64_sum",
                     "cpu-max-pool-tap-max": "test_max_pool_tap_max_equals_jax_lax_reduce_window",
                     "cpu-materialize-shared-relu": "test_cpu_materialize_shared_relu.py",
                     "cpu-pad-before-pointwise": "test_a_depthwise_conv_over_a_1x1_convs_activation_padded_upstream_matches_jax_lax"}


def test_every_cpu_pass_is_registered_and_tested() -> None:
    """The `cpu-*` passes registered are exactly the ones REWRITES tests and the non-conv rewrites (each tested below or
    in its own test file), and the cpu target runs each."""
    cpu_passes = {name for name in PASSES if name.startswith("cpu-")}
    assert all(test in globals() or (Path(__file__).parent / test).is_file() for test in NON_CONV_REWRITES.values())
    tested = {r.name for r in REWRITES if r.name.startswith("cpu-")} | set(NON_CONV_REWRITES)
    assert tested == cpu_passes, f"untested: {sorted(cpu_passes - tested)}; not registered: {sorted(tested - cpu_passes)}"
    assert all(name in default_pipeline("cpu").split(",") for name in tested)


def test_cpu_pipeline_runs_the_rewrites_after_the_canonical_lowerings() -> None:
    """gpu is generic's pipeline with fold-conv-affine before its final dce, then lower-quantized (f64 convs) and
    drop-padding-taps; cpu is the same with lower-quantized's integer convs, then the cpu rewrites."""
    generic = default_pipeline("generic").split(",")
    gpu = default_pipeline("gpu").split(",")
    cpu = default_pipeline("cpu").split(",")
    folded = generic[:-1] + ["fold-conv-affine"] + generic[-1:]
    # gpu: the canonical forms with the folds, then lower-quantized with f64 convs (XLA:GPU has no integer conv)
    assert gpu == folded + ["lower-quantized{integer_conv=false}", "drop-padding-taps", "dce"]
    assert cpu[:len(folded) + 2] == folded + ["lower-quantized", "drop-padding-taps"]
    assert {r.name for r in REWRITES} - {"drop-padding-taps"} <= set(cpu[len(folded) + 2:])
    assert set(TARGETS) == {"generic", "cpu", "gpu"}


def test_cpu_target_end_to_end_on_gradient_ops(rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """The weight and input gradients of a depthwise and a grouped conv, written with the
    gradient ops, lowered for cpu (no conv with batch groups or feature groups left) and
    checked against jax.lax evaluating the same graph."""
    b = convc.Builder("grads")
    x, dy = b.input("x", (2, 6, 6, 8)), b.input("dy", (2, 6, 6, 8))
    w_depthwise, w_grouped = b.input("wd", (3, 3, 1, 8)), b.input("wg", (3, 3, 2, 8))
    layouts = ("NHWC", "HWIO", "NHWC")
    outputs = []
    for groups, w in ((8, w_depthwise), (4, w_grouped)):
        outputs.append(b.conv_backprop_filter(x, dy, w.type.shape, padding="SAME", dimension_numbers=layouts,
                                              feature_group_count=groups))
        outputs.append(b.conv(x, w, padding="SAME", dimension_numbers=layouts, feature_group_count=groups))
    b.output(*outputs)
    graph = b.build()
    text = convc.compile_graph(graph, target="cpu")
    assert all("batch_group_count = 1 :" in line for line in _convs(text))
    inputs = _inputs(rng, graph)
    for got, want in zip(run_stablehlo(text, inputs, "cpu"), evaluate(graph, inputs), strict=True):
        assert _max_error(got, want) < 2e-5


@pytest.mark.parametrize("seed", range(CASES_PER_PASS))
def test_integer_1x1_conv_with_a_constant_kernel_is_a_dot_of_rows_equal_to_numpy(seed: int, run_stablehlo: RunStablehlo) -> None:
    """cpu-conv-1x1-to-dot on an i8 x i8 -> i32 channels-last 1x1 conv with a constant kernel (1-3 spatial dims,
    strides 1-2): over more than one position the kernel becomes an [out, in] constant and the input a matrix of
    positions (over one, the kernel keeps its [in, out] order), and XLA CPU's run equals numpy's exact integer sums
    (int64) of the strided input times the kernel."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))
    strides = _ints(rng, n, 1, 3)
    in_features, out_features = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    lhs_shape = (int(rng.integers(1, 4)), *_ints(rng, n, 1, 6), in_features)
    kernel = rng.integers(-128, 128, (*(1,) * n, in_features, out_features)).astype(np.int8)
    letters = SPATIAL_LETTERS[:n]
    b = convc.Builder("case")
    x = b.input("x", lhs_shape, dtype="i8")
    b.output(b.conv(x, b.constant("w", kernel), window_strides=strides, dimension_numbers=(f"N{letters}C", f"{letters}IO", f"N{letters}C"),
                    preferred_element_type="i32"))
    text = convc.compile_graph(b.build(), pipeline=f"{default_pipeline('generic')},cpu-conv-1x1-to-dot")
    lhs = rng.integers(-128, 128, lhs_shape).astype(np.int8)
    strided = lhs[(slice(None), *(slice(None, None, s) for s in strides))].astype(np.int64)
    positions = strided.size // in_features
    kernel_form = (rf"\(tensor<{positions}x{in_features}xi8>, tensor<{out_features}x{in_features}xi8>\)" if positions > 1
                   else rf"tensor<{in_features}x{out_features}xi8>\) ->")
    assert not _convs(text) and re.search(rf"dot_general .*{kernel_form}", text), text
    (got,) = run_stablehlo(text, [lhs], "cpu")
    want = strided @ kernel.reshape(in_features, out_features).astype(np.int64)
    np.testing.assert_array_equal(got, want)


def _integer_sum_graph(shape: tuple[int, ...], axes: tuple[int, ...], storage: str, zero_point: int) -> convc.Graph:
    """reduce_sum over `axes` of 8-bit values (a graph input of `storage`) widened to i32, less `zero_point`: the sum
    QLinearGlobalAveragePool imports as."""
    b = convc.Builder("case")
    wide = b.convert(b.input("q", shape, dtype=storage), new_dtype="i32")
    shifted = b.subtract(wide, b.broadcast_in_dim(b.constant("zp", np.array(zero_point, np.int32)), shape=shape, broadcast_dimensions=()))
    b.output(b.reduce_sum(shifted, axes=axes))
    return b.build()


def _sums_as_dot(graph: convc.Graph) -> str:
    return convc.compile_graph(graph, pipeline=f"{default_pipeline('generic')},cpu-integer-sum-as-dot")


@pytest.mark.parametrize("seed", range(CASES_PER_PASS))
def test_integer_sum_as_dot_equals_numpy(seed: int, run_stablehlo: RunStablehlo) -> None:
    """cpu-integer-sum-as-dot on random 8-bit sums (int8 or uint8 widened to i32 less a zero point; rank 1-4, any
    nonempty set of summed dims): the reduce is gone, a dot_general of ones stands for it, and XLA CPU's run equals
    numpy's int64 sums."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    shape = _ints(rng, rank, 1, 7)
    axes = tuple(int(a) for a in np.sort(rng.choice(rank, int(rng.integers(1, rank + 1)), replace=False)))
    storage, low, high = ("i8", -128, 128) if rng.integers(2) else ("ui8", 0, 256)
    zero_point = int(rng.integers(low, high))
    text = _sums_as_dot(_integer_sum_graph(shape, axes, storage, zero_point))
    assert "stablehlo.reduce" not in text and "stablehlo.dot_general" in text, text
    q = rng.integers(low, high, shape).astype(np.int8 if storage == "i8" else np.uint8)
    (got,) = run_stablehlo(text, [q], "cpu")
    np.testing.assert_array_equal(got, (q.astype(np.int64) - zero_point).sum(axis=axes))


@pytest.mark.parametrize(("elements", "rewritten"), [(131071, True), (131072, False)])
def test_integer_sum_as_dot_at_the_f32_bound(elements: int, rewritten: bool, run_stablehlo: RunStablehlo) -> None:
    """int8 values all -128 summed over `elements`: 128 * 131071 < 2^24 is rewritten and exact (-16777088, an f32
    integer); 128 * 131072 = 2^24 is not rewritten (a partial sum could pass f32's integers); both equal numpy's."""
    text = _sums_as_dot(_integer_sum_graph((1, elements), (1,), "i8", 0))
    assert ("stablehlo.dot_general" in text) == rewritten and ("stablehlo.reduce" in text) != rewritten
    (got,) = run_stablehlo(text, [np.full((1, elements), -128, np.int8)], "cpu")
    np.testing.assert_array_equal(got, [-128 * elements])


@pytest.mark.parametrize("seed", range(CASES_PER_PASS))
def test_float_sum_as_dot_equals_an_f64_sum(seed: int, run_stablehlo: RunStablehlo) -> None:
    """cpu-float-sum-as-dot on random f32 or f64 sums over middle dims (rank 3-5, one kept dim or more on each side
    of the summed ones, the sum of a SiLU as a squeeze-excite pool's): the reduce is gone, a dot_general of ones
    stands for it, and XLA CPU's run equals numpy's f64 sum of the same values within the operand type's rounding
    of a sum of that many terms."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(3, 6))
    shape = _ints(rng, rank, 1, 9)
    first = int(rng.integers(1, rank - 1))
    axes = tuple(range(first, int(rng.integers(first + 1, rank))))
    dtype = "f64" if rng.integers(4) == 0 else "f32"
    b = convc.Builder("pool")
    x = b.input("x", shape, dtype=dtype)
    b.output(b.reduce_sum(b.multiply(x, b.logistic(x)), axes=axes))
    text = convc.compile_graph(b.build(), target="cpu")
    assert "stablehlo.reduce" not in text and "stablehlo.dot_general" in text, text
    values = (rng.standard_normal(shape) * 3).astype(np.float64 if dtype == "f64" else np.float32)
    (got,) = run_stablehlo(text, [values], "cpu")
    wide = values.astype(np.float64)
    terms = (wide / (1 + np.exp(-wide))).sum(axis=axes)
    eps = np.finfo(values.dtype).eps
    summed = int(np.prod([shape[a] for a in axes]))
    np.testing.assert_allclose(got, terms, rtol=0, atol=4 * eps * summed * float(np.abs(values).max()))


@pytest.mark.parametrize("seed", range(CASES_PER_PASS))
def test_max_pool_tap_max_equals_jax_lax_reduce_window(seed: int, run_stablehlo: RunStablehlo) -> None:
    """cpu-max-pool-tap-max on random 2-D f32 max pools, NHWC (windows 1-3, strides 1-3, window dilations 1-2, SAME,
    SAME_LOWER or VALID), of a ReLU'd input (a ResNet stem's) for even seeds and of signed values for odd ones (where a
    padded zero would win over negative values): the reduce_window is gone, strided slices and maxima stand for it,
    and XLA CPU's run equals jax.lax.reduce_window's max, element for element."""
    from jax import lax

    rng = np.random.default_rng(seed)
    window = (1, *_ints(rng, 2, 1, 3), 1)
    strides = (1, *_ints(rng, 2, 1, 3), 1)
    dilation = (1, *_ints(rng, 2, 1, 2), 1)
    padding = ("SAME", "SAME_LOWER", "VALID")[int(rng.integers(3))]
    shape = (int(rng.integers(1, 3)), *_ints(rng, 2, 5, 10), int(rng.integers(1, 5)))
    relu = seed % 2 == 0
    b = convc.Builder("pool")
    x_in = b.input("x", shape)
    b.output(b.max_pool(b.relu(x_in) if relu else x_in, window_dimensions=window, window_strides=strides, window_dilation=dilation,
                        padding=padding))
    text = convc.compile_graph(b.build(), target="cpu")
    assert "reduce_window" not in text and "stablehlo.maximum" in text, text
    x = rng.standard_normal(shape).astype(np.float32)
    (got,) = run_stablehlo(text, [x], "cpu")
    want = lax.reduce_window(np.maximum(x, 0) if relu else x, -np.inf, lax.max, window, strides, padding, window_dilation=dilation)
    np.testing.assert_array_equal(got, np.asarray(want))


def test_a_depthwise_sum_read_by_a_training_steps_clip_and_mask_is_computed_once_and_matches_jax_vjp(
        rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """The gradient step of relu6(depthwise(x, w) * s) (a MobileNet block's depthwise conv, BatchNorm scale and clip),
    with respect to w, emitted for the cpu target: the depthwise tap sum is read by the forward clip and by the
    backward mask, so cpu-depthwise-tap-sum puts it behind one optimization_barrier; the step's output and kernel
    gradient equal jax.vjp's at HIGHEST precision."""
    import jax
    from jax import lax

    b = convc.Builder("dw_clip")
    x, w, s = b.input("x", (2, 8, 8, 16)), b.input("w", (3, 3, 1, 16)), b.input("s", (16,))
    y = b.conv(x, w, padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=16)
    b.output(b.clamp(b.multiply(y, b.broadcast_in_dim(s, shape=(2, 8, 8, 16), broadcast_dimensions=(3,))), min=0.0, max=6.0))
    step = convc.grad(b.build(), ["w"])
    text = convc.compile_graph(step, target="cpu")
    assert text.count("stablehlo.optimization_barrier") == 1
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((2, 8, 8, 16), (3, 3, 1, 16), (16,), (2, 8, 8, 16))]

    def forward(x: jax.Array, w: jax.Array, s: jax.Array) -> jax.Array:
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=16,
                                     precision=lax.Precision.HIGHEST)
        return jax.numpy.clip(y * s, 0.0, 6.0)

    want_y, vjp = jax.vjp(forward, *arrays[:3])
    got_y, got_dw = run_stablehlo(text, arrays, "cpu")
    want_dw = vjp(arrays[3])[1]
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-5 * float(np.abs(want_y).max()))
    np.testing.assert_allclose(got_dw, want_dw, rtol=1e-4, atol=1e-4 * float(np.abs(want_dw).max()))


@pytest.mark.parametrize("chain", ["relu6", "signed"])
@pytest.mark.parametrize("stride", [1, 2])
def test_a_depthwise_conv_over_a_1x1_convs_activation_padded_upstream_matches_jax_lax(
        stride: int, chain: str, rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """A MobileNet block's first half (1x1 conv, bias, then ReLU6 with constant weights, or a clamp to [-1, 6] with the
    1x1 kernel an input, SAME 3x3 depthwise conv at `stride`) through the cpu pipeline with cpu-pad-before-pointwise
    taking it (the cost model opened up): the depthwise conv reads the masked result of a 1x1 conv over the padded
    input, and XLA CPU's run equals jax.lax at HIGHEST precision. The biases are standard normal, so the signed clamp's
    border values are negative in some features: the mask must make them padding's zeros."""
    from jax import lax

    w1 = rng.standard_normal((1, 1, 3, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    b = convc.Builder("expand_depthwise")
    x, k = b.input("x", (2, 9, 9, 3)), b.input("k", (3, 3, 1, 8))
    kernel = b.constant("w1", w1) if chain == "relu6" else b.input("w1", w1.shape)
    dn = ("NHWC", "HWIO", "NHWC")
    biased = b.bias_add(b.conv(x, kernel, padding="VALID", dimension_numbers=dn), b.constant("b1", bias), axis=3)
    expanded = b.clamp(biased, min=0.0 if chain == "relu6" else -1.0, max=6.0)
    b.output(b.conv(expanded, k, window_strides=(stride, stride), padding="SAME", dimension_numbers=dn, feature_group_count=8))
    graph = b.build()
    pipeline = default_pipeline("cpu").replace("cpu-pad-before-pointwise", "cpu-pad-before-pointwise{max_extra=1000}")
    text = convc.compile_graph(graph, pipeline=pipeline)
    untaken = convc.compile_graph(graph, target="cpu")
    assert "stablehlo.select" in text and "tensor<2x11x11x3xf32>" in text, "the 1x1 conv's input was not padded"
    assert "tensor<2x11x11x3xf32>" not in untaken, "the cost model took a 9x9 map"
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((2, 9, 9, 3), (3, 3, 1, 8))]
    e = lax.conv_general_dilated(arrays[0], w1, (1, 1), "VALID", dimension_numbers=dn, precision=lax.Precision.HIGHEST) + bias
    e = np.clip(e, 0.0 if chain == "relu6" else -1.0, 6.0)
    want = lax.conv_general_dilated(e, arrays[1], (stride, stride), "SAME", dimension_numbers=dn, feature_group_count=8,
                                    precision=lax.Precision.HIGHEST)
    (got,) = run_stablehlo(text, arrays if chain == "relu6" else [*arrays, w1], "cpu")
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


WINOGRAD_CASES = 4


@pytest.mark.parametrize("seed", range(WINOGRAD_CASES))
def test_winograd_with_a_constant_kernel_is_within_16_f32_epsilons_of_an_f64_conv(seed: int, run_stablehlo: RunStablehlo) -> None:
    """cpu-conv-winograd at its default cost model on a SAME 3x3 NHWC conv of 128-160 features with a constant kernel
    (what an imported network's conv is; the kernel transformed in f64 by the pass): no conv is left, and XLA CPU's run
    is within 16 f32 epsilons (1.9e-6) of jax.lax's conv accumulated in f64 (`convc.reference`), relative to the output's
    largest magnitude (ReLU'd inputs for even seeds, signed ones for odd). XLA's own conv of the same graph is held to
    the same bound, the yardstick: measured, Winograd 3-8e-7 and XLA's conv 2-9e-7 (jaxlib 0.10.2 and 0.12)."""
    rng = np.random.default_rng(seed)
    size, in_features, out_features = int(rng.integers(5, 10)), int(rng.integers(128, 161)), int(rng.integers(128, 161))
    values = rng.standard_normal((2, size, size, in_features)).astype(np.float32)
    if seed % 2 == 0:
        values = np.maximum(values, 0)
    kernel = (rng.standard_normal((3, 3, in_features, out_features)) / np.sqrt(9 * in_features)).astype(np.float32)
    b = convc.Builder("winograd")
    x = b.input("x", values.shape)
    b.output(b.conv(x, b.constant("w", kernel), padding=((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")))
    graph = b.build()
    rewritten, direct = convc.compile_graph(graph, target="cpu"), convc.compile_graph(graph, target="generic")
    assert no_conv_left(rewritten) and not no_conv_left(direct)
    (want,) = evaluate(graph, [values])  # jax.lax accumulating in f64, rounded once to f32
    scale = float(np.abs(want).max())
    (got,) = run_stablehlo(rewritten, [values], "cpu")
    (xla,) = run_stablehlo(direct, [values], "cpu")
    winograd_error, xla_error = (float(np.abs(r.astype(np.float64) - want).max()) / scale for r in (got, xla))
    bound = 16 * float(np.finfo(np.float32).eps)
    assert winograd_error <= bound and xla_error <= bound, f"Winograd {winograd_error:.2e}, XLA's conv {xla_error:.2e}"
