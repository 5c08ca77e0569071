"""Quantized networks (`python -m convc.tools.bench --suite models --int8`, issue 19's
benchmark): each network of the models suite (tools/bench_models.py) exported to ONNX,
quantized by ONNX Runtime's `quantize_static` (QDQ, per-channel int8 weights, default
activation type, MinMax calibration on CALIBRATION_BATCHES random inputs; its files live in
a temporary directory only), then run three ways in one process:

* convc int8: the quantized file through `convc.load_onnx` and the default passes for
  `--target` (`lower-quantized` turns its quantized convs into integer ones), compiled by PJRT;
* ONNX Runtime int8: the same quantized bytes on its CPU provider (same thread count as XLA's);
* convc f32: the float export through convc, as the models suite runs it.

With `--onnx-dir DIR` the float networks are the files `--save-onnx DIR` wrote (the models
suite's manifest) rather than fresh exports, so the suite runs without PyTorch: quantize_static
quantizes each saved file, and its input is the manifest's seeded draw.

Checks before timing (BenchError, exit 1, on a failure): convc f32 against ONNX Runtime's
float run (the models suite's 1e-4 bar); convc int8 by issue 19's bar for QDQ files, since
ONNX Runtime's own fused and unfused int8 runs of one file differ by many steps: the output
on the file's output quantization grid (where a DequantizeLinear writes it), and its RMS
error against the float model within ERROR_BAR x ONNX Runtime's int8 RMS error and at least
INT8_SIZED x it (int8-sized: not the float answer passed through).
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from convc.frontend.onnx.check import onnxruntime_saturates_u8_by_s8

from . import bench, bench_models, bench_profile

CALIBRATION_BATCHES = 4
ERROR_BAR = 1.25  # convc int8's RMS error vs the float model, over ONNX Runtime int8's
INT8_SIZED = 0.5  # ... and at least this much of it
GRID_TOLERANCE = 1e-3  # |output / scale + zero point - nearest integer|, in steps


@dataclass
class Int8Result(bench_models.NetworkTiming):  # ms: convc_int8, ort_int8, convc_f32
    ratio_vs_ort_int8: float
    ratio_vs_convc_f32: float
    rms_error: float  # convc int8 vs the float model (ONNX Runtime's float run)
    ort_rms_error: float  # ONNX Runtime int8 vs the same
    on_grid: bool | None  # None: the output is not written by a DequantizeLinear
    f32_error_vs_ort: float
    quantize_s: float
    compile_s: float  # convc int8: import, passes, emission, PJRT compile
    quantized_convs: int  # imported as quantized convs (the rest: float convs between casts)
    convs: int
    reference_rms: float  # RMS of the float model's output (the errors' scale)
    profile: dict[str, Any] | None = None  # --profile: bench_profile.Profile of convc's int8 executable


def quantize(model: bytes, input_shape: tuple[int, ...], seed: int = 1) -> bytes:
    """`model` quantized by quantize_static: QDQ, per-channel weights, MinMax over
    CALIBRATION_BATCHES standard-normal inputs of `input_shape` (seeds seed, seed + 1, ...)."""
    from onnxruntime import quantization

    class Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]  # untyped base
        def __init__(self) -> None:
            self.batches = iter([{"x": np.random.default_rng(seed + i).standard_normal(input_shape).astype(np.float32)}
                                 for i in range(CALIBRATION_BATCHES)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer's advice to pre-process the model
    try:
        with tempfile.TemporaryDirectory(prefix="convc-int8-") as directory:
            source, target = Path(directory) / "float.onnx", Path(directory) / "int8.onnx"
            source.write_bytes(without_initializer_aliases(model))
            quantization.quantize_static(str(source), str(target), Calibration(), quant_format=quantization.QuantFormat.QDQ,
                                         per_channel=True)
            return target.read_bytes()
    finally:
        root.setLevel(level)


def without_initializer_aliases(model: bytes) -> bytes:
    """`model` with each Identity of an initializer replaced by a copy of that initializer.

    The TorchScript exporter writes equal initializers once and the other uses as Identity
    nodes of it (a ResNet's zero conv biases); quantize_static then quantizes the shared
    bias once and leaves the Identity between its DequantizeLinear and the Conv, a pattern
    convc's QDQ conv fusion does not take (it imports such a conv as a float conv)."""
    import onnx

    proto = onnx.load_from_string(model)
    initializers = {t.name: t for t in proto.graph.initializer}
    aliases = [n for n in proto.graph.node if n.op_type == "Identity" and n.input[0] in initializers]
    for node in aliases:
        copy = onnx.TensorProto()
        copy.CopyFrom(initializers[node.input[0]])
        copy.name = node.output[0]
        proto.graph.initializer.append(copy)
        proto.graph.node.remove(node)
    return proto.SerializeToString()


def output_grid(model: bytes) -> tuple[float, int] | None:
    """(scale, zero point) of the per-tensor DequantizeLinear writing the graph's first output;
    None when another op writes it."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load_from_string(model)
    arrays = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    last = next((n for n in proto.graph.node if proto.graph.output[0].name in n.output), None)
    if last is None or last.op_type != "DequantizeLinear" or last.input[1] not in arrays or arrays[last.input[1]].size != 1:
        return None
    zero_point = arrays[last.input[2]] if len(last.input) > 2 and last.input[2] in arrays else np.zeros(1)
    return float(arrays[last.input[1]].reshape(())), int(zero_point.reshape(()))


def rms(got: np.ndarray, reference: np.ndarray) -> float:
    """RMS of got - reference (inf when the shapes differ)."""
    if got.shape != reference.shape:
        return math.inf
    return float(np.sqrt(np.mean((got.astype(np.float64) - reference.astype(np.float64)) ** 2)))


def on_grid(output: np.ndarray, grid: tuple[float, int] | None) -> bool | None:
    """Whether every element is scale x (integer - zero point), to GRID_TOLERANCE steps."""
    if grid is None:
        return None
    steps = output.astype(np.float64) / grid[0] + grid[1]
    return bool(np.all(np.abs(steps - np.round(steps)) <= GRID_TOLERANCE))


def record_onnxruntime_saturation(info: dict[str, Any], log: Callable[[str], None]) -> None:
    """Whether ONNX Runtime's 8-bit products saturate on this host, into the report (and said, where they do): then its
    int8 outputs are timed but no reference for convc's."""
    info["onnxruntime_saturates_8_bit_products"] = onnxruntime_saturates_u8_by_s8()
    if info["onnxruntime_saturates_8_bit_products"]:
        log("ONNX Runtime's 8-bit products saturate on this CPU (no VNNI): its int8 outputs are timed, not used to check convc's")


def check(spec: bench_models.ModelSpec, f32_error: float, ours: float, theirs: float, grid: bool | None) -> None:
    """BenchError unless convc f32 matches ONNX Runtime and convc int8 meets issue 19's QDQ bar (where ONNX Runtime's
    8-bit products are exact on this host: `onnxruntime_saturates_u8_by_s8`)."""
    where = f"{spec.name} (batch {spec.batch})"
    if not f32_error <= bench_models.TOLERANCE:
        raise bench.BenchError(f"{where}: convc f32's output differs from ONNX Runtime's "
                               f"(max relative error {f32_error:.2e} > {bench_models.TOLERANCE:.0e})")
    if grid is False:
        raise bench.BenchError(f"{where}: convc int8's output is off the file's output quantization grid")
    if onnxruntime_saturates_u8_by_s8():  # its int8 error is no reference here: printed in the report, not checked
        return
    if not INT8_SIZED * theirs <= ours <= ERROR_BAR * theirs:
        raise bench.BenchError(f"{where}: convc int8's RMS error vs the float model is {ours:.3e}, ONNX Runtime int8's "
                               f"{theirs:.3e} (the bar: {INT8_SIZED}x to {ERROR_BAR}x of it)")


def _compile(model: bytes, name: str, target: str, count_lowerings: bool = False) -> tuple[tuple[int, int], Any, dict[str, int] | None]:
    """((quantized convs, all convs) as imported, PJRT executable, and with `count_lowerings`
    which cpu lowering took each conv) of ONNX bytes for `target` on the CPU."""
    from convc import load_onnx
    from convc.compile import Compiler
    from convc.dtypes import is_quantized

    graph = load_onnx(model, file=f"{name}.onnx")
    counts = (sum(op.kind == "conv" and all(is_quantized(v.type.dtype) for v in op.operands) for op in graph.ops),
              sum(op.kind == "conv" for op in graph.ops))
    compiler = Compiler(target=target)
    lowerings = bench_profile.run_passes_counting(compiler, graph) if count_lowerings else None
    lowered = graph if count_lowerings else compiler.run_passes(graph)
    return counts, compiler.executable(lowered, "cpu"), lowerings


def float_model(spec: bench_models.ModelSpec, module: Any, x: np.ndarray) -> bytes:
    """The network's float ONNX bytes: the file --onnx-dir names, else `module` exported on `x`."""
    if spec.onnx_file is not None:
        return Path(spec.onnx_file).read_bytes()
    import torch

    return bench_models.export_onnx(module.cpu(), torch.from_numpy(x))


def run_model(spec: bench_models.ModelSpec, target: str, budget_s: float, threads: int, module: Any, seed: int = 0,
              profile: bool = False) -> Int8Result:
    """Export (or read, with --onnx-dir), quantize (timed) and compile (timed) one network, check
    convc f32 and int8, then time convc int8, ONNX Runtime int8 and convc f32 interleaved; with
    `profile`, then where convc int8's time goes (bench_profile). `module` is None for a saved file."""
    import jax

    x = bench_models.network_input(spec, seed)
    model = float_model(spec, module, x)
    start = time.perf_counter()
    int8_model = quantize(model, spec.input_shape)
    quantized = time.perf_counter()
    (convs, all_convs), int8, lowerings = _compile(int8_model, spec.name, target, profile)
    compiled = time.perf_counter()
    _, f32, _ = _compile(model, spec.name, target)
    buffers = [jax.device_put(x, int8.device)]
    session = bench_models.ort_session(int8_model, threads)
    reference = bench_models.ort_session(model, threads).run(None, {"x": x})[0]
    ours, theirs = np.asarray(int8.run_on_device(buffers)[0]), session.run(None, {"x": x})[0]
    f32_error = bench_models.relative_error(np.asarray(f32.run_on_device(buffers)[0]), reference)
    grid = on_grid(ours, output_grid(int8_model))
    rms_error, ort_rms_error = rms(ours, reference), rms(theirs, reference)
    check(spec, f32_error, rms_error, ort_rms_error, grid)
    thunks: dict[str, Callable[[], Any]] = {
        "convc_int8": lambda: bench.block_until_ready(int8.run_on_device(buffers)),
        "ort_int8": lambda: session.run(None, {"x": x}),
        "convc_f32": lambda: bench.block_until_ready(f32.run_on_device(buffers)),
    }
    samples = bench.Timer(budget_s).run(thunks)
    medians, best, iqr = bench.summarize(samples)
    return Int8Result(spec.name, spec.source, spec.batch, spec.describe(), medians, best, iqr, len(samples["convc_int8"]),
                      medians["convc_int8"] / medians["ort_int8"], medians["convc_int8"] / medians["convc_f32"],
                      rms_error, ort_rms_error, grid, f32_error, quantized - start, compiled - quantized, convs,
                      all_convs, rms(reference, np.zeros_like(reference)),
                      bench_profile.profile_executable(int8, buffers, lowerings).as_dict() if lowerings is not None else None)


def format_table(results: Sequence[Int8Result]) -> str:
    """The models suite's table style: one row per network and batch, geometric means below."""
    width = max([20, *(len(r.name) for r in results)])
    head = (f"{'network':<{width}} {'input':<18} {'c int8 ms':>10} {'ORT int8':>9} {'c f32 ms':>9} {'c8/ORT8':>8} "
            f"{'c8/c32':>7} {'qconvs':>7} {'rel err':>8} {'ORT err':>8} {'grid':>5} {'compile s':>10}")
    lines = [head, "-" * len(head)]
    for r in results:
        grid = "-" if r.on_grid is None else "yes" if r.on_grid else "no"
        scale = r.reference_rms or 1.0  # errors relative to the float output's RMS
        lines.append(f"{r.name:<{width}} {r.shape:<18} {r.ms['convc_int8']:10.2f} {r.ms['ort_int8']:9.2f} {r.ms['convc_f32']:9.2f} "
                     f"{r.ratio_vs_ort_int8:8.3f} {r.ratio_vs_convc_f32:7.3f} {f'{r.quantized_convs}/{r.convs}':>7} "
                     f"{r.rms_error / scale:8.1e} {r.ort_rms_error / scale:8.1e} {grid:>5} {r.compile_s:10.2f}")
    lines.append("-" * len(head))
    lines.append(f"geometric mean convc int8/ORT int8: {bench.geomean([r.ratio_vs_ort_int8 for r in results]):.3f}"
                 f"   convc int8/convc f32: {bench.geomean([r.ratio_vs_convc_f32 for r in results]):.3f}")
    return "\n".join(lines)


def run_int8_suite(args: Any, info: dict[str, Any], target: str, budget: float, use_torch: bool,
                   log: Callable[[str], None]) -> dict[str, Any]:
    """The `--suite models --int8` report (the models suite's top-level keys where they apply);
    with --onnx-dir the saved float files are quantized and PyTorch is not needed."""
    saved_dir = getattr(args, "onnx_dir", None)
    if args.no_torch and not saved_dir:
        raise bench.BenchError("--suite models exports its networks from PyTorch; --no-torch leaves nothing to export")
    if args.platform != "cpu":
        raise bench.BenchError(f"--int8 runs on XLA:CPU against ONNX Runtime's CPU int8 kernels; the platform is '{args.platform}'")
    onnxruntime = bench_models.import_onnxruntime("--suite models --int8", saved_dir, quantization=True)
    threads = os.cpu_count() or 1
    specs = bench.selected_cases(args)
    size = (bench_models.input_size(specs) if saved_dir
            else args.size or (bench_models.QUICK_SIZE if args.quick else bench_models.FULL_SIZE))
    source = specs[0].source if specs else ("torchvision" if bench_models.has_torchvision() else "fallback")
    info["onnxruntime"], info["threads"] = onnxruntime.__version__, threads
    onnxruntime.set_default_logger_severity(3)  # the session's notes on initializers the quantizer left unused
    record_onnxruntime_saturation(info, log)
    origin = f" from the ONNX files in {saved_dir}" if saved_dir else ""
    log(f"int8 networks: {source}{origin}, quantize_static QDQ per-channel ({CALIBRATION_BATCHES} random calibration batches); "
        f"XLA and ONNX Runtime on {threads} intra-op threads; load {info['load_average'][0]:.2f}")
    modules: dict[str, Any] = {}
    results = []
    for spec in specs:
        module = None if spec.onnx_file is not None else modules.setdefault(spec.name, bench_models.build_module(spec.name))
        result = run_model(spec, target, budget, threads, module, profile=args.profile)
        log(f"  {spec.name} batch {spec.batch}: convc int8 {result.ms['convc_int8']:.2f} ms, ORT int8 {result.ms['ort_int8']:.2f} ms, "
            f"convc f32 {result.ms['convc_f32']:.2f} ms; quantize {result.quantize_s:.2f} s, compile {result.compile_s:.2f} s "
            f"({result.rounds} rounds)")
        if result.profile is not None:
            log(bench_profile.format_profile(f"{spec.name} batch {spec.batch} (int8)", result.profile))
        results.append(result)
    info["load_average_after"] = list(os.getloadavg())
    return {
        "machine": info, "suite": "models", "int8": True, "platform": args.platform, "target": target, "networks_from": source,
        "quick": args.quick, "budget_s": budget, "input_size": size, "batches": list(args.batch), "onnx_dir": saved_dir,
        "error_bar": ERROR_BAR, "int8_sized": INT8_SIZED, "calibration_batches": CALIBRATION_BATCHES,
        "cases": [vars(r) for r in results],
        "geomean_convc_int8_over_ort_int8": bench.geomean([r.ratio_vs_ort_int8 for r in results]),
        "geomean_convc_int8_over_convc_f32": bench.geomean([r.ratio_vs_convc_f32 for r in results]),
        "table": format_table(results) if results else "",
    }
