"""`--suite limits`: for each case of the conv suite, every StableHLO form convc can emit for
its conv timed side by side against PyTorch's op, so that where convc loses, the table says
whether a better form exists (a cost-model miss) or not (the limit of XLA:CPU's kernel).

    python -m convc.tools.bench --suite limits                  # all conv-suite cases
    python -m convc.tools.bench --suite limits --cases dense --budget 3
    python -m convc.tools.bench --suite train-limits --torch-threads 1
    python -m convc.tools.bench --suite train-models-limits --size 112 --batch 1,8 --budget 3
    python -m convc.tools.bench --suite models-limits --batch 1,8

The forms are autotune's candidates (convc.autotune_pjrt): after the cpu pipeline's passes
that run before `autotune-conv-lowering`, the case's conv as a one-conv module with each
legal lowering pinned ("xla" and every registered rewrite legal on it), lowered by the rest
of the cpu pipeline. Each form is compiled twice: with the XLA options convc's own runs use
(`Compiler.xla_options`: compile.TARGET_XLA_OPTIONS, "@target") and with XLA's defaults
("@default"). Timed with them, interleaved in one process: the case as the conv suite
compiles it (`case`: the cost model's choice, with the ops around the conv) and PyTorch's op
(the conv suite's baseline). The cost model's form is found by text: the one-conv module
left unpinned emits the same StableHLO as the candidate it chooses.

`--suite train-limits` does the same for each distinct conv of `--suite train`'s steps
(convs of one autotune signature timed once, counted as often as they occur), sums the
forms' times over the step, and times them beside the whole step (compiled with convc's
options, XLA's defaults, and YNNPACK's single convs and dots) and PyTorch's autograd step.
A step's convs are compiled with the options convc compiles the step with ("@target": XLA's
defaults for a gradient step over a batch below compile.GRADIENT_DOTS_FROM_BATCH,
compile.GRADIENT_XLA_OPTIONS) and with single dots only ("@dots").
`--suite train-models-limits` does that for `--suite train-models`'s networks: each step
built as that suite builds it (the ONNX export imported with its weights kept as inputs,
`convc.grad` with respect to them), PyTorch's autograd step on the same module beside it.
`--suite models-limits` (tools/bench_models_limits.py) does it for `--suite models`'s networks'
inference, against ONNX Runtime's network and its convs alone as well as PyTorch eager.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from convc.tools import bench

TARGET, DEFAULT = "target", "default"  # the two option sets each form is compiled with
DOTS = "dots"  # ... and a third for a step's convs, where the step's options are XLA's defaults (option_sets)
UNPINNED = "unpinned"  # the cost model's form when it matches no pinned candidate's text
SLOW_CALL_MS = 500.0  # a form whose first call takes longer (and 20x the fastest) is not timed further


@dataclass
class LimitResult:
    """One case: the median ms of every timed thunk ("FORM@target", "FORM@default", "case",
    "torch") and what the table reads from them."""

    name: str
    shape: str
    forms: list[str]  # the legal candidates, "xla" first
    chosen: str  # the cost model's form (a candidate, or UNPINNED)
    ms: dict[str, float]
    untimed: list[str]  # forms whose one (first) call stands for their time: seconds per call
    rejected: dict[str, str]  # form -> why it is not in the table (failed, or disagrees with xla)
    rounds: int
    best: str  # the fastest "FORM@options"
    best_ms: float
    chosen_ms: float  # the cost model's form with convc's options
    case_ms: float
    torch_ms: float | None
    case_error_vs_torch: float | None
    # best/torch, chosen/torch, case/torch, chosen/best, chosen/best@target (the best form with convc's options)
    ratios: dict[str, float] = field(default_factory=dict)
    min_ms: dict[str, float] = field(default_factory=dict)  # each thunk's fastest call (less hit by a busy machine)
    min_ratios: dict[str, float] = field(default_factory=dict)  # the ratios of those


def split_pipeline() -> tuple[list[Any], list[Any]]:
    """The cpu pipeline (with autotune) as the passes before `autotune-conv-lowering` and
    those after it: where autotune finds its convs, and what lowers a pinned one."""
    from convc.compile import Compiler
    from convc.passes.autotune_conv_lowering import AutotuneConvLowering

    passes = Compiler(target="cpu", autotune=True).passes()
    at = next(i for i, p in enumerate(passes) if isinstance(p, AutotuneConvLowering))
    return passes[:at], passes[at + 1:]


def tunable_convs(graph: Any) -> list[Any]:
    """`graph`'s convs as autotune sees them: after the passes before autotune-conv-lowering
    (which rewrite `graph`), those without a `lowering` pin."""
    from convc.conv_lowering import LOWERING
    from convc.pass_manager import PassManager

    PassManager(split_pipeline()[0]).run(graph)
    return [op for op in graph.ops if op.kind == "conv" and LOWERING not in op.attrs]


def tunable_conv(spec: bench.ConvSpec) -> Any:
    """The case's conv as autotune sees it."""
    convs = tunable_convs(bench.convc_graph(spec))
    if len(convs) != 1:
        raise bench.BenchError(f"case '{spec.name}' has {len(convs)} convs to choose a lowering for; the limits suite takes one")
    return convs[0]


def forms_and_choice(op: Any) -> tuple[list[str], str]:
    """The legal candidates of `op` ("xla" first) and the one the cost model chooses: the
    candidate whose pinned module emits the unpinned module's StableHLO (UNPINNED if none)."""
    from convc.autotune_pjrt import lowered_stablehlo
    from convc.conv_facts import conv_facts
    from convc.conv_lowering import candidates

    legal = candidates(conv_facts(op))
    unpinned = lowered_stablehlo(op, None)
    return legal, next((name for name in legal if lowered_stablehlo(op, name) == unpinned), UNPINNED)


def option_sets(op: Any, platform: str, target: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """convc's options ("target": the one-conv module's, or `target`, those of the module the
    conv is in, such as a gradient step's), XLA's ("default") and YNNPACK's single dots only
    ("dots": compile.TARGET_XLA_OPTIONS, what convc gives a gradient step from batch 8, and a forward
    module on a host with AVX-512);
    each distinct set once, under the first of those labels."""
    from convc.autotune_pjrt import one_conv_graph
    from convc.compile import TARGET_XLA_OPTIONS, Compiler
    from convc.lowering_pins import XLA

    target = Compiler(target="cpu").xla_options(platform, one_conv_graph(op, XLA)) if target is None else target
    sets: dict[str, dict[str, str]] = {}
    for label, options in ((TARGET, target), (DEFAULT, {}), (DOTS, dict(TARGET_XLA_OPTIONS.get("cpu", {})))):
        if options not in sets.values():
            sets[label] = options
    return sets


def short(key: str) -> str:
    return key.removeprefix("cpu-")


def run_limit_case(spec: bench.ConvSpec, budget_s: float, use_torch: bool, platform: str = "cpu", seed: int = 0) -> LimitResult:
    """Compile every form of the case's conv with each option set, and the case itself; check
    each form against "xla@target" (a form that disagrees is rejected, as autotune rejects
    it); then time them and PyTorch's op interleaved."""
    op = tunable_conv(spec)
    forms, chosen = forms_and_choice(op)
    thunks, warm_ms, rejected, _ = _form_thunks(op, forms + ([UNPINNED] if chosen == UNPINNED else []), platform, seed)
    case_thunk, case_out, warm_ms["case"] = _case_thunk(spec, platform, seed)
    thunks["case"] = case_thunk
    torch_error = None
    torch_run = bench.torch_function(spec, _case_arrays(spec, seed)) if use_torch else None
    if torch_run is not None:
        start = time.perf_counter()
        torch_out = bench.torch_result_to_channels_last(spec, torch_run())
        warm_ms["torch"] = (time.perf_counter() - start) * 1e3
        scale = 1.0 + float(np.abs(torch_out).max(initial=0.0))
        torch_error = float(np.abs(case_out - torch_out).max(initial=0.0)) / scale if case_out.shape == torch_out.shape else math.inf
        thunks["torch"] = torch_run
    untimed = slow_forms(warm_ms, [key for key in thunks if "@" in key])
    medians, minima, rounds = _timed(thunks, warm_ms, untimed, budget_s)
    result = _result(spec, forms, chosen, medians, untimed, rejected, rounds, torch_error)
    result.min_ms, result.min_ratios = minima, ratios(minima, chosen)
    return result


def slow_forms(warm_ms: dict[str, float], keys: list[str]) -> list[str]:
    """Those of `keys` (one conv's forms) whose first call took over SLOW_CALL_MS and 20x the fastest's."""
    fastest = min(warm_ms[key] for key in keys)
    return sorted(key for key in keys if warm_ms[key] > max(SLOW_CALL_MS, 20 * fastest))


def _timed(thunks: dict[str, Callable[[], None]], warm_ms: dict[str, float], untimed: list[str],
           budget_s: float) -> tuple[dict[str, float], dict[str, float], int]:
    """Every thunk but `untimed` timed interleaved: medians and fastest calls in the thunks'
    order (an untimed one's first call for both), and the rounds run."""
    timer = bench.Timer(budget_s, min_rounds=4, max_rounds=24, rotate=True)
    samples = timer.run({key: thunk for key, thunk in thunks.items() if key not in untimed})
    medians, minima, _ = bench.summarize(samples)
    medians, minima = ({key: times.get(key, warm_ms[key]) for key in thunks} for times in (medians, minima))
    return medians, minima, len(next(iter(samples.values()))) // timer.block


def _case_arrays(spec: bench.ConvSpec, seed: int) -> list[np.ndarray]:
    """The case's operands, as the conv suite draws them."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in spec.operand_shapes()]


def _case_thunk(spec: bench.ConvSpec, platform: str, seed: int) -> tuple[Callable[[], None], np.ndarray, float]:
    """The case compiled as the conv suite compiles it (target cpu, convc's options): a
    thunk, its first result and that call's ms."""
    import jax

    executable = bench.compile_case(spec, "cpu", platform, autotune=False)
    buffers = [jax.device_put(a, executable.device) for a in _case_arrays(spec, seed)]
    start = time.perf_counter()
    out = np.asarray(executable.run_on_device(buffers)[0])
    ms = (time.perf_counter() - start) * 1e3
    return (lambda: bench.block_until_ready(executable.run_on_device(buffers))), out, ms


def _form_thunks(op: Any, forms: list[str], platform: str, seed: int, prefix: str = "",
                 target: dict[str, str] | None = None) -> tuple[dict[str, Callable[[], None]], dict[str, float], dict[str, str], np.ndarray]:
    """Each form compiled with each option set (autotune_pjrt.warm_up; `target`: convc's
    options, see option_sets) and called once: the thunks of those that agree with
    "xla@target", their first call's ms, and why the others were left out, keyed
    "FORM@options" after `prefix`; and "xla@target"'s result."""
    from convc.autotune_pjrt import one_conv_graph, warm_up
    from convc.diagnostics import one_line
    from convc.lowering_pins import XLA
    from convc.runtime_inputs import compare, random_inputs, tolerance_for

    arrays = random_inputs(one_conv_graph(op, XLA), seed)
    precision = tolerance_for([one_conv_graph(op, XLA)], platform)
    thunks: dict[str, Callable[[], None]] = {}
    warm_ms: dict[str, float] = {}
    rejected: dict[str, str] = {}
    reference: np.ndarray | None = None
    for label, options in option_sets(op, platform, target).items():
        for form in forms:
            key = f"{prefix}{form}@{label}"
            try:
                run, result, warm_ms[key] = warm_up(op, None if form == UNPINNED else form, platform, arrays, options)
            except Exception as err:  # noqa: BLE001 - a form that fails is reported in the table, never fatal
                rejected[key] = f"failed: {one_line(str(err))[:160]}"
                continue
            reference = result if reference is None and form == XLA else reference
            if reference is None or not compare(key, precision, result, reference)[1]:
                rejected[key] = "disagrees with xla@target" if reference is not None else "xla@target failed"
                continue
            thunks[key] = _blocking(run)
    if f"{prefix}{XLA}@{TARGET}" not in thunks:
        raise bench.BenchError(f"case '{op.name}': XLA's own conv did not compile and run: {rejected}")
    assert reference is not None
    return thunks, warm_ms, rejected, reference


def _blocking(run: Callable[[], Any]) -> Callable[[], None]:
    return lambda: bench.block_until_ready(run())


def _result(spec: bench.ConvSpec, forms: list[str], chosen: str, ms: dict[str, float], untimed: list[str],
            rejected: dict[str, str], rounds: int, torch_error: float | None) -> LimitResult:
    best = best_form(ms)
    return LimitResult(spec.name, spec.describe(), forms, chosen, ms, untimed, rejected, rounds, best, ms[best],
                       ms.get(f"{chosen}@{TARGET}", math.nan), ms["case"], ms.get("torch"), torch_error, ratios(ms, chosen))


def best_form(ms: dict[str, float]) -> str:
    """The fastest "FORM@options" among `ms`'s keys."""
    return min((key for key in ms if "@" in key), key=lambda key: ms[key])


def ratios(ms: dict[str, float], chosen: str) -> dict[str, float]:
    """chosen/best; chosen/best@target, the cost model's miss alone (the best form compiled as
    convc compiles it: the rest of chosen/best is the options'); and with PyTorch timed,
    best, chosen and the case over PyTorch."""
    best, chosen_ms, torch_ms = ms[best_form(ms)], ms.get(f"{chosen}@{TARGET}", math.nan), ms.get("torch")
    best_target = min(value for key, value in ms.items() if key.endswith(f"@{TARGET}"))
    over_torch = {} if torch_ms is None else {"best/torch": best / torch_ms, "chosen/torch": chosen_ms / torch_ms,
                                               "case/torch": ms["case"] / torch_ms}
    return {"chosen/best": chosen_ms / best, "chosen/best@target": chosen_ms / best_target, **over_torch}


# --- training steps ---------------------------------------------------------------------------


@dataclass
class StepConv:
    """One distinct conv of a training step (convs of one autotune signature are timed once
    and counted `count` times); `ms` and `min_ms` by "FORM@options"."""

    name: str
    what: str
    count: int
    forms: list[str]
    chosen: str
    ms: dict[str, float]
    min_ms: dict[str, float]
    untimed: list[str]
    rejected: dict[str, str]
    ort_ms: float | None = None  # models-limits: ONNX Runtime running the conv alone (a one-node model)
    ort_min_ms: float | None = None
    ort_error: float | None = None  # its output against "xla@target"'s
    ort_skipped: str | None = None  # why it was not timed (no ONNX Conv says it, or it disagreed)


@dataclass
class StepLimitResult:
    """A training step's convs at their best and chosen forms, summed, against the whole
    step as convc compiles it and PyTorch's autograd step."""

    name: str
    shape: str
    convs: list[StepConv]
    rounds: int
    step_ms: float
    step_default_ms: float  # the same module compiled with XLA's default options
    step_ynn_convs_ms: float  # ... and with YNNPACK handed single convs and dots
    step_options: dict[str, str]  # the XLA options convc compiles the step with: its convs' "@target"
    torch_ms: float | None
    step_error_vs_torch: float | None
    sums: dict[str, float]  # best, best@target, chosen: the convs' ms summed over the step
    ratios: dict[str, float]
    min_sums: dict[str, float] = field(default_factory=dict)  # the same of the fastest calls
    min_ratios: dict[str, float] = field(default_factory=dict)
    ort_ms: float | None = None  # models-limits: ONNX Runtime's run of the network
    step_error_vs_ort: float | None = None


def conv_sums(convs: Sequence[StepConv], of: str = "ms") -> dict[str, float]:
    """Each conv's best form (either options), best with convc's options, and the cost model's
    form (convc's options), times its count, summed over the step; "ort convs" too where
    ONNX Runtime ran every conv alone (StepConv.ort_ms)."""
    sums = {"best": 0.0, "best@target": 0.0, "chosen": 0.0}
    for conv in convs:
        ms = getattr(conv, of)
        sums["best"] += conv.count * min(ms.values())
        sums["best@target"] += conv.count * min(v for key, v in ms.items() if key.endswith(f"@{TARGET}"))
        sums["chosen"] += conv.count * ms.get(f"{conv.chosen}@{TARGET}", math.nan)
    ort = [getattr(conv, f"ort_{of}") for conv in convs]
    if convs and all(ms is not None for ms in ort):
        sums["ort convs"] = sum(conv.count * ms for conv, ms in zip(convs, ort, strict=True))
    return sums


def step_ratios(sums: dict[str, float], ms: dict[str, float]) -> dict[str, float]:
    """chosen/best and chosen/best@target of the sums, step-default/step; with PyTorch (ONNX
    Runtime) timed, the sums and the step over its step (network); with ONNX Runtime's convs
    alone timed, the best forms' sum over theirs."""
    over = {}
    for name in ("torch", "ort"):
        if name in ms:
            over.update({f"convs best/{name}": sums["best"] / ms[name], f"convs chosen/{name}": sums["chosen"] / ms[name],
                         f"step/{name}": ms["step"] / ms[name], f"step-default/{name}": ms["step-default"] / ms[name]})
    if "ort convs" in sums:
        over["convs best/ort convs"] = sums["best"] / sums["ort convs"]
    return {"chosen/best": sums["chosen"] / sums["best"], "chosen/best@target": sums["chosen"] / sums["best@target"],
            "step-default/step": ms["step-default"] / ms["step"], "step-ynn-convs/step": ms["step-ynn-convs"] / ms["step"], **over}


def step_convs(step: Any) -> list[tuple[Any, int]]:
    """The convs of the step graph `step` (which the passes rewrite) as autotune sees them, one
    per tuning key (signature, and whether the kernel is a constant), with how many share it."""
    from convc.autotune import tuning_key
    from convc.conv_facts import conv_facts

    distinct: dict[str, tuple[Any, int]] = {}
    for op in tunable_convs(step):
        key = tuning_key(op, conv_facts(op))
        first, count = distinct.get(key, (op, 0))
        distinct[key] = (first, count + 1)
    return list(distinct.values())


ConvBaseline = Callable[[Any, list[np.ndarray], np.ndarray], tuple[Callable[[], Any], float, float] | str]


@dataclass
class LimitStep:
    """A module to find the limit of (a training step, or an imported network's inference):
    `graph` builds convc's graph afresh (the passes rewrite a graph in place), `arrays` are its
    inputs, and `torch_run` (None without PyTorch) is PyTorch's step, whose results
    `torch_error` compares with convc's outputs; `ort_run` and `ort_error` the same of ONNX
    Runtime's run of the network. With `tolerance`, a baseline farther than that from convc's
    outputs ends the run (BenchError) before anything is timed. `conv_baseline`, given a
    distinct conv, its forms' inputs and "xla@target"'s result, makes the thunk of another
    runtime's conv alone, its error and its first call's ms, or says why it cannot."""

    name: str
    shape: str
    graph: Callable[[], Any]
    arrays: list[np.ndarray]
    torch_run: Callable[[], Any] | None = None
    torch_error: Callable[[Any, list[np.ndarray]], float] | None = None
    ort_run: Callable[[], Any] | None = None
    ort_error: Callable[[Any, list[np.ndarray]], float] | None = None
    tolerance: float | None = None
    conv_baseline: ConvBaseline | None = None


def train_step(spec: Any, use_torch: bool, seed: int = 0) -> LimitStep:
    """One of --suite train's steps (bench_train.TrainSpec)."""
    from convc.tools import bench_train

    arrays = bench_train.step_arrays(spec, seed)
    torch_run = bench_train.torch_step(spec, arrays) if use_torch else None
    return LimitStep(spec.name, spec.describe(), functools.partial(bench_train.convc_step, spec), arrays, torch_run,
                     lambda results, ours: bench_train.max_relative_error(bench_train.torch_results_channels_last(spec, results), ours))


def train_model_step(spec: Any, module: Any, seed: int = 0) -> LimitStep:
    """One of --suite train-models's steps (bench_train_models.TrainModelSpec): the network
    exported from `module`, imported with its weights kept as inputs and differentiated with
    respect to them, as that suite builds it; PyTorch's autograd step beside it."""
    from convc.tools import bench_train_models

    exported = bench_train_models.export_step(spec, module, seed)
    names = ["y", *exported.wrt]
    return LimitStep(spec.name, spec.describe(), lambda: bench_train_models.gradient_step(spec, exported.model, exported.wrt)[0],
                     exported.arrays, exported.torch_run,
                     lambda results, ours: bench_train_models.step_error(ours, results, names)[0])


def run_step_limit_case(step: LimitStep, budget_s: float, platform: str = "cpu", seed: int = 0) -> StepLimitResult:
    """Every form of each distinct conv of the step (as run_limit_case's, "@target" being the
    options convc compiles the step with), the step as convc compiles it, PyTorch's step and
    ONNX Runtime's network (where the step has them) and each conv's `conv_baseline`, all
    timed interleaved."""
    thunks: dict[str, Callable[[], None]] = {}
    warm_ms: dict[str, float] = {}
    step_out, step_options = _step_thunk(step, platform, thunks, warm_ms)
    torch_error = _baseline_thunk(step, "torch", step.torch_run, step.torch_error, step_out, thunks, warm_ms)
    ort_error = _baseline_thunk(step, "ort", step.ort_run, step.ort_error, step_out, thunks, warm_ms)
    convs = []
    for index, (op, count) in enumerate(step_convs(step.graph())):
        forms, chosen = forms_and_choice(op)
        prefix = f"{index}:"
        conv_thunks, conv_warm, rejected, reference = _form_thunks(op, forms + ([UNPINNED] if chosen == UNPINNED else []), platform, seed,
                                                                   prefix, step_options)
        what = f"{op.operands[0].type} * {op.operands[1].type}"
        conv = StepConv(op.name, what, count, forms, chosen, {}, {}, slow_forms(conv_warm, list(conv_thunks)), rejected)
        if step.conv_baseline is not None:
            _conv_baseline_thunk(step.conv_baseline, op, conv, reference, prefix, seed, conv_thunks, conv_warm)
        thunks.update(conv_thunks)
        warm_ms.update(conv_warm)
        convs.append((conv, prefix))
    medians, minima, rounds = _timed(thunks, warm_ms, [key for conv, _ in convs for key in conv.untimed], budget_s)
    for conv, prefix in convs:
        conv.ms, conv.min_ms = ({key.removeprefix(prefix): v for key, v in times.items() if key.startswith(prefix) and "@" in key}
                                for times in (medians, minima))
        conv.ort_ms, conv.ort_min_ms = medians.get(f"{prefix}ort"), minima.get(f"{prefix}ort")
        conv.untimed = [key.removeprefix(prefix) for key in conv.untimed]
        conv.rejected = {key.removeprefix(prefix): why for key, why in conv.rejected.items()}
    timed = [conv for conv, _ in convs]
    sums, min_sums = conv_sums(timed), conv_sums(timed, "min_ms")
    return StepLimitResult(step.name, step.shape, timed, rounds, medians["step"], medians["step-default"], medians["step-ynn-convs"],
                           step_options, medians.get("torch"),
                           torch_error, sums, step_ratios(sums, medians), min_sums, step_ratios(min_sums, minima),
                           medians.get("ort"), ort_error)


def _conv_baseline_thunk(make: ConvBaseline, op: Any, conv: StepConv, reference: np.ndarray, prefix: str, seed: int,
                         thunks: dict[str, Callable[[], None]], warm_ms: dict[str, float]) -> None:
    """Add another runtime's run of the conv alone (`make`, on the forms' inputs) to `thunks`
    as PREFIX + "ort", or say in `conv` why it is not there (it cannot, or it disagreed)."""
    from convc.autotune_pjrt import one_conv_operands

    made = make(op, one_conv_operands(op, seed), reference)
    if isinstance(made, str):
        conv.ort_skipped = made
        return
    thunk, conv.ort_error, ms = made
    if not conv.ort_error <= bench.TOLERANCE:
        conv.ort_skipped = f"disagrees with xla@target (max relative error {conv.ort_error:.1e})"
        return
    thunks[f"{prefix}ort"], warm_ms[f"{prefix}ort"] = thunk, ms


def _step_thunk(step: LimitStep, platform: str, thunks: dict[str, Callable[[], None]],
                warm_ms: dict[str, float]) -> tuple[list[np.ndarray], dict[str, str]]:
    """Add the step as convc compiles it (target cpu, convc's options: "step"), and the same
    module compiled with XLA's default options ("step-default") and with YNNPACK handed single
    convs as well as single dots ("step-ynn-convs": the options convc gives modules with
    integer convs, compile.INTEGER_CONV_XLA_OPTIONS), to `thunks`; the first one's results and options."""
    import jax
    from convc.compile import INTEGER_CONV_XLA_OPTIONS, Compiler
    from convc.runtime import compile_stablehlo
    from convc.tools import bench_train

    compiler = Compiler(target="cpu")
    graph = compiler.run_passes(step.graph())
    module = compiler.runnable(graph)
    outputs = []
    option_sets = {"step": compiler.xla_options(platform, graph), "step-default": {}, "step-ynn-convs": INTEGER_CONV_XLA_OPTIONS["cpu"]}
    for key, options in option_sets.items():
        executable = compile_stablehlo(module, platform, options)
        buffers = [jax.device_put(a, executable.device) for a in step.arrays]
        start = time.perf_counter()
        outputs.append([np.asarray(r) for r in executable.run_on_device(buffers)])
        warm_ms[key] = (time.perf_counter() - start) * 1e3
        thunks[key] = _blocking(functools.partial(executable.run_on_device, buffers))
    if any(bench_train.max_relative_error(out, outputs[0]) > bench.TOLERANCE for out in outputs[1:]):
        raise bench.BenchError(f"{step.name}: the step compiled with other XLA options disagrees with convc's")
    return outputs[0], option_sets["step"]


def _baseline_thunk(step: LimitStep, key: str, run: Callable[[], Any] | None, error_of: Callable[[Any, list[np.ndarray]], float] | None,
                    step_out: list[np.ndarray], thunks: dict[str, Callable[[], None]], warm_ms: dict[str, float]) -> float | None:
    """Add a baseline (PyTorch's step, ONNX Runtime's network) to `thunks` as `key`, where the
    step has it; its error against convc's outputs (BenchError beyond the step's tolerance)."""
    if run is None or error_of is None:
        return None
    start = time.perf_counter()
    error = error_of(run(), step_out)
    warm_ms[key], thunks[key] = (time.perf_counter() - start) * 1e3, run
    if step.tolerance is not None and not error <= step.tolerance:
        raise bench.BenchError(f"{step.name} ({step.shape}): {key}'s output differs from convc's "
                               f"(max relative error {error:.2e} > {step.tolerance:.0e})")
    return error


def format_step_table(results: Sequence[StepLimitResult]) -> str:
    width = max(len(r.shape) for r in results)
    head = (f"{'case':<22} {'input':<{width}} {'convs':>5} {'best ms':>8} {'chosen ms':>9} {'step ms':>8} {'default':>8} {'torch ms':>8} "
            f"{'best/t':>7} {'chosen/t':>8} {'step/t':>7} {'dflt/t':>7} {'ch/best':>7} {'ch/b@t':>7} {'dflt/st':>7} {'ynn/st':>7}")
    lines = [head, "-" * len(head)]
    for r in results:
        ratio = {name: f"{r.ratios[name]:.3g}" if name in r.ratios else "-"
                 for name in ("convs best/torch", "convs chosen/torch", "step/torch", "step-default/torch")}
        torch_ms = f"{r.torch_ms:8.2f}" if r.torch_ms is not None else f"{'-':>8}"
        lines.append(f"{r.name:<22} {r.shape:<{width}} {sum(c.count for c in r.convs):5d} {r.sums['best']:8.2f} {r.sums['chosen']:9.2f} "
                     f"{r.step_ms:8.2f} {r.step_default_ms:8.2f} "
                     f"{torch_ms} {ratio['convs best/torch']:>7} {ratio['convs chosen/torch']:>8} {ratio['step/torch']:>7} "
                     f"{ratio['step-default/torch']:>7} "
                     f"{r.ratios['chosen/best']:7.2f} {r.ratios['chosen/best@target']:7.2f} {r.ratios['step-default/step']:7.2f} "
                     f"{r.ratios['step-ynn-convs/step']:7.2f}")
    lines.append("-" * len(head))
    for label, of in (("geometric mean", "ratios"), ("from each one's fastest call", "min_ratios")):
        means = step_geomeans(results, of)
        lines.append(f"{label}: " + "   ".join(f"{name} {value:.3f}" for name, value in means.items() if value is not None))
    return "\n".join(lines + conv_lines(results))


def conv_lines(results: Sequence[StepLimitResult]) -> list[str]:
    """Each step's distinct convs, a line each: its count, every form's median and why any
    form was left out; ONNX Runtime's conv alone where it was timed (or why not)."""
    lines = ["each distinct conv (x count; median ms of every form; chosen: the cost model's; * one call, not timed further):"]
    for r in results:
        lines.append(f"  {r.name} {r.shape}:")
        for conv in r.convs:
            forms = "   ".join(f"{short(key)} {value:.2f}{'*' if key in conv.untimed else ''}" for key, value in conv.ms.items())
            ort = f"   ORT conv {conv.ort_ms:.2f}" if conv.ort_ms is not None else f"   [ORT conv: {conv.ort_skipped}]" if conv.ort_skipped else ""
            lines.append(f"    {conv.name} x{conv.count} ({conv.what}), chosen {short(conv.chosen)}: {forms}{ort}"
                         + "".join(f"   [{short(key)}: {why}]" for key, why in conv.rejected.items()))
    return lines


def step_geomeans(results: Sequence[StepLimitResult], of: str = "ratios") -> dict[str, float | None]:
    """The geometric mean of each step ratio over the cases (of the medians, or "min_ratios")."""
    names = ("convs best/torch", "convs chosen/torch", "step/torch", "step-default/torch", "chosen/best", "chosen/best@target",
             "step-default/step", "step-ynn-convs/step")
    return {name: bench.geomean([getattr(r, of)[name] for r in results if name in getattr(r, of)]) for name in names}


# --- report ---------------------------------------------------------------------------------


def format_table(results: Sequence[LimitResult]) -> str:
    head = (f"{'case':<22} {'best form':<37} {'best ms':>8} {'chosen form':<28} {'chosen ms':>9} {'case ms':>8} "
            f"{'torch ms':>8} {'best/t':>7} {'chosen/t':>8} {'case/t':>7} {'ch/best':>7} {'ch/b@t':>7}")
    lines = [head, "-" * len(head)]
    for r in results:
        torch_ms = f"{r.torch_ms:8.2f}" if r.torch_ms is not None else f"{'-':>8}"
        ratio = {name: f"{r.ratios[name]:.3g}" if name in r.ratios else "-" for name in ("best/torch", "chosen/torch", "case/torch")}
        lines.append(f"{r.name:<22} {short(r.best):<37} {r.best_ms:8.2f} {short(r.chosen):<28} {r.chosen_ms:9.2f} {r.case_ms:8.2f} "
                     f"{torch_ms} {ratio['best/torch']:>7} {ratio['chosen/torch']:>8} {ratio['case/torch']:>7} {r.ratios['chosen/best']:7.2f} {r.ratios['chosen/best@target']:7.2f}")
    lines.append("-" * len(head))
    for label, of in (("geometric mean", "ratios"), ("from each one's fastest call", "min_ratios")):
        lines.append(f"{label}: " + "   ".join(f"{name} {value:.3f}" for name, value in geomeans(results, of).items() if value is not None))
    lines.append("every form (median ms; @target: convc's XLA options, @default: XLA's; * one call, not timed further):")
    for r in results:
        forms = "   ".join(f"{short(key)} {value:.2f}{'*' if key in r.untimed else ''}" for key, value in r.ms.items() if "@" in key)
        lines.append(f"  {r.name:<22} {forms}" + "".join(f"   [{short(key)}: {why}]" for key, why in r.rejected.items()))
    return "\n".join(lines)


def geomeans(results: Sequence[LimitResult], of: str = "ratios") -> dict[str, float | None]:
    """The geometric mean of each ratio over the cases: of the medians' ratios, or ("min_ratios") the fastest calls'."""
    names = ("best/torch", "chosen/torch", "case/torch", "chosen/best", "chosen/best@target")
    return {name: bench.geomean([getattr(r, of)[name] for r in results if name in getattr(r, of)]) for name in names}


def run_limits_suite(args: Any, info: dict[str, Any], target: str, budget: float, use_torch: bool,
                     log: Callable[[str], None]) -> dict[str, Any]:
    """The limits suite's report (the same top-level keys as the other suites where they apply)."""
    if args.platform != "cpu" or target != "cpu":
        raise bench.BenchError(f"--suite {args.suite} times the cpu target's forms on XLA:CPU; here platform '{args.platform}', target '{target}'")
    if args.autotune:
        raise bench.BenchError(f"--suite {args.suite} times every candidate itself; --autotune would choose among them")
    log(f"machine: {info['cpu']}, {info['cores']} cores, jax {info['jax']}, torch {info['torch']}; load {info['load_average'][0]:.2f}")
    if args.suite in ("train-limits", "train-models-limits"):
        return _run_step_limits(args, info, target, budget, use_torch, log)
    if args.suite == "models-limits":
        from convc.tools import bench_models_limits

        return bench_models_limits.run_models_limits_suite(args, info, budget, use_torch, log)
    results = run_cases(bench.selected_cases(args), lambda spec: run_limit_case(spec, budget, use_torch, args.platform),
                         lambda r: f"best {short(r.best)} {r.best_ms:.2f} ms, chosen {short(r.chosen)} {r.chosen_ms:.2f} ms", log)
    return suite_report(args, info, target, budget, results, geomeans, format_table)


def suite_report(args: Any, info: dict[str, Any], target: str, budget: float, results: list[Any],
            means: Callable[..., dict[str, float | None]], table: Callable[[list[Any]], str]) -> dict[str, Any]:
    """The suite's JSON report: the machine (its load after the run too), the cases, `means` of
    the medians' and of the fastest calls' ratios, and the `table`."""
    info["load_average_after"] = list(os.getloadavg())
    return {"machine": info, "suite": args.suite, "platform": args.platform, "target": target, "quick": args.quick, "budget_s": budget,
            "cases": [asdict(r) for r in results], "geomeans": means(results), "geomeans_of_min": means(results, "min_ratios"),
            "table": table(results) if results else ""}


def run_cases(cases: Iterable[Any], run_case: Callable[[Any], Any], describe: Callable[[Any], str], log: Callable[[str], None]) -> list[Any]:
    """`run_case` on each case, one log line each (the case's shape, `describe`, PyTorch's time, the rounds)."""
    results = []
    for case in cases:
        result = run_case(case)
        log(f"  {result.name} {result.shape}: {describe(result)}" + (f", torch {result.torch_ms:.2f} ms" if result.torch_ms is not None else "")
            + f" ({result.rounds} rounds)")
        results.append(result)
    return results


def _run_step_limits(args: Any, info: dict[str, Any], target: str, budget: float, use_torch: bool,
                     log: Callable[[str], None]) -> dict[str, Any]:
    """--suite train-limits: run_step_limit_case on each of --suite train's steps;
    train-models-limits: on each of --suite train-models's networks at each batch."""
    if args.suite == "train-models-limits":
        from convc.tools import bench_train_models

        bench_train_models.check_requirements(args, use_torch)
        steps = (train_model_step(spec, module) for spec, module in bench_train_models.with_modules(bench.selected_cases(args)))
    else:
        steps = (train_step(spec, use_torch) for spec in bench.selected_cases(args))
    results = run_cases(steps, lambda step: run_step_limit_case(step, budget, args.platform),
                         lambda r: f"convs best {r.sums['best']:.2f} ms, chosen {r.sums['chosen']:.2f} ms, step {r.step_ms:.2f} ms", log)
    return suite_report(args, info, target, budget, results, step_geomeans, format_step_table)
