"""Differential tests: every drawn valid model goes through the whole `convc` command line,
for every `--target`, and each emitted module gets, besides MLIR's verifier:

- always: its `--run` outputs on XLA:CPU compared with `convc.reference.evaluate` (jax.lax op
  by op on the *source* graph at HIGHEST, accumulating in f64; no convc pass, no convc
  emitter) in dtype, shape and value, and with the canonical (`generic`) target's. Where the
  module holds a conv XLA:CPU misreads (openxla/xla#48713), `--run` executes convc's cropped
  copy of it, and the tally says so;
- where it can run: the StableHLO reference interpreter (`convc.mlir.eval_module`) on the
  emitted module itself, no XLA at all, against both. It runs all-f32 models (it is slow, so
  shapes stay tiny), except modules with a feature-major conv output where the probe
  (`convc.xla_probes`) shows this jaxlib's interpreter aborts on one (openxla/stablehlo#3011).

Every check that runs and every one that is skipped is counted, per test, target and reason,
and printed after the run (`oracle_tally`, conftest's `pytest_terminal_summary`). A
disagreement with jax.lax alone points at XLA or the oracle, with both at convc's lowering.
A failing example is shrunk and saved to tests/py/regressions/differential/, which
`test_regression_replays` replays forever after.
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
import oracle_tally
import pytest
from convc import mlir
from convc.ir import TensorType
from convc.ops import conv_grad
from convc.passes import TARGETS
from convc.reference import TypeDisagreement, evaluate
from convc.verify import infer_type
from convc.xla_probes import interpreter_handles_feature_major_output, xla_cpu_misreads_crop_low_pad_high
from hypothesis import given
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

    def compile_and_run(self, target: str) -> tuple[str, dict[str, np.ndarray], bool]:
        """`convc model.json -o out.mlir --target T --run --inputs ... --outputs ...`: the
        emitted text, the outputs, and whether `--run` executed a cropped copy (its warning)."""
        mlir_path, outputs_path = self.root / f"{target}.mlir", self.root / f"{target}.npz"
        result = run_cli([str(self.model_path), "-o", str(mlir_path), "--target", target, "--platform", "cpu",
                          "--run", "--inputs", str(self.inputs_path), "--outputs", str(outputs_path)])
        assert result.code == 0, f"--target {target}: exit {result.code}: {result.stderr}"
        with np.load(outputs_path) as archive:
            outputs = {name: archive[name] for name in archive.files}
        return mlir_path.read_bytes().decode(), outputs, "running a cropped copy" in result.stderr  # no newline translation


# stablehlo.convolution output dimension numbers, e.g. `->[0, f, b]`
_CONV_OUTPUT_DIMS = re.compile(r"stablehlo\.convolution\(.*?dim_numbers = \[[^\]]*\]x\[[^\]]*\]->\[([^\]]*)\]")


def feature_major_conv_output(text: str) -> bool:
    """Whether a convolution in the module puts its output's feature dim before its batch dim,
    the form some jaxlibs' StableHLO interpreter aborts on (openxla/stablehlo#3011)."""
    for match in _CONV_OUTPUT_DIMS.finditer(text):
        labels = [label.strip() for label in match.group(1).split(",")]
        if labels.index("f") < labels.index("b"):
            return True
    return False


SKIP_BF16 = "StableHLO interpreter: the model holds bf16 (the interpreter's Python binding passes no bf16 array)"
SKIP_ABORTS = ("StableHLO interpreter: a feature-major conv output, which the probe shows this jaxlib's interpreter "
               "aborts on (openxla/stablehlo#3011)")
RAN_EMITTED = "jax.lax vs XLA:CPU on the emitted module"
RAN_CROPPED = "jax.lax vs XLA:CPU on convc's cropped copy (the module holds a conv XLA:CPU misreads, openxla/xla#48713)"
RAN_INTERPRETER = "StableHLO interpreter on the emitted module, vs jax.lax and XLA:CPU"
NO_RUN_OF_EMITTED = "both runs of the emitted module itself (interpreter skipped, XLA:CPU ran the cropped copy)"


def interpreter_skip(model: dict[str, Any], text: str) -> str | None:
    """Why the interpreter oracle does not run on this module (None: it runs): bf16 in the
    model, or a feature-major conv output where the interpreter probe shows an abort."""
    if "bf16" in model_dtypes(model):
        return SKIP_BF16
    if feature_major_conv_output(text) and not interpreter_handles_feature_major_output():
        return SKIP_ABORTS
    return None


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
    Where the probe shows the bug, `--run` executes convc's cropped copy of such a module."""
    for match in _CONV_PADS.finditer(text):
        rows = [tuple(int(v) for v in row.split(",")) for row in re.findall(r"\[(-?\d+, -?\d+)\]", match.group(1))]
        if any(lo < 0 < hi for lo, hi in rows):
            return True
    return False


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
    """The whole differential check of one valid model (see the module docstring), each check
    run or skipped counted in `oracle_tally`."""
    tol = tolerance(model)
    with tempfile.TemporaryDirectory() as tmp:
        work = Workdir(Path(tmp), model, seed)
        source = convc.load_model(work.model_path)
        ordered = [work.inputs[v.name] for v in source.inputs]
        names = list(dict.fromkeys(v.name for v in source.outputs))
        expected = dict(zip([v.name for v in source.outputs], lax_reference(source, ordered), strict=True))
        baseline: dict[str, np.ndarray] | None = None  # the canonical (generic) lowering's
        for target in TARGETS:
            text, outputs, cropped = work.compile_and_run(target)
            mlir.verify_stablehlo(text)
            assert sorted(outputs) == sorted(names)
            misread = xla_cpu_misreads(text)
            assert not misread or target != "cpu", "the cpu target emitted a conv XLA:CPU misreads (openxla/xla#48713)"
            assert cropped == (misread and xla_cpu_misreads_crop_low_pad_high()), \
                f"--target {target}: --run cropped {cropped}, the text holds a misread conv {misread}"
            for name in names:
                outputs[name] = as_saved(outputs[name], expected[name].dtype)
                assert outputs[name].dtype == expected[name].dtype, f"{name}: dtype {outputs[name].dtype} != {expected[name].dtype}"
                assert outputs[name].shape == expected[name].shape, f"{name}: shape {outputs[name].shape} != {expected[name].shape}"
                assert_close(outputs[name], expected[name], tol, f"--target {target} '{name}' vs jax.lax")
                if baseline is not None:
                    assert_close(outputs[name], baseline[name], tol, f"--target {target} '{name}' vs --target {TARGETS[0]}")
            oracle_tally.ran(RAN_CROPPED if cropped else RAN_EMITTED, target)
            baseline = outputs if baseline is None else baseline
            skip = interpreter_skip(model, text)
            if skip is not None:
                oracle_tally.skipped(skip, target)
                if cropped:
                    oracle_tally.skipped(NO_RUN_OF_EMITTED, target)
                continue
            interpreted = interpret(text, ordered)
            for value, got in zip(source.outputs, interpreted, strict=True):
                assert_close(outputs[value.name], got, tol, f"--target {target} '{value.name}' vs StableHLO interpreter")
                assert_close(expected[value.name], got, tol, f"jax.lax '{value.name}' vs StableHLO interpreter on --target {target}")
            oracle_tally.ran(RAN_INTERPRETER, target)


@budget(ci=100, soak=2000)
@given(model=conv_models())
def test_every_target_matches_jax_lax(model: dict[str, Any]) -> None:
    """f32/f16/bf16 models, every target: verified text, outputs equal to jax.lax's (dtype,
    shape, value) and to the generic target's; the interpreter runs on all-f32 models only,
    and not where its probe shows an abort; each skip is tallied."""
    with saved_on_failure(model):
        check_model(model)


@budget(ci=50, soak=800)
@given(model=conv_models(dtypes=("f32",), max_convs=2))
def test_f32_models_match_jax_lax_and_the_interpreter_where_it_runs(model: dict[str, Any]) -> None:
    """All-f32 models, every target: as above, and the StableHLO interpreter on each emitted
    module except those with a feature-major conv output where the probe shows this jaxlib's
    interpreter aborts on one (tallied)."""
    with saved_on_failure(model):
        check_model(model)


@budget(ci=30, soak=400)
@given(model=conv_models(dtypes=("f32",), max_convs=1, max_plain_ops=1, conv_ops=("conv",), padding_kinds=("negative",)))
def test_negative_padding_is_computed_right_on_cpu(model: dict[str, Any]) -> None:
    """Convs with negative pads, some cropping low and padding high (XLA:CPU misreads those,
    openxla/xla#48713): the `cpu` target's cpu-crop-negative-padding output matches jax.lax,
    and the interpreter where it runs (tallied)."""
    with saved_on_failure(model):
        check_model(model)


# conv_backprop_input sized by output_padding (no input_shape): its result size comes from
# the shape rule (`_scatter_sizes`), which the oracle must not share
BACKPROP_INPUT_MODEL: dict[str, Any] = {
    "inputs": [{"name": "g", "shape": [1, 2, 3, 3], "dtype": "f32"}, {"name": "w", "shape": [2, 3, 3, 2], "dtype": "f32"}],
    "nodes": [{"name": "dx", "op": "conv_backprop_input", "inputs": ["g", "w"], "window_strides": [2, 2], "padding": "VALID",
               "output_padding": [1, 0], "dimension_numbers": ["NCHW", "OIHW", "NCHW"]}],
    "outputs": ["dx"],
}


@pytest.fixture
def fresh_type_cache() -> Iterator[None]:
    """convc memoizes inferred types by signature: a mutated shape rule must not meet results
    of the real one, nor leave its own behind for later tests."""
    infer_type.cache_clear()
    yield
    infer_type.cache_clear()


@pytest.mark.usefixtures("fresh_type_cache")
def test_a_wrong_shape_rule_fails_the_differential_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With conv_backprop_input's shape rule mutated to one element too many per spatial dim,
    check_model fails naming the node and both types (the oracle sizes the result from the
    op's attributes, not from convc), and `--check` prints a MISMATCH and exits 1; unmutated,
    both pass."""
    path = tmp_path / "model.json"
    path.write_text(json.dumps(BACKPROP_INPUT_MODEL))
    scatter_sizes = conv_grad._scatter_sizes
    monkeypatch.setattr(conv_grad, "_scatter_sizes", lambda *args: tuple(n + 1 for n in scatter_sizes(*args)))
    with pytest.raises(TypeDisagreement, match=r"node 'dx' \(conv_backprop_input\): convc infers tensor<1x3x9x7xf32>, "
                                               r"jax.lax gives tensor<1x3x8x6xf32>"):
        check_model(BACKPROP_INPUT_MODEL)
    checked = run_cli([str(path), "--check", "--platform", "cpu"])
    assert checked.code == 1 and "convc infers tensor<1x3x9x7xf32>, jax.lax gives tensor<1x3x8x6xf32> (MISMATCH)" in checked.stdout, \
        checked.stdout + checked.stderr
    monkeypatch.undo()
    infer_type.cache_clear()
    check_model(BACKPROP_INPUT_MODEL)
    assert run_cli([str(path), "--check", "--platform", "cpu"]).code == 0


@pytest.mark.usefixtures("fresh_type_cache")
def test_a_wrong_dtype_rule_fails_the_differential_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the transposed convs' type rule mutated to give f16 for f32 operands, check_model
    fails naming the node and both types: the oracle's element type is jax.lax's, not convc's."""
    infer_conv = conv_grad.infer_conv
    monkeypatch.setattr(conv_grad, "infer_conv", lambda view: TensorType(infer_conv(view).shape, "f16"))
    with pytest.raises(TypeDisagreement, match=r"node 'dx' \(conv_backprop_input\): convc infers tensor<1x3x8x6xf16>, "
                                               r"jax.lax gives tensor<1x3x8x6xf32>"):
        check_model(BACKPROP_INPUT_MODEL)


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
