"""Output safety: on every failure path an existing `-o` file is byte-for-byte unchanged
(its mode too) and no temporary file is left beside it.

Failures are injected at each stage of `convc model.json -o out.mlir`: reading, parsing,
verifying, a pass that raises or breaks the IR, the emitter (a raising rule, a rule that
writes text MLIR rejects), bytecode serialisation, `--run` (PJRT compile, a `--check`
mismatch, bad `--inputs`, `--max-bytes`), and the write itself (a full disk at write,
flush or fsync time, a failing rename, a directory in the way, a missing folder,
Ctrl-C mid-write, and a real kernel-refused write via RLIMIT_FSIZE in a subprocess).
Injection replaces one function with one that raises, the way the real failure would;
everything else is the real compiler.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc import fileio, mlir, reference, runtime
from convc.emit import stablehlo as emitter
from convc.passes import PASSES
from strategies import CliResult, run_cli

OLD = b"// the previous compile's output\n"
MODEL = {
    "name": "safety",
    "inputs": [{"name": "x", "shape": [1, 2, 5]}],
    "constants": [{"name": "w", "shape": [3, 2, 2], "value": 0.5}],
    "nodes": [{"name": "c", "op": "conv", "inputs": ["x", "w"], "padding": "SAME"},
              {"name": "r", "op": "relu", "inputs": ["c"]}],
    "outputs": ["r"],
}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    (tmp_path / "out.mlir").write_bytes(OLD)
    (tmp_path / "out.mlir").chmod(0o640)
    return tmp_path


def files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def assert_untouched(workdir: Path, result: CliResult, code: int, before: set[str] | None = None) -> None:
    """The failure was reported on one line with `code`, and left no trace in the folder."""
    assert result.code == code, f"exit {result.code}: {result.stderr}"
    if code in (1, 3):
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    out = workdir / "out.mlir"
    assert out.read_bytes() == OLD
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert files(workdir) == (before if before is not None else {"model.json", "out.mlir"}), "a temporary file was left behind"


def compile_to(workdir: Path, *extra: str, model: str = "model.json") -> CliResult:
    return run_cli([str(workdir / model), "-o", str(workdir / "out.mlir"), "--target", "generic", *extra])


def raiser(error: BaseException) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise error
    return fail


# --- the compile itself ---------------------------------------------------------------------


def test_success_replaces_the_file_and_keeps_its_mode(workdir: Path) -> None:
    result = compile_to(workdir)
    assert result.code == 0, result.stderr
    text = (workdir / "out.mlir").read_text()
    mlir.verify_stablehlo(text)
    assert stat.S_IMODE((workdir / "out.mlir").stat().st_mode) == 0o640
    assert files(workdir) == {"model.json", "out.mlir"}


def test_a_new_file_gets_the_umask_default_mode(workdir: Path) -> None:
    """Regression: files were created 0600 (mkstemp's mode), unreadable to anyone else."""
    previous = os.umask(0o022)
    try:
        result = run_cli([str(workdir / "model.json"), "-o", str(workdir / "new.mlir")])
    finally:
        os.umask(previous)
    assert result.code == 0, result.stderr
    assert stat.S_IMODE((workdir / "new.mlir").stat().st_mode) == 0o644


@pytest.mark.parametrize("content", [b"", b"{", b'{"inputs": []}', b"\xff\xfe", b"[" * 100_000])
def test_unreadable_model(workdir: Path, content: bytes) -> None:
    (workdir / "model.json").write_bytes(content)
    assert_untouched(workdir, compile_to(workdir), 1)


def test_missing_model(workdir: Path) -> None:
    assert_untouched(workdir, compile_to(workdir, model="absent.json"), 1)


def test_verifier_error(workdir: Path) -> None:
    bad = json.loads(json.dumps(MODEL))
    bad["nodes"][0]["feature_group_count"] = 2  # the kernel's 2 input features would have to be 1
    (workdir / "model.json").write_text(json.dumps(bad))
    result = compile_to(workdir)
    assert_untouched(workdir, result, 1)
    assert re.search(r":/nodes/0/\S+: error: 'c' \(conv\): .* \[C\d+\]$", result.stderr.strip()), result.stderr


def test_pass_that_raises(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PASSES["resolve-padding"], "run", raiser(RuntimeError("injected pass failure")))
    assert_untouched(workdir, compile_to(workdir), 3)


def test_pass_that_breaks_the_ir(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass manager's verifier catches it: an internal error, nothing written."""
    def corrupt(self: Any, graph: convc.Graph) -> bool:
        graph.ops[-1].result.type = convc.TensorType((7,), "f32")
        return True

    monkeypatch.setattr(PASSES["dce"], "run", corrupt)
    assert_untouched(workdir, compile_to(workdir), 3)


def test_emitter_needs_the_canonical_form(workdir: Path) -> None:
    """A real failure, no injection: without resolve-padding the emitter refuses the SAME conv."""
    assert_untouched(workdir, compile_to(workdir, "-p", "infer-shapes"), 1)


def test_emitter_rule_that_raises(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(emitter.RULES, "relu", raiser(RuntimeError("injected emitter failure")))
    assert_untouched(workdir, compile_to(workdir), 3)


def test_emitted_text_mlir_rejects(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An emitter bug that writes ill-typed StableHLO is caught by MLIR's verifier before -o."""
    def wrong_type(op: convc.Op, ctx: emitter.EmitContext, result: str) -> None:
        ctx.emit(result, f"stablehlo.negate {ctx.use(op.operands[0])} : tensor<9xf32>")

    monkeypatch.setitem(emitter.RULES, "relu", wrong_type)
    result = compile_to(workdir)
    assert_untouched(workdir, result, 3)
    assert "does not verify" in result.stderr


def test_bytecode_serialisation_failure(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mlir, "bound_portable_artifact", raiser(RuntimeError("injected serialiser failure")))
    assert_untouched(workdir, compile_to(workdir, "--emit", "bytecode"), 3)


# --- --run and --check: -o is written only after they succeed -----------------------------------


def test_pjrt_compile_failure(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "compile_stablehlo", raiser(RuntimeError("injected PJRT failure")))
    assert_untouched(workdir, compile_to(workdir, "--run"), 3)


def test_check_mismatch_writes_neither_output(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = reference.evaluate
    monkeypatch.setattr(reference, "evaluate", lambda graph, inputs: [out + 1.0 for out in real(graph, inputs)])
    result = compile_to(workdir, "--check", "--outputs", str(workdir / "outputs.npz"))
    assert_untouched(workdir, result, 1)
    assert "--check" in result.stderr


def test_bad_inputs_archive(workdir: Path) -> None:
    np.savez(workdir / "in.npz", y=np.zeros((1, 2, 5), np.float32))
    before = files(workdir)
    assert_untouched(workdir, compile_to(workdir, "--run", "--inputs", str(workdir / "in.npz")), 1, before)


def test_run_over_the_byte_limit(workdir: Path) -> None:
    result = compile_to(workdir, "--run", "--max-bytes", "16")
    assert_untouched(workdir, result, 1)
    assert "--max-bytes" in result.stderr


def test_outputs_write_failure(workdir: Path) -> None:
    result = compile_to(workdir, "--run", "--outputs", str(workdir / "missing-folder" / "o.npz"))
    assert_untouched(workdir, result, 1)


# --- the write itself ------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["write", "flush", "fsync"])
def test_full_disk(workdir: Path, monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    """ENOSPC from the write, the flush or the fsync of the temporary file."""
    no_space = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if stage == "fsync":
        monkeypatch.setattr(fileio.os, "fsync", raiser(no_space))
    else:
        real_fdopen = fileio.os.fdopen

        def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
            handle = real_fdopen(fd, *args, **kwargs)
            return _Failing(handle, stage, no_space)

        monkeypatch.setattr(fileio.os, "fdopen", fdopen)
    result = compile_to(workdir)
    assert_untouched(workdir, result, 1)
    assert "No space left on device" in result.stderr


class _Failing:
    """A file object whose `method` raises `error` (the rest is the real file)."""

    def __init__(self, handle: Any, method: str, error: OSError):
        self._handle, self._method, self._error = handle, method, error

    def __getattr__(self, name: str) -> Any:
        if name == self._method:
            return raiser(self._error)
        return getattr(self._handle, name)

    def __enter__(self) -> _Failing:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


def test_failing_rename(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fileio.os, "replace", raiser(OSError(errno.EXDEV, os.strerror(errno.EXDEV))))
    assert_untouched(workdir, compile_to(workdir), 1)


def test_interrupt_mid_write(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while writing: exit 130, the old file intact, the temporary file removed."""
    monkeypatch.setattr(fileio.os, "fsync", raiser(KeyboardInterrupt()))
    assert_untouched(workdir, compile_to(workdir), 130)


def test_output_is_a_directory(workdir: Path) -> None:
    (workdir / "out.mlir").unlink()
    (workdir / "out.mlir").mkdir()
    result = compile_to(workdir)
    assert result.code == 1 and len(result.stderr.splitlines()) == 1, result.stderr
    assert files(workdir) == {"model.json", "out.mlir"} and not any((workdir / "out.mlir").iterdir())


def test_output_folder_missing(workdir: Path) -> None:
    result = run_cli([str(workdir / "model.json"), "-o", str(workdir / "nope" / "out.mlir")])
    assert_untouched(workdir, result, 1)


LIMITED_CONVC = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
from convc.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_kernel_refused_write_in_a_real_process(workdir: Path) -> None:
    """No injection at all: the kernel refuses the write (RLIMIT_FSIZE, as a full quota would)."""
    proc = subprocess.run([sys.executable, "-c", LIMITED_CONVC, str(workdir / "model.json"), "-o", str(workdir / "out.mlir")],
                          capture_output=True, text=True, timeout=120)
    assert_untouched(workdir, CliResult(proc.returncode, proc.stdout, proc.stderr), 1)
    assert "cannot write output" in proc.stderr
