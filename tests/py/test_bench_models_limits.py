"""`bench --suite models-limits` (tools/bench_models_limits.py): an imported network's
distinct convs, each in every form convc can pin, timed beside the network on convc, ONNX
Runtime's run of the same ONNX file, ONNX Runtime's conv alone and PyTorch eager. The
report's structure and every check are asserted; no timing is (a benchmark, not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from convc.tools import bench, bench_limits, bench_models, bench_models_limits

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")


def _tiny_network() -> Any:
    """A 3x3/2 conv, two depthwise 3x3 convs of one signature and a 1x1 conv (with biases and ReLUs)."""
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.Conv2d(8, 16, 1)).eval()


def test_network_limit_times_each_distinct_conv_in_every_form_beside_ort_and_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four convs, three distinct (the depthwise pair counted twice): each distinct conv in
    every legal form with the network's options and XLA's defaults (as on a host with AVX-512,
    pinned: elsewhere a forward conv's options are a third set), all agreeing with XLA's
    conv; ONNX Runtime's one-node conv agreeing with it too; the network's ORT and PyTorch
    runs checked against convc's; the sums and ratios are of those medians."""
    from convc import compile as compile_module

    monkeypatch.setattr(compile_module, "host_has_avx512", lambda: True)
    spec = bench_models.ModelSpec("tiny", "test", 1, (1, 3, 16, 16))
    step = bench_models_limits.network(spec, _tiny_network(), threads=1, use_torch=True)
    result = bench_limits.run_step_limit_case(step, budget_s=0.02)
    assert (result.name, result.shape) == ("tiny", "1x3x16x16")
    assert sorted(conv.count for conv in result.convs) == [1, 1, 2]
    for conv in result.convs:
        assert conv.forms[0] == "xla" and conv.chosen in conv.forms and conv.rejected == {}
        assert set(conv.ms) == {f"{form}@{options}" for form in conv.forms for options in ("target", "default")}
        assert conv.ort_skipped is None and conv.ort_error is not None and conv.ort_error <= bench.TOLERANCE
        assert conv.ort_ms is not None and conv.ort_min_ms is not None and conv.ort_min_ms <= conv.ort_ms
    assert {tuple(conv.forms) for conv in result.convs} >= {("xla", "cpu-depthwise-tap-sum")}
    assert result.step_error_vs_ort is not None and result.step_error_vs_ort <= bench_models.TOLERANCE
    assert result.step_error_vs_torch is not None and result.step_error_vs_torch <= bench_models.TOLERANCE
    assert result.ort_ms is not None and result.torch_ms is not None
    assert result.sums["best"] == pytest.approx(sum(conv.count * min(conv.ms.values()) for conv in result.convs))
    assert result.sums["ort convs"] == pytest.approx(sum(conv.count * conv.ort_ms for conv in result.convs if conv.ort_ms))
    assert result.ratios["convs best/ort"] == pytest.approx(result.sums["best"] / result.ort_ms)
    assert result.ratios["step/ort"] == pytest.approx(result.step_ms / result.ort_ms)
    assert result.ratios["step/torch"] == pytest.approx(result.step_ms / result.torch_ms)
    assert result.ratios["convs best/ort convs"] == pytest.approx(result.sums["best"] / result.sums["ort convs"])
    table = bench_models_limits.format_table([result])
    assert table.splitlines()[2].startswith("tiny ") and "ORT conv " in table and "x2 (tensor<1x8x8x8xf32>" in table


def test_models_limits_cli_reads_saved_onnx_files_and_reports_every_network(tmp_path: Path) -> None:
    """Through the command line on a saved export (--onnx-dir: a manifest naming the tiny
    network's ONNX file): the JSON report has the network with its convs, ONNX Runtime timed and
    PyTorch not (the file is all there is), the geometric means of its ratios and the table."""
    x = torch.zeros(1, 3, 16, 16)
    (tmp_path / "tiny.onnx").write_bytes(bench_models.export_onnx(_tiny_network(), x))
    manifest = {"format": bench_models.MANIFEST_FORMAT, "networks": [
        {"name": "tiny", "source": "test", "batch": 1, "input_shape": [1, 3, 16, 16], "file": "tiny.onnx"}]}
    (tmp_path / bench_models.MANIFEST).write_text(json.dumps(manifest))
    out = tmp_path / "report.json"
    assert bench.main(["--suite", "models-limits", "--platform", "cpu", "--onnx-dir", str(tmp_path), "--batch", "1",
                       "--budget", "0.02", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    [case] = report["cases"]
    assert (report["suite"], report["onnx_dir"], case["name"], case["shape"]) == ("models-limits", str(tmp_path), "tiny", "1x3x16x16")
    assert sum(conv["count"] for conv in case["convs"]) == 4 and case["torch_ms"] is None and case["ort_ms"] is not None
    assert all(conv["rejected"] == {} and conv["ort_ms"] is not None for conv in case["convs"])
    assert report["geomeans"]["convs best/ort"] == pytest.approx(case["ratios"]["convs best/ort"])
    assert report["geomeans"]["step/torch"] is None and "tiny " in report["table"]


def test_models_limits_refuses_save_onnx_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--save-onnx exports the models suite's networks; models-limits only reads them (--onnx-dir): one line, exit 1."""
    assert bench.main(["--suite", "models-limits", "--platform", "cpu", "--save-onnx", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bench: error: --save-onnx writes or reads the networks of --suite models")
