"""What `fold-constants` and `fold-conv-affine` are worth on whole networks
(`python -m convc.tools.bench_folds`): each of `--suite models`' fallback networks, exported
with its BatchNormalization nodes kept (the TorchScript exporter with
`training=TrainingMode.PRESERVE` on the eval-mode module: the inference-form BN that an
exporter which does not fold them leaves), is compiled for `--target` twice, with the target's
default pipeline without the two folds and with them, both checked against ONNX Runtime,
then the two executables and ONNX Runtime are timed interleaved in one process."""

from __future__ import annotations

import argparse
import io
import os
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import bench, bench_models

FOLDS = ("fold-constants", "fold-conv-affine")


def pipelines(target: str) -> dict[str, str]:
    """The target's default pipeline without the folds ("unfolded") and with them after
    `resolve-padding` ("folded"), whether or not the default already has them."""
    from convc.passes import default_pipeline

    plain = [name for name in default_pipeline(target).split(",") if name not in FOLDS]
    at = plain.index("resolve-padding") + 1
    return {"unfolded": ",".join(plain), "folded": ",".join(plain[:at] + list(FOLDS) + plain[at:])}


def export_keeping_bn(module: Any, x: Any) -> bytes:
    """`module` exported by the TorchScript exporter (opset 17) with its BatchNormalization nodes."""
    import torch

    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buffer, dynamo=False, opset_version=17, input_names=["x"], output_names=["y"],  # type: ignore[arg-type]
                          training=torch.onnx.TrainingMode.PRESERVE)
    return buffer.getvalue()


def measure(name: str, shape: Sequence[int], target: str, budget_s: float, threads: int) -> dict[str, Any]:
    """One network: compile times, errors against ONNX Runtime and interleaved medians (ms)."""
    import jax
    import onnx
    import torch
    from convc import load_onnx
    from convc.compile import Compiler
    from convc.runtime import compile_stablehlo

    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    model = export_keeping_bn(bench_models.build_module(name), torch.from_numpy(x))
    session = bench_models.ort_session(model, threads)
    reference = session.run(None, {"x": x})[0]
    thunks: dict[str, Any] = {"ort": lambda: session.run(None, {"x": x})}
    row: dict[str, Any] = {"network": name, "input": "x".join(map(str, shape)),
                           "bn_nodes": sum(n.op_type == "BatchNormalization" for n in onnx.load_from_string(model).graph.node)}
    for label, pipeline in pipelines(target).items():
        start = time.perf_counter()
        compiler = Compiler(target=target, pipeline=pipeline)
        graph = compiler.run_passes(load_onnx(model, file=f"{name}.onnx"))
        executable = compile_stablehlo(compiler.emit(graph, "stablehlo").decode(), "cpu")
        row[f"compile_s_{label}"] = time.perf_counter() - start
        row[f"ops_{label}"] = len(graph.ops)
        buffers = [jax.device_put(x, executable.device)]
        error = bench_models.relative_error(np.asarray(executable.run_on_device(buffers)[0]), reference)
        if not error <= bench_models.TOLERANCE:
            raise bench.BenchError(f"{name} ({label}): convc differs from ONNX Runtime (max relative error {error:.2e})")
        row[f"err_{label}"] = error
        thunks[label] = lambda e=executable, b=buffers: bench.block_until_ready(e.run_on_device(b))
    medians, best, _ = bench.summarize(bench.Timer(budget_s).run(thunks))
    row.update({f"ms_{k}": v for k, v in medians.items()})
    row.update({f"best_ms_{k}": v for k, v in best.items()})
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m convc.tools.bench_folds", description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("generic", "cpu", "gpu"), default="cpu")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", type=int, default=bench_models.FULL_SIZE)
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of timing per network")
    parser.add_argument("--cases", default="", help="comma-separated substrings of network names (default: all)")
    args = parser.parse_args(argv)
    threads = os.cpu_count() or 1
    print(f"load average at start: {os.getloadavg()}, target {args.target}")
    print("| network | input | BN nodes | ops unfolded/folded | unfolded ms | folded ms | ORT ms | folded/unfolded (median) | (best) | compile s unfolded/folded |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in bench_models.FALLBACK_NETWORKS:
        if args.cases and not any(c in name for c in args.cases.split(",")):
            continue
        three_d = name == "conv3d_style"
        shape = (args.batch, 3, 8, args.size // 2, args.size // 2) if three_d else (args.batch, 3, args.size, args.size)
        r = measure(name, shape, args.target, args.budget, threads)
        print(f"| {name} | {r['input']} | {r['bn_nodes']} | {r['ops_unfolded']}/{r['ops_folded']} | {r['ms_unfolded']:.2f} | "
              f"{r['ms_folded']:.2f} | {r['ms_ort']:.2f} | {r['ms_folded'] / r['ms_unfolded']:.3f} | "
              f"{r['best_ms_folded'] / r['best_ms_unfolded']:.3f} | "
              f"{r['compile_s_unfolded']:.2f}/{r['compile_s_folded']:.2f} |", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
