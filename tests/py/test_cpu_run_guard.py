"""`--run` on XLA:CPU of a module lowered without cpu-crop-negative-padding.

Some XLA:CPU versions compute convs with negative low and positive high padding from memory
outside the input (openxla/xla#48713). A `--target generic`/`gpu` module may hold such a
conv; when `--run` executes it on the PJRT platform `cpu` and a probe module shows the
installed XLA:CPU misreads it, convc runs a copy cropped by cpu-crop-negative-padding
instead and prints one located warning; where XLA:CPU computes it right, the module runs as
emitted, silently. Either way the emitted module stays what the target asked for and the
numbers are right: the tests expect the warning exactly where the probe says the bug is,
and one of them checks the probe against XLA:CPU itself. Every run names `--platform cpu`,
so the tests mean the same on a machine with a GPU. Expected numbers come from `lax.pad`
(which crops exactly) and a VALID `lax.conv_general_dilated`, or from numpy, never from convc.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.compile import Compiler
from convc.conv_facts import conv_facts, crops, misread_by_xla_cpu
from convc.runner import cropped_for_xla_cpu, needs_xla_cpu_guard, xla_cpu_misread_convs
from convc.runtime import compile_stablehlo
from convc.xla_probes import xla_cpu_misreads_crop_low_pad_high
from jax import lax
from strategies import CliResult, run_cli

X_SHAPE, W_SHAPE = (1, 15, 6, 8), (1, 1, 8, 8)  # NHWC, HWIO: openxla/xla#48713's reproducer shape
CROP_LOW_PAD_HIGH = [[0, 0], [-5, 1]]  # W: drop 5, then one zero
WARNING = re.compile(r"(?P<where>\S+): warning: (?P<nodes>.+): running a cropped copy on XLA:CPU, which misreads "
                     r"negative low \+ positive high padding \(openxla/xla#48713\); "
                     r"the emitted (?P<emitted>--target \w+|-p) module is unchanged")


def conv_model(*paddings: list[list[int]]) -> dict[str, Any]:
    """x -> one NHWC conv per padding (named c1, c2, ...), all outputs; the kernel is an input."""
    nodes = [{"name": f"c{i}", "op": "conv", "inputs": ["x", "w"], "padding": padding,
              "dimension_numbers": ["NHWC", "HWIO", "NHWC"]} for i, padding in enumerate(paddings, 1)]
    return {"name": "guard", "inputs": [{"name": "x", "shape": list(X_SHAPE), "dtype": "f32"},
                                        {"name": "w", "shape": list(W_SHAPE), "dtype": "f32"}],
            "nodes": nodes, "outputs": [node["name"] for node in nodes]}


def lax_conv(x: np.ndarray, w: np.ndarray, padding: list[list[int]]) -> np.ndarray:
    """The conv with its pads applied by lax.pad first: no negative pad reaches XLA's conv."""
    config = [(0, 0, 0), *((lo, hi, 0) for lo, hi in padding), (0, 0, 0)]
    padded = lax.pad(x, np.float32(0), config)
    return np.asarray(lax.conv_general_dilated(padded, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                               precision=lax.Precision.HIGHEST))


@pytest.fixture
def arrays(tmp_path: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random x and w, also saved as in.npz for --inputs."""
    saved = {"x": rng.standard_normal(X_SHAPE).astype(np.float32), "w": rng.standard_normal(W_SHAPE).astype(np.float32)}
    np.savez(tmp_path / "in.npz", **saved)
    return saved


def run(tmp_path: Path, model: dict[str, Any], *flags: str) -> tuple[CliResult, dict[str, np.ndarray]]:
    """`convc model.json --run --platform cpu FLAGS --inputs in.npz --outputs out.npz -o out.mlir` in tmp_path."""
    (tmp_path / "model.json").write_text(json.dumps(model))
    result = run_cli([str(tmp_path / "model.json"), "--run", "--platform", "cpu", *flags, "--inputs", str(tmp_path / "in.npz"),
                      "--outputs", str(tmp_path / "out.npz"), "-o", str(tmp_path / "out.mlir")])
    assert result.code == 0, result.stderr
    with np.load(tmp_path / "out.npz") as saved:
        return result, {name: saved[name] for name in saved.files}


def guard_lines(stderr: str) -> list[str]:
    """stderr without the CLI's line about running a --target gpu module on the cpu platform."""
    return [line for line in stderr.splitlines() if not line.startswith("convc: warning: --run executes the --target")]


def one_warning(stderr: str) -> re.Match[str]:
    """The guard's warning line (and no other, but the platform line)."""
    lines = guard_lines(stderr)
    assert len(lines) == 1, stderr
    match = WARNING.fullmatch(lines[0])
    assert match is not None, lines[0]
    return match


def guarded() -> bool:
    """Whether this jaxlib's XLA:CPU misreads (the probe's answer, which
    test_the_probe_matches_xla_cpu_on_the_unguarded_module checks)."""
    return xla_cpu_misreads_crop_low_pad_high()


def warning_if_guarded(stderr: str) -> re.Match[str] | None:
    """The one warning where the guard applies; where XLA:CPU is right, no output at all."""
    if guarded():
        return one_warning(stderr)
    assert guard_lines(stderr) == [], stderr
    return None


def needs_the_bug() -> None:
    if not guarded():
        pytest.skip("openxla/xla#48713 is fixed in this jaxlib: the guard does not apply, so it prints no warning")


# --- the run guard through the command line ----------------------------------------------------


@pytest.mark.parametrize("target", ["generic", "gpu"])
def test_non_cpu_target_runs_right_warns_where_guarded_and_emits_the_negative_pad(
        tmp_path: Path, arrays: dict[str, np.ndarray], target: str) -> None:
    result, outputs = run(tmp_path, conv_model(CROP_LOW_PAD_HIGH), "--target", target)
    np.testing.assert_allclose(outputs["c1"], lax_conv(arrays["x"], arrays["w"], CROP_LOW_PAD_HIGH), rtol=1e-5, atol=1e-5)
    warning = warning_if_guarded(result.stderr)
    if warning is not None:
        assert warning["where"] == f"{tmp_path / 'model.json'}:/nodes/0"
        assert (warning["nodes"], warning["emitted"]) == ("'c1' (conv)", f"--target {target}")
    emitted = (tmp_path / "out.mlir").read_text()
    assert "pad = [[0, 0], [-5, 1]]" in emitted and "stablehlo.slice" not in emitted


def test_check_passes_where_guarded_or_not(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    """On an XLA:CPU with the bug, unguarded, this --check reported MISMATCH (exit 1)."""
    result, _ = run(tmp_path, conv_model(CROP_LOW_PAD_HIGH), "--target", "generic", "--check")
    assert re.fullmatch(r"c1: max abs error vs jax\.lax \S+ \(ok\)", result.stdout.splitlines()[-1])
    warning_if_guarded(result.stderr)


def test_cpu_target_prints_no_warning(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    result, outputs = run(tmp_path, conv_model(CROP_LOW_PAD_HIGH), "--target", "cpu")
    assert result.stderr == ""
    np.testing.assert_allclose(outputs["c1"], lax_conv(arrays["x"], arrays["w"], CROP_LOW_PAD_HIGH), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding", [[[1, 1], [0, 0]], [[0, 0], [-2, 0]], [[0, 0], [0, -2]], [[-1, -1], [-3, -2]]],
                         ids=["positive", "crop-low-only", "crop-high-only", "crop-both"])
def test_other_pads_run_unguarded_and_right(tmp_path: Path, arrays: dict[str, np.ndarray], padding: list[list[int]]) -> None:
    """No warning, the emitted module itself runs, and XLA:CPU gets it right: the detector is
    no wider than the bug."""
    result, outputs = run(tmp_path, conv_model(padding), "--target", "generic")
    assert result.stderr == ""
    np.testing.assert_allclose(outputs["c1"], lax_conv(arrays["x"], arrays["w"], padding), rtol=1e-5, atol=1e-5)


def test_one_warning_names_every_misread_node(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    paddings = [[[0, 0], [-1, 1]], [[0, 0], [0, 0]], [[-2, 2], [-5, 1]]]
    needs_the_bug()
    result, outputs = run(tmp_path, conv_model(*paddings), "--target", "generic")
    assert one_warning(result.stderr)["nodes"] == "'c1' (conv), 'c3' (conv)"
    for name, padding in zip(("c1", "c2", "c3"), paddings, strict=True):
        np.testing.assert_allclose(outputs[name], lax_conv(arrays["x"], arrays["w"], padding), rtol=1e-5, atol=1e-5)


def test_the_warning_names_three_nodes_and_counts_the_rest(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    needs_the_bug()
    result, _ = run(tmp_path, conv_model(*[CROP_LOW_PAD_HIGH] * 5), "--target", "generic")
    assert one_warning(result.stderr)["nodes"] == "'c1' (conv), 'c2' (conv), 'c3' (conv) and 2 more"


def test_a_pipeline_without_the_crop_is_guarded_too(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    result, outputs = run(tmp_path, conv_model(CROP_LOW_PAD_HIGH), "--target", "cpu",
                          "-p", "infer-shapes,canonicalize-dimension-numbers,resolve-padding")
    warning = warning_if_guarded(result.stderr)
    assert warning is None or warning["emitted"] == "-p"
    np.testing.assert_allclose(outputs["c1"], lax_conv(arrays["x"], arrays["w"], CROP_LOW_PAD_HIGH), rtol=1e-5, atol=1e-5)


def test_a_lowered_gradient_is_named_by_its_source_node(tmp_path: Path, rng: np.random.Generator) -> None:
    """The input gradient of a 1x1 conv padded (2, -1) on W lowers to a conv padded (-2, 1):
    dx[..., :5] = w^T dy[..., 2:], dx[..., 5] = 0."""
    model = {"name": "grad", "inputs": [{"name": "dy", "shape": [1, 8, 6, 7]}, {"name": "w", "shape": [8, 8, 1, 1]}],
             "nodes": [{"name": "dx", "op": "conv_backprop_input", "inputs": ["dy", "w"], "padding": [[0, 0], [2, -1]],
                        "input_shape": [1, 8, 6, 6]}], "outputs": ["dx"]}
    dy, w = rng.standard_normal((1, 8, 6, 7)).astype(np.float32), rng.standard_normal((8, 8, 1, 1)).astype(np.float32)
    np.savez(tmp_path / "in.npz", dy=dy, w=w)
    result, outputs = run(tmp_path, model, "--target", "generic")
    warning = warning_if_guarded(result.stderr)
    assert warning is None or warning["nodes"] == "'dx' (conv_backprop_input)"
    expected = np.zeros((1, 8, 6, 6), np.float32)
    expected[..., :5] = np.einsum("oi,bohw->bihw", w[:, :, 0, 0], dy[..., 2:])
    np.testing.assert_allclose(outputs["dx"], expected, rtol=1e-5, atol=1e-5)


# --- the detector, shared with cpu-crop-negative-padding ---------------------------------------


def lowered(model: dict[str, Any], target: str = "generic") -> convc.Graph:
    return Compiler(target=target).run_passes(convc.load_model_text(json.dumps(model).encode(), "model.json"))


@pytest.mark.parametrize(("padding", "cropped", "misread"), [
    ([[0, 0], [-5, 1]], True, True),
    ([[-1, 3], [0, 0]], True, True),  # high above |low|: computed right, still flagged (see the docs)
    ([[0, 0], [-2, 0]], True, False),
    ([[0, 0], [1, -1]], True, False),
    ([[-1, -1], [0, 0]], True, False),
    ([[1, 1], [0, 2]], False, False),
])
def test_detector_is_the_crop_condition_narrowed_to_the_bug(padding: list[list[int]], cropped: bool, misread: bool) -> None:
    (conv,) = [op for op in lowered(conv_model(padding)).ops if op.kind == "conv"]
    facts = conv_facts(conv)
    assert facts is not None and (crops(facts), misread_by_xla_cpu(conv)) == (cropped, misread)


def test_the_cropped_copy_holds_no_misread_conv_and_leaves_the_graph_alone() -> None:
    graph = lowered(conv_model(CROP_LOW_PAD_HIGH, [[-2, 2], [-1, 1]]))
    before = convc.print_graph(graph)
    copy = cropped_for_xla_cpu(graph)
    assert [op.name for op in xla_cpu_misread_convs(graph)] == ["c1", "c2"]
    assert xla_cpu_misread_convs(copy) == [] and convc.print_graph(graph) == before
    assert [v.name for v in copy.inputs] == ["x", "w"] and [v.name for v in copy.outputs] == ["c1", "c2"]


def test_the_cpu_target_never_keeps_a_misread_conv() -> None:
    assert xla_cpu_misread_convs(lowered(conv_model(CROP_LOW_PAD_HIGH, [[-2, 2], [-1, 1]]), target="cpu")) == []


# --- why: XLA:CPU itself, without the guard, and the probe that decides ---------------------------


def unguarded_run(arrays: dict[str, np.ndarray], graph: convc.Graph) -> tuple[np.ndarray, np.ndarray]:
    """`graph` run directly by PJRT on the CPU, and the right answer."""
    (got,) = compile_stablehlo(convc.compile_graph(graph, pipeline=""), "cpu")(arrays["x"], arrays["w"])
    return got, lax_conv(arrays["x"], arrays["w"], CROP_LOW_PAD_HIGH)


def test_the_probe_matches_xla_cpu_on_the_unguarded_module(arrays: dict[str, np.ndarray]) -> None:
    """The generic module run directly by PJRT, as the guard would not. Where the bug is
    present, XLA:CPU fills the padded column of rows 0-13 from the next row's input, the same
    on every run (row 14's reads past the input, garbage that varies, are left out). The
    probe must say what XLA:CPU does here; a fixed bug is reported, not failed."""
    got, expected = unguarded_run(arrays, lowered(conv_model(CROP_LOW_PAD_HIGH)))
    misreads = not np.allclose(got[0, :14], expected[0, :14], atol=1e-3)
    assert xla_cpu_misreads_crop_low_pad_high() == misreads
    if not misreads:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        warnings.warn("openxla/xla#48713 is fixed in this jaxlib: --run runs such modules as emitted", stacklevel=1)


def test_the_cropped_copy_is_right_on_xla_cpu(arrays: dict[str, np.ndarray]) -> None:
    """The workaround, wherever it runs: exact on every jaxlib, bug or not."""
    got, expected = unguarded_run(arrays, cropped_for_xla_cpu(lowered(conv_model(CROP_LOW_PAD_HIGH))))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_the_guard_applies_only_on_the_cpu_and_only_with_the_bug() -> None:
    graph = lowered(conv_model(CROP_LOW_PAD_HIGH))
    assert needs_xla_cpu_guard(graph, "gpu") == []
    assert [op.name for op in needs_xla_cpu_guard(graph, "cpu")] == (["c1"] if guarded() else [])
