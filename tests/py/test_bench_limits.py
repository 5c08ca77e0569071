"""`bench --suite limits` (tools/bench_limits.py): every legal form of a conv-suite case is
compiled with convc's and XLA's default options, checked against XLA's own conv and timed
beside the case and PyTorch; the cost model's form is found among them. No timing is
asserted (a benchmark, not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from convc.compile import GRADIENT_XLA_OPTIONS
from convc.tools import bench, bench_limits


def test_quick_limits_case_times_every_legal_form_with_both_option_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host with AVX-512 (pinned: elsewhere a forward conv's options are a third set), the quick limits case times
    every legal form under the target's options and XLA's defaults."""
    from convc import compile as compile_module

    monkeypatch.setattr(compile_module, "host_has_avx512", lambda: True)
    out = tmp_path / "limits.json"
    code = bench.main(["--suite", "limits", "--quick", "--platform", "cpu", "--cases", "weight_grad_depthwise",
                       "--budget", "0.05", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["suite"] == "limits" and [case["name"] for case in report["cases"]] == ["weight_grad_depthwise"]
    case = report["cases"][0]
    assert case["forms"] == ["xla", "cpu-batch-group-tap-reduce", "cpu-batch-group-to-feature-group"]
    assert case["chosen"] == "cpu-batch-group-tap-reduce"  # the cost model's rewrite for a depthwise kernel gradient
    timed = {f"{form}@{options}" for form in case["forms"] for options in ("target", "default")} - set(case["rejected"])
    assert set(case["ms"]) == timed | {"case"} | ({"torch"} if case["torch_ms"] is not None else set())
    form_ms = {key: ms for key, ms in case["ms"].items() if "@" in key}
    assert case["best_ms"] == min(form_ms.values()) == form_ms[case["best"]]
    assert case["chosen_ms"] == form_ms["cpu-batch-group-tap-reduce@target"]
    assert case["ratios"]["chosen/best@target"] >= 1.0 and case["ratios"]["chosen/best"] >= 1.0
    assert case["ratios"]["chosen/best"] >= case["ratios"]["chosen/best@target"] * (1 - 1e-12)
    if case["torch_ms"] is not None:
        assert case["case_error_vs_torch"] <= bench.TOLERANCE
        assert case["ratios"]["best/torch"] == pytest.approx(case["best_ms"] / case["torch_ms"])
    assert report["geomeans"]["chosen/best"] == pytest.approx(case["ratios"]["chosen/best"])
    assert set(case["min_ms"]) == set(case["ms"]) and all(case["min_ms"][key] <= case["ms"][key] for key in case["ms"])
    assert report["geomeans_of_min"]["chosen/best"] == pytest.approx(case["min_ratios"]["chosen/best"])
    assert "weight_grad_depthwise" in report["table"] and "batch-group-tap-reduce@target" in report["table"]


@pytest.mark.parametrize(("case", "forms", "chosen"), [
    ("depthwise3x3", ["xla", "cpu-depthwise-tap-sum"], "cpu-depthwise-tap-sum"),
    ("dense3x3_s2", ["xla", "cpu-conv-eigen-path"], "xla"),  # legal, but the cost model leaves strided convs to XLA
    ("wavenet1d_d8", ["xla"], "xla"),
])
def test_cost_models_form_is_found_among_the_legal_ones(case: str, forms: list[str], chosen: str) -> None:
    """At full size, without compiling: the unpinned module's text is one pinned form's."""
    spec = next(s for s in bench.selected_cases(bench.parse_args(["--suite", "limits"])) if s.name == case)
    assert bench_limits.forms_and_choice(bench_limits.tunable_conv(spec)) == (forms, chosen)


def test_limits_suite_is_for_the_cpu_target_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--suite", "limits", "--target", "generic", "--quick", "--platform", "cpu", "--cases", "conv1x1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--suite limits times the cpu target's forms" in err


def test_rotating_timer_puts_each_implementation_at_every_position() -> None:
    orders = bench.Timer(1.0, rotate=True).orders(["a", "b", "c", "d"])
    assert len(orders) == 8 and all(sorted(order) == ["a", "b", "c", "d"] for order in orders)
    for position in range(4):
        assert sorted(order[position] for order in orders) == ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert bench.Timer(1.0).orders(["a", "b", "c"]) == [("a", "b", "c"), ("a", "c", "b"), ("b", "a", "c"),
                                                        ("b", "c", "a"), ("c", "a", "b"), ("c", "b", "a")]


def test_quick_train_limits_sums_each_distinct_conv_of_the_step_by_its_count(tmp_path: Path) -> None:
    """ResNet basic block's step at --quick: six convs (two forward, two input and two kernel
    gradients), three distinct; the sums weigh each one's forms by its count."""
    out = tmp_path / "train-limits.json"
    code = bench.main(["--suite", "train-limits", "--quick", "--platform", "cpu", "--cases", "train_resnet_basic",
                       "--budget", "0.05", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    case = report["cases"][0]
    assert report["suite"] == "train-limits" and case["name"] == "train_resnet_basic"
    assert [conv["count"] for conv in case["convs"]] == [2, 2, 2]
    # a gradient step compiles with XLA's defaults: its convs' "@target", beside single dots only ("@dots")
    assert case["step_options"] == GRADIENT_XLA_OPTIONS["cpu"] == {}
    for conv in case["convs"]:
        assert conv["forms"][0] == "xla" and conv["chosen"] in conv["forms"]
        assert set(conv["ms"]) == {f"{form}@{options}" for form in conv["forms"] for options in ("target", "dots")} - set(conv["rejected"])
    best = sum(conv["count"] * min(conv["ms"].values()) for conv in case["convs"])
    chosen = sum(conv["count"] * conv["ms"][f"{conv['chosen']}@target"] for conv in case["convs"])
    assert case["sums"]["best"] == pytest.approx(best) and case["sums"]["chosen"] == pytest.approx(chosen)
    assert case["sums"]["best"] <= case["sums"]["best@target"] <= case["sums"]["chosen"]
    if case["torch_ms"] is not None:
        assert case["step_error_vs_torch"] <= bench.TOLERANCE
        assert case["ratios"]["step/torch"] == pytest.approx(case["step_ms"] / case["torch_ms"])
    assert case["ratios"]["step-default/step"] == pytest.approx(case["step_default_ms"] / case["step_ms"])
    assert case["ratios"]["step-ynn-convs/step"] == pytest.approx(case["step_ynn_convs_ms"] / case["step_ms"])
    assert "w2.grad x2" in report["table"]


def test_quick_train_models_limits_times_the_dcgan_steps_convs_beside_its_step_and_torch(tmp_path: Path) -> None:
    """--suite train-models-limits on the DCGAN generator at --quick, batch 1: the step is
    train-models's (the ONNX export imported with its five ConvTranspose weights kept as
    inputs, convc.grad of them), so its 14 convs (5 forward, 5 kernel gradients, 4 input
    gradients: the latent needs none) are 14 distinct ones, each timed in its legal forms with
    the step's options (XLA's defaults) and single dots only; the step agreed with PyTorch
    autograd's, and the sums are of the forms (the chosen ones with the step's options)."""
    pytest.importorskip("onnx")
    pytest.importorskip("torch")
    out = tmp_path / "train-models-limits.json"
    code = bench.main(["--suite", "train-models-limits", "--quick", "--platform", "cpu", "--cases", "dcgan", "--batch", "1",
                       "--budget", "0.05", "--torch-threads", "1", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    [case] = report["cases"]
    assert (report["suite"], case["name"], case["shape"]) == ("train-models-limits", "dcgan_generator", "1x100x1x1 ngf8")
    assert sum(conv["count"] for conv in case["convs"]) == 14 and len(case["convs"]) == 14
    assert sum(conv["name"].endswith(".d_rhs") for conv in case["convs"]) == 5
    assert sum(conv["name"].endswith(".d_lhs") for conv in case["convs"]) == 4
    for conv in case["convs"]:
        assert conv["forms"][0] == "xla" and conv["chosen"] in conv["forms"]
        assert set(conv["ms"]) == {f"{form}@{options}" for form in conv["forms"] for options in ("target", "dots")} - set(conv["rejected"])
    assert case["sums"]["best"] == pytest.approx(sum(min(conv["ms"].values()) for conv in case["convs"]))
    assert case["sums"]["chosen"] == pytest.approx(sum(conv["ms"][f"{conv['chosen']}@target"] for conv in case["convs"]))
    assert case["step_error_vs_torch"] <= bench.TOLERANCE
    assert case["ratios"]["convs best/torch"] == pytest.approx(case["sums"]["best"] / case["torch_ms"])
    assert case["ratios"]["step/torch"] == pytest.approx(case["step_ms"] / case["torch_ms"])
    assert report["geomeans"]["convs best/torch"] == pytest.approx(case["ratios"]["convs best/torch"])
    assert "dcgan_generator 1x100x1x1 ngf8:" in report["table"]


def test_train_models_limits_without_torch_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """The networks come from PyTorch: --no-torch is refused in one line, exit 1."""
    assert bench.main(["--suite", "train-models-limits", "--no-torch", "--quick", "--platform", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bench: error: --suite train-models-limits exports its networks from PyTorch")
