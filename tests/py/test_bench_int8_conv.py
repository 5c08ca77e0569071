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
