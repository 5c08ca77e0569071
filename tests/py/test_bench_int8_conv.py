"""`python -m convc.tools.bench_int8_conv` (a measurement, docs/benchmarks.md): the modules it
times are the convs it names, and its table reads as documented. No timing here."""

from __future__ import annotations

from convc.tools import bench_int8_conv


def test_the_timed_modules_are_an_i8_conv_into_i32_and_the_f32_conv() -> None:
    i8 = bench_int8_conv.conv_module(1, 7, 8, "i8", "i32")
    assert "stablehlo.convolution" in i8 and "(tensor<1x7x7x8xi8>, tensor<3x3x8x8xi8>) -> tensor<1x7x7x8xi32>" in i8
    f32 = bench_int8_conv.conv_module(1, 7, 8, "f32", None)
    assert "(tensor<1x7x7x8xf32>, tensor<3x3x8x8xf32>) -> tensor<1x7x7x8xf32>" in f32


def test_table_shows_ratios_to_f32_and_a_dash_for_an_untimed_kind() -> None:
    row = {"batch": 8, "size": 56, "channels": 64, "gflop": 1.85, "ms": {"i8->i32": 60.0, "f32": 120.0}}
    table = bench_int8_conv.format_table([row])
    assert table.splitlines()[-1] == "| 8 | 56x56x64 | 1.85 | 60.0 | - | 120.0 | 0.5x | - |"


def test_the_lowered_quantized_conv_is_one_i8_conv_into_i32_equal_to_the_spec_oracle() -> None:
    """`--lowered`'s quantized conv through --target cpu: no quantized type, a single conv (the
    kernel is symmetric: no ones-kernel conv), of i8 operands into i32 (32 features: a conv YNNPACK
    takes), and its result is the spec oracle's on every element; the f32 graph it is timed
    against compiles to f32 only (a conv, or Winograd's dots on a host without AVX-512)."""
    import numpy as np
    from convc import compile_graph, run
    from convc.reference import evaluate

    quantized, plain, stored = bench_int8_conv.lowered_graphs(2, 5, 32)
    text = compile_graph(quantized, target="cpu")
    assert "quant" not in text and text.count("stablehlo.convolution") == 1
    assert "(tensor<2x5x5x32xi8>, tensor<3x3x32x32xi8>) -> tensor<2x5x5x32xi32>" in text
    (got,), (want,) = run(quantized, [stored], target="cpu", platform="cpu").outputs, evaluate(quantized, [stored])
    np.testing.assert_array_equal(got, want)
    f32 = compile_graph(plain, target="cpu")
    assert "tensor<2x5x5x32xf32>" in f32 and "xi8>" not in f32 and "xi32>" not in f32


def test_lowered_table_shows_the_int8_to_f32_ratio() -> None:
    row = {"batch": 1, "size": 7, "channels": 512, "gflop": 0.23, "ms": {"int8": 2.5, "f32": 5.0}}
    assert bench_int8_conv.format_lowered_table([row]).splitlines()[-1] == "| 1 | 7x7x512 | 0.23 | 2.5 | 5.0 | 0.5x |"


def test_conv_integer_rows_time_the_exact_f32_form_against_the_i32_conv_after_checking_them_equal() -> None:
    """`--conv-integer` on a small shape: the ConvInteger file imports, both forms are compiled, their outputs are
    identical (measure_conv_integer raises otherwise), both are timed, and the exact form is one f32 conv."""
    import pytest

    pytest.importorskip("onnx")
    row = bench_int8_conv.measure_conv_integer(1, 4, 16, 0.02)
    assert set(row["ms"]) == {"i32", "f32"} and row["f32_convs"] == 1


def test_conv_integer_table_shows_a_dash_where_the_i32_conv_was_too_large_to_time() -> None:
    rows = [{"batch": 1, "size": 7, "channels": 512, "gflop": 0.23, "f32_convs": 2, "ms": {"i32": 800.0, "f32": 4.0}},
            {"batch": 8, "size": 7, "channels": 512, "gflop": 1.85, "f32_convs": 2, "ms": {"f32": 30.0}}]
    assert bench_int8_conv.format_conv_integer_table(rows).splitlines()[-2:] == [
        "| 1 | 512x7x7 | 0.23 | 2 | 800.0 | 4.0 | 2e+02x |", "| 8 | 512x7x7 | 1.85 | 2 | - | 30.0 | - |"]


def test_dot_orientation_modules_are_i8_dots_with_the_kernel_constant_laid_out_as_named() -> None:
    """`--dot-orientation`'s two modules: an i8 x i8 -> i32 dot_general of the positions with the kernel constant as
    [out, in] contracting its dim 1, and as [in, out] contracting its dim 0."""
    import numpy as np

    kernel = np.arange(12, dtype=np.int8).reshape(3, 4)
    rows = bench_int8_conv.dot_module(5, 4, 3, "[out, in]", kernel)
    assert "contracting_dims = [1] x [1]" in rows and "(tensor<5x4xi8>, tensor<3x4xi8>) -> tensor<5x3xi32>" in rows
    columns = bench_int8_conv.dot_module(5, 4, 3, "[in, out]", kernel)
    assert "contracting_dims = [1] x [0]" in columns and "(tensor<5x4xi8>, tensor<4x3xi8>) -> tensor<5x3xi32>" in columns


def test_dot_orientation_rows_check_both_dots_against_numpy_and_time_both() -> None:
    """A small shape measured: both orientations equal numpy's product (measure_dot_orientation raises otherwise) and
    are timed; the table's last column is the [out, in] time over the [in, out] one."""
    row = bench_int8_conv.measure_dot_orientation(4, 16, 8, 0.02)
    assert set(row["ms"]) == {"[out, in]", "[in, out]"}
    row["ms"] = {"[out, in]": 0.1, "[in, out]": 0.25}
    assert bench_int8_conv.format_dot_orientation_table([row]).splitlines()[-1] == "| 4 | 16 | 8 | 0.100 | 0.250 | 0.40 |"
