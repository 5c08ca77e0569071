"""convc's conv, end to end, against `jax.lax.conv_general_dilated` called directly.

The case matrix is pairwise over the conv's features (rank, layout, strides,
dilations, padding mode, groups, element type, precision, accumulation type,
frontend, constant or input kernel, generic or cpu pipeline), drawn by a seeded
greedy generator, plus seeded random rows and hand-written corner cases (under
both pipelines). Every case is compiled by convc, run by PJRT and compared with lax. The f32 corner cases also run convc's
emitted text on the StableHLO reference interpreter, so a disagreement can be
pinned on convc (interpreter disagrees with lax too) or on XLA (it does not).

lax is the oracle: at Precision.HIGHEST on the CPU, whatever precision a case asks convc
for. cpu-target modules run on the PJRT platform "cpu" (named); generic ones on whatever
PJRT finds, within a bound widened, where that platform computes an f32 conv below f32
(TF32 on a GPU), to `convc --check`'s bound for what it computes in.
"""

from __future__ import annotations

import functools
import json
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import convc
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from convc.dtypes import numpy_dtype
from convc.mlir import eval_module
from convc.runtime import first_device, platform_name
from convc.runtime_inputs import TOLERANCE as CHECK_TOLERANCE
from convc.runtime_inputs import tolerance_for
from convc.xla_probes import interpreter_feature_major_probe, interpreter_handles_feature_major_output
from jax import lax

# Max |convc - lax| allowed, as a fraction of (1 + max |lax|), by result element type.
TOLERANCE = {"f32": 2e-5, "f16": 4e-3, "bf16": 2e-2}

SPATIAL_LETTERS = {1: "W", 2: "HW", 3: "DHW"}

FACTORS: dict[str, tuple[str, ...]] = {
    "rank": ("1", "2", "3"),
    "layout": ("default", "channels_last", "permuted"),
    "stride": ("1", "2", "3", "beyond_kernel"),
    "rhs_dilation": ("1", "2"),
    "lhs_dilation": ("1", "2"),
    "padding": ("SAME", "SAME_LOWER", "VALID", "symmetric", "asymmetric", "negative"),
    "groups": ("none", "feature", "depthwise", "batch"),
    "dtype": ("f32", "bf16", "f16"),
    "precision": ("none", "HIGHEST", "pair"),
    "accumulate": ("none", "f32"),
    "frontend": ("builder", "json"),
    "kernel": ("input", "constant"),
    "target": ("generic", "cpu"),
}
GENERATED_CASES = 120
SEED = 1234


@dataclass(frozen=True)
class ConvCase:
    """One conv: shapes and attributes exactly as `lax.conv_general_dilated` takes them."""

    label: str
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    window_strides: tuple[int, ...]
    padding: str | tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    dimension_numbers: tuple[str, str, str] | None = None
    feature_group_count: int = 1
    batch_group_count: int = 1
    dtype: str = "f32"
    precision: str | tuple[str, str] | None = None
    preferred_element_type: str | None = None
    frontend: str = "builder"
    constant_kernel: bool = False
    target: str = "generic"  # the default pipeline's target: "cpu" adds rewrites of slow conv forms
    seed: int = field(default=0, compare=False)

    @property
    def result_dtype(self) -> str:
        return self.preferred_element_type or self.dtype

    def conv_attrs(self) -> dict[str, Any]:
        """The attributes as both convc frontends and lax name them (None: leave out)."""
        return {
            "window_strides": self.window_strides, "padding": self.padding,
            "lhs_dilation": self.lhs_dilation, "rhs_dilation": self.rhs_dilation,
            "dimension_numbers": self.dimension_numbers,
            "feature_group_count": self.feature_group_count, "batch_group_count": self.batch_group_count,
            "precision": self.precision, "preferred_element_type": self.preferred_element_type,
        }


# --- the case matrix ------------------------------------------------------------------------


def _pairs(row: dict[str, str], names: list[str]) -> set[tuple[str, str, str, str]]:
    return {(a, row[a], b, row[b]) for i, a in enumerate(names) for b in names[i + 1:]}


def _random_row(factors: dict[str, tuple[str, ...]], rnd: random.Random, fixed: dict[str, str]) -> dict[str, str]:
    return {name: rnd.choice(levels) for name, levels in factors.items()} | fixed


def pairwise_rows(factors: dict[str, tuple[str, ...]], seed: int, candidates: int = 30) -> list[dict[str, str]]:
    """A greedy covering array: every pair of levels of every two factors appears in some row."""
    rnd = random.Random(seed)
    names = list(factors)
    uncovered = {(a, va, b, vb) for i, a in enumerate(names) for b in names[i + 1:]
                 for va in factors[a] for vb in factors[b]}
    rows: list[dict[str, str]] = []
    while uncovered:
        a, va, b, vb = rnd.choice(sorted(uncovered))
        tries = [_random_row(factors, rnd, {a: va, b: vb}) for _ in range(candidates)]
        best = max(tries, key=lambda row: len(_pairs(row, names) & uncovered))
        rows.append(best)
        uncovered -= _pairs(best, names)
    return rows


def random_rows(factors: dict[str, tuple[str, ...]], seed: int, count: int) -> list[dict[str, str]]:
    rnd = random.Random(seed)
    return [_random_row(factors, rnd, {}) for _ in range(count)]


def _layouts(kind: str, n: int, rng: np.random.Generator) -> tuple[str, str, str] | None:
    letters = SPATIAL_LETTERS[n]
    if kind == "default":
        return None
    if kind == "channels_last":
        return ("N" + letters + "C", letters + "IO", "N" + letters + "C")
    return tuple("".join(rng.permutation(list(roles + letters))) for roles in ("NC", "OI", "NC"))  # type: ignore[return-value]


def _groups(kind: str, rng: np.random.Generator) -> tuple[int, int, int, int, int, int]:
    """(batch, in features, kernel in features, out features, feature groups, batch groups)."""
    if kind == "feature":
        groups = int(rng.integers(2, 4))
        features = groups * int(rng.integers(1, 3))
        return int(rng.integers(1, 3)), features, features // groups, groups * int(rng.integers(1, 3)), groups, 1
    if kind == "depthwise":
        features = int(rng.integers(2, 4))
        return int(rng.integers(1, 3)), features, 1, features * int(rng.integers(1, 3)), features, 1
    if kind == "batch":
        groups = 2
        features = int(rng.integers(1, 4))
        return groups * int(rng.integers(1, 3)), features, features, groups * int(rng.integers(1, 3)), 1, groups
    features = int(rng.integers(1, 4))
    return int(rng.integers(1, 3)), features, features, int(rng.integers(1, 4)), 1, 1


def _pads(kind: str, n: int, rng: np.random.Generator) -> str | tuple[tuple[int, int], ...]:
    if kind in ("SAME", "SAME_LOWER", "VALID"):
        return kind
    if kind == "symmetric":
        return tuple((p, p) for p in (int(x) for x in rng.integers(0, 3, n)))
    if kind == "asymmetric":
        return tuple((int(lo), int(lo) + int(extra)) for lo, extra in zip(rng.integers(0, 3, n), rng.integers(1, 3, n), strict=True))
    return tuple((-1, int(hi)) if i == 0 else (int(hi), -1) for i, hi in enumerate(rng.integers(-1, 3, n)))


def _output_sizes(in_sizes: Sequence[int], geometry: dict[str, Any]) -> list[int]:
    """Output sizes under explicit or VALID padding (SAME never empties a result), to grow inputs until non-empty."""
    padding = geometry["padding"]
    if padding in ("SAME", "SAME_LOWER"):
        return list(in_sizes)
    pads = [(0, 0)] * len(in_sizes) if padding == "VALID" else padding
    sizes = []
    for size, k, s, (lo, hi), ld, rd in zip(in_sizes, geometry["kernel"], geometry["strides"], pads,
                                            geometry["lhs_dilation"], geometry["rhs_dilation"], strict=True):
        padded, window = (size - 1) * ld + 1 + lo + hi, (k - 1) * rd + 1
        sizes.append((padded - window) // s + 1 if padded >= window else 0)
    return sizes


def _shape(spec: str | None, roles: tuple[str, str], sizes: dict[str, int], first: int, second: int, n: int) -> tuple[int, ...]:
    if spec is None:
        return (first, second) + tuple(sizes[c] for c in SPATIAL_LETTERS[n])
    by_letter = {roles[0]: first, roles[1]: second} | sizes
    return tuple(by_letter[c] for c in spec)


def case_from_row(index: int, row: dict[str, str]) -> ConvCase:
    """Concrete tiny shapes for one row of factor levels; spatial sizes grow until the result is non-empty."""
    rng = np.random.default_rng(SEED + index)
    n = int(row["rank"])
    layouts = _layouts(row["layout"], n, rng)
    batch, features, kernel_in, out_features, fgc, bgc = _groups(row["groups"], rng)
    kernel = [int(k) for k in rng.integers(1, 4 if n < 3 else 3, n)]
    strides = [k + 1 if row["stride"] == "beyond_kernel" else int(row["stride"]) for k in kernel]
    rhs_dilation = [int(row["rhs_dilation"]) if i == 0 or rng.random() < 0.5 else 1 for i in range(n)]
    lhs_dilation = [int(row["lhs_dilation"]) if i == 0 or rng.random() < 0.5 else 1 for i in range(n)]
    padding = _pads(row["padding"], n, rng)
    in_sizes = [int(s) for s in rng.integers(2, 6 if n < 3 else 4, n)]
    geometry = {"kernel": kernel, "strides": strides, "rhs_dilation": rhs_dilation,
                "lhs_dilation": lhs_dilation, "padding": padding}
    while min(_output_sizes(in_sizes, geometry)) <= 0:
        in_sizes = [s + 1 for s in in_sizes]
    letters = SPATIAL_LETTERS[n]
    spec_lhs, spec_rhs = (None, None) if layouts is None else layouts[:2]
    precision = {"none": None, "HIGHEST": "HIGHEST", "pair": ("DEFAULT", "HIGHEST")}[row["precision"]]
    label = "-".join([f"{index:03d}", f"{n}d", row["layout"], f"s{row['stride']}", f"ld{row['lhs_dilation']}",
                      f"rd{row['rhs_dilation']}", row["padding"], row["groups"], row["dtype"], row["precision"],
                      f"acc_{row['accumulate']}", row["frontend"], f"w_{row['kernel']}", row["target"]])
    return ConvCase(
        label=label,
        lhs_shape=_shape(spec_lhs, ("N", "C"), dict(zip(letters, in_sizes, strict=True)), batch, features, n),
        rhs_shape=_shape(spec_rhs, ("O", "I"), dict(zip(letters, kernel, strict=True)), out_features, kernel_in, n),
        window_strides=tuple(strides), padding=padding,
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=layouts, feature_group_count=fgc, batch_group_count=bgc,
        dtype=row["dtype"], precision=precision,
        preferred_element_type=None if row["accumulate"] == "none" else row["accumulate"],
        frontend=row["frontend"], constant_kernel=row["kernel"] == "constant", target=row["target"], seed=SEED + index,
    )


def _corner(label: str, lhs: tuple[int, ...], rhs: tuple[int, ...], strides: tuple[int, ...], padding: Any, **kw: Any) -> ConvCase:
    n = len(lhs) - 2
    kw.setdefault("lhs_dilation", (1,) * n)
    kw.setdefault("rhs_dilation", (1,) * n)
    return ConvCase(label=f"corner-{label}", lhs_shape=lhs, rhs_shape=rhs, window_strides=strides, padding=padding,
                    seed=len(label), **kw)


CORNER_CASES = [
    _corner("odd-layout-feature-groups", (5, 2, 6, 4), (3, 3, 4, 2), (1, 2), "SAME",
            dimension_numbers=("HNCW", "WOHI", "CWNH"), feature_group_count=3),
    _corner("odd-layout-batch-groups", (3, 4, 2, 5), (2, 4, 2, 3), (2, 1), ((0, 1), (-1, 0)),
            dimension_numbers=("WNCH", "IOHW", "WNHC"), batch_group_count=2, rhs_dilation=(1, 2)),
    _corner("mobilenet-depthwise", (1, 7, 7, 4), (3, 3, 1, 8), (2, 2), "SAME",
            dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=4),
    _corner("batch-groups-full", (4, 3, 5), (8, 3, 2), (1,), "VALID", batch_group_count=4),
    _corner("batch-groups-lhs-dilated", (2, 2, 4, 3), (4, 2, 2, 2), (1, 1), ((1, 0), (0, 1)),
            batch_group_count=2, lhs_dilation=(2, 1)),
    _corner("stride-beyond-input", (1, 2, 4), (3, 2, 2), (5,), "VALID"),
    _corner("kernel-equals-padded-input", (1, 1, 3, 3), (1, 1, 5, 4), (1, 1), ((1, 1), (0, 1))),
    _corner("negative-pads-both-sides", (1, 2, 7, 6), (2, 2, 2, 2), (2, 1), ((-1, -2), (-2, 1)), lhs_dilation=(2, 1)),
    _corner("transposed-style", (1, 2, 4), (2, 2, 3), (1,), ((2, 2),), lhs_dilation=(3,)),
    _corner("same-lower-strided-dilated", (1, 1, 6, 5), (2, 1, 3, 2), (2, 3), "SAME_LOWER", rhs_dilation=(2, 1)),
    _corner("dilated-kernel-beyond-input", (1, 1, 3), (1, 1, 2), (1,), ((2, 2),), rhs_dilation=(4,)),
    _corner("empty-output", (1, 1, 2), (1, 1, 3), (1,), "VALID"),
    _corner("empty-batch", (0, 2, 3), (1, 2, 2), (1,), "SAME"),
    _corner("pointwise-3d", (1, 3, 2, 3, 2), (2, 3, 1, 1, 1), (2, 1, 2), "VALID",
            dimension_numbers=("NCDHW", "OIDHW", "NDHWC")),
    _corner("precision-pair", (2, 2, 3, 3), (3, 2, 2, 2), (1, 1), "SAME", precision=("HIGHEST", "DEFAULT"),
            preferred_element_type="f32"),
]



def generated_cases() -> list[ConvCase]:
    """The pairwise rows, topped up with seeded random rows to GENERATED_CASES."""
    rows = pairwise_rows(FACTORS, SEED)
    rows += random_rows(FACTORS, SEED + 1, max(0, GENERATED_CASES - len(rows)))
    return [case_from_row(i, row) for i, row in enumerate(rows)]


CASES = generated_cases()
# Every corner under each target's pipeline: the cpu rewrites target exactly such convs.
TARGET_CORNERS = [replace(c, label=f"{c.label}-{target}", target=target) for c in CORNER_CASES for target in FACTORS["target"]]


def test_matrix_covers_every_pair_of_levels() -> None:
    """The generator's promise, checked on the rows the tests use."""
    rows = pairwise_rows(FACTORS, SEED)
    names = list(FACTORS)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            seen = {(row[a], row[b]) for row in rows}
            assert seen == {(va, vb) for va in FACTORS[a] for vb in FACTORS[b]}, (a, b)


# --- building and running ----------------------------------------------------------------------


def case_inputs(case: ConvCase) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(case.seed)
    dtype = numpy_dtype(case.dtype)
    return rng.standard_normal(case.lhs_shape).astype(dtype), rng.standard_normal(case.rhs_shape).astype(dtype)


def build_with_builder(case: ConvCase, rhs: np.ndarray) -> convc.Graph:
    b = convc.Builder("conv_case")
    x = b.input("lhs", case.lhs_shape, case.dtype)
    w = b.constant("rhs", rhs) if case.constant_kernel else b.input("rhs", case.rhs_shape, case.dtype)
    b.output(b.conv(x, w, name="out", **case.conv_attrs()))
    return b.build()


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


def build_with_json(case: ConvCase, rhs: np.ndarray) -> convc.Graph:
    node = {"name": "out", "op": "conv", "inputs": ["lhs", "rhs"]}
    node |= {k: _json_value(v) for k, v in case.conv_attrs().items() if v is not None}
    kernel = {"name": "rhs", "shape": list(case.rhs_shape), "dtype": case.dtype}
    doc: dict[str, Any] = {"name": "conv_case", "inputs": [{"name": "lhs", "shape": list(case.lhs_shape), "dtype": case.dtype}],
                           "nodes": [node], "outputs": ["out"]}
    if case.constant_kernel:
        doc["constants"] = [kernel | {"value": rhs.astype(np.float64).tolist()}]
    else:
        doc["inputs"].append(kernel)
    return convc.load_model_text(json.dumps(doc), "conv_case.json")


@functools.cache
def case_graph(case: ConvCase) -> convc.Graph:
    _, rhs = case_inputs(case)
    return build_with_json(case, rhs) if case.frontend == "json" else build_with_builder(case, rhs)


@functools.cache
def emitted(case: ConvCase) -> str:
    """convc's StableHLO for a case (cached: the interpreter tests reuse it)."""
    return convc.compile_graph(case_graph(case), target=case.target)


def run_platform(case: ConvCase) -> str | None:
    """cpu-target modules run on the CPU; generic ones on the platform PJRT finds."""
    return "cpu" if case.target == "cpu" else None


def tolerance(case: ConvCase, platform: str | None) -> float:
    """TOLERANCE for the result type; where `platform` computes the conv below the graph's
    types (an f32 conv below HIGHEST on a GPU), `convc --check`'s bound for what it computes in."""
    graph, name = case_graph(case), platform_name(platform)
    computed = tolerance_for([graph], name)
    if computed == tolerance_for([graph], "cpu"):
        return TOLERANCE[case.result_dtype]
    return max(TOLERANCE[case.result_dtype], CHECK_TOLERANCE[computed])


def runtime_args(case: ConvCase) -> list[np.ndarray]:
    lhs, rhs = case_inputs(case)
    return [lhs] if case.constant_kernel else [lhs, rhs]


def lax_string_pads(case: ConvCase) -> list[tuple[int, int]]:
    """lax refuses a padding mode on lhs-dilated convs; convc defines it as lax's own
    `padtype_to_pads` on the undilated input and the dilated kernel, so ask lax for those."""
    lhs_perm, rhs_perm, _ = lax.conv_dimension_numbers(case.lhs_shape, case.rhs_shape, case.dimension_numbers)
    kernel = [case.rhs_shape[d] for d in rhs_perm[2:]]
    window = [(k - 1) * d + 1 for k, d in zip(kernel, case.rhs_dilation, strict=True)]
    assert isinstance(case.padding, str)
    return list(lax.padtype_to_pads([case.lhs_shape[d] for d in lhs_perm[2:]], window, case.window_strides, case.padding))


def lax_reference(case: ConvCase) -> np.ndarray:
    """The oracle: lax.conv_general_dilated on the case's own attributes, nothing from convc,
    at HIGHEST on the CPU (a case's `precision` is what it asks of convc's module)."""
    lhs, rhs = case_inputs(case)
    preferred = None if case.preferred_element_type is None else numpy_dtype(case.preferred_element_type)
    padding = case.padding if isinstance(case.padding, str) else list(case.padding)
    if isinstance(padding, str) and any(d != 1 for d in case.lhs_dilation):
        padding = lax_string_pads(case)
    with jax.default_device(first_device("cpu")):
        out = lax.conv_general_dilated(
            jnp.asarray(lhs), jnp.asarray(rhs), case.window_strides, padding,
            lhs_dilation=case.lhs_dilation, rhs_dilation=case.rhs_dilation, dimension_numbers=case.dimension_numbers,
            feature_group_count=case.feature_group_count, batch_group_count=case.batch_group_count,
            precision=lax.Precision.HIGHEST, preferred_element_type=preferred)
        return np.asarray(out)


def assert_matches(got: np.ndarray, want: np.ndarray, dtype: str, bound: float) -> None:
    """max |got - want| <= bound * (1 + max |want|), both of element type `dtype`."""
    assert got.shape == want.shape
    assert got.dtype == want.dtype == numpy_dtype(dtype)
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    if want64.size == 0:
        return
    limit = bound * (1.0 + float(np.abs(want64).max()))
    error = float(np.abs(got64 - want64).max())
    assert error <= limit, f"max |convc - lax| = {error:.3g} > {limit:.3g}"


@pytest.mark.parametrize("case", CASES + TARGET_CORNERS, ids=lambda c: c.label)
def test_conv_matches_lax(case: ConvCase, run_stablehlo: Any) -> None:
    want, platform = lax_reference(case), run_platform(case)
    (got,) = run_stablehlo(emitted(case), runtime_args(case), platform)
    assert_matches(got, want, case.result_dtype, tolerance(case, platform))


def output_feature_before_batch(case: ConvCase) -> bool:
    out_spec = lax.conv_dimension_numbers(case.lhs_shape, case.rhs_shape, case.dimension_numbers).out_spec
    return out_spec[1] < out_spec[0]


# Some jaxlibs' StableHLO interpreter aborts the process ("Incompatible index and shape found
# while flattening index") when the output's feature dimension precedes its batch dimension,
# on JAX's own lowering too. Those corners run on the interpreter only where the probe
# (convc.xla_probes, in a subprocess: an abort would take pytest down) shows it handles them.
INTERPRETER_CASES = [c for c in TARGET_CORNERS if c.dtype == "f32"]


@pytest.mark.parametrize("case", INTERPRETER_CASES, ids=lambda c: c.label)
def test_reference_interpreter_agrees(case: ConvCase, run_stablehlo: Any) -> None:
    """convc's text on the StableHLO interpreter: agrees with lax (convc right) and with PJRT (XLA right)."""
    if output_feature_before_batch(case) and not interpreter_handles_feature_major_output():
        pytest.skip("this jaxlib's StableHLO interpreter aborts on a feature-major output")
    text, platform = emitted(case), run_platform(case)
    (interpreted,) = eval_module(text, runtime_args(case))
    assert_matches(interpreted, lax_reference(case), case.result_dtype, TOLERANCE[case.result_dtype])
    (compiled,) = run_stablehlo(text, runtime_args(case), platform)
    assert_matches(compiled, interpreted, case.result_dtype, tolerance(case, platform))


def test_matrix_size_and_spread() -> None:
    """Keep the matrix in the agreed budget, and make sure both frontends and all ranks are in it."""
    assert 100 <= len(CASES) + len(TARGET_CORNERS) <= 200
    assert len([c for c in INTERPRETER_CASES if not output_feature_before_batch(c)]) >= 12
    assert {c.frontend for c in CASES} == {"builder", "json"}
    assert {c.target for c in CASES} == {"generic", "cpu"}
    assert {len(c.lhs_shape) for c in CASES} == {3, 4, 5}


def test_the_interpreter_probe_sees_an_abort_or_a_right_answer() -> None:
    """The probe behind the skips: either the known abort (the skips are needed) or the exact
    answer (they are not, and the corners run); never anything else. A fixed interpreter is
    reported, not failed."""
    result = interpreter_feature_major_probe()
    if result.returncode != 0:
        assert "Incompatible index and shape" in result.stderr, result.stderr[-2000:]
    else:
        warnings.warn("the StableHLO interpreter handles feature-major outputs in this jaxlib: those corners run on it",
                      stacklevel=1)
