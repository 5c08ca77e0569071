"""The `convc` command line, both as the installed console script (a subprocess) and
in-process through `convc.cli.main`: exit codes, one-line located diagnostics,
--run/--check/--inputs/--outputs, atomic -o, and constants loaded from .npy/.npz."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from convc import cli, fileio
from convc.passes.dce import DeadCodeElimination
from jax import lax


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


def console_script(name: str) -> str:
    """The installed entry point next to this interpreter (not a shim that may pick another Python)."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"console script '{name}' is not installed")
    return found


def run_subprocess(args: list[str], cwd: Path) -> Result:
    done = subprocess.run([console_script("convc"), *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    return Result(done.returncode, done.stdout, done.stderr)


def run_in_process(args: list[str], capfd: pytest.CaptureFixture[str], cwd: Path) -> Result:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        code = cli.main(args)
    except SystemExit as stop:  # argparse's usage errors
        code = int(stop.code or 0)
    finally:
        os.chdir(old)
    out, err = capfd.readouterr()
    return Result(code, out, err)


Runner = Callable[..., Result]


@pytest.fixture(params=["subprocess", "in-process"])
def convc(request: pytest.FixtureRequest, capfd: pytest.CaptureFixture[str], tmp_path: Path) -> Runner:
    """`convc(*args)` -> Result, run in tmp_path, one way or the other."""
    if request.param == "subprocess":
        return lambda *args: run_subprocess(list(args), tmp_path)
    return lambda *args: run_in_process(list(args), capfd, tmp_path)


@pytest.fixture
def convc_here(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> Runner:
    """In-process only: for tests that inject faults into this process."""
    return lambda *args: run_in_process(list(args), capfd, tmp_path)


KERNEL = (np.arange(54, dtype=np.float32).reshape(3, 2, 3, 3) % 5 - 2) / 4


def tiny_model(**conv_attrs: Any) -> dict[str, Any]:
    """x (1, 2, 5, 5) -> conv with an inline kernel -> relu."""
    return {
        "name": "tiny",
        "inputs": [{"name": "x", "shape": [1, 2, 5, 5], "dtype": "f32"}],
        "constants": [{"name": "w", "shape": [3, 2, 3, 3], "dtype": "f32", "value": KERNEL.tolist()}],
        "nodes": [{"name": "c", "op": "conv", "inputs": ["x", "w"], "padding": "SAME", **conv_attrs},
                  {"name": "y", "op": "relu", "inputs": ["c"]}],
        "outputs": ["y"],
    }


def tiny_oracle(x: np.ndarray, kernel: np.ndarray = KERNEL) -> np.ndarray:
    """HIGHEST: f32 on any device (a GPU's DEFAULT is TF32)."""
    conv = lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(kernel), (1, 1), "SAME", precision=lax.Precision.HIGHEST)
    return np.maximum(np.asarray(conv), 0)


def assert_one_line(text: str) -> str:
    assert "Traceback" not in text
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


# --- exit codes and diagnostics ---------------------------------------------------------------


def test_ok_writes_stablehlo_to_stdout(convc: Runner, write_model: Callable[..., Path]) -> None:
    write_model(tiny_model())
    result = convc("model.json")
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout.startswith("module @tiny {") and "stablehlo.convolution" in result.stdout


USER_ERRORS = [
    pytest.param(tiny_model(feature_group_count=3), r"model\.json:/nodes/0/feature_group_count: error: 'c' \(conv\): .*\[C11\]$",
                 id="constraint"),
    pytest.param(tiny_model(window_strides=[1, 0]), r"model\.json:/nodes/0/window_strides: error: 'c' \(conv\): .*\[C3\]$",
                 id="window-attribute"),
    pytest.param({**tiny_model(), "nodes": [{"name": "c", "op": "conv", "inputs": ["x", "wrong"]}]},
                 r"model\.json:/nodes/0/inputs/1: error: 'c' \(conv\): input 'wrong' is not defined \[J7\]", id="undefined-input"),
    pytest.param({**tiny_model(), "nodes": [{"name": "c", "op": "convv", "inputs": ["x", "w"]}]},
                 r"model\.json:/nodes/0/op: error: 'c': unknown op 'convv' \(did you mean 'conv'\?\) \[A7\]", id="unknown-op"),
]


@pytest.mark.parametrize(("doc", "pattern"), USER_ERRORS)
def test_user_error_is_one_located_line_and_exit_1(convc: Runner, write_model: Callable[..., Path], doc: dict[str, Any],
                                                   pattern: str) -> None:
    write_model(doc)
    result = convc("model.json")
    assert (result.code, result.stdout) == (1, "")
    assert re.fullmatch(pattern, assert_one_line(result.stderr)), result.stderr


def test_invalid_json_points_at_line_and_column(convc: Runner, tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text('{"name": "x",\n  "inputs": [,]}')
    result = convc("broken.json")
    assert result.code == 1
    assert assert_one_line(result.stderr).startswith("broken.json:2:14: error: invalid JSON")


def test_missing_model_is_a_user_error(convc: Runner) -> None:
    result = convc("absent.json")
    assert result.code == 1
    assert assert_one_line(result.stderr).startswith("absent.json: error: cannot read")


@pytest.mark.parametrize("args", [["model.json", "--no-such-flag"], ["model.json", "--emit", "pdf"], []], ids=["flag", "choice", "no-model"])
def test_usage_errors_exit_2(convc: Runner, write_model: Callable[..., Path], args: list[str]) -> None:
    write_model(tiny_model())
    result = convc(*args)
    assert (result.code, result.stdout) == (2, "")
    assert "usage: convc" in result.stderr and "Traceback" not in result.stderr


def test_unknown_pass_is_a_usage_error(convc: Runner, write_model: Callable[..., Path]) -> None:
    write_model(tiny_model())
    result = convc("model.json", "-p", "infer-shapes,resolve-paddin")
    assert result.code == 2
    assert assert_one_line(result.stderr) == "convc: error: unknown pass 'resolve-paddin' (did you mean 'resolve-padding'?)"


def test_internal_error_exits_3_with_one_line_and_no_traceback(convc_here: Runner, write_model: Callable[..., Path],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug inside a pass (injected) is reported as convc's bug; --debug adds the traceback."""

    def broken(self: DeadCodeElimination, graph: Any) -> bool:
        raise RuntimeError("injected fault")

    monkeypatch.setattr(DeadCodeElimination, "run", broken)
    write_model(tiny_model())
    result = convc_here("model.json")
    assert result.code == 3
    line = assert_one_line(result.stderr)
    assert line.startswith("convc: internal error: RuntimeError: injected fault") and "--debug" in line
    debug = convc_here("model.json", "--debug")
    assert debug.code == 3 and "Traceback" in debug.stderr and "injected fault" in debug.stderr


# --- --run, --check, --inputs, --outputs --------------------------------------------------------

RUN_LINE = re.compile(r"(?P<name>\S+): \[(?P<shape>[\d, ]*)\] (?P<dtype>\w+) sum=(?P<sum>\S+) crc32=(?P<crc>[0-9a-f]{8})")


def test_run_with_npz_inputs_and_outputs(convc: Runner, write_model: Callable[..., Path], tmp_path: Path,
                                          rng: np.random.Generator) -> None:
    write_model(tiny_model())
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    result = convc("model.json", "--run", "--platform", "cpu", "--inputs", "in.npz", "--outputs", "out.npz")
    assert (result.code, result.stderr) == (0, "")
    match = RUN_LINE.fullmatch(assert_one_line(result.stdout))
    assert match is not None, result.stdout
    with np.load(tmp_path / "out.npz") as saved:
        assert saved.files == ["y"]
        y = saved["y"]
    np.testing.assert_allclose(y, tiny_oracle(x), rtol=1e-5, atol=1e-5)
    assert (match["name"], match["shape"], match["dtype"]) == ("y", "1, 3, 5, 5", "f32")
    assert int(match["crc"], 16) == zlib.crc32(np.ascontiguousarray(y).tobytes())
    assert float(match["sum"]) == pytest.approx(float(y.astype(np.float64).sum()), rel=1e-5)


def test_run_without_output_flag_prints_no_module(convc: Runner, write_model: Callable[..., Path]) -> None:
    write_model(tiny_model())
    result = convc("model.json", "--run", "--seed", "3")
    assert result.code == 0 and RUN_LINE.fullmatch(assert_one_line(result.stdout))


def test_check_agrees_with_lax(convc: Runner, write_model: Callable[..., Path]) -> None:
    write_model(tiny_model(window_strides=[2, 1], rhs_dilation=[1, 2]))
    result = convc("model.json", "--check", "--target", "cpu", "--platform", "cpu")
    assert result.code == 0, result.stderr
    run_line, check_line = result.stdout.splitlines()
    assert RUN_LINE.fullmatch(run_line)
    assert re.fullmatch(r"y: max abs error vs jax\.lax \S+ \(ok\)", check_line)


def test_inputs_with_a_wrong_shape_is_a_user_error(convc: Runner, write_model: Callable[..., Path], tmp_path: Path) -> None:
    write_model(tiny_model())
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 2, 5, 4), np.float32))
    result = convc("model.json", "--run", "--inputs", "in.npz")
    assert result.code == 1
    assert "in.npz" in assert_one_line(result.stderr) and "shape" in result.stderr


@pytest.mark.parametrize("flags", [["--run"], ["--autotune", "--target", "cpu"]], ids=["run", "autotune"])
@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_a_platform_this_machine_lacks_is_a_user_error(convc: Runner, write_model: Callable[..., Path], tmp_path: Path,
                                                       platform: str, flags: list[str]) -> None:
    """A sound command line on a machine without that device: exit 1 (was 3, "internal
    error"), one line naming the flag and what PJRT found, before anything is compiled or written."""
    from convc.runtime import available_platforms

    found = available_platforms()
    if platform in found:
        pytest.skip(f"this machine has a {platform} device")
    write_model(tiny_model())
    result = convc("model.json", *flags, "--platform", platform, "-o", "out.mlir")
    assert (result.code, result.stdout) == (1, "")
    assert assert_one_line(result.stderr) == (f"convc: error: --platform {platform}: no {platform} device is available "
                                              f"to PJRT here (found: {', '.join(found)}) [R7]")
    assert not (tmp_path / "out.mlir").exists()


# --- atomic -o --------------------------------------------------------------------------------

PREVIOUS = b"previous contents\n"


@pytest.fixture
def existing_output(tmp_path: Path) -> Iterator[Path]:
    """An output file from an earlier run; afterwards no temp file may be left beside it."""
    path = tmp_path / "out" / "model.mlir"
    path.parent.mkdir()
    path.write_bytes(PREVIOUS)
    yield path
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.mlir"], "a temp file was left behind"


def test_output_replaces_the_file_on_success(convc: Runner, write_model: Callable[..., Path], existing_output: Path) -> None:
    write_model(tiny_model())
    assert convc("model.json", "-o", "out/model.mlir").code == 0
    assert existing_output.read_text().startswith("module @tiny")


def test_model_error_leaves_output_untouched(convc: Runner, write_model: Callable[..., Path], existing_output: Path) -> None:
    write_model(tiny_model(feature_group_count=3))
    result = convc("model.json", "-o", "out/model.mlir")
    assert result.code == 1
    assert existing_output.read_bytes() == PREVIOUS


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_failed_write_leaves_output_untouched(convc_here: Runner, write_model: Callable[..., Path], existing_output: Path,
                                              monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    """The disk fails mid-write (injected into os.replace / os.fsync as write_atomic calls them)."""

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, failing, fail)
    write_model(tiny_model())
    result = convc_here("model.json", "-o", "out/model.mlir")
    assert result.code == 1
    assert assert_one_line(result.stderr) == "out/model.mlir: error: cannot write output: No space left on device [I3]"
    assert existing_output.read_bytes() == PREVIOUS


# --- constants from files ----------------------------------------------------------------------


def file_constant_model(kernel_ref: dict[str, Any]) -> dict[str, Any]:
    doc = tiny_model()
    doc["constants"] = [{"name": "w", **kernel_ref}]
    return doc


@pytest.mark.parametrize("form", ["npy", "npz"])
def test_constants_load_from_files_beside_the_model(convc: Runner, write_model: Callable[..., Path], tmp_path: Path,
                                                    rng: np.random.Generator, form: str) -> None:
    kernel = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    weights = tmp_path / "weights"
    weights.mkdir()
    if form == "npy":
        np.save(weights / "w.npy", kernel)
        ref = {"file": "weights/w.npy"}
    else:
        np.savez(weights / "all.npz", other=np.zeros(3), kernel=kernel)
        ref = {"file": "weights/all.npz", "key": "kernel"}
    write_model(file_constant_model(ref))
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    result = convc("model.json", "--check", "--platform", "cpu", "--inputs", "in.npz", "--outputs", "out.npz")
    assert result.code == 0, result.stderr
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_allclose(saved["y"], tiny_oracle(x, kernel), rtol=1e-5, atol=1e-5)


def test_pickled_constant_is_refused(convc: Runner, write_model: Callable[..., Path], tmp_path: Path) -> None:
    np.save(tmp_path / "evil.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    write_model(file_constant_model({"file": "evil.npy"}))
    result = convc("model.json")
    assert result.code == 1
    assert assert_one_line(result.stderr).startswith("model.json:/constants/0/file: error: ")
    assert "pickle" in result.stderr.lower()


@pytest.mark.parametrize("where", ["parent", "absolute"])
def test_constant_outside_the_model_directory_needs_permission(convc: Runner, tmp_path: Path, where: str) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    np.save(tmp_path / "outside.npy", KERNEL)
    ref = "../outside.npy" if where == "parent" else str(tmp_path / "outside.npy")
    (model_dir / "model.json").write_text(json.dumps(file_constant_model({"file": ref})))
    refused = convc("model/model.json")
    assert refused.code == 1
    line = assert_one_line(refused.stderr)
    assert line.startswith("model/model.json:/constants/0/file: error: ") and "--allow-external-data" in line
    allowed = convc("model/model.json", "--allow-external-data")
    assert allowed.code == 0 and allowed.stdout.startswith("module @tiny")


def test_bf16_npz_outputs_read_back_as_bf16_inputs_only(convc: Runner, write_model: Callable[..., Path], tmp_path: Path) -> None:
    """np.savez keeps bfloat16 as raw 2-byte voids: --outputs writes them, --inputs reads them as
    bf16, and refuses them for an f16 input (whose bits they are not)."""
    write_model({"inputs": [{"name": "x", "shape": [3], "dtype": "bf16"}],
                 "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"]})
    np.savez(tmp_path / "in.npz", x=np.array([1.5, -2.0, 3.0], ml_dtypes.bfloat16))
    assert convc("model.json", "--run", "--inputs", "in.npz", "--outputs", "out.npz").code == 0
    with np.load(tmp_path / "out.npz") as saved:
        assert saved["y"].dtype == np.dtype("V2")
        assert saved["y"].view(ml_dtypes.bfloat16).tolist() == [1.5, 0.0, 3.0]
        np.savez(tmp_path / "y.npz", x=saved["y"])
    assert convc("model.json", "--run", "--inputs", "y.npz").code == 0
    write_model({"inputs": [{"name": "x", "shape": [3], "dtype": "f16"}], "outputs": ["x"]})
    result = convc("model.json", "--run", "--inputs", "in.npz")
    assert result.code == 1
    assert re.search(r"in\.npz: .*array 'x' \(\|V2\) cannot be converted to f16: raw 2-byte voids are read only as bf16",
                     assert_one_line(result.stderr))


# --- what a newcomer runs into ----------------------------------------------------------------


def test_a_closed_pipe_ends_convc_quietly(write_model: Callable[..., Path], tmp_path: Path) -> None:
    """`convc ... | head -1`: the reader has gone, so convc stops without a word, with the
    status a shell reports for a tool SIGPIPE ended (128 + 13), not an internal error (3)."""
    write_model(tiny_model())
    proc = subprocess.Popen([console_script("convc"), "model.json", "--emit", "convc"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before convc writes anything: its write finds no reader
    stderr = proc.stderr.read().decode()
    assert (proc.wait(timeout=120), stderr) == (cli.EXIT_BROKEN_PIPE, "")


@pytest.mark.parametrize("tool", ["convc", "convc-opt"])
def test_a_closed_pipe_ends_the_pass_listing_quietly(tool: str) -> None:
    """`convc --list-passes | head -1`, printed while the arguments are parsed, ends as a
    command's output does: quietly, with 128 + SIGPIPE (was a BrokenPipeError traceback).
    (argparse's own --help and --version already ignore a closed pipe.)"""
    argv = [tool, "--list-passes"]
    proc = subprocess.Popen([console_script(argv[0]), *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert (proc.wait(timeout=120), stderr) == (cli.EXIT_BROKEN_PIPE, "")


@pytest.mark.parametrize("flags", [["--outputs", "out.npz"], ["--inputs", "in.npz"], ["--platform", "cpu"], ["--seed", "3"]],
                         ids=["outputs", "inputs", "platform", "seed"])
def test_run_flags_without_run_are_a_usage_error(convc_here: Runner, write_model: Callable[..., Path], tmp_path: Path,
                                                 flags: list[str]) -> None:
    write_model(tiny_model())
    result = convc_here("model.json", *flags)
    assert (result.code, result.stdout) == (2, "")
    assert assert_one_line(result.stderr) == f"convc: error: {flags[0]} needs --run (or --check)"
    assert not (tmp_path / "out.npz").exists()


def test_run_of_a_module_for_another_target_says_so(convc_here: Runner, write_model: Callable[..., Path]) -> None:
    write_model(tiny_model())
    warned = convc_here("model.json", "--target", "gpu", "--platform", "cpu", "--run")
    assert warned.code == 0 and warned.stdout.startswith("y: [1, 3, 5, 5] f32")
    assert re.fullmatch(r"convc: warning: --run executes the --target gpu module on PJRT platform cpu \(.+\)",
                        assert_one_line(warned.stderr)), warned.stderr
    assert convc_here("model.json", "--target", "cpu", "--platform", "cpu", "--run").stderr == ""
    assert convc_here("model.json", "--target", "generic", "--platform", "cpu", "--run").stderr == ""


def test_bytecode_is_not_written_to_a_terminal(write_model: Callable[..., Path], tmp_path: Path) -> None:
    pty = pytest.importorskip("pty")
    write_model(tiny_model())
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([console_script("convc"), "model.json", "--emit", "bytecode"], cwd=tmp_path, stdout=follower,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2
    assert assert_one_line(done.stderr) == ("convc: error: --emit bytecode: refusing to write binary to a terminal; "
                                            "use -o FILE or redirect stdout")
    piped = subprocess.run([console_script("convc"), "model.json", "--emit", "bytecode"], cwd=tmp_path, capture_output=True,
                           timeout=120)
    assert piped.returncode == 0 and piped.stdout.startswith(b"ML\xefR")  # MLIR bytecode magic


@pytest.mark.parametrize("tool", ["convc", "convc-opt"])
def test_version_names_convc_jax_and_jaxlib(tool: str) -> None:
    from importlib.metadata import version

    done = subprocess.run([console_script(tool), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout == f"convc {version('convc')} (jax {version('jax')}, jaxlib {version('jaxlib')})\n"


@pytest.mark.parametrize("argv", [["convc", "--list-passes"], ["convc-opt", "--list-passes"], ["convc-opt", "--help"]],
                         ids=["convc", "convc-opt", "convc-opt-help"])
def test_pass_listing_names_every_pass_with_its_summary_and_options(argv: list[str]) -> None:
    import dataclasses

    from convc.passes import ALL_PASSES

    done = subprocess.run([console_script(argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    for cls in ALL_PASSES:
        row = next(i for i, line in enumerate(lines) if line.split()[:1] == [cls.name])
        assert lines[row].endswith(cls.summary)
        options = [line.split("=")[0].strip() for line in lines[row + 1:row + 1 + len(dataclasses.fields(cls))]]
        assert options == [f.name for f in dataclasses.fields(cls)]


def test_convc_opt_help_offers_only_its_own_flags() -> None:
    done = subprocess.run([console_script("convc-opt"), "--help"], capture_output=True, text=True, timeout=120)
    assert "--run" not in done.stdout and "--elide-constants-larger" in done.stdout


NEWCOMER_MISTAKES = [
    pytest.param({**tiny_model(), "nodes": [{"name": "y", "op": "ReLU", "inputs": ["x"]}]},
                 r"model\.json:/nodes/0/op: error: 'y': unknown op 'ReLU' \(did you mean 'relu'\?\) \[A7\]", id="op-case"),
    pytest.param({**tiny_model(), "inputs": [{"name": "x", "shape": [1, 2, 5, 5], "dtype": "float"}]},
                 r"model\.json:/inputs/0/dtype: error: unknown dtype \"float\" \(did you mean 'f32'\?\); "
                 r"expected one of f32, f16, bf16, f64, i8, i16, i32, i64, ui8 \[J11\]", id="dtype-float"),
    pytest.param({**tiny_model(), "inputs": [{"name": "x", "shape": [1, 5, 5, 2], "dtype": "f32"}]},
                 r"model\.json:/nodes/0/inputs/1: error: 'c' \(conv\): rhs input feature dimension 2 must equal lhs feature "
                 r"dimension 5 / feature_group_count 1 = 5; the shapes fit if lhs dimension 3 \(size 2\) holds the features, not "
                 r"dimension 1: do the dimension_numbers match the data's layout\? \[C14\]", id="nhwc-data-nchw-specs"),
]


@pytest.mark.parametrize(("doc", "pattern"), NEWCOMER_MISTAKES)
def test_newcomer_mistakes_get_a_hint(convc_here: Runner, write_model: Callable[..., Path], doc: dict[str, Any],
                                      pattern: str) -> None:
    write_model(doc)
    result = convc_here("model.json")
    assert (result.code, result.stdout) == (1, "")
    assert re.fullmatch(pattern, assert_one_line(result.stderr)), result.stderr


def test_a_missing_npz_key_lists_the_keys_the_file_has(convc_here: Runner, write_model: Callable[..., Path],
                                                       tmp_path: Path) -> None:
    np.savez(tmp_path / "weights.npz", kernel=KERNEL, bias=np.zeros(3, np.float32))
    write_model(file_constant_model({"file": "weights.npz", "key": "weights"}))
    result = convc_here("model.json")
    assert result.code == 1
    assert assert_one_line(result.stderr) == ("model.json:/constants/0/key: error: 'w' (constant): 'weights.npz' has no array "
                                              "'weights' (has: kernel, bias) [J16]")


@pytest.mark.parametrize("text", ["", "\n  \n"], ids=["empty", "blank"])
def test_an_empty_json_file_is_a_json_error(convc_here: Runner, tmp_path: Path, text: str) -> None:
    (tmp_path / "model.json").write_text(text)
    result = convc_here("model.json")
    assert result.code == 1
    assert assert_one_line(result.stderr) == "model.json:/: error: the file is empty: expected a JSON model object [J1]"


# --- misuse that once ended in an internal error or the wrong exit code -------------------------

GRADIENT_PIPELINE = "grad{wrt=w},canonicalize-dimension-numbers,resolve-padding"  # passes.md's example, no lower-*


@pytest.mark.parametrize("flags", [[], ["--emit", "convc", "--run"]], ids=["emit", "emit-convc-run"])
def test_a_pipeline_that_leaves_a_gradient_op_unlowered_names_the_lowering_pass(convc: Runner, write_model: Callable[..., Path],
                                                                                flags: list[str]) -> None:
    """The kernel gradient's conv_backprop_filter has no StableHLO form: one located line
    naming lower-conv-backprop-filter, exit 1 [E2] (was an internal error, exit 3); --run of
    `--emit convc` output emits StableHLO too and says the same."""
    write_model(tiny_model())
    result = convc("model.json", "-p", GRADIENT_PIPELINE, *flags)
    assert (result.code, result.stdout) == (1, "")
    assert assert_one_line(result.stderr) == (
        "model.json:/nodes/0: error: 'c' (conv): StableHLO has no conv_backprop_filter op: the pipeline must run "
        "lower-conv-backprop-filter (as the default pipelines do) [E2]")


def test_every_op_has_a_stablehlo_form_or_a_registered_lowering_pass() -> None:
    """What E2 relies on: an op the emitter lacks is one a registered pass lowers (LOWERED_BY,
    read from the passes' patterns), and that pass is in every default pipeline."""
    from convc.emit import emits
    from convc.ops import OPS
    from convc.passes import LOWERED_BY, TARGETS, default_pipeline

    assert {kind for kind in OPS if not emits(kind)} == set(LOWERED_BY) == {"conv_transpose", "conv_backprop_input",
                                                                            "conv_backprop_filter"}
    for target in TARGETS:
        assert set(LOWERED_BY.values()) <= set(default_pipeline(target).split(","))


@pytest.mark.parametrize("seed", ["-5", "1.5", "x"])
def test_a_seed_that_is_no_non_negative_integer_is_a_usage_error(convc: Runner, write_model: Callable[..., Path], seed: str) -> None:
    """`--seed -5` was numpy's ValueError as an internal error (exit 3)."""
    write_model(tiny_model())
    result = convc("model.json", "--run", "--seed", seed)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.splitlines()[-1] == f"convc: error: argument --seed: expected a non-negative integer, got '{seed}'"


SHARDED = Path(__file__).resolve().parents[2] / "examples" / "sharded" / "seg3d_block.json"  # mesh data=2, space=4


@pytest.mark.parametrize(("mesh", "code", "line"), [
    pytest.param("data:4", 2, "convc: error: --mesh: expected AXIS=SIZE[,AXIS=SIZE...], got 'data:4'", id="no-equals"),
    pytest.param("data=0,space=4", 2, "convc: error: --mesh: the size of mesh axis 'data' must be a positive integer, got 0",
                 id="size"),
    pytest.param("1d=2", 2, "convc: error: --mesh: mesh axis name '1d' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
                 id="axis-name"),
    pytest.param("data=2,spatial=4", 1, f"{SHARDED}: error: --mesh data=2,spatial=4: axes (data, spatial) differ from the "
                 "model's mesh axes (data, space); --mesh may only change their sizes [S8]", id="model-axes"),
])
def test_a_malformed_mesh_flag_is_a_usage_error_and_a_mesh_the_model_refuses_is_located(convc: Runner, mesh: str, code: int,
                                                                                         line: str) -> None:
    """docs/cli.md's rule: a flag value that does not parse is a malformed command line (exit
    2, no id; was exit 1 [S5]); a well-formed value the model contradicts is the model's
    error, located, with its id (exit 1)."""
    result = convc(str(SHARDED), "--mesh", mesh, "--target", "generic")
    assert (result.code, result.stdout) == (code, "")
    assert assert_one_line(result.stderr) == line


@pytest.mark.parametrize(("args", "error"), [
    (["--target", "tpu"], "unknown target 'tpu' (expected one of generic, cpu, gpu)"),
    (["--pipeline", "dce,bogus"], "unknown pass 'bogus'"),
], ids=["target", "pipeline"])
def test_compile_graph_raises_the_usage_error_the_cli_prints(convc_here: Runner, write_model: Callable[..., Path],
                                                            tmp_path: Path, args: list[str], error: str) -> None:
    """From Python a bad target or pipeline is a ConvcError (a UsageError, no id), not a bare
    ValueError, and reads as the line convc prints for the same request (exit 2)."""
    import convc as library
    from convc.diagnostics import UsageError

    write_model(tiny_model())
    option = {"--target": "target", "--pipeline": "pipeline"}[args[0]]
    with pytest.raises(UsageError) as caught:
        library.compile_graph(library.load_model(tmp_path / "model.json"), **{option: args[1]})
    assert isinstance(caught.value, library.ConvcError) and caught.value.constraint is None
    assert str(caught.value) == f"convc: error: {error}"
    if option == "pipeline":  # --target's choices are argparse's own
        result = convc_here("model.json", *args)
        assert (result.code, assert_one_line(result.stderr)) == (2, str(caught.value))


def two_weight_net() -> Any:
    """x -> multiply by w1 -> add w2: names of more than one character, as most models' are."""
    import convc as library

    b = library.Builder("net")
    x = b.input("x", (2, 3))
    w1 = b.constant("w1", np.full((2, 3), 0.5, np.float32))
    w2 = b.constant("w2", np.ones((2, 3), np.float32))
    b.output(b.add(b.multiply(x, w1, name="p"), w2, name="y"))
    return b.build()


def test_grad_takes_one_name_or_the_comma_separated_names_grad_takes() -> None:
    """`convc.grad(g, wrt="w1")` iterated the string ('w', '1': G1); a string is now one name
    or a comma-separated list, the same step as the list of those names."""
    import convc as library

    graph = two_weight_net()
    one = library.grad(graph, wrt="w1")
    assert [v.name for v in one.outputs] == ["y", "w1.grad"]
    listed = library.print_graph(library.grad(graph, wrt=["x", "w2"]))
    assert library.print_graph(library.grad(graph, wrt="x,w2")) == listed
    assert library.print_graph(library.grad(graph, wrt="x, w2")) == listed


@pytest.mark.parametrize(("entry", "what"), [("value", "the Value 'w1' (pass its name)"), (3, "an object of type int")],
                         ids=["value", "int"])
def test_grad_refuses_a_wrt_entry_that_is_not_a_name(entry: object, what: str) -> None:
    """Refused by name, located at the model (built here, so this file), not a KeyError."""
    import convc as library

    graph = two_weight_net()
    given = next(v for v in graph.values() if v.name == "w1") if entry == "value" else entry
    with pytest.raises(library.ConvcError) as caught:
        library.grad(graph, wrt=["x", given])  # type: ignore[list-item]
    assert caught.value.constraint == "G1"
    assert str(caught.value) == f"{__file__}: error: grad: wrt takes the names of inputs or constants, got {what} [G1]"


def test_grad_names_are_comma_separated_in_the_flag_and_in_the_pass(convc: Runner, write_model: Callable[..., Path]) -> None:
    """One separator: `--grad x,w` and `-p "grad{wrt=x,w},..."` give the same module; `x:w`
    (the pass's old separator) is a G1 error that says names take ','."""
    from convc.passes import default_pipeline

    write_model(tiny_model())
    flag = convc("model.json", "--grad", "x,w", "--target", "generic")
    piped = convc("model.json", "-p", f"grad{{wrt=x,w}},{default_pipeline('generic')}")
    assert (flag.code, piped.code) == (0, 0) and flag.stdout == piped.stdout and "w.grad" in flag.stdout
    for args in (["--grad", "x:w"], ["-p", "grad{wrt=x:w}"]):
        result = convc("model.json", *args)
        assert (result.code, result.stdout) == (1, "")
        assert assert_one_line(result.stderr) == ("model.json: error: grad: wrt names 'x:w', which is no value of 'tiny'; "
                                                  "names are separated by ',': x,w [G1]")


@pytest.mark.parametrize(("emit", "line"), [
    ("stablehlo", "out:3:{col}: error: this is StableHLO (MLIR, as convc emits it), not a convc model: convc reads JSON models "
                  "and convc IR (what --emit convc writes) [X11]"),
    ("bytecode", "out: error: input is MLIR bytecode (what --emit bytecode writes), not a convc model: convc reads JSON models "
                 "and convc IR text [I2]"),
], ids=["stablehlo", "bytecode"])
def test_convcs_own_output_fed_back_says_what_it_is(convc: Runner, write_model: Callable[..., Path], tmp_path: Path, emit: str,
                                                   line: str) -> None:
    """`convc model.json -o out; convc out`: one located line naming the format (was a lexer
    error, X1, at some character of a constant, or 'not UTF-8' for bytecode)."""
    write_model(tiny_model())
    assert convc("model.json", "--emit", emit, "-o", "out").code == 0
    result = convc("out")
    assert (result.code, result.stdout) == (1, "")
    if emit == "stablehlo":  # located at the first op: `%c = stablehlo.convolution(...)` on line 3
        line = line.format(col=(tmp_path / "out").read_text().splitlines()[2].index("stablehlo.") + 1)
    assert assert_one_line(result.stderr) == line


def test_arrays_in_inputs_that_name_no_input_are_warned_about(convc: Runner, write_model: Callable[..., Path],
                                                              tmp_path: Path) -> None:
    """A typo'd or foreign array in --inputs was ignored without a word: now one warning line
    on stderr (docs/diagnostics.md#warnings), and the run goes on with the named arrays."""
    write_model(tiny_model())
    x = np.ones((1, 2, 5, 5), np.float32)
    np.savez(tmp_path / "in.npz", x=x, X=x, bias=np.zeros(3))
    result = convc("model.json", "--run", "--inputs", "in.npz", "--outputs", "out.npz")
    assert result.code == 0 and RUN_LINE.fullmatch(assert_one_line(result.stdout))
    assert assert_one_line(result.stderr) == ("in.npz: warning: ignoring arrays 'X', 'bias', which name no input of 'tiny' "
                                              "(inputs: x)")
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_allclose(saved["y"], tiny_oracle(x), rtol=1e-5, atol=1e-5)
