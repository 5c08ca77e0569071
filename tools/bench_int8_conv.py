"""XLA:CPU's integer conv alone against its f32 conv of the same shape
(`python -m convc.tools.bench_int8_conv`): issue 19's measurement of where XLA:CPU's integer
convolution limits a quantized network. For ResNet's four stage shapes (3x3, stride 1, SAME,
NHWC/HWIO, channels 64 to 512), batch 1 and 8, three convs are emitted by convc for
`--target generic` (no cpu rewrite), compiled by PJRT and timed interleaved in one process
(`bench.Timer`): an i8 x i8 conv accumulated in i32 (`preferred_element_type`), the i32 x i32
conv of shifted operands `lower-quantized` emitted for 8-bit storage before it built the
first form (only up to I32_MAX_GFLOP: it is slow), and the f32 conv. Each result is checked
first: the two integer convs must agree exactly, the f32 conv within f32 rounding.

With `--lowered`, the same shapes as whole quantized convs instead, the form an ONNX QDQ
per-channel model with int8 activations gives inside a network (channels-last, as
`cpu-layout-nhwc` leaves the convs between two others; an i8 input with zero point -8, a
constant i8 kernel with per-channel power-of-two scales and zero points 0, a u8 result),
compiled for `--target cpu`
(`lower-quantized` and the cpu rewrites) and timed against the f32 conv of the same shape
and layout with a constant kernel, also compiled for `--target cpu`. The quantized result
must equal the spec oracle's (compiler/reference.py) on every element first.

With `--conv-integer`, the same shapes as ONNX's dynamic quantization writes them
(DynamicQuantizeLinear -> ConvInteger, NCHW, pads 1, an int8 kernel: normal weights scaled
to [-127, 127] as quantize_dynamic's symmetric int8 weights are), compiled for `--target cpu`
twice: with the default pipeline, whose `lower-quantized` makes the i32 conv exact f32 convs
(one, or one per range of input features past 2^24), and with `lower-quantized{exact_f32=false}`,
which keeps the i32 conv (timed only up to I32_MAX_GFLOP). Both outputs must be identical
first.

With `--dot-orientation`, the integer dots `cpu-conv-1x1-to-dot` writes for a 1x1 conv with a
constant i8 kernel, at DOT_SHAPES (positions x in -> out: classifier heads and the 1x1 convs of
small maps, at few and many positions): an i8 x i8 -> i32 `dot_general` of a matrix of
positions with the kernel as an [out, in] constant (both contracting their minor dim: the
form the pass writes) and as an [in, out] one (the kernel's HWIO order), compiled for
`--target generic` and timed interleaved. Both must equal numpy's integer product first."""

from __future__ import annotations

import argparse
import functools
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import bench

# ResNet-18/34's stage convs: (spatial size, channels)
STAGES = ((56, 64), (28, 128), (14, 256), (7, 512))
KINDS = {"i8->i32": ("i8", "i32"), "i32": ("i32", None), "f32": ("f32", None)}
# XLA:CPU's i32 conv runs at about 0.1 GFLOP/s (measured: 2.1 s for 0.23 GFLOP): timed only
# up to this size, which keeps a run of the whole table to minutes
I32_MAX_GFLOP = 0.25


def conv_module(batch: int, size: int, channels: int, dtype: str, preferred: str | None) -> str:
    """The StableHLO of one 3x3 SAME conv, NHWC/HWIO, as convc emits it for `--target generic`."""
    from convc import Builder, compile_graph

    b = Builder("conv")
    x = b.input("x", (batch, size, size, channels), dtype)
    w = b.input("w", (3, 3, channels, channels), dtype)
    b.output(b.conv(x, w, name="y", padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), preferred_element_type=preferred))
    return compile_graph(b.build(), target="generic")


def _run(executable: Any, buffers: Any) -> None:
    bench.block_until_ready(executable.run_on_device(buffers))


NUMPY = {"i8": np.int8, "i32": np.int32, "f32": np.float32}


def measure(batch: int, size: int, channels: int, budget_s: float) -> dict[str, Any]:
    """One shape: the two integer convs must agree exactly and the f32 conv within f32
    rounding of them; then each kind's median (ms), timed interleaved."""
    import jax
    from convc.runtime import compile_stablehlo

    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (batch, size, size, channels))
    w = rng.integers(-128, 128, (3, 3, channels, channels))
    thunks: dict[str, Callable[[], None]] = {}
    results: dict[str, np.ndarray] = {}
    gflop = 2 * batch * size * size * channels * channels * 9 / 1e9
    for kind, (dtype, preferred) in KINDS.items():
        if kind == "i32" and gflop > I32_MAX_GFLOP:
            continue
        executable = compile_stablehlo(conv_module(batch, size, channels, dtype, preferred), "cpu")
        buffers = [jax.device_put(a.astype(NUMPY[dtype]), executable.device) for a in (x, w)]
        (results[kind],) = [np.asarray(out) for out in executable.run_on_device(buffers)]

        thunks[kind] = functools.partial(_run, executable, buffers)
    exact = results["i8->i32"].astype(np.float64)
    if "i32" in results and not np.array_equal(results["i8->i32"], results["i32"]):
        raise AssertionError(f"{batch}x{size}x{size}x{channels}: the i8->i32 and i32 convs disagree")
    f32_error = float(np.abs(results["f32"] - exact).max() / np.abs(exact).max())
    if f32_error > 1e-5:
        raise AssertionError(f"{batch}x{size}x{size}x{channels}: the f32 conv is {f32_error:.2g} off the integer one")
    medians, best, iqr = bench.summarize(bench.Timer(budget_s, min_rounds=2, max_rounds=12, block=1, warmup=1).run(thunks))
    return {"batch": batch, "size": size, "channels": channels, "gflop": gflop, "ms": medians, "best_ms": best, "iqr_ms": iqr,
            "f32_relative_error": f32_error}


QUANTIZED_INPUT = "!quant.uniform<i8:f32, 0.0625:-8>"
QUANTIZED_OUTPUT = "!quant.uniform<u8:f32, 2.0:128>"


def lowered_graphs(batch: int, size: int, channels: int) -> tuple[Any, Any, np.ndarray]:
    """The quantized conv (constant per-channel symmetric i8 kernel) and the f32 conv with the
    kernel's real values, 3x3 SAME, NHWC/HWIO; and the stored i8 input. (A channels-first
    integer input at a graph's boundary is slower: XLA:CPU makes the transpose into
    channels-last a change of layout, and its integer conv runs channels-first then.)"""
    from convc import Builder

    rng = np.random.default_rng(0)
    stored = rng.integers(-127, 128, (3, 3, channels, channels)).astype(np.float32)
    scales = 2.0 ** -rng.integers(6, 9, channels)
    real = (stored * scales).astype(np.float32)
    kernel_type = "!quant.uniform<i8:f32:3, {" + ",".join(repr(float(s)) for s in scales) + "}>"
    layouts = {"padding": "SAME", "dimension_numbers": ("NHWC", "HWIO", "NHWC")}
    graphs = []
    for quantized in (True, False):
        b = Builder("qconv" if quantized else "conv")
        x = b.input("x", (batch, size, size, channels), QUANTIZED_INPUT if quantized else "f32")
        w = b.constant("w_real", real)
        if quantized:
            w = b.uniform_quantize(w, name="w", new_dtype=kernel_type)
        b.output(b.conv(x, w, name="y", preferred_element_type=QUANTIZED_OUTPUT if quantized else None, **layouts))
        graphs.append(b.build())
    return graphs[0], graphs[1], rng.integers(-128, 128, (batch, size, size, channels)).astype(np.int8)


def measure_lowered(batch: int, size: int, channels: int, budget_s: float) -> dict[str, Any]:
    """One shape as a whole quantized conv through `--target cpu` against the f32 conv: the
    quantized result must equal the spec oracle's, then both medians (ms), timed interleaved."""
    import jax
    from convc import compile_graph
    from convc.reference import evaluate
    from convc.runtime import compile_stablehlo

    quantized, plain, stored = lowered_graphs(batch, size, channels)
    (want,) = evaluate(quantized, [stored])
    real = ((stored.astype(np.float32) + 8) * np.float32(0.0625)).astype(np.float32)
    thunks: dict[str, Callable[[], None]] = {}
    for kind, graph, x in (("int8", quantized, stored), ("f32", plain, real)):
        executable = compile_stablehlo(compile_graph(graph, target="cpu"), "cpu")
        buffers = [jax.device_put(x, executable.device)]
        if kind == "int8":
            (got,) = [np.asarray(out) for out in executable.run_on_device(buffers)]
            if not np.array_equal(got, np.asarray(want)):
                raise AssertionError(f"{batch}x{size}x{size}x{channels}: the lowered quantized conv disagrees with the spec oracle")
        thunks[kind] = functools.partial(_run, executable, buffers)
    gflop = 2 * batch * size * size * channels * channels * 9 / 1e9
    medians, best, iqr = bench.summarize(bench.Timer(budget_s, min_rounds=2, max_rounds=12, block=1, warmup=1).run(thunks))
    return {"batch": batch, "size": size, "channels": channels, "gflop": gflop, "ms": medians, "best_ms": best, "iqr_ms": iqr}


def conv_integer_model(batch: int, size: int, channels: int, seed: int = 0) -> bytes:
    """DynamicQuantizeLinear -> ConvInteger (3x3, pads 1, NCHW) of `channels` features, its int8
    kernel standard normal weights scaled so that the largest is 127, rounded."""
    from onnx import TensorProto, helper, numpy_helper

    weights = np.random.default_rng(seed).standard_normal((channels, channels, 3, 3))
    kernel = np.round(weights * (127 / np.abs(weights).max())).astype(np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "q_scale", "q_zero_point"]),
             helper.make_node("ConvInteger", ["q", "w", "q_zero_point"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "conv_integer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, size, size])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [batch, channels, size, size])],
                              [numpy_helper.from_array(kernel, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7).SerializeToString()  # type: ignore[no-any-return]


I32_CONVS = "lower-quantized{exact_f32=false}"  # the cpu pipeline's lower-quantized, keeping plain i32 convs


def measure_conv_integer(batch: int, size: int, channels: int, budget_s: float) -> dict[str, Any]:
    """One shape as ConvInteger through `--target cpu`: the exact f32 form ("f32") and, up to
    I32_MAX_GFLOP, the i32 conv ("i32"), whose outputs must be identical; then the medians (ms),
    timed interleaved, and how many f32 convs the exact form is."""
    import jax
    from convc import load_onnx
    from convc.compile import Compiler
    from convc.passes import default_pipeline

    graph = load_onnx(conv_integer_model(batch, size, channels))
    x = np.random.default_rng(1).standard_normal((batch, channels, size, size)).astype(np.float32)
    gflop = 2 * batch * size * size * channels * channels * 9 / 1e9
    pipelines = {"f32": default_pipeline("cpu")}
    if gflop <= I32_MAX_GFLOP:
        pipelines["i32"] = default_pipeline("cpu").replace("lower-quantized", I32_CONVS)
    thunks: dict[str, Callable[[], None]] = {}
    results, f32_convs = {}, 0
    for kind, pipeline in pipelines.items():
        compiler = Compiler(pipeline=pipeline, target="cpu")
        lowered = compiler.run_passes(graph.clone())
        if kind == "f32":
            f32_convs = sum(op.kind in ("conv", "dot_general") and op.result.type.dtype == "f32" for op in lowered.ops)
        executable = compiler.executable(lowered, "cpu")
        buffers = [jax.device_put(x, executable.device)]
        (results[kind],) = [np.asarray(out) for out in executable.run_on_device(buffers)]
        thunks[kind] = functools.partial(_run, executable, buffers)
    if "i32" in results and not np.array_equal(results["i32"], results["f32"]):
        raise AssertionError(f"{batch}x{channels}x{size}x{size}: the exact f32 form and the i32 conv disagree")
    medians, best, iqr = bench.summarize(bench.Timer(budget_s, min_rounds=2, max_rounds=12, block=1, warmup=1).run(thunks))
    return {"batch": batch, "size": size, "channels": channels, "gflop": gflop, "f32_convs": f32_convs, "ms": medians,
            "best_ms": best, "iqr_ms": iqr}


# (positions, in, out): a classifier head (1280 or 2048 -> 1000) at batch 1-64, and 1x1 convs over small maps
DOT_SHAPES = ((1, 1280, 1000), (8, 1280, 1000), (64, 1280, 1000), (8, 2048, 1000), (16, 320, 1280), (128, 320, 1280),
              (16, 960, 160), (64, 960, 160), (16, 512, 2048), (256, 512, 2048), (8, 1280, 24), (512, 1280, 24))
ORIENTATIONS = {"[out, in]": ((1,), (1,)), "[in, out]": ((1,), (0,))}  # the kernel constant's layout: its contracting dims


def dot_module(positions: int, depth: int, outputs: int, orientation: str, kernel: np.ndarray) -> str:
    """An i8 x i8 -> i32 dot_general of a [positions, depth] input with the `kernel` ([outputs, depth]) as a constant
    laid out as `orientation` names, for `--target generic`."""
    from convc import Builder, compile_graph

    b = Builder("dot")
    x = b.input("x", (positions, depth), "i8")
    lhs_dims, rhs_dims = ORIENTATIONS[orientation]
    w = b.constant("w", kernel if orientation == "[out, in]" else np.ascontiguousarray(kernel.T))
    b.output(b.dot_general(x, w, name="y", lhs_contracting_dimensions=lhs_dims, rhs_contracting_dimensions=rhs_dims,
                           preferred_element_type="i32"))
    return compile_graph(b.build(), target="generic")


def measure_dot_orientation(positions: int, depth: int, outputs: int, budget_s: float) -> dict[str, Any]:
    """One shape's two kernel orientations: each must equal numpy's integer product, then their medians (ms), timed
    interleaved."""
    import jax
    from convc.runtime import compile_stablehlo

    rng = np.random.default_rng(0)
    kernel = rng.integers(-127, 128, (outputs, depth)).astype(np.int8)
    x = rng.integers(-128, 128, (positions, depth)).astype(np.int8)
    want = x.astype(np.int64) @ kernel.T.astype(np.int64)
    thunks: dict[str, Callable[[], None]] = {}
    for orientation in ORIENTATIONS:
        executable = compile_stablehlo(dot_module(positions, depth, outputs, orientation, kernel), "cpu")
        buffers = [jax.device_put(x, executable.device)]
        (got,) = [np.asarray(out) for out in executable.run_on_device(buffers)]
        if not np.array_equal(got, want):
            raise AssertionError(f"{positions}x{depth} -> {outputs}: the {orientation} dot disagrees with numpy")
        thunks[orientation] = functools.partial(_run, executable, buffers)
    medians, best, iqr = bench.summarize(bench.Timer(budget_s, min_rounds=3, max_rounds=30, block=5, warmup=2).run(thunks))
    return {"positions": positions, "in": depth, "out": outputs, "ms": medians, "best_ms": best, "iqr_ms": iqr}


def format_dot_orientation_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| positions | in | out | [out, in] ms | [in, out] ms | [out, in] / [in, out] |", "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rows_first, columns_first = r["ms"]["[out, in]"], r["ms"]["[in, out]"]
        lines.append(f"| {r['positions']} | {r['in']} | {r['out']} | {rows_first:.3f} | {columns_first:.3f} | {rows_first / columns_first:.2f} |")
    return "\n".join(lines)


def format_conv_integer_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| batch | input (NCHW) | GFLOP | f32 convs | i32 conv ms | exact f32 ms | i32 / f32 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ms = r["ms"]
        i32, ratio = (f"{ms['i32']:.1f}", f"{ms['i32'] / ms['f32']:.2g}x") if "i32" in ms else ("-", "-")
        lines.append(f"| {r['batch']} | {r['channels']}x{r['size']}x{r['size']} | {r['gflop']:.2f} | {r['f32_convs']} | {i32} | "
                     f"{ms['f32']:.1f} | {ratio} |")
    return "\n".join(lines)


def format_lowered_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| batch | input (NHWC) | GFLOP | int8 conv ms | f32 conv ms | int8 / f32 |", "|---|---|---|---|---|---|"]
    for r in rows:
        ms = r["ms"]
        lines.append(f"| {r['batch']} | {r['size']}x{r['size']}x{r['channels']} | {r['gflop']:.2f} | {ms['int8']:.1f} | {ms['f32']:.1f} | "
                     f"{ms['int8'] / ms['f32']:.2g}x |")
    return "\n".join(lines)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    kinds = list(KINDS)
    lines = [f"| batch | input (NHWC) | GFLOP | {' | '.join(f'{k} ms' for k in kinds)} | i8->i32 / f32 | i32 / f32 |",
             "|---|---|---|" + "---|" * (len(kinds) + 2)]
    for r in rows:
        ms = r["ms"]
        cells = [f"{ms[k]:.1f}" if k in ms else "-" for k in kinds]
        ratios = [f"{ms[k] / ms['f32']:.2g}x" if k in ms else "-" for k in ("i8->i32", "i32")]
        lines.append(f"| {r['batch']} | {r['size']}x{r['size']}x{r['channels']} | {r['gflop']:.2f} | {' | '.join(cells + ratios)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m convc.tools.bench_int8_conv", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8], help="batch sizes (default: 1 8)")
    parser.add_argument("--stages", type=int, nargs="+", choices=range(len(STAGES)), default=list(range(len(STAGES))),
                        help="which ResNet stages (0-3: 56x56x64 ... 7x7x512; default all)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timing per shape (default 2)")
    parser.add_argument("--lowered", action="store_true",
                        help="time whole quantized convs through --target cpu against the f32 conv instead")
    parser.add_argument("--conv-integer", action="store_true",
                        help="time ONNX ConvInteger through --target cpu: its exact f32 form against the i32 conv instead")
    parser.add_argument("--dot-orientation", action="store_true",
                        help="time the integer dot of a 1x1 conv's constant kernel as [out, in] against [in, out] instead")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    rows = []
    if args.dot_orientation:
        for shape in DOT_SHAPES:
            rows.append(measure_dot_orientation(*shape, args.budget))
            print(format_dot_orientation_table(rows[-1:]).splitlines()[-1], flush=True)
        return _report(rows, format_dot_orientation_table, args.json)
    one, table = ((measure_lowered, format_lowered_table) if args.lowered
                  else (measure_conv_integer, format_conv_integer_table) if args.conv_integer else (measure, format_table))
    for batch in args.batch:
        for stage in args.stages:
            size, channels = STAGES[stage]
            rows.append(one(batch, size, channels, args.budget))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    return _report(rows, table, args.json)


def _report(rows: list[dict[str, Any]], table: Callable[[Sequence[dict[str, Any]]], str], json_path: str | None) -> int:
    """The load, the whole table, and the JSON where asked."""
    print(f"\nload average {os.getloadavg()[0]:.1f} over {os.cpu_count()} cores\n")
    print(table(rows))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as out:
            json.dump({"machine": bench.machine("cpu"), "load_average": os.getloadavg(), "results": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
