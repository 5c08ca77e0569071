"""`bench --suite models-limits`: the inference limit of every network of `--suite models`,
issue 18's measurement of what the best StableHLO form of each conv costs against the best
kernel, where the convc/ONNX Runtime target is not met.

    python -m convc.tools.bench --suite models-limits --batch 1,8 --budget 3
    python -m convc.tools.bench --suite models-limits --quick --cases resnet18 --size 32 --batch 1 --budget 0.05

Each network is the models suite's (the same module, ONNX export, input and `--size`,
`--batch`, `--cases`; `--onnx-dir` reads saved exports), and runs through
bench_limits.run_step_limit_case as an inference module: imported by `convc.load_onnx` with its
weights as constants, compiled as `--suite models --target cpu` compiles it (the cpu pipeline,
convc's XLA options); its distinct convs as autotune sees them (after the passes before
`autotune-conv-lowering`, one per signature, counted as often as they occur), each in every
form convc can pin, compiled with the network's options ("@target") and XLA's defaults;
ONNX Runtime's run of the same ONNX bytes (its CPU provider, one intra-op thread per core, as
the models suite runs it); PyTorch eager (no_grad) unless `--no-torch`; and ONNX Runtime
running each distinct conv alone (a one-node Conv model, the kernel an initializer as in the
network, on the forms' inputs, checked against XLA's conv first). All of it is timed
interleaved in one process. ONNX Runtime's and PyTorch's outputs are checked against convc's
first (bench_models.TOLERANCE; exit 1 otherwise).

The `step` of bench_limits' report is the network here: `step/ort` is convc's network over
ONNX Runtime's. Where `convs best/ort` is above 1, the network's convs alone, each at its best
form, cost more than ONNX Runtime's whole network: that is the shown limit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import bench, bench_dw_limit, bench_limits, bench_models

RATIOS = ("convs best/ort", "convs chosen/ort", "step/ort", "convs best/torch", "step/torch", "chosen/best", "chosen/best@target",
          "convs best/ort convs", "step-default/step")


def network(spec: bench_models.ModelSpec, module: Any, threads: int, use_torch: bool, seed: int = 0) -> bench_limits.LimitStep:
    """The models suite's network (exported from `module`, or read from spec.onnx_file) as the
    module to find the limit of: convc's import, ONNX Runtime's session of the same bytes and
    PyTorch eager (where `use_torch`), each conv alone on ONNX Runtime beside its forms."""
    from convc import load_onnx

    x = bench_models.network_input(spec, seed)
    if spec.onnx_file is not None:
        model = Path(spec.onnx_file).read_bytes()
    else:
        import torch

        model = bench_models.export_onnx(module, torch.from_numpy(x))
    session = bench_models.ort_session(model, threads)
    torch_run = bench_models.torch_thunk(module, x, "cpu") if use_torch and module is not None else None
    return bench_limits.LimitStep(
        spec.name, spec.describe(), lambda: load_onnx(model, file=f"{spec.name}.onnx"), [x],
        torch_run, lambda result, ours: bench_models.relative_error(ours[0], result.numpy()),
        lambda: session.run(None, {"x": x}), lambda results, ours: bench_models.relative_error(ours[0], results[0]),
        bench_models.TOLERANCE, lambda op, arrays, reference: ort_conv(op, arrays, reference, threads))


def ort_conv(op: Any, arrays: list[np.ndarray], reference: np.ndarray, threads: int) -> tuple[Callable[[], Any], float, float] | str:
    """ONNX Runtime running the conv `op` alone: a one-node Conv model (bench_dw_limit's
    builder) with `arrays` (the lhs and kernel the forms convolve, in `op`'s layouts) moved to ONNX's
    channels-first layouts, the kernel an initializer. Its thunk, its output's error against
    `reference` (XLA's conv of the same inputs) and its first call's ms; or why ONNX's Conv
    cannot say this conv (a dilated input, batch groups, negative padding, not f32)."""
    from convc.conv_facts import conv_facts

    facts = conv_facts(op)
    if facts is None or facts.lhs.dtype != "f32" or any(d != 1 for d in facts.lhs_dilation) or facts.batch_groups != 1 \
            or any(p < 0 for pair in facts.pads for p in pair):
        return "no ONNX Conv says it (an f32 conv without input dilation, batch groups or negative padding)"
    dn = facts.dn
    x = np.ascontiguousarray(arrays[0].transpose(dn.lhs_spec))
    w = np.ascontiguousarray(arrays[1].transpose(dn.rhs_spec))
    y_shape = tuple(facts.out.shape[d] for d in dn.out_spec)
    model = bench_dw_limit.onnx_conv_model(op.name, x.shape, w, y_shape, facts.strides, facts.pads, facts.rhs_dilation,
                                           facts.feature_groups)
    session = bench_models.ort_session(model, threads)
    start = time.perf_counter()
    y = session.run(None, {"x": x})[0]
    ms = (time.perf_counter() - start) * 1e3
    error = bench_models.relative_error(np.ascontiguousarray(y.transpose(np.argsort(dn.out_spec))), reference)
    return (lambda: session.run(None, {"x": x})), error, ms


def geomeans(results: Sequence[bench_limits.StepLimitResult], of: str = "ratios") -> dict[str, float | None]:
    """The geometric mean of each of RATIOS over the networks (of the medians, or "min_ratios")."""
    return {name: bench.geomean([getattr(r, of)[name] for r in results if name in getattr(r, of)]) for name in RATIOS}


def format_table(results: Sequence[bench_limits.StepLimitResult]) -> str:
    """One row per network (the convs' sums, the network on convc, ORT and PyTorch, and their
    ratios), the geometric means, then every distinct conv's forms beside ORT's conv."""
    width = max([20, *(len(r.name) for r in results)])
    head = (f"{'network':<{width}} {'input':<14} {'convs':>5} {'dist':>4} {'best ms':>8} {'chosen ms':>9} {'ORTc ms':>8} {'net ms':>8} "
            f"{'ORT ms':>8} {'torch ms':>8} {'best/ort':>8} {'ch/ort':>7} {'net/ort':>7} {'best/t':>7} {'net/t':>7} {'ch/best':>7} "
            f"{'best/ORTc':>9}")
    lines = [head, "-" * len(head)]
    for r in results:
        def ratio(name: str, width: int, result: bench_limits.StepLimitResult = r) -> str:
            return f"{result.ratios[name]:{width}.3f}" if name in result.ratios else f"{'-':>{width}}"

        def ms(value: float | None) -> str:
            return f"{value:8.2f}" if value is not None else f"{'-':>8}"

        lines.append(f"{r.name:<{width}} {r.shape:<14} {sum(c.count for c in r.convs):5d} {len(r.convs):4d} {r.sums['best']:8.2f} "
                     f"{r.sums['chosen']:9.2f} {ms(r.sums.get('ort convs'))} {r.step_ms:8.2f} {ms(r.ort_ms)} {ms(r.torch_ms)} "
                     f"{ratio('convs best/ort', 8)} {ratio('convs chosen/ort', 7)} {ratio('step/ort', 7)} {ratio('convs best/torch', 7)} "
                     f"{ratio('step/torch', 7)} {ratio('chosen/best', 7)} {ratio('convs best/ort convs', 9)}")
    lines.append("-" * len(head))
    for label, of in (("geometric mean", "ratios"), ("from each one's fastest call", "min_ratios")):
        lines.append(f"{label}: " + "   ".join(f"{name} {value:.3f}" for name, value in geomeans(results, of).items() if value is not None))
    lines.append("best: the convs' sum at their best forms; chosen: at the cost model's; ORTc: ONNX Runtime's convs alone, summed; "
                 "net: the network on convc")
    lines += bench_limits.conv_lines(results)
    return "\n".join(lines)


def with_modules(specs: Sequence[bench_models.ModelSpec]) -> Iterator[tuple[bench_models.ModelSpec, Any]]:
    """Each spec with its PyTorch module, built once per network for every batch (None for a
    saved export)."""
    modules: dict[str, Any] = {}
    for spec in specs:
        if spec.onnx_file is not None:
            yield spec, None
            continue
        if spec.name not in modules:
            modules[spec.name] = bench_models.build_module(spec.name)
        yield spec, modules[spec.name]


def run_models_limits_suite(args: Any, info: dict[str, Any], budget: float, use_torch: bool,
                            log: Callable[[str], None]) -> dict[str, Any]:
    """--suite models-limits: run_step_limit_case on each models-suite network at each batch
    (PyTorch timed where it is there and not --no-torch; with --onnx-dir it is not)."""
    saved_dir = getattr(args, "onnx_dir", None)
    onnxruntime = bench_models.import_onnxruntime("--suite models-limits", saved_dir)
    threads = os.cpu_count() or 1
    use_torch = use_torch and not saved_dir
    info["onnxruntime"], info["threads"] = onnxruntime.__version__, threads
    specs = bench.selected_cases(args)
    networks = (network(spec, module, threads, use_torch) for spec, module in with_modules(specs))
    results = bench_limits.run_cases(
        networks, lambda step: bench_limits.run_step_limit_case(step, budget, args.platform),
        lambda r: (f"convs best {r.sums['best']:.2f} ms, chosen {r.sums['chosen']:.2f} ms, network {r.step_ms:.2f} ms"
                   + (f", ORT {r.ort_ms:.2f} ms" if r.ort_ms is not None else "")), log)
    report = bench_limits.suite_report(args, info, "cpu", budget, results, geomeans, format_table)
    report["networks_from"] = specs[0].source if specs else None
    report["onnx_dir"] = saved_dir
    return report
