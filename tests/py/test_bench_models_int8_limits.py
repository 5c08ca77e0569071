"""`bench --suite models-limits --int8` (tools/bench_models_int8_limits.py): each distinct QDQ conv of a quantized
network cut out channels-last, checked against ONNX Runtime before timing, its float counterpart the same conv, and
the report's sums and ratios. No timing is asserted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from convc.tools import bench, bench_models, bench_models_int8_limits

pytest.importorskip("onnxruntime.quantization")
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_files import make_model  # noqa: E402


def _qdq_network() -> bytes:
    """x -> Q -> [DQ -> Conv 3x3 (8 -> 8, pads 1) -> Q] twice -> [DQ -> Conv 1x1 (8 -> 4, stride 2) -> Q] -> DQ: two
    equal convs and one other, each with per-channel int8 weights and an int32 bias."""
    rng = np.random.default_rng(5)
    inits: list[Any] = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(3, np.int8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q0"])]
    for i, (out, k, attrs) in enumerate(((8, 3, {"pads": [1, 1, 1, 1]}), (8, 3, {"pads": [1, 1, 1, 1]}), (4, 1, {"strides": [2, 2]}))):
        w_scale = rng.uniform(0.002, 0.01, out).astype(np.float32)
        inits += [numpy_helper.from_array(rng.integers(-127, 128, (out, 8, k, k)).astype(np.int8), f"w{i}"),
                  numpy_helper.from_array(w_scale, f"ws{i}"), numpy_helper.from_array(np.zeros(out, np.int8), f"wz{i}"),
                  numpy_helper.from_array(rng.integers(-500, 500, out).astype(np.int32), f"b{i}"),
                  numpy_helper.from_array((np.float32(0.05) * w_scale).astype(np.float32), f"bs{i}")]
        nodes += [helper.make_node("DequantizeLinear", [f"q{i}", "s", "z"], [f"x{i}"]),
                  helper.make_node("DequantizeLinear", [f"w{i}", f"ws{i}", f"wz{i}"], [f"wd{i}"], axis=0),
                  helper.make_node("DequantizeLinear", [f"b{i}", f"bs{i}"], [f"bd{i}"], axis=0),
                  helper.make_node("Conv", [f"x{i}", f"wd{i}", f"bd{i}"], [f"c{i}"], name=f"conv{i}", **attrs),
                  helper.make_node("QuantizeLinear", [f"c{i}", "s", "z"], [f"q{i + 1}"])]
    nodes.append(helper.make_node("DequantizeLinear", ["q3", "s", "z"], ["y"]))
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 3])], inits)
    return make_model(graph, 17).SerializeToString()  # type: ignore[no-any-return]


def test_qdq_convs_are_cut_out_once_each_channels_last_with_their_float_conv() -> None:
    """Two equal QDQ convs and another: two pieces (counts 2 and 1), each reading and writing its 8-bit integers
    channels-last, the first one's input the network's quantized input, ONNX Runtime's copy made uint8; convc's and ONNX Runtime's int8 results of a piece within one step (checked by conv_thunks), and
    the float piece, run by ONNX Runtime on the dequantized input, within two steps of the int8 piece's dequantized
    output (its own rounding, and the quantize's); the float piece carries opset 17's oldest IR version (an ONNX
    Runtime older than the onnx package refuses newer ones)."""
    from convc.tools.bench_models_int8_limits import conv_thunks, qdq_convs

    x = np.random.default_rng(0).standard_normal((2, 8, 6, 6)).astype(np.float32)
    convs = qdq_convs(_qdq_network(), x)
    assert [(c.name, c.count) for c in convs] == [("conv0", 2), ("conv2", 1)]
    np.testing.assert_array_equal(convs[0].stored_input, np.clip(np.rint(x / np.float32(0.05)) + 3, -128, 127).transpose(0, 2, 3, 1))
    assert [c.stored_input.shape for c in convs] == [(2, 6, 6, 8), (2, 6, 6, 8)]
    for conv in convs:
        assert conv.stored_input.dtype == np.int8 and set(conv_thunks(conv, 1)) == {"convc_int8", "ort_int8", "convc_f32"}
        assert onnx.load_from_string(conv.f32_model).ir_version == helper.find_min_ir_version_for([helper.make_opsetid("", 17)])
        ort_piece = onnx.load_from_string(conv.ort_model).graph  # ONNX Runtime's uint8 form of the int8 piece
        assert conv.ort_shift == 128 and {ort_piece.input[0].type.tensor_type.elem_type, ort_piece.output[0].type.tensor_type.elem_type} == {TensorProto.UINT8}
        int8 = bench_models.ort_session(conv.int8_model, 1).run(None, {"x": conv.stored_input})[0]
        real = bench_models.ort_session(conv.f32_model, 1).run(None, {"x": conv.real_input})[0]
        assert int8.shape == real.shape and int8.shape[-1] in (8, 4)
        dequantized = (int8.astype(np.float32) - 3) * np.float32(conv.output_scale)
        inside = (int8 > -128) & (int8 < 127)  # off the saturated ends
        assert np.abs(dequantized - real)[inside].max() <= 2 * conv.output_scale


def test_a_conv_more_than_one_step_from_onnxruntime_is_refused_before_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """conv_thunks raises a BenchError naming the conv when convc's int8 result is two steps from ONNX Runtime's (more
    where ONNX Runtime's own 8-bit products saturate: the check then runs as on an exact host)."""
    conv = bench_models_int8_limits.qdq_convs(_qdq_network(), np.ones((2, 8, 6, 6), np.float32))[1]
    real_ort_thunk = bench_models_int8_limits._ort_thunk

    def two_steps_off(model: bytes, x: np.ndarray, threads: int) -> tuple[Any, np.ndarray]:
        thunk, out = real_ort_thunk(model, x, threads)
        info = np.iinfo(out.dtype)
        return thunk, (out.astype(np.int16) + 2).clip(info.min, int(info.max)).astype(out.dtype)

    monkeypatch.setattr(bench_models_int8_limits, "_ort_thunk", two_steps_off)
    saturates = bench_models_int8_limits.onnxruntime_saturates_u8_by_s8()  # then its own result is already off
    monkeypatch.setattr(bench_models_int8_limits, "onnxruntime_saturates_u8_by_s8", lambda: False)  # the check as on an exact host
    with pytest.raises(bench.BenchError, match=r"^conv2 \(.*\): convc's int8 conv is up to (\d+) steps from ONNX Runtime's") as refused:
        bench_models_int8_limits.conv_thunks(conv, 1)
    steps = int(re.search(r"up to (\d+) steps", str(refused.value)).group(1))  # type: ignore[union-attr]
    assert steps >= 2 if saturates else steps == 2


def test_int8_limits_cli_reports_each_networks_conv_sums_beside_the_whole_networks(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """--suite models-limits --int8 on segmentation_style's saved 16x16 export (batch 1): every QDQ conv counted, the
    sums are the per-conv medians times their counts, the ratios are those sums over the networks' medians, and the
    table prints its row and geometric means."""
    from test_bench import save_segmentation_onnx

    pytest.importorskip("torch")
    saved = save_segmentation_onnx(tmp_path, monkeypatch, 16)
    out = tmp_path / "limits.json"
    assert bench.main(["--suite", "models-limits", "--int8", "--platform", "cpu", "--batch", "1", "--budget", "0.02",
                       "--onnx-dir", str(saved), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    (case,) = report["cases"]
    assert (report["suite"], report["int8"], case["name"], case["shape"]) == ("models-limits", True, "segmentation_style", "1x3x16x16")
    assert 0 < case["distinct"] == len(case["conv_ms"]) <= case["convs"] == sum(c["count"] for c in case["conv_ms"])
    for way in bench_models_int8_limits.WAYS:
        assert case["sums"][way] == pytest.approx(sum(c["count"] * c["ms"][way] for c in case["conv_ms"]))
    assert case["ratios"]["convs/ORT net"] == pytest.approx(case["sums"]["convc_int8"] / case["network_ms"]["ort_int8"])
    assert case["ratios"]["net/ORT net"] == pytest.approx(case["network_ms"]["convc_int8"] / case["network_ms"]["ort_int8"])
    printed = capsys.readouterr().out
    assert "convs/ORT net" in printed and any(line.startswith("segmentation_style ") for line in printed.splitlines())
    assert "geometric mean: convs/ORT net " in printed


def test_int8_beside_another_limits_suite_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--suite", "limits", "--int8", "--quick", "--platform", "cpu"]) == 1
    assert capsys.readouterr().err == ("bench: error: --int8 quantizes the networks of --suite models and models-limits "
                                       "(without --without-pass)\n")
