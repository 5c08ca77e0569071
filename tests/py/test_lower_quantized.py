"""lower-quantized, run by XLA through PJRT, against the spec oracle (dequantize, float conv,
quantize; compiler/reference.py): quantized convs of every form (per tensor and per axis,
padding, strides, dilations, feature groups, depthwise, 1-D to 3-D, zero points at the
storage limits, u8 and i16 storage, the hybrid float-lhs form), on the cpu target's
pipeline (whose conv rewrites then see integer convs) and the gpu target's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from convc import Builder, compile_graph, run
from convc.dtypes import parse_quant
from convc.ir import Graph
from convc.passes import default_pipeline
from convc.reference import evaluate
from convc.runtime import default_platform


def _per_tensor(storage: str, scale: float, zero_point: int) -> str:
    return f"!quant.uniform<{storage}:f32, {scale}:{zero_point}>"


def _per_axis(storage: str, axis: int, scales: list[float], zero_points: list[int]) -> str:
    params = ", ".join(f"{s}:{z}" for s, z in zip(scales, zero_points, strict=True))
    return f"!quant.uniform<{storage}:f32:{axis}, {{{params}}}>"


@dataclass
class Case:
    """One quantized conv: operand shapes and types, the result type, conv attributes."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    lhs_type: str
    rhs_type: str
    out_type: str
    attrs: dict[str, Any] = field(default_factory=dict)

    def graph(self) -> Graph:
        b = Builder("qconv")
        x = b.input("x", self.lhs, self.lhs_type)
        w = b.input("w", self.rhs, self.rhs_type)
        out = b.conv(x, w, name="c", preferred_element_type=None if self.out_type == "f32" else self.out_type, **self.attrs)
        b.output(out)
        return b.build()


def _stored(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Random stored values over the whole storage range (a float lhs: normal values)."""
    if dtype == "f32":
        return rng.standard_normal(shape).astype(np.float32)
    quant = parse_quant(dtype)
    low, high = quant.limits()
    return rng.integers(low, high + 1, shape).astype(quant.storage_numpy())


P2 = [0.5, 0.25, 0.125, 0.0625]  # powers of two: every dequantized value exact in f32

EXACT_CASES = {
    "per-tensor-same": Case((1, 3, 6, 6), (4, 3, 3, 3), _per_tensor("i8", 0.5, -3), _per_tensor("i8", 0.25, 2),
                            _per_tensor("i8", 64.0, 5), {"padding": "SAME"}),
    "per-axis-nhwc-strided": Case((2, 7, 7, 3), (3, 3, 3, 4), _per_tensor("i8", 0.125, 10), _per_axis("i8", 3, P2, [0, 1, -1, 3]),
                                  _per_axis("i8", 3, [8.0, 16.0, 4.0, 32.0], [0, -5, 7, 2]),
                                  {"dimension_numbers": ("NHWC", "HWIO", "NHWC"), "window_strides": (2, 2),
                                   "padding": ((1, 2), (0, 1))}),
    "dilations": Case((1, 2, 6, 6), (2, 2, 2, 2), _per_tensor("i8", 0.5, 0), _per_axis("i8", 0, [0.25, 0.5], [3, -3]),
                      _per_tensor("i8", 16.0, -1), {"lhs_dilation": (2, 1), "rhs_dilation": (1, 2), "padding": ((1, 1), (2, 0))}),
    "feature-groups": Case((1, 4, 5, 5), (6, 2, 3, 3), _per_tensor("i8", 0.25, 1), _per_axis("i8", 0, P2[:3] * 2, [0, 1, 2, 3, 4, 5]),
                           _per_tensor("i8", 32.0, 0), {"feature_group_count": 2, "padding": "SAME"}),
    "depthwise": Case((1, 5, 9, 9), (5, 1, 3, 3), _per_tensor("i8", 0.5, -7), _per_axis("i8", 0, [0.5] * 5, [0, 0, 9, -9, 1]),
                      _per_axis("i8", 1, [8.0, 4.0, 4.0, 8.0, 2.0], [1, 2, 3, 4, 5]), {"feature_group_count": 5, "padding": "SAME"}),
    "depthwise-lhs-dilated-u8": Case((1, 4, 5, 5), (4, 1, 3, 3), _per_tensor("u8", 0.5, 131), _per_axis("u8", 0, P2, [128, 127, 3, 250]),
                                     _per_tensor("u8", 4.0, 129), {"feature_group_count": 4, "lhs_dilation": (2, 2),
                                                                   "padding": ((2, 1), (1, 2))}),
    "zero-points-at-limits": Case((1, 2, 5, 5), (3, 2, 3, 3), _per_tensor("i8", 0.5, -128), _per_axis("i8", 0, [0.25] * 3, [127, -128, 0]),
                                  _per_tensor("i8", 256.0, 127), {"padding": "SAME"}),
    "u8-limits": Case((1, 2, 5, 5), (3, 2, 3, 3), _per_tensor("u8", 0.5, 255), _per_tensor("u8", 0.25, 0),
                      _per_tensor("u8", 512.0, 200), {"padding": ((2, 0), (0, 2))}),
    "storage-min-max": Case((1, 2, 5, 5), (2, 2, 3, 3), "!quant.uniform<i8<-127:127>:f32, 0.5:1>", _per_tensor("i8", 0.5, 0),
                            "!quant.uniform<i8<-100:100>:f32, 16.0:3>", {"padding": "SAME"}),
    "1d": Case((2, 3, 11), (4, 3, 3), _per_tensor("i8", 0.5, 4), _per_axis("i8", 0, P2, [1, 2, 3, 4]), _per_tensor("i8", 32.0, 0),
               {"window_strides": (2,), "padding": "SAME"}),
    "3d": Case((1, 2, 4, 4, 4), (2, 2, 2, 2, 2), _per_tensor("i8", 0.5, 0), _per_tensor("i8", 0.25, -4), _per_tensor("i8", 16.0, 0),
               {"padding": "SAME"}),
    "3d-ynnpack-slabs": Case((1, 3, 4, 4, 24), (3, 3, 3, 24, 20), _per_tensor("i8", 0.5, 3), _per_axis("i8", 4, P2 * 5, [0, 1, -1, 3] * 5),
                             _per_tensor("i8", 64.0, -8), {"dimension_numbers": ("NDHWC", "DHWIO", "NDHWC"),
                                                            "window_strides": (1, 2, 1), "padding": "SAME"}),
    "i16-storage": Case((1, 2, 5, 5), (2, 2, 3, 3), _per_tensor("i16", 0.5, -300), _per_tensor("i16", 0.25, 1000),
                        _per_tensor("i16", 2.0**20, 17), {"padding": "SAME"}),
    "1x1-as-dot": Case((2, 8, 5, 5), (6, 8, 1, 1), _per_tensor("i8", 0.5, 3), _per_axis("i8", 0, P2[:3] * 2, [0, 1, -2, 0, 5, 0]),
                       _per_tensor("i8", 8.0, -2), {}),
    "hybrid-float-lhs": Case((1, 3, 6, 6), (4, 3, 3, 3), "f32", _per_axis("i8", 0, P2, [0, 1, 2, 3]), "f32", {"padding": "SAME"}),
}


# The cpu pipeline with every 8-bit quantized conv kept an i8 x i8 -> i32 conv plus its zero-point
# terms (by default the small convs of these tests are exact f32 convs instead).
I8_CPU_PIPELINE = default_pipeline("cpu").replace("lower-quantized,", "lower-quantized{exact_f32=false},", 1)
TARGETS = ("cpu", "cpu-i8", "gpu")  # "cpu-i8": I8_CPU_PIPELINE


def run_for(graph: Graph, inputs: list[np.ndarray], target: str) -> list[np.ndarray]:
    """`graph` run as `target` (one of TARGETS) lowers it: the cpu pipelines' integer convs on
    the CPU (XLA:GPU compiles no integer conv); the gpu pipeline's on the default platform, a
    GPU where there is one."""
    if target == "cpu-i8":
        return run(graph, inputs, target="cpu", pipeline=I8_CPU_PIPELINE, platform="cpu").outputs
    return run(graph, inputs, target=target, platform="cpu" if target == "cpu" else None).outputs


def _run(case: Case, target: str, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    graph = case.graph()
    rng = np.random.default_rng(seed)
    inputs = [_stored(rng, case.lhs, case.lhs_type), _stored(rng, case.rhs, case.rhs_type)]
    return run_for(graph, inputs, target), evaluate(graph, inputs)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(EXACT_CASES))
def test_lowered_quantized_conv_is_identical_to_the_spec_oracle(name: str, target: str) -> None:
    """With power-of-two scales every dequantized value is exact, so the integer lowering and
    the spec's float computation must agree on every element (the hybrid conv: within f32)."""
    case = EXACT_CASES[name]
    (got,), (want,) = _run(case, target)
    assert got.dtype == want.dtype and got.shape == want.shape
    if case.out_type == "f32":  # the hybrid conv's f32 conv: in TF32 on a GPU (DEFAULT precision), exact f32 on the CPU
        tolerance = 5e-3 if target == "gpu" and default_platform() == "gpu" else 1e-5
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * 10)
    else:
        np.testing.assert_array_equal(got, want)
        low, high = parse_quant(case.out_type).limits()
        assert len(np.unique(got)) > 3 and got.min() >= low and got.max() <= high


@pytest.mark.parametrize("seed", range(6))
def test_random_scales_and_zero_points_stay_within_one_step(seed: int) -> None:
    """Random scales (dequantized values rounded in f32 by the spec, exact in the integer
    lowering) and zero points anywhere in the storage range, per tensor or per axis: at most
    one step apart, and almost always identical."""
    rng = np.random.default_rng(100 + seed)
    out_channels = 4

    def scale() -> float:
        return float(np.float32(rng.uniform(0.005, 0.2)))

    lhs_type = _per_tensor("i8", scale(), int(rng.integers(-128, 128)))
    rhs_type = (_per_axis("i8", 0, [scale() for _ in range(out_channels)], [int(z) for z in rng.integers(-128, 128, out_channels)])
                if seed % 2 else _per_tensor("i8", scale(), int(rng.integers(-128, 128))))
    out_type = _per_tensor("i8", float(np.float32(rng.uniform(1.0, 20.0))), int(rng.integers(-128, 128)))
    case = Case((2, 3, 9, 9), (out_channels, 3, 3, 3), lhs_type, rhs_type, out_type,
                {"padding": "SAME", "window_strides": (1 + seed % 2, 1)})
    (got,), (want,) = _run(case, "cpu", seed)
    apart = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert apart.max() <= 1
    assert (apart == 0).mean() >= 0.99


def test_quantize_and_dequantize_lower_to_the_spec_arithmetic() -> None:
    """uniform_quantize (from float and requantizing per axis) and uniform_dequantize, lowered
    and run, equal the oracle bit for bit; a quantized output comes back as stored integers."""
    b = Builder("q")
    x = b.input("x", (3, 8))
    q = b.uniform_quantize(x, name="q", new_dtype=_per_axis("i8", 0, [0.1, 0.3, 0.05], [-128, 0, 127]))
    r = b.uniform_quantize(q, name="r", new_dtype="!quant.uniform<u8:f32:0, {0.2:10,0.7:128,0.01:255}>")
    b.output(q, r, b.uniform_dequantize(r, name="d"))
    graph = b.build()
    xs = (np.random.default_rng(3).standard_normal((3, 8)) * 10).astype(np.float32)
    xs[0, :4] = [0.05, 0.15, -12.85, 1e6]  # halves of a step: round to even; and a saturating value
    result = run(graph, [xs], target="cpu")
    for got, want in zip(result.outputs, evaluate(graph, [xs]), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert result.outputs[1].dtype == np.uint8


def test_cpu_module_holds_no_quantized_type() -> None:
    """The stored integers stand for the quantized values, the graph input too."""
    text = compile_graph(EXACT_CASES["per-axis-nhwc-strided"].graph(), target="cpu")
    assert "quant" not in text
    assert "tensor<2x7x7x3xi8>" in text


def test_check_reports_quantized_outputs_in_steps() -> None:
    result = run(EXACT_CASES["per-tensor-same"].graph(), seed=1, target="cpu", check=True)
    assert result.check is not None and result.check.passed
    assert result.check.lines == ["c: 100.00% identical, at most 0 quantization steps apart vs jax.lax (ok)"]


def test_running_a_module_that_keeps_quantized_types_is_refused_naming_the_pass() -> None:
    """--target generic keeps quantized StableHLO, which XLA cannot compile: E3, at the op."""
    from convc import ConvcError

    with pytest.raises(ConvcError) as err:
        run(EXACT_CASES["per-tensor-same"].graph(), target="generic")
    assert err.value.constraint == "E3"
    assert "the pipeline must run lower-quantized" in str(err.value) and str(err.value).endswith("[E3]")


def _lowered_conv_dtypes(case: Case, kernel: np.ndarray | None = None) -> list[str]:
    """The element types of the lhs of every conv `lower-quantized` leaves (a constant kernel
    when `kernel` holds its stored integers)."""
    from convc.compile import Compiler
    from convc.passes import PASSES

    graph = case.graph()
    if kernel is not None:
        b = Builder("qconv")
        x = b.input("x", case.lhs, case.lhs_type)
        real = kernel.astype(np.float32) * np.float32(parse_quant(case.rhs_type).scales[0])
        w = b.uniform_quantize(b.constant("w_real", real), name="w", new_dtype=case.rhs_type)
        b.output(b.conv(x, w, name="c", preferred_element_type=case.out_type, **case.attrs))
        graph = b.build()
    lowered = Compiler(target="cpu").run_passes(graph, [PASSES["lower-quantized"]()])
    return [op.operands[0].type.dtype for op in lowered.ops if op.kind == "conv"]


@pytest.mark.parametrize("name", ["feature-groups", "depthwise", "depthwise-lhs-dilated-u8"])
def test_grouped_float_conv_pads_the_stored_integers_with_the_zero_point(name: str) -> None:
    """A grouped quantized conv that lower-quantized makes an f32 conv of the shifted operands
    (the cpu target's depthwise tap sums) has its padding and lhs dilation's holes put on lhs's
    stored integers, as its zero point (the real 0 after the shift): its conv pads nothing and
    dilates nothing, and reads the padded 8-bit values shifted in f32. The result is checked
    against the spec oracle by the test above."""
    from convc.compile import Compiler
    from convc.passes import PASSES

    case = EXACT_CASES[name]
    lowered = Compiler(target="cpu").run_passes(case.graph(), [PASSES["lower-quantized"]()])
    (conv,) = [op for op in lowered.ops if op.kind == "conv"]
    assert "padding" not in conv.attrs and "lhs_dilation" not in conv.attrs
    pad = conv.operands[0].producer.operands[0].producer.operands[0].producer  # subtract(convert(pad(stored)), zp)
    assert pad is not None and pad.kind == "pad" and pad.operands[0].type.dtype == parse_quant(case.lhs_type).storage_dtype()
    assert pad.attrs["padding_value"] == parse_quant(case.lhs_type).zero_points[0]


@pytest.mark.parametrize(("name", "integer_conv", "barrier"), [
    ("depthwise", True, True), ("feature-groups", True, True), ("per-tensor-same", True, False), ("3d-ynnpack-slabs", True, False),
    ("depthwise", False, False)])
def test_grouped_f32_conv_result_is_behind_an_optimization_barrier(name: str, integer_conv: bool, barrier: bool) -> None:
    """A grouped quantized conv that lower-quantized makes an f32 conv (the cpu target's tap
    sum) has its quantized result, the stored 8-bit integers, behind an optimization_barrier,
    so that XLA computes the tap sum once instead of in every fusion that reads it; an
    ungrouped conv (an f32 or i8 conv XLA runs itself) and the gpu pipeline's f64 form get none."""
    from convc.compile import Compiler
    from convc.passes import PASSES

    case = EXACT_CASES[name]
    lowered = Compiler(target="cpu").run_passes(case.graph(), [PASSES["lower-quantized"](integer_conv=integer_conv)])
    (result,) = lowered.outputs
    producer = result.producer
    assert producer is not None and (producer.kind == "optimization_barrier") == barrier
    assert [op.kind for op in lowered.ops].count("optimization_barrier") == int(barrier)
    if barrier:
        assert producer.operands[0].type.dtype == parse_quant(case.out_type).storage_dtype()


def _accumulator_then_requantized(groups: int) -> Graph:
    """A conv into its i32 accumulator, dequantized and quantized to i8 (what the ONNX
    frontend makes of a QDQ conv), with `groups` feature groups over 4 features."""
    b = Builder("qdq_conv")
    x = b.input("x", (1, 4, 7, 7), _per_tensor("i8", 0.5, -7))
    w = b.input("w", (4, 4 // groups, 3, 3), _per_axis("i8", 0, [0.5] * 4, [0, 2, -3, 1]))
    acc = b.conv(x, w, name="acc", feature_group_count=groups, padding="SAME",
                 preferred_element_type=_per_axis("i32", 1, [0.25] * 4, [0] * 4))
    b.output(b.op("uniform_quantize", b.op("uniform_dequantize", acc, name="real"), name="y",
                  new_dtype=_per_tensor("i8", 4.0, 3)))
    return b.build()


@pytest.mark.parametrize(("groups", "barrier"), [(4, True), (1, False)])
def test_requantized_tap_sum_accumulator_is_behind_an_optimization_barrier(groups: int, barrier: bool) -> None:
    """A grouped conv into its accumulator (the cpu target's f32 tap sum), requantized by
    separate ops as the ONNX frontend's QDQ convs are: the 8-bit result computed from the
    sum is behind an optimization_barrier, an ungrouped conv's is not; both equal the spec
    oracle on every element."""
    from convc.compile import Compiler
    from convc.passes import PASSES

    lowered = Compiler(target="cpu").run_passes(_accumulator_then_requantized(groups), [PASSES["lower-quantized"]()])
    (result,) = lowered.outputs
    assert result.producer is not None and (result.producer.kind == "optimization_barrier") == barrier
    graph = _accumulator_then_requantized(groups)
    rng = np.random.default_rng(3)
    inputs = [_stored(rng, (1, 4, 7, 7), _per_tensor("i8", 0.5, -7)), _stored(rng, (4, 4 // groups, 3, 3), "!quant.uniform<i8:f32, 0.5>")]
    (got,), (want,) = run_for(graph, inputs, "cpu"), evaluate(graph, inputs)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 3


@pytest.mark.parametrize(("per_group", "expected"), [(1023, ["f32"]), (1024, ["i8"])])
def test_grouped_conv_sums_in_f32_only_while_every_sum_stays_below_2_24(per_group: int, expected: list[str]) -> None:
    """A grouped quantized conv is an f32 conv of the shifted operands (XLA:CPU's grouped
    integer conv is slow) only while 128 * 128 * its window size stays below 2^24, so that
    every partial sum is an exact f32; at 1024 terms it stays the i8 x i8 -> i32 conv."""
    case = Case((1, 2 * per_group, 1), (2, per_group, 1), _per_tensor("i8", 0.5, 0), _per_tensor("i8", 0.25, 0),
                _per_tensor("i8", 64.0, 0), {"feature_group_count": 2, "dimension_numbers": ("NCH", "OIH", "NCH")})
    assert _lowered_conv_dtypes(case) == expected


@pytest.mark.parametrize(("name", "expected"), [("3d", {"f32"}), ("3d-ynnpack-slabs", {"i8"})])
def test_3d_conv_keeps_its_i8_form_where_ynnpack_takes_its_2d_slabs(name: str, expected: set[str]) -> None:
    """A 3-D quantized conv whose sums f32 holds exactly is judged by the 2-D convs
    cpu-conv3d-as-conv2d-sum makes of it: with 2 features YNNPACK would not take them (one f32
    conv), with 24 and 20 it does (i8 convs: the i8 x i8 -> i32 conv and its zero-point terms).
    Both match the spec oracle above."""
    assert set(_lowered_conv_dtypes(EXACT_CASES[name])) == expected


def test_constant_grouped_kernel_is_bounded_by_its_own_values() -> None:
    """A constant kernel bounds the sums by its values, not its storage type's: 4096 taps of
    |w| <= 1 (at most 128 * 4096 < 2^24) take the f32 conv, |w| up to 127 does not."""
    case = Case((1, 8192, 1), (2, 4096, 1), _per_tensor("i8", 0.5, 0), _per_tensor("i8", 0.25, 0),
                _per_tensor("i8", 64.0, 0), {"feature_group_count": 2, "dimension_numbers": ("NCH", "OIH", "NCH")})
    small = np.random.default_rng(0).integers(-1, 2, case.rhs)
    assert _lowered_conv_dtypes(case, small) == ["f32"]
    assert _lowered_conv_dtypes(case, small * 127) == ["i8"]


def test_gpu_pipeline_makes_a_plain_integer_conv_an_exact_f64_conv() -> None:
    """ConvInteger's form (an i32 conv of shifted 8-bit values), through the gpu pipeline (no
    integer convs: XLA:GPU compiles none) and run on the default platform (a GPU where there is
    one): f64 convs only, and every i32 sum equal to the oracle's, those far past f32's 2^24
    included."""
    b = Builder("conv_integer")
    x = b.input("x", (2, 64, 6, 6), "i32")
    w = b.input("w", (4, 64, 3, 3), "i32")
    b.output(b.conv(x, w, name="c", padding="SAME"))
    graph = b.build()
    text = compile_graph(graph, target="gpu")
    assert "xi32>) -> tensor<" not in text.split("stablehlo.convolution", 1)[1].split("\n", 1)[0]
    rng = np.random.default_rng(5)
    xs = rng.integers(-255, 256, (2, 64, 6, 6)).astype(np.int32)
    ws = rng.integers(-255, 256, (4, 64, 3, 3)).astype(np.int32)
    xs[0, :, 2:5, 2:5], ws[0] = 255, 255  # 576 products of 255 * 255: 37,454,400 > 2^24
    (got,), (want,) = run(graph, [xs, ws], target="gpu").outputs, evaluate(graph, [xs, ws])
    assert got.dtype == np.int32 and int(want.max()) > 2**24
    np.testing.assert_array_equal(got, want)
