"""`bench --suite models --int8` (tools/bench_models_int8.py) runs, checks convc's int8 output
by issue 19's QDQ bar before timing, and prints its table. No timing is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from convc.frontend.onnx.check import onnxruntime_saturates_u8_by_s8
from convc.tools import bench, bench_models, bench_models_int8


def test_quick_int8_suite_checks_the_smallest_stand_in_and_prints_its_table(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--int8 on segmentation_style (the smallest stand-in, taken even where torchvision imports) at 32x32, batch 1:
    every conv of the quantized file imported as a quantized conv, convc f32 within the models suite's tolerance of
    ONNX Runtime, convc int8 on the output grid with an RMS error within the bar of ONNX Runtime int8's; the table
    has its row and both means; with --profile, the int8 executable's census and op times follow."""
    pytest.importorskip("onnxruntime.quantization")
    pytest.importorskip("torch")
    monkeypatch.setattr(bench_models, "has_torchvision", lambda: False)
    out = tmp_path / "int8.json"
    code = bench.main(["--suite", "models", "--int8", "--quick", "--platform", "cpu", "--target", "cpu", "--batch", "1",
                       "--size", "32", "--cases", "segmentation_style", "--budget", "0.05", "--profile", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    (case,) = report["cases"]
    assert (report["int8"], case["name"], case["shape"]) == (True, "segmentation_style", "1x3x32x32")
    assert case["convs"] > 0 and case["quantized_convs"] == case["convs"] and case["on_grid"] is True
    assert case["f32_error_vs_ort"] <= bench_models.TOLERANCE
    if not onnxruntime_saturates_u8_by_s8():  # else ONNX Runtime's int8 error is no reference on this host (no VNNI)
        assert 0.5 * case["ort_rms_error"] <= case["rms_error"] <= 1.25 * case["ort_rms_error"]
    assert set(case["ms"]) == {"convc_int8", "ort_int8", "convc_f32"}
    assert case["ratio_vs_ort_int8"] == case["ms"]["convc_int8"] / case["ms"]["ort_int8"]
    assert report["geomean_convc_int8_over_convc_f32"] == pytest.approx(case["ratio_vs_convc_f32"])
    printed = capsys.readouterr().out
    assert "c8/ORT8" in printed and any(line.startswith("segmentation_style ") for line in printed.splitlines())
    assert "geometric mean convc int8/ORT int8: " in printed and "convc int8/convc f32: " in printed
    assert case["profile"]["census"] and "profile of segmentation_style batch 1 (int8):" in capsys.readouterr().err + printed


def test_int8_quantizes_the_files_save_onnx_wrote_without_torch(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """--save-onnx writes segmentation_style's float export (16x16, batch 1); --int8 --onnx-dir then quantizes that
    file with torch and torchvision unimportable: every conv imported quantized, convc f32 within the models suite's
    tolerance, convc int8 on the grid and within the bar; the report names the directory and the files' input size."""
    pytest.importorskip("onnxruntime.quantization")
    pytest.importorskip("torch")
    from test_bench import save_segmentation_onnx

    saved = save_segmentation_onnx(tmp_path, monkeypatch, 16)
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError from here on
    monkeypatch.setitem(sys.modules, "torchvision", None)
    out = tmp_path / "int8.json"
    assert bench.main(["--suite", "models", "--int8", "--platform", "cpu", "--target", "cpu", "--batch", "1", "--budget", "0.02",
                       "--onnx-dir", str(saved), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    (case,) = report["cases"]
    assert (report["onnx_dir"], report["input_size"], case["name"], case["shape"]) == (str(saved), 16, "segmentation_style", "1x3x16x16")
    assert case["convs"] > 0 and case["quantized_convs"] == case["convs"] and case["on_grid"] is True
    assert case["f32_error_vs_ort"] <= bench_models.TOLERANCE
    if not onnxruntime_saturates_u8_by_s8():  # else ONNX Runtime's int8 error is no reference on this host (no VNNI)
        assert 0.5 * case["ort_rms_error"] <= case["rms_error"] <= 1.25 * case["ort_rms_error"]
    assert f"from the ONNX files in {saved}" in capsys.readouterr().out


def test_int8_check_refuses_an_error_outside_the_bar_or_off_the_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check before timing: an RMS error over 1.25x or under 0.5x of ONNX Runtime int8's, or an output off the
    grid, is a BenchError naming the network; within the bar it passes. Where ONNX Runtime's 8-bit products saturate,
    only the grid is checked."""
    spec = bench_models.ModelSpec("tiny", "fallback", 8, (8, 3, 32, 32))
    monkeypatch.setattr(bench_models_int8, "onnxruntime_saturates_u8_by_s8", lambda: False)  # a host with exact int8 products
    bench_models_int8.check(spec, 0.0, 1.2, 1.0, True)
    for ours, grid in ((1.3, True), (0.4, None), (1.0, False)):
        with pytest.raises(bench.BenchError, match=r"^tiny \(batch 8\): convc int8"):
            bench_models_int8.check(spec, 0.0, ours, 1.0, grid)
    monkeypatch.setattr(bench_models_int8, "onnxruntime_saturates_u8_by_s8", lambda: True)  # one whose products saturate
    bench_models_int8.check(spec, 0.0, 1.3, 1.0, True)  # ONNX Runtime's error is no bar there; the grid still is
    with pytest.raises(bench.BenchError, match=r"^tiny \(batch 8\): convc int8's output is off"):
        bench_models_int8.check(spec, 0.0, 1.0, 1.0, False)


def test_on_grid_is_to_a_thousandth_of_a_step() -> None:
    assert bench_models_int8.on_grid(np.array([0.5, -0.25], np.float32), (0.25, 3)) is True
    assert bench_models_int8.on_grid(np.array([0.5, 0.3], np.float32), (0.25, 3)) is False
    assert bench_models_int8.on_grid(np.array([0.3]), None) is None


def test_int8_outside_the_models_suite_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--int8", "--quick", "--platform", "cpu"]) == 1
    assert capsys.readouterr().err == ("bench: error: --int8 quantizes the networks of --suite models and models-limits "
                                       "(without --without-pass)\n")


def test_identity_aliases_of_initializers_become_copies_and_the_model_computes_the_same() -> None:
    """The exporter's shared-initializer aliases (Identity of an initializer) are replaced by copies, so that
    quantize_static writes a DequantizeLinear straight into each Conv; other Identity nodes stay; ONNX Runtime
    computes the same output before and after."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from onnx_files import make_model

    bias = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "bias")
    nodes = [helper.make_node("Identity", ["bias"], ["bias_alias"]), helper.make_node("Add", ["x", "bias_alias"], ["sum"]),
             helper.make_node("Identity", ["sum"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [bias])
    model = make_model(graph, 17).SerializeToString()
    unshared = onnx.load_from_string(bench_models_int8.without_initializer_aliases(model))
    assert [n.op_type for n in unshared.graph.node] == ["Add", "Identity"]
    assert sorted(t.name for t in unshared.graph.initializer) == ["bias", "bias_alias"]
    ort = pytest.importorskip("onnxruntime")
    x = {"x": np.array([3.0, 4.0], np.float32)}
    before = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, x)[0]
    after = ort.InferenceSession(unshared.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    np.testing.assert_array_equal(before, after)
    np.testing.assert_array_equal(after, [4.0, 6.0])
