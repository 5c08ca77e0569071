"""Differential tests: every drawn valid model goes through the whole `convc` command line,
for every `--target`, and its outputs are compared with two independent oracles:

- `convc.reference.evaluate`: jax.lax op by op on the *source* graph (no convc pass, no
  convc emitter), compiled by XLA;
- the StableHLO reference interpreter (`convc.mlir.eval_module`) running the module convc
  emitted, which needs no XLA at all (f32 models only; it is slow, so shapes stay tiny).

A disagreement with the first alone points at XLA or the oracle, with both at convc's
lowering. Each target's lowering is also compared with the canonical (generic) one, and
the emitted text must pass MLIR's verifier. A failing example is shrunk and saved to
tests/py/regressions/differential/, which `test_regression_replays` replays forever after.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc import mlir
from convc.passes import TARGETS
from convc.reference import evaluate
from hypothesis import event, given
from hypothesis.control import currently_in_test_context
from strategies import (
    REGRESSIONS,
    budget,
    conv_models,
    dump_regression,
    model_dtypes,
    random_inputs,
    run_cli,
    tolerance,
)


@contextlib.contextmanager
def saved_on_failure(model: dict[str, Any], kind: str = "differential") -> Iterator[None]:
    """Save the (final, shrunk) failing model as a regression file, then re-raise."""
    try:
        yield
    except BaseException:
        path = dump_regression(model, kind)
        if path is not None:
            print(f"failing model saved to {path}")
        raise


def max_error(got: np.ndarray, want: np.ndarray) -> float:
    """Largest |got - want|, where equal infinities (f16 overflow on both sides) count as equal."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (got64 == want64) | (np.isnan(got64) & np.isnan(want64))
    diff = np.where(same, 0.0, np.abs(got64 - want64))
    return float(np.nan_to_num(diff, nan=np.inf).max()) if diff.size else 0.0


def assert_close(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    finite = np.abs(np.asarray(want, np.float64))
    scale = 1.0 + (float(finite[np.isfinite(finite)].max()) if np.isfinite(finite).any() else 0.0)
    error = max_error(got, want)
    assert error <= tol * scale, f"{what}: max abs error {error:.3g} > {tol:.1g} * {scale:.3g}"


def as_saved(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An array read back from an .npz: np.savez keeps bfloat16 as raw 2-byte voids."""
    return array.view(dtype) if array.dtype.kind == "V" else array


class Workdir:
    """A model, its inputs and convc's outputs, in one temporary folder."""

    def __init__(self, root: Path, model: dict[str, Any], seed: int = 0):
        self.root = root
        self.model_path = root / "model.json"
        self.model_path.write_text(json.dumps(model, indent=1))
        self.inputs = random_inputs(model, seed)
        self.inputs_path = root / "inputs.npz"
        np.savez(self.inputs_path, **self.inputs)  # type: ignore[arg-type]  # numpy's stub reads **kwds as allow_pickle

    def compile_and_run(self, target: str) -> tuple[str, dict[str, np.ndarray]]:
        """`convc model.json -o out.mlir --target T --run --inputs ... --outputs ...`."""
        mlir_path, outputs_path = self.root / f"{target}.mlir", self.root / f"{target}.npz"
        result = run_cli([str(self.model_path), "-o", str(mlir_path), "--target", target, "--platform", "cpu",
                          "--run", "--inputs", str(self.inputs_path), "--outputs", str(outputs_path)])
        assert result.code == 0, f"--target {target}: exit {result.code}: {result.stderr}"
        with np.load(outputs_path) as archive:
            outputs = {name: archive[name] for name in archive.files}
        return mlir_path.read_bytes().decode(), outputs  # no newline translation


# stablehlo.convolution output dimension numbers, e.g. `->[0, f, b]`
_CONV_OUTPUT_DIMS = re.compile(r"stablehlo\.convolution\(.*?dim_numbers = \[[^\]]*\]x\[[^\]]*\]->\[([^\]]*)\]")


def interpretable(text: str) -> bool:
    """False where jaxlib's StableHLO interpreter is known to abort (the whole process, via
    LLVM's fatal error): a convolution whose output puts the feature dim before the batch dim
    (openxla/stablehlo#3011). Those modules are checked against jax.lax only."""
    for match in _CONV_OUTPUT_DIMS.finditer(text):
        labels = [label.strip() for label in match.group(1).split(",")]
        if labels.index("f") < labels.index("b"):
            return False
    return True


class _Interpreter:
    """The StableHLO interpreter in a child process: should it abort on some other module,
    the test fails with a message instead of taking pytest down with it."""

    pool: ProcessPoolExecutor | None = None

    @classmethod
    def run(cls, text: str, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if cls.pool is None:
            cls.pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        try:
            return cls.pool.submit(mlir.eval_module, text, arrays).result(timeout=600)
        except BrokenProcessPool:
            cls.pool = None
            raise AssertionError("the StableHLO interpreter aborted on convc's (verified) module") from None


def interpret(text: str, arrays: list[np.ndarray]) -> list[np.ndarray]:
    return _Interpreter.run(text, arrays)


_CONV_PADS = re.compile(r"stablehlo\.convolution\(.*?pad = \[((?:\[-?\d+, -?\d+\](?:, )?)*)\]")


def xla_cpu_misreads(text: str) -> bool:
    """Whether a module holds a convolution XLA:CPU computes wrongly: a spatial dim with
    negative low and positive high padding (openxla/xla#48713; reads past its input).
    XLA's results for such a module are not evidence either way."""
    for match in _CONV_PADS.finditer(text):
        rows = [tuple(int(v) for v in row.split(",")) for row in re.findall(r"\[(-?\d+, -?\d+)\]", match.group(1))]
        if any(lo < 0 < hi for lo, hi in rows):
            return True
    return False


def record(what: str) -> None:
    """A hypothesis statistics event (`--hypothesis-show-statistics`), when inside a property test."""
    if currently_in_test_context():
        event(what)


def lax_reference(source: convc.Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """jax.lax's outputs. The oracle applies every pad its convs (its vjps' and
    lax.conv_transpose's included) would crop with lax.pad, so its lowering never holds a conv
    XLA:CPU misreads (`xla_cpu_misreads`); each model checks that it stays so."""
    import jax
    from convc.reference import lax_function

    lowered = jax.jit(lax_function(source)).lower(*inputs).as_text()
    assert not xla_cpu_misreads(lowered), "convc.reference handed XLA a conv XLA:CPU misreads (openxla/xla#48713)"
    return evaluate(source, inputs)


def check_model(model: dict[str, Any], seed: int = 0) -> None:
    """The whole differential check of one valid model (see the module docstring).

    XLA results of convc's modules are compared only where XLA:CPU computes their
    convolutions correctly (the oracle's always: `lax_reference`); the `cpu` target must
    always be such a module (cpu-crop-negative-padding), and the interpreter checks every f32
    module regardless."""
    tol = tolerance(model)
    with tempfile.TemporaryDirectory() as tmp:
        work = Workdir(Path(tmp), model, seed)
        source = convc.load_model(work.model_path)
        ordered = [work.inputs[v.name] for v in source.inputs]
        names = list(dict.fromkeys(v.name for v in source.outputs))
        expected = dict(zip([v.name for v in source.outputs], lax_reference(source, ordered), strict=True))
        baseline: dict[str, np.ndarray] | None = None  # the canonical (generic) lowering's, if XLA runs it right
        for target in TARGETS:
            text, outputs = work.compile_and_run(target)
            mlir.verify_stablehlo(text)
            assert sorted(outputs) == sorted(names)
            trusted = not xla_cpu_misreads(text)
            assert trusted or target != "cpu", "the cpu target emitted a conv XLA:CPU misreads (openxla/xla#48713)"
            record(f"XLA results trusted: --target {target} {trusted}")
            for name in names:
                outputs[name] = as_saved(outputs[name], expected[name].dtype)
                assert outputs[name].dtype == expected[name].dtype, f"{name}: dtype {outputs[name].dtype} != {expected[name].dtype}"
                assert outputs[name].shape == expected[name].shape, f"{name}: shape {outputs[name].shape} != {expected[name].shape}"
                if trusted:
                    assert_close(outputs[name], expected[name], tol, f"--target {target} '{name}' vs jax.lax")
                if trusted and baseline is not None:
                    assert_close(outputs[name], baseline[name], tol, f"--target {target} '{name}' vs --target {TARGETS[0]}")
            if trusted and baseline is None:
                baseline = outputs
            if model_dtypes(model) == {"f32"} and interpretable(text):
                interpreted = interpret(text, ordered)
                for value, got in zip(source.outputs, interpreted, strict=True):
                    if trusted:
                        assert_close(outputs[value.name], got, tol, f"--target {target} '{value.name}' vs StableHLO interpreter")
                    assert_close(expected[value.name], got, tol, f"jax.lax '{value.name}' vs StableHLO interpreter on --target {target}")


@budget(ci=100, soak=2000)
@given(model=conv_models())
def test_cli_matches_both_oracles(model: dict[str, Any]) -> None:
    with saved_on_failure(model):
        check_model(model)


@budget(ci=50, soak=800)
@given(model=conv_models(dtypes=("f32",), max_convs=2))
def test_f32_models_match_the_stablehlo_interpreter(model: dict[str, Any]) -> None:
    """All-f32 models, so the interpreter oracle runs on every one of them."""
    with saved_on_failure(model):
        check_model(model)


@budget(ci=30, soak=400)
@given(model=conv_models(dtypes=("f32",), max_convs=1, max_plain_ops=1, conv_ops=("conv",), padding_kinds=("negative",)))
def test_negative_padding_is_computed_right_on_cpu(model: dict[str, Any]) -> None:
    """Convs that crop low and pad high (XLA:CPU misreads them, openxla/xla#48713): the `cpu`
    target's cpu-crop-negative-padding output must match the interpreter and jax.lax."""
    with saved_on_failure(model):
        check_model(model)


@budget(ci=50, soak=800)
@given(model=conv_models(max_convs=2))
def test_text_ir_round_trip_emits_the_same_module(model: dict[str, Any]) -> None:
    """`--emit convc`, read back by `convc-opt --emit stablehlo`, gives convc's StableHLO exactly;
    `--emit bytecode` serialises every valid model."""
    with saved_on_failure(model), tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "model.json").write_text(json.dumps(model))
        direct = run_cli([str(root / "model.json"), "--target", "generic", "-o", str(root / "direct.mlir")])
        printed = run_cli([str(root / "model.json"), "--target", "generic", "--emit", "convc", "--print-constants-whole", "-o", str(root / "ir.convc")])
        assert direct.code == 0 and printed.code == 0, direct.stderr + printed.stderr
        reparsed = run_cli([str(root / "ir.convc"), "--emit", "stablehlo", "-o", str(root / "reparsed.mlir")], entry="convc-opt")
        assert reparsed.code == 0, reparsed.stderr
        assert (root / "reparsed.mlir").read_text() == (root / "direct.mlir").read_text()
        bytecode = run_cli([str(root / "model.json"), "--emit", "bytecode", "-o", str(root / "model.mlirbc")])
        assert bytecode.code == 0, bytecode.stderr
        assert (root / "model.mlirbc").read_bytes().startswith(b"ML\xefR")


def _console_script() -> list[str]:
    script = shutil.which("convc")
    return [script] if script else [sys.executable, "-c", "import sys; from convc.cli import main; sys.exit(main())"]


@budget(ci=3, soak=30)
@given(model=conv_models(max_convs=2))
def test_console_script_runs_and_checks(model: dict[str, Any]) -> None:
    """A few models through the real `convc` process: `--run --check` passes and the written
    outputs agree with jax.lax."""
    with saved_on_failure(model), tempfile.TemporaryDirectory() as tmp:
        work = Workdir(Path(tmp), model)
        outputs_path = work.root / "out.npz"
        proc = subprocess.run([*_console_script(), str(work.model_path), "--run", "--check", "--platform", "cpu",
                               "--inputs", str(work.inputs_path), "--outputs", str(outputs_path), "-o", str(work.root / "m.mlir")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "MISMATCH" not in proc.stdout and "Traceback" not in proc.stderr
        source = convc.load_model(work.model_path)
        expected = evaluate(source, [work.inputs[v.name] for v in source.inputs])
        with np.load(outputs_path) as archive:
            for value, want in zip(source.outputs, expected, strict=True):
                assert_close(as_saved(archive[value.name], want.dtype), want, tolerance(model), f"'{value.name}'")


def _regression_files(kind: str) -> list[Path]:
    return sorted((REGRESSIONS / kind).glob("*.json"))


@pytest.mark.parametrize("path", _regression_files("differential"), ids=lambda p: p.stem)
def test_regression_replays(path: Path, tmp_path: Path) -> None:
    """Every model a differential failure once shrank to stays fixed, and `--run --check`
    (convc's own comparison, default target) passes on it."""
    check_model(json.loads(path.read_text()))
    result = run_cli([str(path), "--run", "--check", "--platform", "cpu", "-o", str(tmp_path / "out.mlir")])
    assert result.code == 0 and "MISMATCH" not in result.stdout, result.stdout + result.stderr
