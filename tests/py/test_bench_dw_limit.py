"""`bench --suite dw-limit` (tools/bench_dw_limit.py) compiles every form of a conv, checks it against ONNX
Runtime's one-node Conv before timing, and reports each form's ratio. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from convc.tools import bench, bench_dw_limit


def test_quick_dw_limit_checks_every_form_against_onnxruntime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--quick at batch 1 on a stride-2 3x3 depthwise conv and a 1x1 expand conv: each convc form of its kind agrees
    with ONNX Runtime within the tolerance, got the lowering it names (the cpu pipeline's tap sum and dot, the tap sum
    without a padded copy (no conv left), the pinned rewrite over NCHW, XLA's own conv), and its ratio is its median
    over ONNX Runtime's; the depthwise floor (not a conv) and ONNX Runtime on one thread are timed but neither checked
    nor the best form; the table has both means and the report the run's sgemm rate."""
    pytest.importorskip("onnxruntime")
    out = tmp_path / "dw.json"
    assert bench.main(["--suite", "dw-limit", "--quick", "--platform", "cpu", "--batch", "1", "--cases", "dw3_s2_56,expand_14",
                       "--budget", "0.02", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    depthwise, pointwise = report["cases"]
    assert (depthwise["name"], depthwise["shape"]) == ("dw3_s2_56x144", "depthwise 3x3 s2 1x14x14x36->36")
    assert (pointwise["name"], pointwise["shape"]) == ("expand_14x96to576", "pointwise 1x1 1x8x8x24->144")
    assert depthwise["lowerings"] == {"cpu": "cpu-depthwise-tap-sum", "tap_pads": "none (no conv)",
                                      "rewrite_nchw": "cpu-depthwise-tap-sum", "xla": "xla", "xla_nchw": "xla", "floor": "none (no conv)",
                                      "ort1": "onnxruntime, 1 thread"}
    assert pointwise["lowerings"] == {"cpu": "cpu-conv-1x1-to-dot", "rewrite_nchw": "cpu-conv-1x1-to-dot", "xla": "xla", "xla_nchw": "xla",
                                      "ort1": "onnxruntime, 1 thread"}
    for case in (depthwise, pointwise):
        forms = bench_dw_limit.KIND_FORMS[case["kind"]]
        convs = [f for f in forms if f not in ("floor", "ort1")]  # not the conv, or not convc's: timed, not checked, never the best
        assert set(case["max_error_vs_ort"]) == set(convs) and set(case["ms"]) == {"ort", *forms}
        assert all(e <= bench_dw_limit.TOLERANCE for e in case["max_error_vs_ort"].values())
        assert all(case["ratio_vs_ort"][f] == case["ms"][f] / case["ms"]["ort"] for f in forms)
        assert case["best_form"] == min(convs, key=lambda f: case["ms"][f])
    assert report["sgemm_peak_gflops"] > 0  # the machine's speed, stated beside the figures
    printed = capsys.readouterr().out
    assert "geometric mean, depthwise batch 1: cpu/ORT " in printed and "geometric mean, pointwise batch 1: cpu/ORT " in printed


def test_dw_limit_outside_the_cpu_target_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--suite", "dw-limit", "--quick", "--platform", "cpu", "--target", "generic"]) == 1
    assert capsys.readouterr().err == ("bench: error: --suite dw-limit measures the cpu target's forms on the CPU "
                                       "(got --platform cpu, --target generic)\n")


def test_forms_times_only_the_named_forms_and_skips_the_convs_none_applies_to(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """--forms tap_pads: the depthwise conv is compiled, checked and timed in that form alone beside ONNX Runtime (the
    cpu column shows '-'); the 1x1 conv, which has no tap_pads form, is skipped with a line saying so."""
    pytest.importorskip("onnxruntime")
    out = tmp_path / "dw.json"
    assert bench.main(["--suite", "dw-limit", "--quick", "--platform", "cpu", "--batch", "1", "--cases", "dw3_s1_7,expand_7",
                       "--forms", "tap_pads", "--budget", "0.02", "--no-peak", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    [case] = report["cases"]
    assert (case["name"], set(case["ms"]), case["best_form"], report["forms"]) == ("dw3_s1_7x960", {"ort", "tap_pads"}, "tap_pads", ["tap_pads"])
    assert case["max_error_vs_ort"]["tap_pads"] <= bench_dw_limit.TOLERANCE
    printed = capsys.readouterr().out
    assert "expand_7x160to960 batch 1: skipped, no pointwise form among --forms tap_pads" in printed


@pytest.mark.parametrize(("argv", "message"), [
    (["--suite", "dw-limit", "--forms", "tapsum"], "--forms: unknown form(s) tapsum; the forms are cpu, tap_pads, rewrite_nchw, xla, xla_nchw, floor, ort1"),
    (["--suite", "conv", "--forms", "cpu"], "--forms chooses the convc forms of --suite dw-limit"),
])
def test_forms_misused_is_one_line_exit_1(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert bench.main([*argv, "--quick", "--platform", "cpu"]) == 1
    assert capsys.readouterr().err == f"bench: error: {message}\n"
