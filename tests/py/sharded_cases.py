"""Sharded conv cases, run on 8 host devices in a worker process (see test_sharding.py).

XLA:CPU's device count is fixed when JAX's backend starts, and the pytest process has
one device, so `python sharded_cases.py` runs every case in one fresh process and prints
one JSON line per (case, target): the error against the single-device jax.lax oracle and
facts read from the partitioned HLO.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import convc
import numpy as np

DEVICES = 8
TARGETS = ("generic", "cpu", "gpu")
NHWC = ("NHWC", "HWIO", "NHWC")
NWC = ("NWC", "WIO", "NWC")
NDHWC = ("NDHWC", "DHWIO", "NDHWC")


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], convc.Graph]


def _conv(name: str, mesh: dict[str, int], x_shape: tuple[int, ...], w_shape: tuple[int, ...], x_spec: Any,
          out_spec: Any = None, dn: tuple[str, str, str] = NHWC, w_spec: Any = None, **attrs: Any) -> Case:
    def build() -> convc.Graph:
        b = convc.Builder(name, mesh=mesh)
        x = b.input("x", x_shape, sharding=x_spec)
        w = b.input("w", w_shape, sharding=w_spec)
        y = b.conv(x, w, dimension_numbers=dn, name="y", **attrs)
        b.output(y, sharding=out_spec)
        return b.build()
    return Case(name, build)


def _transpose(name: str, mesh: dict[str, int], x_spec: Any, out_spec: Any, **attrs: Any) -> Case:
    def build() -> convc.Graph:
        b = convc.Builder(name, mesh=mesh)
        x = b.input("x", (8, 8, 8, 4), sharding=x_spec)
        w = b.input("w", (3, 3, 4, 6))
        b.output(b.conv_transpose(x, w, dimension_numbers=NHWC, name="y", **attrs), sharding=out_spec)
        return b.build()
    return Case(name, build)


def _backprop_input(name: str, mesh: dict[str, int], dy_spec: Any, out_spec: Any, **attrs: Any) -> Case:
    def build() -> convc.Graph:
        b = convc.Builder(name, mesh=mesh)
        dy = b.input("dy", (4, 8, 8, 6), sharding=dy_spec)
        w = b.input("w", (3, 3, 4, 6))
        b.output(b.conv_backprop_input(dy, w, dimension_numbers=NHWC, input_shape=(4, 16, 16, 4), name="dx", **attrs),
                 sharding=out_spec)
        return b.build()
    return Case(name, build)


def _backprop_filter(name: str, mesh: dict[str, int], x_spec: Any, dy_spec: Any, x_shape: tuple[int, ...] = (8, 16, 16, 4),
                     dy_shape: tuple[int, ...] = (8, 8, 8, 6), kernel: tuple[int, ...] = (3, 3, 4, 6), **attrs: Any) -> Case:
    def build() -> convc.Graph:
        b = convc.Builder(name, mesh=mesh)
        x = b.input("x", x_shape, sharding=x_spec)
        dy = b.input("dy", dy_shape, sharding=dy_spec)
        b.output(b.conv_backprop_filter(x, dy, kernel_shape=kernel, dimension_numbers=NHWC, name="dw", **attrs),
                 sharding=[None] * len(kernel))
        return b.build()
    return Case(name, build)


def _two_convs_with_constraint() -> convc.Graph:
    """conv -> relu -> conv with a constraint that reshards the middle value."""
    b = convc.Builder("constraint_reshards", mesh={"data": 4, "space": 2})
    x = b.input("x", (8, 16, 16, 4), sharding=("data", "space"))
    w = b.constant("w", np.linspace(-1, 1, 3 * 3 * 4 * 4, dtype=np.float32).reshape(3, 3, 4, 4))
    c1 = b.shard(b.conv(x, w, padding="SAME", dimension_numbers=NHWC, name="c1"), (None, None, "space"))
    b.output(b.conv(b.relu(c1), w, padding="SAME", dimension_numbers=NHWC, name="y"), sharding=("data",))
    return b.build()


def _grad_batch_split() -> convc.Graph:
    """convc.grad of a batch-split conv block: the kernel gradient sums over devices."""
    b = convc.Builder("grad_batch_split", mesh={"data": 8})
    x = b.input("x", (16, 8, 8, 8), sharding=("data",))
    w = b.input("w", (3, 3, 8, 8), sharding=(None, None, None, None))
    y = b.relu(b.conv(x, w, padding="SAME", dimension_numbers=NHWC, name="c"), name="y")
    b.output(y, sharding=("data",))
    return convc.grad(b.build(), ["x", "w"])


BATCH, SPACE, BOTH = {"data": 8}, {"space": 8}, {"data": 4, "space": 2}
CASES: tuple[Case, ...] = (
    _conv("conv2d_batch", BATCH, (8, 8, 8, 4), (3, 3, 4, 8), ("data",), ("data",), padding="SAME"),
    _conv("conv2d_spatial_halo", SPACE, (2, 32, 16, 4), (3, 3, 4, 4), (None, "space"), (None, "space"), padding="SAME"),
    _conv("conv2d_2d_mesh_strided", BOTH, (8, 16, 16, 4), (3, 3, 4, 8), ("data", "space"), ("data", "space"),
          window_strides=(2, 2), padding="SAME"),
    _conv("conv2d_rhs_dilation_valid", SPACE, (2, 40, 8, 4), (3, 3, 4, 4), (None, "space"), None, rhs_dilation=(2, 2)),
    _conv("conv2d_lhs_dilation_explicit", BOTH, (8, 8, 8, 4), (3, 3, 4, 4), ("data", None, "space"), None,
          lhs_dilation=(2, 1), padding=((2, 1), (1, 1))),
    _conv("conv2d_negative_pads", BOTH, (8, 16, 8, 4), (3, 3, 4, 4), ("data", "space"), None, padding=((-1, 2), (1, -1))),
    _conv("conv2d_feature_split", {"model": 8}, (2, 8, 8, 4), (3, 3, 4, 16), None, (None, None, None, "model"),
          w_spec=(None, None, None, "model"), padding="SAME_LOWER"),
    _conv("conv2d_grouped_mixed", BOTH, (8, 16, 16, 8), (3, 3, 4, 8), ("data", "space"), ("data", "space"),
          feature_group_count=2, padding="SAME"),
    _conv("conv2d_depthwise_spatial", SPACE, (2, 32, 8, 8), (3, 3, 1, 8), (None, "space"), (None, "space"),
          feature_group_count=8, padding="SAME"),
    _conv("conv2d_pointwise_batch", BATCH, (8, 8, 8, 4), (1, 1, 4, 8), ("data",), ("data",)),
    _conv("conv1d_spatial_strided", SPACE, (2, 64, 4), (5, 4, 4), (None, "space"), (None, "space"), dn=NWC,
          window_strides=(2,), padding=((2, 2),)),
    _conv("conv3d_spatial", {"data": 2, "space": 4}, (2, 16, 8, 8, 4), (3, 3, 3, 4, 4), ("data", "space"), ("data", "space"),
          dn=NDHWC, padding="SAME"),
    _transpose("conv_transpose_spatial", BOTH, ("data", "space"), ("data", "space"), strides=(2, 2), padding="SAME"),
    _transpose("conv_transpose_batch_valid", BATCH, ("data",), ("data",), strides=(2, 2), padding="VALID"),
    _backprop_input("conv_backprop_input_spatial", BOTH, (None, "space"), ("data", "space"), window_strides=(2, 2),
                    padding="SAME"),
    _backprop_filter("conv_backprop_filter_batch", BATCH, ("data",), ("data",), window_strides=(2, 2), padding="SAME"),
    _backprop_filter("conv_backprop_filter_spatial_grouped", BOTH, ("data", "space"), ("data", "space"),
                     kernel=(3, 3, 2, 6), window_strides=(2, 2), padding="SAME", feature_group_count=2),
    _backprop_filter("conv_backprop_filter_depthwise", BATCH, ("data",), ("data",), x_shape=(8, 8, 8, 4),
                     dy_shape=(8, 8, 8, 4), kernel=(3, 3, 1, 4), padding="SAME", feature_group_count=4),
    Case("constraint_reshards", _two_convs_with_constraint),
    Case("grad_batch_split", _grad_batch_split),
)


_INSTR = re.compile(r"=\s*(\w+)\[([\d,]*)\][^=]*?\s(collective-permute|all-gather|all-reduce|reduce-scatter|all-to-all)(?:-start)?\(")


def collectives(hlo: str) -> list[dict[str, Any]]:
    """Every collective of the partitioned HLO: its kind, element type and per-device result shape."""
    found = []
    for dtype, dims, kind in _INSTR.findall(hlo):
        found.append({"kind": kind, "dtype": dtype, "shape": [int(d) for d in dims.split(",") if d]})
    return found


def run_case(case: Case, target: str, cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from convc.compile import Compiler
    from convc.reference import evaluate
    from convc.runner import cropped_for_xla_cpu, xla_cpu_misread_convs
    from convc.runtime_inputs import TOLERANCE, compare, random_inputs
    from convc.runtime_sharded import compile_sharded

    graph = case.build()
    compiler = Compiler(target=target)
    lowered = compiler.run_passes(graph.clone())
    if xla_cpu_misread_convs(lowered):  # as `convc --run` does on XLA:CPU (openxla/xla#48713)
        lowered = cropped_for_xla_cpu(lowered)
    text = compiler.emit(lowered, "stablehlo").decode()
    if text in cache:  # the gpu target's pipeline may produce the generic module: run once
        return dict(cache[text], reused=True)
    inputs = random_inputs(graph, seed=7)
    executable = compile_sharded(text, graph.mesh.size, "cpu")
    shards = executable.run_on_device(executable.place(inputs))
    outputs = executable.assemble(shards, [v.type.shape for v in graph.outputs])
    expected = evaluate(graph, inputs)
    lines = [compare(v.name, v.type.dtype, got, want) for v, got, want in zip(graph.outputs, outputs, expected, strict=True)]
    result = {
        "ok": all(passed for _, passed in lines), "report": [line for line, _ in lines],
        "tolerance": TOLERANCE["f32"],
        "collectives": collectives(executable.hlo_text()),
        "global_shapes": [list(v.type.shape) for v in graph.outputs],
        "shard_shapes": [[list(np.asarray(piece).shape) for piece in pieces] for pieces in shards],
        "rewrote": sorted({op.kind for op in lowered.ops}),
    }
    cache[text] = result
    return result


def main(names: list[str]) -> int:
    chosen = [c for c in CASES if not names or c.name in names]
    for case in chosen:
        cache: dict[str, dict[str, Any]] = {}
        for target in TARGETS:
            try:
                result = run_case(case, target, cache)
            except Exception as err:  # noqa: BLE001 - reported per case, the test fails on it
                result = {"ok": False, "report": [f"{type(err).__name__}: {err}"]}
            print(json.dumps({"case": case.name, "target": target, **result}), flush=True)
    return 0


if __name__ == "__main__":
    from convc.runtime_sharded import request_host_devices

    request_host_devices(DEVICES)
    sys.exit(main(sys.argv[1:]))
