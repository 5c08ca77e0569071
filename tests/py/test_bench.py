"""The benchmark suite runs: `--quick` on two tiny cases, in process, and convc's result
matches JAX's; its JSON names the versions and each case's library calls. No timing is
asserted (a benchmark, not a timed test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from convc.tools import bench


def test_quick_suite_runs_and_matches_jax(tmp_path: Path) -> None:
    import jax

    out = tmp_path / "bench.json"
    code = bench.main(["--quick", "--platform", "cpu", "--batch-scale", "2", "--cases", "depthwise3x3,weight_grad_g32",
                       "--budget", "0.05", "--no-peak", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert (report["platform"], report["batch_scale"], report["tolerance"]) == ("cpu", 2, bench.TOLERANCE)
    machine = report["machine"]
    assert (machine["convc"], machine["jax"], machine["platform"]) == (version("convc"), jax.__version__, "cpu")
    assert machine["device_kind"] == jax.devices("cpu")[0].device_kind
    names = [case["name"] for case in report["cases"]]
    assert names == ["depthwise3x3", "weight_grad_g32"]
    assert report["cases"][0]["shape"] == "forward 3x3 2x14x14x32->32 G32"  # --quick's batch 1, x2
    for case in report["cases"]:
        assert case["max_error_vs_jax"] <= bench.TOLERANCE
        assert set(case["ms"]) >= {"convc", "jax"}
        if case["torch_error_vs_jax"] is not None:
            assert case["torch_error_vs_jax"] <= bench.TOLERANCE
        assert set(case["custom_calls"]) == {"convc", "jax"}
        assert all(isinstance(target, str) for calls in case["custom_calls"].values() for target in calls)
    assert report["geomean_convc_over_jax"] > 0


def test_batch_scale_multiplies_every_batch() -> None:
    plain = bench.selected_cases(bench.parse_args([]))
    scaled = bench.selected_cases(bench.parse_args(["--batch-scale", "32"]))
    assert [c.batch * 32 for c in plain] == [c.batch for c in scaled]
    assert [c.flops() * 32 for c in plain] == [c.flops() for c in scaled]


def test_custom_call_targets_of_literal_hlo() -> None:
    """Distinct targets, sorted; other quoted attributes and op names are not targets."""
    hlo = """
  %cudnn-conv.1 = (f32[3,3,64,64]{3,2,1,0}, u8[0]{0}) custom-call(f32[8,56,56,64]{3,2,1,0} %p0, f32[8,56,56,64]{3,2,1,0} %p1), window={size=56x56 pad=1_1x1_1}, dim_labels=b01f_o01i->01bf, custom_call_target="__cudnn$convBackwardFilter", metadata={op_name="custom_call_target=\\"fake\\""}
  %cudnn-conv.2 = (f32[8,56,56,64]{3,2,1,0}, u8[0]{0}) custom-call(%a, %b), custom_call_target="__cudnn$convBackwardInput", backend_config={"cudnn_conv_backend_config":{}}
  %cudnn-conv.3 = (f32[8,56,56,64]{3,2,1,0}, u8[0]{0}) custom-call(%c, %d), custom_call_target="__cudnn$convBackwardFilter"
  %convolution = f32[8,56,56,64]{3,2,1,0} convolution(%e, %f), window={size=3x3}, dim_labels=b01f_01io->b01f
"""
    assert bench.custom_call_targets(hlo) == ["__cudnn$convBackwardFilter", "__cudnn$convBackwardInput"]
    assert bench.custom_call_targets("%c = f32[2]{0} convolution(%a, %b)") == []


def test_table_lists_library_calls_only_when_there_are_some() -> None:
    def result(name: str, calls: dict[str, list[str]]) -> bench.CaseResult:
        return bench.CaseResult(name, "forward", 1.0, {"convc": 1.0, "jax": 1.0}, {}, {}, 6, {"convc": 1.0}, 1.0, None,
                                0.0, None, custom_calls=calls)

    on_cpu = bench.format_table([result("dense3x3", {"convc": [], "jax": []})])
    assert "library calls" not in on_cpu
    on_gpu = bench.format_table([result("input_grad_s2", {"convc": ["__cudnn$convBackwardInput"], "jax": []})])
    assert on_gpu.splitlines()[-1].split() == ["input_grad_s2", "convc:", "__cudnn$convBackwardInput", "jax:", "-"]


def test_custom_call_targets_of_compiled_cpu_hlo() -> None:
    """XLA:CPU's compiled Cholesky calls LAPACK: the parser finds that call in real HLO text."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    x = jax.device_put(np.eye(4, dtype=np.float32) * 2, jax.devices("cpu")[0])
    text = jax.jit(jnp.linalg.cholesky).lower(x).compile().as_text() or ""
    targets = bench.custom_call_targets(text)
    assert targets and all(t.startswith("lapack_") and "potrf" in t for t in targets), targets


def test_gpu_platform_without_a_gpu_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    from convc.runtime import available_platforms

    if "gpu" in available_platforms():
        pytest.skip("this machine has a GPU")
    assert bench.main(["--platform", "gpu", "--quick", "--no-peak", "--cases", "conv1x1"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "bench: error: --platform gpu: no gpu device is available to PJRT here (found: cpu)\n"


def test_every_case_builds_the_same_shapes_in_convc_and_jax() -> None:
    """Each case's convc model and JAX function agree on the result shape (full sizes,
    traced abstractly: nothing is compiled or run)."""
    import convc
    import jax

    for spec in bench.selected_cases(bench.parse_args([])):
        graph = bench.convc_graph(spec)
        shapes = [jax.ShapeDtypeStruct(v.type.shape, "float32") for v in graph.inputs]
        expected = jax.eval_shape(bench.jax_function(spec), *shapes)
        assert graph.outputs[0].type.shape == expected.shape, spec.name
        convc.compile_graph(graph, target="cpu")  # every case lowers for cpu and verifies


def test_sharding_bench_counts_exactly_the_analytic_collectives(tmp_path: Path) -> None:
    """bench_sharding --quick, compile only: halos and the kernel all-reduce move exactly
    their analytic bytes on 2, 4 and 8 host devices, and the batch-split step's per-device
    memory is within 1.15x of a single device's over N."""
    out = tmp_path / "rows.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    completed = subprocess.run([sys.executable, "-m", "convc.tools.bench_sharding", "--quick", "--repeats", "0", "--json", str(out)],
                               env=env, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    rows = json.loads(out.read_text())
    assert {(r["workload"], r["devices"]) for r in rows} == {(w, n) for w in ("spatial-3d", "dp-weight-grad") for n in (1, 2, 4, 8)}
    for row in rows:
        if row["devices"] > 1:
            assert row["collective_bytes"] == row["analytic_bytes"], row
        if row["workload"] == "dp-weight-grad":
            assert row["per_device_bytes"] <= 1.15 * row["ideal_bytes"], row


def test_quick_train_suite_runs_and_matches_jax(tmp_path: Path) -> None:
    """--suite train --quick: the five training steps (convc.grad against jax.vjp and PyTorch
    autograd) run in process, and every output and gradient matches JAX's."""
    out = tmp_path / "train.json"
    code = bench.main(["--suite", "train", "--quick", "--platform", "cpu", "--budget", "0.05", "--no-peak", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["suite"] == "train"
    names = [case["name"] for case in report["cases"]]
    assert names == ["train_resnet_basic", "train_resnext_g32", "train_mobilenet_dws", "train_conv3d", "train_dcgan_gen"]
    for case in report["cases"]:
        assert case["max_error_vs_jax"] <= bench.TOLERANCE, case["name"]
        if case["torch_error_vs_jax"] is not None:
            assert case["torch_error_vs_jax"] <= bench.TOLERANCE, case["name"]


def test_every_train_step_is_the_gradient_graph_jax_computes() -> None:
    """Each full-size training step's convc graph has the inputs and results of JAX's step
    (x, parameters, cotangent -> output, dx, dparameters), by shape (traced abstractly)."""
    import jax
    from convc.tools import bench_train

    for spec in bench.selected_cases(bench.parse_args(["--suite", "train"])):
        step = bench_train.convc_step(spec)
        assert [v.name for v in step.inputs][-1].endswith(".grad")
        shapes = [jax.ShapeDtypeStruct(v.type.shape, "float32") for v in step.inputs]
        expected = jax.eval_shape(bench_train.jax_step(spec), *shapes)
        assert [tuple(v.type.shape) for v in step.outputs] == [tuple(e.shape) for e in expected], spec.name


def test_quick_models_suite_checks_against_onnxruntime(tmp_path: Path) -> None:
    """--suite models --quick on one network at batch 1: the ONNX export is imported, compiled
    and run, convc's (and PyTorch's) output was compared with ONNX Runtime's within the
    suite's tolerance, and the JSON carries every reported field, --profile's lowerings and
    census among them."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from convc.tools import bench_models, bench_profile

    out = tmp_path / "models.json"
    code = bench.main(["--suite", "models", "--quick", "--platform", "cpu", "--target", "cpu", "--batch", "1",
                       "--cases", "mobilenet_v2", "--budget", "0.05", "--profile", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert (report["suite"], report["input_size"], report["batches"]) == ("models", bench_models.QUICK_SIZE, [1])
    assert report["networks_from"] in ("torchvision", "fallback")
    assert report["machine"]["threads"] == os.cpu_count()
    assert report["sgemm_peak_gflops"] > 0  # the machine's speed, beside the ratios
    [case] = report["cases"]
    assert case["name"].startswith("mobilenet_v2") and (case["batch"], case["shape"]) == (1, "1x3x64x64")
    assert case["checked"] == ["convc", "torch"]
    assert case["max_error_vs_ort"] <= bench_models.TOLERANCE
    assert case["torch_error_vs_ort"] <= bench_models.TOLERANCE
    assert set(case["ms"]) == {"convc", "ort", "torch"}
    assert case["import_s"] > 0 and case["compile_s"] > 0 and case["onnx_nodes"] > 0
    assert case["ratio_vs_ort"] == case["ms"]["convc"] / case["ms"]["ort"]
    assert report["geomean_convc_over_ort"] == pytest.approx(case["ratio_vs_ort"])
    assert case["profile"]["lowerings"]["convs"] > 0 and case["profile"]["census"]  # --profile's census
    ort_profile = case["ort_profile"]  # ... and ONNX Runtime's own, of the same model
    assert ort_profile["runs"] == bench_profile.TRACED_CALLS and ort_profile["times_ms"]["Conv"] > 0 and ort_profile["slowest"]


def test_onnxruntime_sessions_of_the_suites_stop_their_threads_spinning_when_a_run_returns() -> None:
    """Every suite's ONNX Runtime session (bench_models.ort_session) has `session.force_spinning_stop` set: its
    threads would otherwise spin for tens of ms after each run on the cores the next runtime timed uses."""
    pytest.importorskip("onnxruntime")
    from convc.tools import bench_models
    from onnx import TensorProto, helper
    from onnx_files import make_model

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = make_model(graph, 17).SerializeToString()
    options = bench_models.ort_session(model, 2).get_session_options()
    assert options.get_session_config_entry("session.force_spinning_stop") == "1" and options.intra_op_num_threads == 2


def test_models_suite_without_pass_times_the_pipeline_without_it(tmp_path: Path) -> None:
    """--without-pass cpu-layout-nhwc on one network: convc is compiled a second time without
    that pass, checked against ONNX Runtime and timed beside the rest; the report gives the
    ratio and the table a line for it."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    out = tmp_path / "models.json"
    code = bench.main(["--suite", "models", "--quick", "--platform", "cpu", "--target", "cpu", "--batch", "1", "--size", "32",
                       "--cases", "resnet18", "--budget", "0.2", "--no-peak",
                       "--without-pass", "cpu-layout-nhwc", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    (case,) = report["cases"]
    assert report["without_pass"] == "cpu-layout-nhwc"
    assert case["checked"] == ["convc", "torch", "convc_without"] and case["max_error_vs_ort"] <= 1e-4
    assert case["ratio_vs_without"] == pytest.approx(case["ms"]["convc"] / case["ms"]["convc_without"])
    assert "convc with the pass / without it (--without-pass)" in report["table"]


def test_models_suite_segmentation_net_is_checked_on_its_out_tensor() -> None:
    """The segmentation fallback (an LR-ASPP-shaped net returning {'out': ...}, as torchvision's
    do) runs through the suite's `run_model` on its 'out' tensor, full-size (21 classes at the
    input's 32x32, after two bilinear Resizes): convc's and PyTorch's outputs agree with ONNX
    Runtime's (a shape that differed would be an infinite error)."""
    pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    from convc.tools import bench_models

    spec = bench_models.ModelSpec("segmentation_style", "fallback", 1, (1, 3, 32, 32))
    result = bench_models.run_model(spec, "cpu", 0.01, True, 1)
    assert result.max_error_vs_ort <= bench_models.TOLERANCE and result.torch_error_vs_ort is not None
    assert result.torch_error_vs_ort <= bench_models.TOLERANCE and result.checked == ["convc", "torch"]
    with torch.no_grad():
        assert tuple(bench_models.build_module("segmentation_style")(torch.zeros(1, 3, 32, 32)).shape) == (1, 21, 32, 32)


def test_without_pass_names_a_pass_of_the_pipeline() -> None:
    """--without-pass with a pass the target's default pipeline does not run: one line, exit 1."""
    from convc.tools import bench_models

    with pytest.raises(bench.BenchError, match="'cpu-layout-nhwc' is not in the generic target's default pipeline"):
        bench_models.pipeline_without("generic", "cpu-layout-nhwc")


def test_models_suite_without_torch_is_one_line_exit_1_from_the_command_line() -> None:
    """`python -m convc.tools.bench --suite models --no-torch`: the networks come from PyTorch,
    so the run refuses in one line, exit 1 (through __main__, where the suites' BenchError
    must be the class main() catches)."""
    result = subprocess.run([sys.executable, "-m", "convc.tools.bench", "--suite", "models", "--no-torch", "--quick",
                             "--platform", "cpu"], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr == "bench: error: --suite models exports its networks from PyTorch; --no-torch leaves nothing to export\n"


# --- --profile (tools/bench_profile.py) ----------------------------------------------------

PROFILED_HLO = """HloModule m, is_scheduled=true

%fused_computation (param_0: f32[64,4], param_1: f32[4,8]) -> f32[64,8] {
  %param_0 = f32[64,4]{1,0} parameter(0)
  %param_1 = f32[4,8]{1,0} parameter(1)
  ROOT %dot.1 = f32[64,8]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%fused_computation.1 (param_0.2: f32[64,8]) -> f32[1,8,8,8] {
  %param_0.2 = f32[64,8]{1,0} parameter(0)
  %constant.0 = f32[] constant(0)
  %broadcast.3 = f32[64,8]{1,0} broadcast(%constant.0), dimensions={}
  %relu.1 = f32[64,8]{1,0} maximum(%param_0.2, %broadcast.3)
  ROOT %bitcast.2 = f32[1,8,8,8]{3,2,1,0} bitcast(%relu.1)
}

ENTRY %main.1 (x.1: f32[1,8,8,4], w.1: f32[4,8]) -> (f32[1,8,8,8], f32[8,8]) {
  %x.1 = f32[1,8,8,4]{3,2,1,0} parameter(0), metadata={op_name="x"}
  %w.1 = f32[4,8]{1,0} parameter(1)
  %bitcast = f32[64,4]{1,0} bitcast(%x.1)
  %ynn_fusion = f32[64,8]{1,0} fusion(%bitcast, %w.1), kind=kCustom, calls=%fused_computation, backend_config={"outer_dimension_partitions":[],"fusion_config":{"kind":"__ynn_fusion"}}
  %relu_fusion = f32[1,8,8,8]{3,2,1,0} fusion(%ynn_fusion), kind=kLoop, calls=%fused_computation.1
  %conv.3 = f32[1,8,8,8]{3,2,1,0} convolution(%relu_fusion, %relu_fusion), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %transpose.4 = f32[8,8]{0,1} transpose(%w.1), dimensions={1,0}
  ROOT %tuple.5 = (f32[1,8,8,8]{3,2,1,0}, /*index=1*/f32[8,8]{0,1}) tuple(%conv.3, %transpose.4)
}
"""


def test_hlo_census_lists_the_entry_ops_that_work_and_names_fusions_by_their_heaviest_op() -> None:
    """parse_hlo keeps the entry computation's working ops in order (not parameters, bitcasts,
    tuples), names a fusion by the heaviest op of the computation it calls, with the library
    XLA hands it to, and gives each result's shape without layouts (a tuple of equal arrays
    shortened)."""
    from convc.tools import bench_profile
    from convc.tools.bench_profile import Instruction, parse_hlo

    assert parse_hlo(PROFILED_HLO) == [
        Instruction("ynn_fusion", "fusion(dot, ynn_fusion)", "f32[64,8]", (("dot", 1),)),
        Instruction("relu_fusion", "fusion(elementwise)", "f32[1,8,8,8]"),
        Instruction("conv.3", "convolution", "f32[1,8,8,8]"),
        Instruction("transpose.4", "transpose", "f32[8,8]"),
    ]
    assert bench_profile.short_shape("(f32[7,384], f32[7,384], f32[7,384])") == "(f32[7,384] x3)"
    assert bench_profile.short_shape("(f32[8,64], s32[8,64])") == "(f32[8,64], s32[8,64])"


def test_profile_of_a_tiny_network_agrees_with_its_lowerings_and_times_its_ops() -> None:
    """A 1x1 conv, relu and a 3x3 conv on the cpu target: the pass-by-pass count says the 1x1
    went to cpu-conv-1x1-to-dot, and the optimized HLO runs exactly as many convolutions as
    the count leaves to XLA's conv, at least one dot; the profiler's thunk events time every
    category the census lists (or the profile says the trace has none), the traced calls' wall
    time is kept beside them, and the printed profile names all of it."""
    import convc
    import jax
    import numpy as np
    from convc.compile import Compiler
    from convc.runtime import compile_stablehlo
    from convc.tools import bench_profile

    b = convc.Builder("tiny")
    x = b.input("x", (1, 8, 8, 4))
    layout = ("NHWC", "HWIO", "NHWC")
    y = b.relu(b.conv(x, b.constant("w1", np.full((1, 1, 4, 8), 0.5, np.float32)), dimension_numbers=layout))
    b.output(b.conv(y, b.constant("w2", np.full((3, 3, 8, 8), 0.25, np.float32)), dimension_numbers=layout, padding=((1, 1), (1, 1))))
    graph = b.build()
    compiler = Compiler(target="cpu")
    lowerings = bench_profile.run_passes_counting(compiler, graph)
    assert lowerings["convs"] == 2 and lowerings["cpu-conv-1x1-to-dot"] == 1
    executable = compile_stablehlo(compiler.emit(graph, "stablehlo").decode(), "cpu")
    profile = bench_profile.profile_executable(executable, [jax.device_put(np.ones((1, 8, 8, 4), np.float32), executable.device)], lowerings)
    convolutions = sum(n for category, n in profile.census.items() if "convolution" in category)
    assert convolutions == lowerings[bench_profile.XLA] + lowerings["xla_made_by_rewrites"]
    assert sum(n for category, n in profile.census.items() if category == "dot" or category.startswith("fusion(dot")) >= 1
    if profile.times_ms:
        assert set(profile.times_ms) <= set(profile.census) and all(ms >= 0 for ms in profile.times_ms.values())
        assert profile.traced_calls == bench_profile.TRACED_CALLS and profile.slowest and profile.wall_ms > 0
    text = bench_profile.format_profile("tiny", profile.as_dict())
    assert "taken by cpu-conv-1x1-to-dot 1" in text
    assert all(category in text for category in profile.census)
    assert ("thunk time per call" in text) == bool(profile.times_ms)


def test_profile_with_xla_convolutions_prints_the_calls_wall_time_beside_their_launch_times() -> None:
    """XLA:CPU can run its own convolutions asynchronously, and their trace events then time only the launch: a
    profile whose census has a `convolution` prints the traced call's wall time and says where that work went; one
    without prints no such line."""
    from convc.tools import bench_profile

    profile = bench_profile.Profile({"convs": 1, bench_profile.XLA: 1, "xla_made_by_rewrites": 0}, {"convolution": 1, "fusion(elementwise)": 1},
                                    times_ms={"convolution": 0.04, "fusion(elementwise)": 1.0},
                                    slowest=[("convolution.1 convolution f32[8,57,56,32]", 0.04)], traced_calls=5, wall_ms=21.25)
    text = bench_profile.format_profile("one conv", profile.as_dict())
    assert "a traced call took 21.25 ms; XLA's own convolutions can run asynchronously" in text
    profile.census.pop("convolution")
    assert "a traced call took" not in bench_profile.format_profile("no conv", profile.as_dict())


def test_onnxruntime_profile_sums_kernel_events_per_run_after_the_warm_up() -> None:
    """ONNX Runtime's profile events (hand-written, as its JSON spells them): the kernel events of the first model_run
    (the warm-up) are left out, the rest summed per op type and per node and divided by the runs that follow; fence
    events and session events count for nothing; the printed lines name each op type with its share."""
    from convc.tools import bench_profile

    def run(ts: int) -> dict[str, object]:
        return {"cat": "Session", "name": "model_run", "ts": ts, "dur": 90}

    def kernel(node: str, op: str, ts: int, us: int) -> dict[str, object]:
        return {"cat": "Node", "name": f"{node}_kernel_time", "ts": ts, "dur": us,
                "args": {"op_name": op, "output_type_shape": [{"float": [1, 8, 4, 4]}]}}

    events = [run(0), kernel("conv1", "Conv", 10, 5000),  # the warm-up: left out
              run(100), kernel("conv1", "Conv", 110, 600), kernel("relu", "Relu", 120, 100),
              {"cat": "Node", "name": "conv1_fence_before", "ts": 111, "dur": 9999},
              run(200), kernel("conv1", "Conv", 210, 400), kernel("relu", "Relu", 220, 300)]
    profile = bench_profile.ort_kernel_times(events)
    assert profile.runs == 2
    assert profile.times_ms == {"Conv": 0.5, "Relu": 0.2}
    assert profile.slowest == [("Conv conv1 [1, 8, 4, 4]", 0.5), ("Relu relu [1, 8, 4, 4]", 0.2)]
    text = bench_profile.format_ort_profile(profile.as_dict())
    assert "2 runs, 0.70 ms in all): Conv 0.50 ms (71%), Relu 0.20 ms (29%)" in text and "its slowest: Conv conv1" in text
    assert bench_profile.ort_kernel_times(events[:2]).runs == 0  # a warm-up alone: nothing to report


def test_profile_is_for_the_network_suites() -> None:
    """--profile on the conv suite: one line, exit 1."""
    with pytest.raises(bench.BenchError, match="--profile profiles whole networks"):
        bench.run_suite(bench.parse_args(["--profile", "--platform", "cpu", "--quick"]))


# --- --suite train-models (tools/bench_train_models.py) ------------------------------------


def test_quick_train_models_suite_checks_the_dcgan_step_against_torch_autograd(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--suite train-models --quick on the DCGAN generator at batch 1 (target generic: XLA
    compiles it in half the time), with --profile: its five ConvTranspose weights are the
    gradient's inputs, so the step has 14 convs (5 forward, 5 kernel gradients, 4 input
    gradients: the latent needs none), all left to XLA; convc's output and gradients agreed
    with PyTorch autograd's within the suite's tolerance before timing, the JSON carries every
    reported field, and the profile was printed."""
    pytest.importorskip("onnx")
    pytest.importorskip("torch")
    from convc.tools import bench_train_models

    out = tmp_path / "train-models.json"
    code = bench.main(["--suite", "train-models", "--quick", "--platform", "cpu", "--target", "generic", "--batch", "1", "--cases", "dcgan",
                       "--budget", "0.05", "--torch-threads", "1", "--profile", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert (report["suite"], report["batches"], report["tolerance"]) == ("train-models", [1], bench_train_models.TOLERANCE)
    [case] = report["cases"]
    assert (case["name"], case["source"], case["shape"]) == ("dcgan_generator", "here", "1x100x1x1 ngf8")
    assert case["wrt"] == 5 and case["weights"] == 16 * (100 * 64 + 64 * 32 + 32 * 16 + 16 * 8 + 8 * 3)  # 4 x 4 kernels
    assert case["max_error_vs_torch"] <= bench_train_models.TOLERANCE
    assert set(case["ms"]) == {"convc", "torch"} and case["ratio_vs_torch"] == case["ms"]["convc"] / case["ms"]["torch"]
    assert report["geomean_convc_over_torch"] == pytest.approx(case["ratio_vs_torch"])
    assert case["profile"]["lowerings"] == {"convs": 14, "xla": 14, "xla_made_by_rewrites": 0}
    assert "profile of dcgan_generator batch 1:" in capsys.readouterr().out


def test_step_error_names_the_worst_tensor() -> None:
    """The gradient check compares every tensor relative to its own largest value and names
    the worst; a NaN is the worst."""
    torch = pytest.importorskip("torch")
    import numpy as np
    from convc.tools.bench_train_models import step_error

    theirs = [torch.tensor([1.0, 2.0]), torch.tensor([100.0, 0.0])]
    assert step_error([np.array([1.0, 2.0]), np.array([100.0, 1.0])], theirs, ["y", "w.grad"]) == (0.01, "w.grad")
    assert step_error([np.array([1.0, np.nan]), np.array([100.0, 0.0])], theirs, ["y", "w.grad"])[1] == "y"


def test_train_models_suite_without_torch_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """--suite train-models --no-torch: the steps come from PyTorch and are checked against its
    autograd, so the run refuses in one line, exit 1."""
    assert bench.main(["--suite", "train-models", "--no-torch", "--quick", "--platform", "cpu"]) == 1
    assert capsys.readouterr().err.startswith("bench: error: --suite train-models exports its networks from PyTorch")


def save_segmentation_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int) -> Path:
    """`--save-onnx` of segmentation_style's float export (size x size, batch 1) into tmp_path/onnx, torchvision's
    networks set aside; the directory."""
    from convc.tools import bench_models

    monkeypatch.setattr(bench_models, "has_torchvision", lambda: False)
    saved = tmp_path / "onnx"
    assert bench.main(["--suite", "models", "--platform", "cpu", "--batch", "1", "--size", str(size), "--cases", "segmentation_style",
                       "--save-onnx", str(saved)]) == 0
    return saved


def test_models_suite_runs_saved_onnx_files_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--save-onnx writes segmentation_style's export (32x32, batch 1) and a manifest, timing nothing; --onnx-dir
    then runs that file with torch and torchvision unimportable: convc is checked against ONNX Runtime and timed
    beside it, and the table has no PyTorch figure and says why."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from convc.tools import bench_models

    saved = save_segmentation_onnx(tmp_path, monkeypatch, 32)
    manifest = json.loads((saved / bench_models.MANIFEST).read_text())
    [entry] = manifest["networks"]
    assert (entry["name"], entry["batch"], entry["input_shape"]) == ("segmentation_style", 1, [1, 3, 32, 32])
    assert (saved / entry["file"]).stat().st_size == entry["bytes"] > 0
    assert "run them with --onnx-dir" in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError from here on
    monkeypatch.setitem(sys.modules, "torchvision", None)
    out = tmp_path / "models.json"
    assert bench.main(["--suite", "models", "--platform", "cpu", "--target", "cpu", "--batch", "1", "--budget", "0.05",
                       "--onnx-dir", str(saved), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    [case] = report["cases"]
    assert (case["name"], case["shape"], report["input_size"], report["onnx_dir"]) == ("segmentation_style", "1x3x32x32", 32, str(saved))
    assert case["checked"] == ["convc"] and case["max_error_vs_ort"] <= bench_models.TOLERANCE
    assert set(case["ms"]) == {"convc", "ort"} and case["ratio_vs_torch"] is None and report["machine"]["torch"] is None
    assert report["table"].endswith(f"PyTorch not timed: the networks are the ONNX files in {saved} (--onnx-dir)")


@pytest.mark.parametrize(("flags", "message"), [
    (["--onnx-dir", "{tmp}"], "--onnx-dir {tmp}: cannot read manifest.json"),
    (["--onnx-dir", "{tmp}", "--size", "32"], "--onnx-dir {tmp}: the saved files fix the input size; --size 32 does not apply"),
    (["--onnx-dir", "{tmp}", "--save-onnx", "{tmp}"], "--save-onnx writes the files --onnx-dir reads: give one of them"),
    (["--save-onnx", "{tmp}", "--int8"], "--save-onnx writes or reads the networks of --suite models (--save-onnx without --int8)"),
])
def test_onnx_files_flags_misused_are_one_line_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
                                                        message: str) -> None:
    """--onnx-dir on a directory without a manifest, with --size, beside --save-onnx, or --save-onnx with --int8:
    one line, exit 1, nothing run."""
    argv = ["--suite", "models", "--platform", "cpu", *(f.replace("{tmp}", str(tmp_path)) for f in flags)]
    assert bench.main(argv) == 1
    assert capsys.readouterr().err.startswith("bench: error: " + message.replace("{tmp}", str(tmp_path)))


def test_models_suite_with_autotune_chooses_each_conv_by_measurement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--suite models --autotune (a saved segmentation_style export, 32x32): convc compiles the network with
    autotune-conv-lowering, whose choices land in the autotune cache ($XDG_CACHE_HOME here), each under a key that
    says its kernel is a constant (the network's weights); the result is still checked against ONNX Runtime."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from convc.tools import bench_models

    saved = save_segmentation_onnx(tmp_path, monkeypatch, 32)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "models.json"
    assert bench.main(["--suite", "models", "--platform", "cpu", "--target", "cpu", "--batch", "1", "--budget", "0.05",
                       "--onnx-dir", str(saved), "--autotune", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    [case] = report["cases"]
    assert report["autotune"] is True and case["max_error_vs_ort"] <= bench_models.TOLERANCE
    [entries] = json.loads((tmp_path / "cache" / "convc" / "autotune.json").read_text())["devices"].values()
    assert entries and all(key.endswith("; kernel a constant") for key in entries)


@pytest.mark.parametrize("flags", [["--suite", "train-models"], ["--suite", "dw-limit"], ["--suite", "models", "--int8"]])
def test_autotune_on_a_suite_that_compiles_with_the_cost_model_is_one_line_exit_1(flags: list[str],
                                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """--autotune where the suite's convc modules take no autotune pass: refused in one line, exit 1, before any work."""
    assert bench.main([*flags, "--platform", "cpu", "--autotune"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--autotune applies to --suite conv, train and models (not --int8)" in err
