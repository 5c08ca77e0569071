"""Sharding scaling benchmark: one model on 1, 2, 4 and 8 XLA:CPU host devices.

Two workloads, each compiled by convc with a mesh of N devices and partitioned by XLA:
- `spatial-3d`: a 3-D block (two 3x3x3 convs with relu), split along depth;
- `dp-weight-grad`: a data-parallel weight-gradient step (batch-split conv_backprop_filter,
  then w - lr * dw), the kernel replicated.

Per N it reports per-device memory from the compiled executable's memory statistics,
the bytes its collectives move per device (read from the partitioned HLO) against the
analytic halo and all-reduce sizes, and wall time. The host devices share this machine's
cores, so wall time is not a speed-up measurement.

    python -m convc.tools.bench_sharding [--quick | --full] [--repeats N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEVICE_COUNTS = (1, 2, 4, 8)
BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "s32": 4, "s8": 1, "pred": 1}
_COLLECTIVE = re.compile(r"=\s*(\w+)\[([\d,]*)\][^=]*?\s(collective-permute|all-gather|all-reduce|reduce-scatter|all-to-all)(?:-start)?\(")


@dataclass
class Row:
    workload: str
    devices: int
    per_device_bytes: int  # arguments + outputs + temporaries - aliased, from the compiled executable
    ideal_bytes: float  # single-device bytes / N
    collective_bytes: int  # per device, summed over the partitioned HLO's collectives
    analytic_bytes: int  # halo planes or the kernel all-reduce, computed from the shapes
    collectives: dict[str, int]
    wall_ms: float


def collective_bytes(hlo: str) -> tuple[int, dict[str, int]]:
    """Bytes of every collective's per-device result, and a count per kind."""
    total = 0
    kinds: dict[str, int] = {}
    for dtype, dims, kind in _COLLECTIVE.findall(hlo):
        total += math.prod(int(d) for d in dims.split(",") if d) * BYTES.get(dtype, 4)
        kinds[kind] = kinds.get(kind, 0) + 1
    return total, kinds


def spatial_block(devices: int, shape: tuple[int, ...]) -> tuple[Any, int]:
    """Two 3x3x3 convs + relu, depth split over `devices`; analytic halo: per conv, one
    plane from each neighbour."""
    import convc

    batch, depth, height, width, channels = shape
    b = convc.Builder("spatial3d", mesh={"space": devices})
    x = b.input("x", shape, sharding=(None, "space"))
    w1 = b.input("w1", (3, 3, 3, channels, channels))
    w2 = b.input("w2", (3, 3, 3, channels, channels))
    dn = ("NDHWC", "DHWIO", "NDHWC")
    h = b.relu(b.conv(x, w1, padding="SAME", dimension_numbers=dn))
    b.shard(h, (None, "space"))
    b.output(b.relu(b.conv(h, w2, padding="SAME", dimension_numbers=dn)), sharding=(None, "space"))
    plane = batch * height * width * channels * 4
    return b.build(), 0 if devices == 1 else 2 * 2 * plane


def weight_grad_step(devices: int, shape: tuple[int, ...]) -> tuple[Any, int]:
    """dw = conv_backprop_filter(x, dy) over a batch split across `devices`, w - 0.01 dw;
    analytic: one all-reduce of the kernel."""
    import convc

    batch, height, width, channels = shape
    kernel = (3, 3, channels, channels)
    b = convc.Builder("dp_weight_grad", mesh={"data": devices})
    x = b.input("x", shape, sharding=("data",))
    dy = b.input("dy", shape, sharding=("data",))
    w = b.input("w", kernel, sharding=())
    dw = b.conv_backprop_filter(x, dy, kernel_shape=kernel, padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    step = b.multiply(dw, b.constant("minus_lr", np.full(kernel, -0.01, np.float32)))
    b.output(b.add(w, step), sharding=())
    return b.build(), 0 if devices == 1 else math.prod(kernel) * 4


WORKLOADS: dict[str, tuple[Callable[[int, tuple[int, ...]], tuple[Any, int]], dict[str, tuple[int, ...]]]] = {
    # name: (builder, shape per size: --size quick | default | full)
    "spatial-3d": (spatial_block, {"quick": (2, 32, 32, 32, 8), "default": (2, 64, 64, 64, 16), "full": (2, 128, 128, 128, 16)}),
    "dp-weight-grad": (weight_grad_step, {"quick": (16, 16, 16, 16), "default": (64, 32, 32, 32), "full": (64, 32, 32, 32)}),
}


def measure(name: str, devices: int, size: str, target: str, repeats: int) -> Row:
    import convc
    from convc.runtime_inputs import random_inputs
    from convc.runtime_sharded import compile_sharded

    build, shapes = WORKLOADS[name]
    graph, analytic = build(devices, shapes[size])
    executable = compile_sharded(convc.compile_graph(graph, target=target), devices, "cpu")
    stats = executable.memory_stats()
    per_device = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes - stats.alias_size_in_bytes
    moved, kinds = collective_bytes(executable.hlo_text())
    if repeats == 0:  # memory and collectives come from the compiled program alone
        return Row(name, devices, per_device, 0.0, moved, analytic, kinds, float("nan"))
    placed = executable.place(random_inputs(graph, seed=0))
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        for pieces in executable.run_on_device(placed):
            for piece in pieces:
                piece.block_until_ready()
        times.append((time.perf_counter() - start) * 1e3)
    return Row(name, devices, per_device, 0.0, moved, analytic, kinds, statistics.median(times[1:]))


def table(rows: list[Row]) -> str:
    lines = ["| workload | N | per-device memory | single / N | ratio | collective bytes / device | analytic | ratio | collectives | wall ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        mem_ratio = row.per_device_bytes / row.ideal_bytes
        moved_ratio = f"{row.collective_bytes / row.analytic_bytes:.3f}" if row.analytic_bytes else "-"
        kinds = ", ".join(f"{k} x{v}" for k, v in sorted(row.collectives.items())) or "none"
        wall = "-" if math.isnan(row.wall_ms) else f"{row.wall_ms:.1f}"
        lines.append(f"| {row.workload} | {row.devices} | {row.per_device_bytes / 2**20:.2f} MiB | {row.ideal_bytes / 2**20:.2f} MiB | "
                     f"{mem_ratio:.3f} | {row.collective_bytes / 2**10:.1f} KiB | {row.analytic_bytes / 2**10:.1f} KiB | {moved_ratio} | "
                     f"{kinds} | {wall} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_sharding", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_const", dest="size", const="quick", help="small shapes (a smoke run)")
    parser.add_argument("--full", action="store_const", dest="size", const="full",
                        help="the 3-D block at 2x128^3x16 (8x the default's work; with --repeats 0, compile only)")
    parser.add_argument("--target", default="generic", choices=("generic", "cpu", "gpu"), help="convc target (default generic)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per point (median; one warm-up first); 0: no runs, memory and collectives only")
    parser.add_argument("--json", help="also write the rows here")
    parser.set_defaults(size="default")
    args = parser.parse_args(argv)
    from convc.runtime_sharded import request_host_devices

    if not request_host_devices(max(DEVICE_COUNTS)):
        print("bench_sharding: JAX started before the host devices could be set", file=sys.stderr)
        return 1
    rows = []
    for name in WORKLOADS:
        single = None
        for devices in DEVICE_COUNTS:
            row = measure(name, devices, args.size, args.target, args.repeats)
            single = single or row.per_device_bytes
            row.ideal_bytes = single / devices
            rows.append(row)
            print(f"{name} N={devices}: {row.per_device_bytes / 2**20:.2f} MiB/device, {row.collective_bytes} collective bytes, "
                  f"{row.wall_ms:.1f} ms", file=sys.stderr)
    print(table(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump([asdict(r) for r in rows], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
