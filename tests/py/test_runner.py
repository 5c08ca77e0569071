"""`convc.run`: compile, run and check from Python on plain arguments, as `convc --run
--check` does from the shell. Expected numbers come from the oracle (`convc.reference`) or
jax.lax, never from another convc run; every run names `platform="cpu"`, so the tests mean
the same on a machine with a GPU. The XLA:CPU guard's own behaviour is in
test_cpu_run_guard.py; here, that its warning reaches the result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import convc
import numpy as np
import pytest
from convc import ConvcError
from convc.reference import evaluate
from convc.runner import check_outputs
from convc.runtime_inputs import random_inputs
from test_cpu_run_guard import CROP_LOW_PAD_HIGH, WARNING, conv_model, guarded, lax_conv

ROOT = Path(__file__).resolve().parents[2]
NHWC = ("NHWC", "HWIO", "NHWC")


def small_net() -> convc.Graph:
    """x -> strided SAME conv with a constant kernel -> relu."""
    b = convc.Builder("net")
    x = b.input("x", (1, 9, 9, 3), "f32")
    w = b.constant("w", np.linspace(-1, 1, 3 * 3 * 3 * 4, dtype=np.float32).reshape(3, 3, 3, 4))
    b.output(b.relu(b.conv(x, w, window_strides=(2, 2), padding="SAME", dimension_numbers=NHWC, name="c"), name="y"))
    return b.build()


def test_run_and_check_equal_the_oracle_on_the_given_inputs(rng: np.random.Generator) -> None:
    graph = small_net()
    before = convc.print_graph(graph)
    x = rng.standard_normal((1, 9, 9, 3)).astype(np.float32)
    result = convc.run(graph, {"x": x}, platform="cpu", check=True)
    (expected,) = evaluate(graph, [x])
    assert result.platform == "cpu" and result.warnings == []
    assert list(result.named_outputs) == ["y"] and result.outputs[0].shape == (1, 5, 5, 4)
    np.testing.assert_allclose(result.named_outputs["y"], expected, rtol=1e-5, atol=1e-5)
    assert result.ok and result.check is not None and result.check.passed
    assert len(result.check.lines) == 1 and result.check.lines[0].startswith("y: max abs error vs jax.lax ")
    assert result.check.lines[0].endswith(" (ok)")
    assert convc.print_graph(graph) == before  # the caller's graph is left as it was


def test_without_check_there_is_no_report() -> None:
    result = convc.run(small_net(), platform="cpu")
    assert result.check is None and result.ok


def test_a_model_path_runs_on_the_seeded_random_inputs_as_the_cli_does(tmp_path: Path) -> None:
    model = ROOT / "examples" / "mobilenet_block.json"
    result = convc.run(model, seed=3, platform="cpu")
    source = convc.load_model(model)
    inputs = random_inputs(source, 3)
    assert all(np.array_equal(got, want) for got, want in zip(result.inputs, inputs, strict=True))
    for got, want in zip(result.outputs, evaluate(source, inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_inputs_by_name_in_order_or_from_an_npz_give_the_same_run(tmp_path: Path, rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 9, 9, 3))  # f64: converted to the input's f32, as --inputs converts
    np.savez(tmp_path / "in.npz", x=x)
    runs = [convc.run(small_net(), inputs, platform="cpu") for inputs in ({"x": x}, [x], tmp_path / "in.npz")]
    assert all(r.inputs[0].dtype == np.float32 for r in runs)
    assert all(np.array_equal(r.outputs[0], runs[0].outputs[0]) for r in runs[1:])


@pytest.mark.parametrize(("inputs", "message"), [
    ({"z": np.zeros((1, 9, 9, 3))}, r"no array named 'x' \(has: z\)"),
    ([np.zeros((1, 9, 9, 3))] * 2, r"2 input arrays for the 1 inputs of the graph"),
    ({"x": np.zeros((1, 9, 9, 4))}, r"array 'x' has shape \[1, 9, 9, 4\], expected \[1, 9, 9, 3\]"),
])
def test_wrong_inputs_are_user_errors(inputs: object, message: str) -> None:
    with pytest.raises(ConvcError, match=message):
        convc.run(small_net(), inputs, platform="cpu")  # type: ignore[arg-type]


def test_max_bytes_refuses_before_running() -> None:
    with pytest.raises(ConvcError, match=r"the inputs of --run would need 972 bytes, over the limit of 100"):
        convc.run(small_net(), platform="cpu", max_bytes=100)


def test_check_reports_a_wrong_output(rng: np.random.Generator) -> None:
    """The check judges the outputs it is given: one tap's worth off is a MISMATCH."""
    graph = small_net()
    result = convc.run(graph, {"x": rng.standard_normal((1, 9, 9, 3)).astype(np.float32)}, platform="cpu")
    wrong = result.outputs[0].copy()
    wrong[0, 2, 2, 1] += 0.5
    report = check_outputs(type(result)(result.graph, result.inputs, [wrong], result.platform), graph)
    assert not report.passed and report.lines[0].startswith("y: max abs error vs jax.lax 0.5 ")
    assert report.lines[0].endswith(" (MISMATCH)")


def test_the_xla_cpu_guard_warning_reaches_the_result_and_the_log(rng: np.random.Generator) -> None:
    graph = convc.load_model_text(json.dumps(conv_model(CROP_LOW_PAD_HIGH)).encode(), "model.json")
    arrays = {"x": rng.standard_normal((1, 15, 6, 8)).astype(np.float32), "w": rng.standard_normal((1, 1, 8, 8)).astype(np.float32)}
    logged: list[str] = []
    result = convc.run(graph, arrays, platform="cpu", target="generic", check=True, log=logged.append)
    np.testing.assert_allclose(result.outputs[0], lax_conv(arrays["x"], arrays["w"], CROP_LOW_PAD_HIGH), rtol=1e-5, atol=1e-5)
    assert result.ok and logged == result.warnings
    if not guarded():
        assert result.warnings == []
        return
    (line,) = result.warnings
    match = WARNING.fullmatch(line)
    assert match is not None, line
    assert (match["where"], match["nodes"], match["emitted"]) == ("model.json:/nodes/0", "'c1' (conv)", "--target generic")


def test_the_cpu_target_needs_no_guard() -> None:
    graph = convc.load_model_text(json.dumps(conv_model(CROP_LOW_PAD_HIGH)).encode(), "model.json")
    assert convc.run(graph, platform="cpu", target="cpu").warnings == []


def test_a_module_for_another_target_runs_with_the_cli_warning() -> None:
    (line,) = convc.run(small_net(), platform="cpu", target="gpu").warnings
    assert line.startswith("convc: warning: --run executes the --target gpu module on PJRT platform cpu (")


def test_the_cpu_target_runs_on_the_cpu_unless_told_otherwise() -> None:
    """With no platform named, a module lowered for the cpu target (which may hold integer
    convs XLA:GPU refuses) runs on XLA:CPU even where PJRT's best platform is a GPU; the
    default rule itself is checked on every machine, the run where a GPU is the default."""
    from convc.compile import platform_for

    assert (platform_for("cpu"), platform_for("gpu"), platform_for("generic"), platform_for(None)) == ("cpu", None, None, None)
    result = convc.run(small_net(), target="cpu")
    assert (result.platform, result.warnings) == ("cpu", [])


def test_a_mesh_needs_its_devices_once_jax_has_started() -> None:
    """In this process JAX started with one CPU device: an 8-device mesh is a located S9 error."""
    import jax

    if len(jax.devices("cpu")) >= 8:
        pytest.skip("this process already has 8 CPU devices")
    model = ROOT / "examples" / "sharded" / "seg3d_block.json"
    with pytest.raises(ConvcError) as info:
        convc.run(model, platform="cpu")
    assert info.value.constraint == "S9" and str(info.value).startswith(f"{model}: error: --run: the mesh needs 8 devices")


SHARDED_RUN = textwrap.dedent("""
    import json, sys
    import convc
    import jax

    result = convc.run(sys.argv[1], platform="cpu", check=True)
    print(json.dumps({"platform": result.platform, "ok": result.ok, "lines": result.check.lines,
                      "devices": len(jax.devices("cpu")), "shapes": [list(o.shape) for o in result.outputs]}))
""")


def test_a_sharded_model_runs_on_its_mesh_in_a_fresh_process() -> None:
    """Before JAX starts, convc.run asks for the mesh's host devices itself, as `convc --run`
    does; the sharded outputs pass the single-device oracle's check."""
    model = ROOT / "examples" / "sharded" / "seg3d_block.json"
    mesh_size = 1
    for size in json.loads(model.read_text())["mesh"].values():
        mesh_size *= size
    done = subprocess.run([sys.executable, "-c", SHARDED_RUN, str(model)], env=dict(os.environ, JAX_PLATFORMS="cpu"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.splitlines()[-1])
    assert (record["platform"], record["ok"], record["devices"]) == ("cpu", True, mesh_size), record
    assert record["lines"] and all(line.endswith("(ok)") for line in record["lines"])


@pytest.mark.parametrize("seed", [-5, 1.5, "3", True])
def test_a_seed_that_is_no_non_negative_integer_is_a_user_error(seed: object) -> None:
    """`--seed` takes what numpy's generators take; from Python a negative or non-integer seed
    was numpy's ValueError (or a silent bool), now a ConvcError [R8]."""
    with pytest.raises(ConvcError) as caught:
        convc.run(small_net(), seed=seed, platform="cpu")  # type: ignore[arg-type]
    assert caught.value.constraint == "R8"
    assert str(caught.value) == f"<input>: error: seed must be a non-negative integer, got {seed!r} [R8]"


def test_too_few_devices_for_a_sharded_executable_is_a_convc_error() -> None:
    """compile_sharded, below convc.run, refuses a mesh larger than the platform with the S9
    ConvcError (TooFewDevicesError, documented), not a RuntimeError."""
    import jax
    from convc.runtime_sharded import TooFewDevicesError, compile_sharded

    found = len(jax.devices("cpu"))
    text = convc.compile_graph(convc.load_model(ROOT / "examples" / "sharded" / "seg3d_block.json"), target="generic")
    with pytest.raises(TooFewDevicesError) as caught:
        compile_sharded(text, found + 1, "cpu")
    assert isinstance(caught.value, ConvcError) and caught.value.constraint == "S9"
    assert str(caught.value).startswith(f"<input>: error: the mesh needs {found + 1} devices; cpu has {found} here")


def test_arrays_that_name_no_input_are_a_warning_in_the_result(rng: np.random.Generator) -> None:
    """As `--inputs` warns on stderr: the extra name is ignored, and said so in `warnings` and the log."""
    x = rng.standard_normal((1, 9, 9, 3)).astype(np.float32)
    logged: list[str] = []
    result = convc.run(small_net(), {"x": x, "y": x}, platform="cpu", log=logged.append)
    assert result.warnings == logged == ["<input>: warning: ignoring array 'y', which names no input of 'net' (inputs: x)"]
    (expected,) = evaluate(small_net(), [x])
    np.testing.assert_allclose(result.outputs[0], expected, rtol=1e-5, atol=1e-5)


def test_printing_a_run_its_check_and_its_graph_shows_a_summary_not_the_arrays(rng: np.random.Generator) -> None:
    """`print(convc.run(...))` printed every input, output and constant element; now names,
    shapes, dtypes, the platform and the check's verdict, one line each. `print(report)`
    prints the --check lines."""
    x = rng.standard_normal((1, 9, 9, 3)).astype(np.float32)
    result = convc.run(small_net(), {"x": x}, platform="cpu", check=True)
    assert repr(result) == ("RunResult(platform='cpu', inputs={'x': f32[1, 9, 9, 3]}, outputs={'y': f32[1, 5, 5, 4]}, "
                            "warnings=0, check='passed')")
    assert repr(result.check) == "CheckReport(passed=True, outputs=1)"
    assert result.check is not None and str(result.check) == result.check.lines[0]
    assert repr(result.graph).startswith("Graph('net', inputs=[%x: tensor<1x9x9x3xf32>], outputs=[%y: tensor<1x5x5x4xf32>], ops=")
    graph = small_net()
    assert repr(graph) == "Graph('net', inputs=[%x: tensor<1x9x9x3xf32>], outputs=[%y: tensor<1x5x5x4xf32>], ops=3)"
    assert repr(graph.ops[0]) == "%w = constant() {'value': <array float32[3, 3, 3, 4]>} : tensor<3x3x3x4xf32>"
