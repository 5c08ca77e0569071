"""`lowering` pins and `autotune-conv-lowering`, on small convs through real PJRT.

Which candidates a conv has is deterministic; which one wins is not (it is a timing), so
the tests check that the winner is one of the candidates, that a pinned choice is what the
lowered IR holds, that every choice computes what jax.lax does, and the cache: written,
keyed by signature and device, read back without measuring, merged, rebuilt when broken.
The cpu target's lowerings are measured and run on the PJRT platform "cpu", named
explicitly, so the tests mean the same on a machine with a GPU.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import convc
import numpy as np
import pytest
from convc import autotune_pjrt, cli
from convc.autotune import AutotuneCache, Autotuner, Measurement, candidates, signature
from convc.autotune_pjrt import PjrtMeasure, device_key
from convc.compile import Compiler
from convc.conv_facts import conv_facts
from convc.conv_lowering import conv_lowerings
from convc.lowering_pins import lowering_pins
from convc.pass_manager import PassManager, PipelineError
from convc.passes import CONV_LOWERINGS, PASSES, default_pipeline
from convc.passes.autotune_conv_lowering import AutotuneConvLowering
from convc.reference import evaluate
from convc.runtime_inputs import compare, random_inputs, tolerance_for

NHWC = ("NHWC", "HWIO", "NHWC")
TAP_SUM, TAP_REDUCE, REGROUP = "cpu-depthwise-tap-sum", "cpu-batch-group-tap-reduce", "cpu-batch-group-to-feature-group"
PHASES, DOT, EIGEN = "cpu-transposed-conv-phases", "cpu-conv-1x1-to-dot", "cpu-conv-eigen-path"
WINOGRAD = "cpu-conv-winograd"
BUDGET_MS = 5  # timing per candidate: the tests check choices, not speed


def depthwise(lowering: str | None = None) -> convc.Graph:
    b = convc.Builder("depthwise")
    x, w = b.input("x", (1, 8, 8, 16)), b.input("w", (3, 3, 1, 16))
    b.output(b.op("conv", x, w, name="c", padding="SAME", feature_group_count=16, dimension_numbers=NHWC, lowering=lowering))
    return b.build()


def grouped() -> convc.Graph:
    b = convc.Builder("grouped")
    x, w = b.input("x", (1, 8, 8, 16)), b.input("w", (3, 3, 4, 16))
    b.output(b.conv(x, w, window_strides=(2, 2), padding="SAME", feature_group_count=4, dimension_numbers=NHWC, name="c"))
    return b.build()


def depthwise_weight_grad() -> convc.Graph:
    b = convc.Builder("depthwise_weight_grad")
    x, dy = b.input("x", (2, 8, 8, 8)), b.input("dy", (2, 8, 8, 8))
    b.output(b.conv_backprop_filter(x, dy, (3, 3, 1, 8), padding="SAME", feature_group_count=8, dimension_numbers=NHWC, name="c"))
    return b.build()


def conv1x1() -> convc.Graph:
    b = convc.Builder("conv1x1")
    x, w = b.input("x", (2, 6, 6, 8)), b.input("w", (1, 1, 8, 4))
    b.output(b.conv(x, w, dimension_numbers=NHWC, name="c"))
    return b.build()


def transposed_s2() -> convc.Graph:
    """A 4x4 stride-2 transposed conv: lhs dilation 2, every phase gets 2x2 taps."""
    b = convc.Builder("transposed_s2")
    x, w = b.input("x", (1, 5, 5, 4)), b.input("w", (4, 4, 4, 6))
    b.output(b.conv_transpose(x, w, strides=(2, 2), padding="SAME", dimension_numbers=NHWC, name="c"))
    return b.build()


def dense3x3() -> convc.Graph:
    b = convc.Builder("dense3x3")
    x, w = b.input("x", (1, 6, 6, 4)), b.input("w", (3, 3, 4, 4))
    b.output(b.conv(x, w, padding="SAME", dimension_numbers=NHWC, name="c"))
    return b.build()


def dense1d() -> convc.Graph:
    """No cpu rewrite is legal on a dense 1-D conv: "xla" is its only candidate."""
    b = convc.Builder("dense1d")
    x, w = b.input("x", (1, 9, 4)), b.input("w", (3, 4, 4))
    b.output(b.conv(x, w, padding="SAME", dimension_numbers=("NWC", "WIO", "NWC"), name="c"))
    return b.build()


CASES: dict[str, tuple[Callable[[], convc.Graph], set[str]]] = {
    "depthwise": (depthwise, {"xla", TAP_SUM}),
    "grouped": (grouped, {"xla", TAP_SUM}),
    "depthwise_weight_grad": (depthwise_weight_grad, {"xla", TAP_REDUCE, REGROUP}),
    "conv1x1": (conv1x1, {"xla", DOT, EIGEN}),
    "transposed_s2": (transposed_s2, {"xla", PHASES}),
    "dense3x3": (dense3x3, {"xla", EIGEN, WINOGRAD}),
    "dense1d": (dense1d, {"xla"}),
}
TUNED = [name for name, (_, legal) in CASES.items() if len(legal) > 1]


def canonical(graph: convc.Graph) -> convc.Graph:
    """The graph as autotune-conv-lowering sees it in the cpu pipeline."""
    return Compiler(pipeline=default_pipeline("generic") + ",cpu-crop-negative-padding").run_passes(graph.clone())


def the_conv(graph: convc.Graph) -> convc.Op:
    (op,) = [op for op in graph.ops if op.kind == "conv"]
    return op


def autotune_pipeline(cache: Path) -> str:
    return default_pipeline("cpu", autotune=True).replace(
        "autotune-conv-lowering", f"autotune-conv-lowering{{cache={cache} budget_ms={BUDGET_MS} platform=cpu}}")


def assert_matches_lax(graph: convc.Graph, stablehlo: str, run_stablehlo: Callable[..., list[np.ndarray]]) -> None:
    """The cpu target's module, run on the CPU, within --check's tolerance of the oracle."""
    inputs = random_inputs(graph, seed=1)
    (got,), (want,) = run_stablehlo(stablehlo, inputs, "cpu"), evaluate(graph, inputs)
    line, ok = compare("out", tolerance_for([graph], "cpu"), got, want)
    assert ok, line


def summaries(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("autotune: ") and " measured, " in line]


# --- the choices ---------------------------------------------------------------------


def test_the_choices_are_xla_and_the_cpu_rewrite_passes() -> None:
    assert lowering_pins() == ("xla", *CONV_LOWERINGS) and conv_lowerings() == CONV_LOWERINGS
    for name, pattern in CONV_LOWERINGS.items():
        assert pattern.name == name and getattr(PASSES[name], "pattern", None) is pattern


@pytest.mark.parametrize("case", list(CASES))
def test_candidates_are_xla_and_the_legal_rewrites(case: str) -> None:
    make, legal = CASES[case]
    assert set(candidates(conv_facts(the_conv(canonical(make()))))) == legal


def test_a_non_canonical_conv_has_only_xla() -> None:
    assert candidates(conv_facts(the_conv(depthwise()))) == ["xla"]


def test_default_pipeline_places_autotune_right_after_the_crop() -> None:
    names = default_pipeline("cpu", autotune=True).split(",")
    assert names[names.index("cpu-crop-negative-padding") + 1] == "autotune-conv-lowering"
    assert "autotune-conv-lowering" not in default_pipeline("cpu")
    with pytest.raises(PipelineError, match="cpu target"):
        default_pipeline("generic", autotune=True)


# --- pins ----------------------------------------------------------------------------


PINNED_SHAPE: dict[str, Callable[[list[convc.Op]], bool]] = {
    "xla": lambda ops: [op.attrs.get("lowering") for op in ops if op.kind == "conv"] == ["xla"],
    TAP_SUM: lambda ops: not any(op.kind == "conv" for op in ops) and any(op.kind == "multiply" for op in ops),
    TAP_REDUCE: lambda ops: not any(op.kind == "conv" for op in ops) and any(op.kind == "stacked_reduce_sum" for op in ops),
    REGROUP: lambda ops: not any(op.attrs.get("batch_group_count", 1) > 1 for op in ops if op.kind == "conv"),
    DOT: lambda ops: not any(op.kind == "conv" for op in ops) and any(op.kind == "dot_general" for op in ops),
    PHASES: lambda ops: not any(any(d > 1 for d in op.attrs.get("lhs_dilation") or ()) for op in ops if op.kind == "conv"),
    EIGEN: lambda ops: [op.kind for op in ops if op.kind in ("conv", "slice")] == ["conv", "slice"],
    WINOGRAD: lambda ops: not any(op.kind == "conv" for op in ops) and [op.kind for op in ops].count("dot_general") == 2,
}


@pytest.mark.parametrize(("case", "choice"), [(case, choice) for case in TUNED for choice in sorted(CASES[case][1])])
def test_a_pinned_choice_is_applied_and_exact(case: str, choice: str, run_stablehlo: Callable[..., list[np.ndarray]]) -> None:
    graph = canonical(CASES[case][0]())
    the_conv(graph).attrs["lowering"] = choice
    lowered = Compiler(target="cpu").run_passes(graph.clone())
    assert PINNED_SHAPE[choice](lowered.ops), convc.print_graph(lowered)
    assert all("lowering" not in op.attrs for op in lowered.ops if op.kind == "conv" and choice != "xla")
    assert_matches_lax(graph, convc.compile_graph(graph, target="cpu"), run_stablehlo)


def test_a_pin_overrides_the_cost_model() -> None:
    """The depthwise conv's 9 terms are under max_terms: unpinned it is summed, pinned to xla it is not."""
    free, pinned = (Compiler(target="cpu").run_passes(depthwise(lowering)) for lowering in (None, "xla"))
    assert not any(op.kind == "conv" for op in free.ops)
    assert [op.attrs.get("lowering") for op in pinned.ops if op.kind == "conv"] == ["xla"]


def wide_groups(lowering: str | None) -> convc.Graph:
    """9 taps x 16 inputs per group = 144 terms, over cpu-depthwise-tap-sum's max_terms."""
    b = convc.Builder("wide_groups")
    x, w = b.input("x", (1, 6, 6, 32)), b.input("w", (3, 3, 16, 32))
    b.output(b.op("conv", x, w, name="c", feature_group_count=2, dimension_numbers=NHWC, lowering=lowering))
    return b.build()


@pytest.mark.parametrize(("make", "choice"), [(wide_groups, TAP_SUM)])
def test_a_pin_beyond_the_cost_model_is_applied(make: Callable[[str | None], convc.Graph], choice: str,
                                                run_stablehlo: Callable[..., list[np.ndarray]]) -> None:
    free = Compiler(target="cpu").run_passes(make(None))
    assert [op.kind for op in free.ops] == ["conv"]
    pinned = make(choice)
    assert PINNED_SHAPE[choice](Compiler(target="cpu").run_passes(pinned.clone()).ops)
    assert_matches_lax(pinned, convc.compile_graph(pinned, target="cpu"), run_stablehlo)


def test_an_illegal_pin_on_a_non_canonical_conv_is_located() -> None:
    graph = depthwise(DOT)
    with pytest.raises(convc.ConvcError, match=r"needs a canonical conv .*\[P2\]") as err:
        Compiler(pipeline=DOT).run_passes(graph)
    assert err.value.loc.node == "c"


def test_the_emitter_ignores_a_pin() -> None:
    assert convc.compile_graph(depthwise("xla"), target="generic") == convc.compile_graph(depthwise(), target="generic")


# --- measuring -----------------------------------------------------------------------


@pytest.mark.parametrize("case", TUNED)
def test_the_autotuned_choice_is_a_candidate_and_matches_lax(case: str, tmp_path: Path,
                                                             run_stablehlo: Callable[..., list[np.ndarray]]) -> None:
    graph = CASES[case][0]()
    compiler = Compiler(pipeline=autotune_pipeline(tmp_path / "cache.json"))
    tuned = compiler.run_passes(canonical(graph))
    log = json.loads((tmp_path / "cache.json").read_text())["devices"][device_key("cpu")]
    (entry,) = log.values()
    assert entry["choice"] in CASES[case][1] and set(entry["ms"]) | set(entry["rejected"]) == CASES[case][1]
    assert entry["rejected"] == {}, entry
    assert PINNED_SHAPE[entry["choice"]](tuned.ops)
    assert_matches_lax(graph, convc.compile_graph(graph, pipeline=autotune_pipeline(tmp_path / "cache.json")), run_stablehlo)


def test_the_cache_answers_the_second_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = convc.Builder("net")
    x = b.input("x", (1, 8, 8, 16))
    dw, pw, w3 = b.input("dw", (3, 3, 1, 16)), b.input("pw", (1, 1, 16, 8)), b.input("w3", (3, 3, 8, 8))
    y = b.conv(x, dw, padding="SAME", feature_group_count=16, dimension_numbers=NHWC, name="dw1")
    y = b.conv(y, dw, padding="SAME", feature_group_count=16, dimension_numbers=NHWC, name="dw2")  # the same signature
    y = b.conv(y, pw, dimension_numbers=NHWC, name="pointwise")
    b.output(b.conv(y, w3, padding="SAME", dimension_numbers=NHWC, name="dense"))
    graph, cache = b.build(), tmp_path / "autotune.json"

    first = convc.compile_graph(graph, pipeline=autotune_pipeline(cache))
    assert summaries(capsys.readouterr().err) == ["autotune: 4 convs: 3 measured, 1 cached, 0 with one candidate"]
    document = json.loads(cache.read_text())
    assert (document["format"], document["version"]) == ("convc-autotune-cache", 1)
    keys = {signature(conv_facts(op)) for op in canonical(graph).ops if op.name in ("dw1", "pointwise", "dense")}
    assert set(document["devices"]) == {device_key("cpu")} and set(document["devices"][device_key("cpu")]) == keys
    written = cache.read_bytes()

    second = convc.compile_graph(graph, pipeline=autotune_pipeline(cache))
    assert summaries(capsys.readouterr().err) == ["autotune: 4 convs: 0 measured, 4 cached, 0 with one candidate"]
    assert second == first and cache.read_bytes() == written


@pytest.mark.parametrize("entry", [{"choice": DOT}, {"choice": "cpu-winograd"}, ["xla"]])
def test_a_cached_entry_that_is_no_legal_choice_is_measured_again(entry: object, tmp_path: Path) -> None:
    graph, lines = canonical(depthwise()), []
    key = signature(conv_facts(the_conv(graph)))
    (tmp_path / "cache.json").write_text(json.dumps(
        {"format": "convc-autotune-cache", "version": 1, "devices": {device_key("cpu"): {key: entry}}}))
    report = Autotuner(tmp_path / "cache.json", PjrtMeasure("cpu", BUDGET_MS / 1e3), log=lines.append).tune(graph)
    assert report.outcomes["measured"] == 1 and not [line for line in lines if "warning" in line]
    assert the_conv(graph).attrs["lowering"] in {"xla", TAP_SUM}


@pytest.mark.parametrize(("content", "problem"), [
    (b"{not json", "is not JSON"),
    (b"\xff\xfe", "is not JSON"),
    (b"[1, 2]", "is not a convc autotune cache"),
    (b'{"format": "convc-autotune-cache", "version": 0, "devices": {}}', "has version 0, not 1"),
    (b'{"format": "convc-autotune-cache", "version": 1, "devices": []}', "has a malformed 'devices' table"),
])
def test_a_broken_cache_is_one_warning_and_rebuilt(content: bytes, problem: str, tmp_path: Path) -> None:
    path, lines = tmp_path / "cache.json", []
    path.write_bytes(content)
    graph = canonical(depthwise())
    report = Autotuner(path, PjrtMeasure("cpu", BUDGET_MS / 1e3), log=lines.append).tune(graph)
    warnings = [line for line in lines if "warning" in line]
    assert len(warnings) == 1, lines
    assert re.fullmatch(f"convc: warning: autotune cache {re.escape(str(path))} {re.escape(problem)}( \\(.*\\))?; rebuilding it", warnings[0])
    assert report.outcomes["measured"] == 1
    assert list(json.loads(path.read_text())["devices"][device_key("cpu")].values())[0]["choice"] == the_conv(graph).attrs["lowering"]


def test_concurrent_writers_keep_each_others_entries(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    first, second = AutotuneCache.load(path), AutotuneCache.load(path)  # both read before either writes
    first.store("device", "conv a", {"choice": "xla"})
    second.store("device", "conv b", {"choice": TAP_SUM})
    first.save()
    second.save()
    assert AutotuneCache.load(path).devices == {"device": {"conv a": {"choice": "xla"}, "conv b": {"choice": TAP_SUM}}}


def test_an_unwritable_cache_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    lines: list[str] = []
    graph = canonical(depthwise())
    Autotuner(tmp_path / "file" / "cache.json", PjrtMeasure("cpu", BUDGET_MS / 1e3), log=lines.append).tune(graph)
    assert any(line.startswith(f"convc: warning: cannot write autotune cache {tmp_path / 'file' / 'cache.json'}") for line in lines)
    assert "lowering" in the_conv(graph).attrs


def test_convs_with_one_candidate_measure_nothing(tmp_path: Path) -> None:
    lines: list[str] = []
    Autotuner(tmp_path / "cache.json", PjrtMeasure("cpu"), log=lines.append).tune(canonical(dense1d()))
    assert lines == ["autotune: 1 conv: 0 measured, 0 cached, 1 with one candidate"]
    assert not (tmp_path / "cache.json").exists()


@dataclass
class ScriptedMeasure:
    """A measure that times nothing: the last candidate is always the fastest."""

    calls: list[list[str]] = field(default_factory=list)

    def device(self) -> str:
        return "scripted"

    def __call__(self, op: convc.Op, candidates: list[str], log: Callable[[str], None]) -> Measurement:
        self.calls.append(candidates)
        return Measurement({name: float(len(candidates) - i) for i, name in enumerate(candidates)})


def test_the_pass_measures_through_the_measure_it_is_given(tmp_path: Path) -> None:
    graph, measure = canonical(depthwise_weight_grad()), ScriptedMeasure()
    tune = AutotuneConvLowering(cache=str(tmp_path / "cache.json"), measure=measure)
    assert tune.spelling() == f"autotune-conv-lowering{{cache={tmp_path / 'cache.json'} platform= budget_ms=100.0}}"
    PassManager([tune]).run(graph)
    assert measure.calls == [["xla", TAP_REDUCE, REGROUP]] and the_conv(graph).attrs["lowering"] == REGROUP
    assert set(json.loads((tmp_path / "cache.json").read_text())["devices"]) == {"scripted"}


def test_a_pass_given_no_measure_fails_only_when_a_conv_needs_one(tmp_path: Path) -> None:
    PassManager([AutotuneConvLowering(cache=str(tmp_path / "cache.json"))]).run(canonical(dense1d()))
    with pytest.raises(PipelineError, match="given no measure"):
        PassManager([AutotuneConvLowering(cache=str(tmp_path / "cache.json"))]).run(canonical(depthwise()))


def test_the_fastest_agreeing_candidate_wins_and_xla_keeps_near_ties() -> None:
    assert Measurement({"xla": 3.0, TAP_SUM: 1.0}).choice == TAP_SUM
    assert Measurement({"xla": 1.02, TAP_SUM: 1.0}).choice == "xla"
    assert Measurement({"xla": 1.0}, {TAP_SUM: "disagrees with xla"}).choice == "xla"


def test_a_candidate_slower_than_the_whole_budget_is_not_called_again() -> None:
    calls: list[str] = []

    def runner(name: str) -> Callable[[], list[object]]:
        def run() -> list[object]:
            calls.append(name)
            return []
        return run

    ms = autotune_pjrt._timed({name: runner(name) for name in ("xla", TAP_SUM)}, {"xla": 5000.0, TAP_SUM: 1.0}, budget_s=0.001)
    assert ms["xla"] == 5000.0 and "xla" not in calls and TAP_SUM in calls


@pytest.mark.parametrize("fault", ["wrong", "broken"])
def test_a_wrong_or_failing_candidate_is_reported_and_never_chosen(fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A faulty tap sum, injected as the candidate's lowering (everything else real):
    one that doubles the result, or text MLIR cannot parse."""
    op = the_conv(canonical(depthwise()))
    real = autotune_pjrt.lowered_stablehlo
    b = convc.Builder("doubled")
    lhs, rhs = b.input("lhs", op.operands[0].type.shape), b.input("rhs", op.operands[1].type.shape)
    conv = b.op("conv", lhs, rhs, **op.attrs)
    b.output(b.add(conv, conv))
    doubled = convc.compile_graph(b.build(), pipeline="")

    def faulty(op: convc.Op, lowering: str) -> str:
        if lowering != TAP_SUM:
            return real(op, lowering)
        return doubled if fault == "wrong" else "module {"

    monkeypatch.setattr(autotune_pjrt, "lowered_stablehlo", faulty)
    lines: list[str] = []
    measurement = autotune_pjrt.measure(op, candidates(conv_facts(op)), "cpu", BUDGET_MS / 1e3, lines.append)
    assert measurement is not None and measurement.choice == "xla" and set(measurement.ms) == {"xla"}
    reason = "disagrees with xla" if fault == "wrong" else "failed: "
    assert measurement.rejected[TAP_SUM].startswith(reason)
    assert [line for line in lines if TAP_SUM in line] == [f"autotune: 'c': {TAP_SUM} {measurement.rejected[TAP_SUM]}: not chosen"]


# --- the command line ----------------------------------------------------------------


def test_convc_autotune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = Path(__file__).resolve().parents[2] / "examples" / "mobilenet_block.json"
    cache = tmp_path / "tuned.json"
    args = [str(model), "--target", "cpu", "--platform", "cpu", "--autotune", "--autotune-cache", str(cache), "--emit", "convc"]
    assert cli.main(args) == 0
    first = capsys.readouterr()
    assert summaries(first.err) == ["autotune: 2 convs: 2 measured, 0 cached, 0 with one candidate"] and cache.exists()
    assert cli.main(args) == 0
    second = capsys.readouterr()
    assert summaries(second.err) == ["autotune: 2 convs: 0 measured, 2 cached, 0 with one candidate"]
    assert second.out == first.out


@pytest.mark.parametrize(("extra", "message"), [
    (["--autotune", "--target", "generic"], "convc: error: --autotune chooses among the cpu target's conv lowerings; the target is 'generic' (use --target cpu)"),
    (["--autotune", "--target", "cpu", "-p", "dce"], "convc: error: --autotune tunes the default pipeline; with -p, name autotune-conv-lowering{cache=PATH} in it"),
    (["--target", "cpu", "--autotune-cache", "x.json"], "convc: error: --autotune-cache needs --autotune"),
])
def test_convc_autotune_usage_errors(extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    model = Path(__file__).resolve().parents[2] / "examples" / "mobilenet_block.json"
    assert cli.main([str(model), *extra]) == 2
    assert capsys.readouterr().err.splitlines() == [message]


def test_candidates_are_timed_with_the_xla_options_the_module_is_compiled_with(tmp_path: Path) -> None:
    """convc's Compiler hands autotune a measure that compiles every candidate with the cpu
    target's own XLA options on the CPU (what the chosen form will run under), names them in
    the cache's device key, and still times real candidates with them."""

    tune = AutotuneConvLowering(cache=str(tmp_path / "cache.json"), platform="cpu", budget_ms=BUDGET_MS)
    measured = autotune_pjrt.with_pjrt_measure(tune, Compiler(target="cpu").xla_options)
    measure = measured._measure  # type: ignore[attr-defined]  # the InitVar the pass keeps
    assert dict(measure.xla_options) == Compiler(target="cpu").xla_options("cpu") != {}
    assert measure.device().startswith(device_key("cpu") + "; XLA options ")
    assert autotune_pjrt.with_pjrt_measure(tune)._measure.xla_options == ()  # type: ignore[attr-defined]
    graph, lines = canonical(depthwise()), []
    report = Autotuner(tmp_path / "cache.json", measure, log=lines.append).tune(graph)
    assert report.outcomes["measured"] == 1 and not [line for line in lines if "warning" in line]
    assert measure.device() in json.loads((tmp_path / "cache.json").read_text())["devices"]


def conv1x1_with_constant_kernel() -> convc.Graph:
    """conv1x1's conv with its kernel a transpose of a constant (OIHW to HWIO), as an imported network's weights
    reach autotune after the layout pass: known at compile time."""
    b = convc.Builder("conv1x1_constant")
    x = b.input("x", (2, 6, 6, 8))
    w = b.op("transpose", b.constant("w", np.arange(32, dtype=np.float32).reshape(4, 8, 1, 1) / 32), permutation=(2, 3, 1, 0))
    b.output(b.conv(x, w, dimension_numbers=NHWC, name="c"))
    return b.build()


def test_a_kernel_known_at_compile_time_is_timed_as_a_constant_and_cached_apart(tmp_path: Path,
                                                                             run_stablehlo: Callable[..., list[np.ndarray]]) -> None:
    """A conv whose kernel is computed from constants (a transposed constant) is measured as a one-conv module whose
    kernel is a constant (one input, no kernel input: XLA folds what depends on the kernel alone, as in the network),
    and its measurement is cached under its own key (the signature plus "kernel a constant"); the same conv with a
    kernel input keeps the input and the plain signature. Either way the measured choice runs and matches lax."""
    from convc.autotune import kernel_is_constant, tuning_key

    known, given = the_conv(canonical(conv1x1_with_constant_kernel())), the_conv(canonical(conv1x1()))
    assert kernel_is_constant(known) and not kernel_is_constant(given)
    assert conv_facts(known) == conv_facts(given)
    assert tuning_key(known, conv_facts(known)) == signature(conv_facts(given)) + "; kernel a constant"
    assert tuning_key(given, conv_facts(given)) == signature(conv_facts(given))
    module = autotune_pjrt.one_conv_graph(known, DOT)
    assert [v.name for v in module.inputs] == ["lhs"] and module.ops[0].kind == "constant"
    assert [v.name for v in autotune_pjrt.one_conv_graph(given, DOT).inputs] == ["lhs", "rhs"]
    measured = autotune_pjrt.measure(known, candidates(conv_facts(known)), "cpu", BUDGET_MS / 1e3)
    assert measured is not None and set(measured.ms) == {"xla", DOT, EIGEN} and not measured.rejected
    text = convc.compile_graph(conv1x1_with_constant_kernel(), pipeline=autotune_pipeline(tmp_path / "cache.json"))
    assert list(json.loads((tmp_path / "cache.json").read_text())["devices"].values())[0].keys() == {tuning_key(known, conv_facts(known))}
    assert_matches_lax(conv1x1_with_constant_kernel(), text, run_stablehlo)
