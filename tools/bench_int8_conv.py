"""XLA:CPU's integer conv alone against its f32 conv of the same shape
(`python -m convc.tools.bench_int8_conv`): issue 19's measurement of where XLA:CPU's integer
convolution limits a quantized network. For ResNet's four stage shapes (3x3, stride 1, SAME,
NHWC/HWIO, channels 64 to 512), batch 1 and 8, three convs are emitted by convc for
`--target generic` (no cpu rewrite), compiled by PJRT and timed interleaved in one process
(`bench.Timer`): an i8 x i8 conv accumulated in i32 (`preferred_element_type`), the i32 x i32
conv `lower-quantized` emits for 8-bit storage today (only up to I32_MAX_GFLOP: it is
slow), and the f32 conv. Each result is checked
first: the two integer convs must agree exactly, the f32 conv within f32 rounding."""

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
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    rows = []
    for batch in args.batch:
        for stage in args.stages:
            size, channels = STAGES[stage]
            rows.append(measure(batch, size, channels, args.budget))
            print(format_table(rows[-1:]).splitlines()[-1], flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} over {os.cpu_count()} cores\n")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"machine": bench.machine("cpu"), "load_average": os.getloadavg(), "results": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
