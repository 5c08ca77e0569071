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
    takes), and its result is the spec oracle's on every element."""
    import numpy as np
    from convc import compile_graph, run
    from convc.reference import evaluate

    quantized, plain, stored = bench_int8_conv.lowered_graphs(2, 5, 32)
    text = compile_graph(quantized, target="cpu")
    assert "quant" not in text and text.count("stablehlo.convolution") == 1
    assert "(tensor<2x5x5x32xi8>, tensor<3x3x32x32xi8>) -> tensor<2x5x5x32xi32>" in text
    (got,), (want,) = run(quantized, [stored], target="cpu", platform="cpu").outputs, evaluate(quantized, [stored])
    np.testing.assert_array_equal(got, want)
    assert "stablehlo.convolution" in compile_graph(plain, target="cpu")


def test_lowered_table_shows_the_int8_to_f32_ratio() -> None:
    row = {"batch": 1, "size": 7, "channels": 512, "gflop": 0.23, "ms": {"int8": 2.5, "f32": 5.0}}
    assert bench_int8_conv.format_lowered_table([row]).splitlines()[-1] == "| 1 | 7x7x512 | 0.23 | 2.5 | 5.0 | 0.5x |"
