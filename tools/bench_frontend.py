"""Front-end speed: JSON model -> verified StableHLO text, convc against JAX.

For chains of N conv nodes (NHWC, 3x3 SAME, small channels, splat weights so the
JSON stays small) this times, in one process and interleaved:

* convc: what `convc model.json -o out.mlir` does, in-process: read and check the
  JSON, run the default pipeline, emit StableHLO, parse and verify it with MLIR;
* JAX:   `jax.jit(f).lower(x).as_text()` for the same network, traced afresh each
  repetition (a new function object, so no tracing cache is hit).

With `--grad` it times the chain's gradient step instead (every weight's gradient, the
chain's output cotangent as an input):

* convc: what `convc model.json --grad w0,w1,... -o step.mlir` does, in-process: read and
  check the JSON, `convc.grad`, the default pipeline, emit, MLIR parse + verify;
* JAX:   `jax.jit(lambda x, ct: jax.vjp(chain, *weights)(...)).lower(x, ct).as_text()`,
  returning the output and the weights' gradients as convc's step does.

It prints one row per size: nodes, median convc ms, median JAX ms, speedup and
convc microseconds per node. A benchmark, never a test: the numbers depend on
the machine.

    python -m convc.tools.bench_frontend [--sizes 100 1000 10000] [--repeat 5] [--block]
    python -m convc.tools.bench_frontend --grad --sizes 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

SHAPE = (1, 8, 8, 4)  # NHWC
KERNEL = (3, 3, SHAPE[-1], SHAPE[-1])  # HWIO, channels preserved so the chain composes
LAYOUTS = ("NHWC", "HWIO", "NHWC")


def weight_value(index: int) -> float:
    """A distinct splat per layer, so no one can share constants."""
    return round(0.01 + 0.001 * (index % 17), 6)


def chain_model(convs: int, block: bool) -> dict[str, Any]:
    """A JSON model: `convs` conv nodes in a chain, optionally each followed by bias_add + relu."""
    constants: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    previous = "x"
    for i in range(convs):
        constants.append({"name": f"w{i}", "shape": list(KERNEL), "dtype": "f32", "value": weight_value(i)})
        nodes.append({"name": f"c{i}", "op": "conv", "inputs": [previous, f"w{i}"], "window_strides": [1, 1],
                      "padding": "SAME", "dimension_numbers": list(LAYOUTS)})
        previous = f"c{i}"
        if block:
            constants.append({"name": f"b{i}", "shape": [KERNEL[-1]], "dtype": "f32", "value": 0.1})
            nodes.append({"name": f"a{i}", "op": "bias_add", "inputs": [previous, f"b{i}"], "axis": 3})
            nodes.append({"name": f"r{i}", "op": "relu", "inputs": [f"a{i}"]})
            previous = f"r{i}"
    return {"name": f"chain{convs}", "inputs": [{"name": "x", "shape": list(SHAPE), "dtype": "f32"}],
            "constants": constants, "nodes": nodes, "outputs": [previous]}


def convc_compile(path: Path, target: str | None = None) -> str:
    """Exactly the CLI's path for `convc model.json -o out.mlir [--target T]`, minus the file write."""
    from convc.compile import Compiler

    compiler = Compiler(target=target)
    graph = compiler.load(str(path))
    compiler.run_passes(graph)
    return compiler.emit(graph, "stablehlo").decode()


def weight_names(convs: int) -> list[str]:
    return [f"w{i}" for i in range(convs)]


def convc_grad_compile(path: Path, convs: int, target: str | None = None) -> str:
    """The CLI's path for `convc model.json --grad w0,...,w{N-1} -o step.mlir [--target T]`, minus the write."""
    from convc.compile import Compiler

    compiler = Compiler(target=target, grad=weight_names(convs))
    graph = compiler.differentiate(compiler.load(str(path)), str(path))
    compiler.run_passes(graph)
    return compiler.emit(graph, "stablehlo").decode()


STAGES = ("read JSON + verify", "passes", "re-verify", "emit", "MLIR parse + verify")


def stage_times(path: Path, target: str | None = None) -> list[float]:
    """convc_compile's seconds split by stage (the pass manager's timings separate the passes
    from the re-verification after them)."""
    from convc import mlir
    from convc.compile import Compiler

    compiler = Compiler(target=target, verify=False)
    start = time.perf_counter()
    graph = compiler.load(str(path))
    loaded = time.perf_counter()
    compiler.run_passes(graph)
    ran = time.perf_counter()
    text = compiler.emit(graph, "stablehlo").decode()
    emitted = time.perf_counter()
    mlir.verify_stablehlo(text)
    verified = time.perf_counter()
    passes = sum(seconds for _, seconds in compiler.timings)
    return [loaded - start, passes, ran - loaded - passes, emitted - ran, verified - emitted]


def stage_table(rows: Sequence[tuple[int, list[float]]]) -> str:
    lines = ["| nodes | " + " | ".join(f"{stage} µs/node" for stage in STAGES) + " |", "|---:" * (len(STAGES) + 1) + "|"]
    for nodes, seconds in rows:
        lines.append(f"| {nodes:,} | " + " | ".join(f"{s / nodes * 1e6:.1f}" for s in seconds) + " |")
    return "\n".join(lines)


def jax_weights(convs: int) -> list[np.ndarray]:
    """Made once per size, outside the timed region (JAX is not charged for numpy)."""
    return [np.full(KERNEL, weight_value(i), np.float32) for i in range(convs)]


def jax_chain(x: Any, weights: Sequence[Any], block: bool) -> Any:
    """The chain in jax.lax over the given weights (numpy constants or traced values)."""
    from jax import lax

    bias = np.full((KERNEL[-1],), 0.1, np.float32)
    for w in weights:
        x = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=LAYOUTS)  # type: ignore[arg-type]
        if block:
            x = lax.max(x + lax.broadcast_in_dim(bias, x.shape, (3,)), lax.full_like(x, 0))
    return x


def jax_network(weights: Sequence[np.ndarray], block: bool) -> Callable[[Any], Any]:
    """The same chain as a JAX function closing over numpy weights (a fresh closure per call)."""

    def network(x: Any) -> Any:
        return jax_chain(x, weights, block)

    return network


def jax_grad_step(weights: Sequence[np.ndarray], block: bool) -> Callable[[Any, Any], Any]:
    """(x, cotangent) -> (output, gradient of every weight): jax.vjp of the chain with respect
    to its weights, as convc's `--grad w0,...` step (a fresh closure per call)."""
    import jax

    def step(x: Any, cotangent: Any) -> Any:
        out, pullback = jax.vjp(lambda *ws: jax_chain(x, ws, block), *weights)
        return out, pullback(cotangent)

    return step


def jax_grad_lower(weights: Sequence[np.ndarray], block: bool) -> str:
    import jax

    spec = jax.ShapeDtypeStruct(SHAPE, np.float32)
    return jax.jit(jax_grad_step(weights, block)).lower(spec, spec).as_text()


def jax_lower(weights: Sequence[np.ndarray], block: bool) -> str:
    import jax

    spec = jax.ShapeDtypeStruct(SHAPE, np.float32)
    return jax.jit(jax_network(weights, block)).lower(spec).as_text()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(convs: int, repeat: int, block: bool, workdir: Path, target: str | None = None,
            grad: bool = False) -> tuple[float, float]:
    """Median seconds (convc, jax) over `repeat` interleaved runs, after one warm-up each
    (`grad`: of the gradient step)."""
    path = workdir / f"chain{convs}.json"
    path.write_text(json.dumps(chain_model(convs, block)))
    weights = jax_weights(convs)
    if grad:
        def ours() -> str:
            return convc_grad_compile(path, convs, target)

        def theirs() -> str:
            return jax_grad_lower(weights, block)
    else:
        def ours() -> str:
            return convc_compile(path, target)

        def theirs() -> str:
            return jax_lower(weights, block)
    check_same_convolutions(ours(), theirs(), expected=3 * convs - 1 if grad else convs)
    convc_times, jax_times = [], []
    for _ in range(repeat):
        convc_times.append(timed(ours))
        jax_times.append(timed(theirs))
    return statistics.median(convc_times), statistics.median(jax_times)


def check_same_convolutions(ours: str, theirs: str, expected: int) -> None:
    """Both texts (the warm-up runs) contain the expected number of convolutions: for a
    gradient step, each conv's kernel gradient and every input gradient but the first conv's."""
    counts = ours.count("stablehlo.convolution"), theirs.count("stablehlo.convolution")
    if counts != (expected, expected):
        raise SystemExit(f"networks differ: convc has {counts[0]} convolutions, JAX {counts[1]}, expected {expected}")


def table(rows: Sequence[tuple[int, float, float]]) -> str:
    lines = ["| nodes | convc ms | JAX ms | speedup | convc µs/node |", "|---:|---:|---:|---:|---:|"]
    for nodes, ours, theirs in rows:
        lines.append(f"| {nodes:,} | {ours * 1e3:.1f} | {theirs * 1e3:.1f} | {theirs / ours:.1f}× | {ours / nodes * 1e6:.1f} |")
    return "\n".join(lines)


def machine() -> str:
    import jaxlib

    return (f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}, "
            f"jaxlib {jaxlib.__version__}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_frontend", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", help="conv nodes per chain (default 100 1000 10000; --grad: 100 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved repetitions per size (median is reported)")
    parser.add_argument("--block", action="store_true", help="follow every conv with bias_add + relu (nodes still counts convs)")
    parser.add_argument("--target", choices=("generic", "cpu", "gpu"), help="convc's --target (default: as the CLI, the platform's)")
    parser.add_argument("--stages", action="store_true", help="also print convc's time per node by stage (median)")
    parser.add_argument("--grad", action="store_true",
                        help="time the gradient step: convc --grad (every weight) against jax.vjp trace + lower")
    args = parser.parse_args(argv)
    if args.grad and args.stages:
        parser.error("--stages splits the forward compile only; drop it with --grad")
    sizes = args.sizes or ([100, 1000] if args.grad else [100, 1000, 10000])
    rows, stages = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for convs in sizes:
            ours, theirs = measure(convs, args.repeat, args.block, Path(tmp), args.target, args.grad)
            rows.append((convs, ours, theirs))
            print(f"  {convs} nodes: convc {ours * 1e3:.1f} ms, JAX {theirs * 1e3:.1f} ms", file=sys.stderr, flush=True)
            if args.stages:
                runs = [stage_times(Path(tmp) / f"chain{convs}.json", args.target) for _ in range(args.repeat)]
                stages.append((convs, [statistics.median(run[i] for run in runs) for i in range(len(STAGES))]))
    pattern = "conv 3x3 SAME + bias_add + relu" if args.block else "conv 3x3 SAME"
    target = args.target or "the platform's (as the CLI)"
    what = ("gradient step (convc --grad every weight vs jax.vjp trace + lower)" if args.grad
            else "JSON -> verified StableHLO")
    print(f"{what}, chains of {pattern}, NHWC {list(SHAPE)}, convc target {target}; "
          f"median of {args.repeat}; {machine()}; load {os.getloadavg()[0]:.2f}")
    print(table(rows))
    if stages:
        print()
        print(stage_table(stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
