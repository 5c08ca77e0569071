"""ONNX converters that need no new convc op: ConvTranspose with every attribute, Pad, Slice,
Split, Expand and Tile, each built with onnx.helper, run through convc (default pipeline,
PJRT on the CPU) and compared with ONNX Runtime on the same inputs; and `--input-shape` on
the command line (`convc.cli.main`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from convc.cli import main as convc_main
from test_onnx_import import _agree, _cli_error, _export, _kinds, _model, _random

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

# --- ConvTranspose ----------------------------------------------------------------------------

# (attributes, X shape, W shape [C, M / group, *k]); every case runs with and without B.
CONV_TRANSPOSE_CASES: dict[str, tuple[dict[str, Any], tuple[int, ...], tuple[int, ...]]] = {
    "plain": ({}, (1, 3, 4, 5), (3, 2, 3, 3)),
    "strides_pads": ({"strides": [2, 3], "pads": [1, 0, 0, 2]}, (2, 3, 4, 4), (3, 4, 3, 3)),
    "output_padding": ({"strides": [2, 3], "pads": [1, 1, 0, 1], "output_padding": [1, 2]}, (1, 2, 4, 3), (2, 3, 3, 2)),
    "dilations": ({"dilations": [2, 1], "strides": [2, 2], "pads": [2, 0, 1, 1]}, (1, 2, 3, 4), (2, 2, 3, 3)),
    "group": ({"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}, (1, 4, 4, 5), (4, 3, 3, 2)),
    "depthwise": ({"group": 4, "strides": [2, 2]}, (1, 4, 3, 3), (4, 1, 4, 4)),
    "same_upper": ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 3, 4, 5), (3, 2, 3, 3)),
    "same_lower": ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 3, 4, 5), (3, 2, 3, 3)),
    "same_upper_output_padding": ({"auto_pad": "SAME_UPPER", "strides": [2, 2], "output_padding": [1, 1]}, (1, 2, 3, 4), (2, 2, 3, 3)),
    "same_lower_small_kernel": ({"auto_pad": "SAME_LOWER", "strides": [3, 3]}, (1, 2, 3, 4), (2, 2, 2, 2)),
    "same_upper_dilated": ({"auto_pad": "SAME_UPPER", "strides": [2, 1], "dilations": [2, 2]}, (1, 2, 4, 4), (2, 3, 2, 3)),
    "valid": ({"auto_pad": "VALID", "strides": [2, 2], "kernel_shape": [3, 3]}, (1, 3, 4, 4), (3, 2, 3, 3)),
    "output_shape": ({"strides": [2, 2], "output_shape": [8, 10]}, (1, 4, 4, 5), (4, 3, 3, 2)),
    "output_shape_same_upper": ({"strides": [2, 2], "output_shape": [8, 10], "auto_pad": "SAME_UPPER", "group": 2},
                                (1, 4, 4, 5), (4, 3, 3, 2)),
    "output_shape_above_extent": ({"strides": [3, 2], "output_shape": [13, 11]}, (1, 2, 4, 5), (2, 2, 3, 2)),
    "output_shape_output_padding": ({"strides": [2, 2], "output_shape": [9, 9], "output_padding": [1, 1]}, (1, 2, 4, 4),
                                    (2, 2, 3, 3)),
    "1d": ({"strides": [3], "pads": [1, 2], "output_padding": [2]}, (2, 3, 5), (3, 2, 4)),
    "3d": ({"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1], "dilations": [1, 2, 1], "group": 2}, (1, 4, 3, 3, 4), (4, 1, 3, 2, 3)),
}


@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=str)
def test_conv_transpose_attributes_agree_with_onnxruntime(case: str, bias: bool) -> None:
    """ConvTranspose with group, strides, dilations, pads, output_padding, every auto_pad, output_shape (below,
    at and above the scatter's extent), 1-D to 3-D, with and without B: one conv_backprop_input (+ bias_add)."""
    attrs, x_shape, w_shape = CONV_TRANSPOSE_CASES[case]
    weights = {"w": _random(w_shape, 1), **({"b": _random((w_shape[1] * attrs.get("group", 1),), 2)} if bias else {})}
    node = helper.make_node("ConvTranspose", ["x", "w", *(["b"] if bias else [])], ["y"], **attrs)
    graph = _agree(_model([node], {"x": x_shape}, ["y"], weights))
    assert _kinds(graph).count("conv_backprop_input") == 1 and ("bias_add" in _kinds(graph)) == bias


@pytest.mark.parametrize(("stride", "kernel", "dilation", "pad", "extra", "auto_pad"),
                         [combo for combo in itertools.product((1, 2, 3), (1, 2, 3), (1, 2), (0, 1), (0, 1),
                                                               ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"))
                          if combo[4] < combo[0] and (combo[3] == 0 or combo[5] == "NOTSET")], ids=str)
def test_conv_transpose_grid_agrees_with_onnxruntime(stride: int, kernel: int, dilation: int, pad: int, extra: int,
                                                     auto_pad: str) -> None:
    """A 1-D ConvTranspose over the grid of stride, kernel, dilation, pads, output_padding (below the stride, as
    ONNX Runtime requires) and auto_pad."""
    attrs: dict[str, Any] = {"strides": [stride], "dilations": [dilation], "auto_pad": auto_pad, "output_padding": [extra]}
    if auto_pad == "NOTSET":
        attrs["pads"] = [pad, 0]
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    _agree(_model([node], {"x": (1, 2, 5)}, ["y"], {"w": _random((2, 3, kernel), 1)}))


def _generator() -> Any:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(2)
    return nn.Sequential(  # a DCGAN-style generator at small widths, plus a grouped, dilated, output-padded layer and reflection padding
        nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False), nn.ReLU(),
        nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.ReLU(),
        nn.ConvTranspose2d(8, 8, 3, 2, 1, output_padding=1, groups=2, dilation=2), nn.ReflectionPad2d((1, 2, 0, 1)),
        nn.ConvTranspose2d(8, 3, 3, 1, 1))


def test_pytorch_generator_with_conv_transposes_agrees_with_onnxruntime() -> None:
    """ConvTranspose2d layers (stride, pads, output_padding, groups, dilation, bias) and ReflectionPad2d exported by
    PyTorch's TorchScript exporter (opset 17) agree with ONNX Runtime."""
    graph = _agree(_export(_generator(), (2, 8, 1, 1)))
    assert _kinds(graph).count("conv_backprop_input") == 4


def test_conv_transpose_bad_auto_pad_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An auto_pad ONNX does not define names the node and the attribute [O6]."""
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], auto_pad="SAME_MIDDLE", name="up")
    err = _cli_error(tmp_path, capsys, _model([node], {"x": (1, 2, 4, 4)}, ["y"], {"w": _random((2, 2, 3, 3))}), "O6")
    assert "'up' (ConvTranspose): auto_pad 'SAME_MIDDLE' is not one of" in err


# --- Pad --------------------------------------------------------------------------------------


def _ints(values: list[int]) -> np.ndarray:
    return np.array(values, np.int64)


PAD_CASES: dict[str, tuple[list[int], list[int] | None]] = {  # pads, axes (opset 18)
    "both_sides": ([0, 1, 2, 0, 0, 2, 1, 0], None),
    "crop": ([0, 0, -1, 2, 0, 0, 1, -2], None),
    "crop_one_side_pad_other": ([0, 0, 0, -3, 0, 0, 0, 2], None),
    "large": ([0, 0, 3, 4, 0, 0, 3, 4], None),
    "axes": ([2, -1, 1, 3], [-1, 2]),
}


# reflect pads must stay below the axis' size (ONNX Runtime refuses larger ones too: test_pad_reflect_too_far).
@pytest.mark.parametrize(("case", "mode"), [(case, mode) for case in PAD_CASES for mode in ("constant", "reflect", "edge", "wrap")
                                            if (case, mode) != ("large", "reflect")], ids=str)
def test_pad_modes_agree_with_onnxruntime(case: str, mode: str) -> None:
    """Pad in every mode, negative pads cropping first, pads larger than the axis (edge, wrap, constant) and the
    opset-18 axes input (negative axes too)."""
    pads, axes = PAD_CASES[case]
    inputs = {"pads": _ints(pads), **({"axes": _ints(axes)} if axes else {})}
    node = helper.make_node("Pad", ["x", "pads", "", *(["axes"] if axes else [])], ["y"], mode=mode)
    graph = _agree(_model([node], {"x": (1, 3, 5, 6)}, ["y"], inputs, opset=19))
    assert mode != "constant" or _kinds(graph) == ["pad"]


@pytest.mark.parametrize("opset", [11, 13])
def test_pad_constant_value_input_at_opsets_11_and_13(opset: int) -> None:
    """Pad with pads and constant_value initializers at opset 13, and at opset 11 (brought up to 13 by the version
    converter): one `pad` with that value."""
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"])
    graph = _agree(_model([node], {"x": (2, 3, 4)}, ["y"], {"pads": _ints([0, 1, -1, 0, 2, 3]), "value": np.array(1.5, np.float32)},
                          opset=opset))
    assert _kinds(graph) == ["pad"] and graph.ops[0].attrs["padding_value"] == 1.5


def test_pad_reflect_too_far(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """reflect pads as large as the axis (after the crop) are a located error [O6], as ONNX Runtime refuses them."""
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect", name="mirror")
    model = _model([node], {"x": (2, 5)}, ["y"], {"pads": _ints([0, -2, 0, 3])})
    err = _cli_error(tmp_path, capsys, model, "O6")
    assert "'mirror' (Pad): reflect pads (0, 3) must be below the size 3 of axis 1" in err


# --- Slice ------------------------------------------------------------------------------------

SLICE_CASES: dict[str, tuple[list[int], list[int], list[int] | None, list[int] | None]] = {  # starts, ends, axes, steps
    "plain": ([1, 0], [3, 4], None, None),
    "negative_indices": ([-3, 1], [-1, -1], [1, 2], None),
    "clamped": ([-100, 2], [100, 2**62], [0, 3], None),
    "steps": ([0, 1], [5, 6], [2, 3], [2, 3]),
    "negative_step": ([-1], [-100], [3], [-1]),
    "negative_steps_clamped": ([100, 4], [0, -100], [2, 3], [-2, -3]),
    "mixed_steps": ([3, 0, 4], [0, 2, 1], [1, 2, 3], [-1, 1, -2]),
    "empty": ([2], [2], [3], None),
    "negative_axes": ([1], [-1], [-3], None),
}


@pytest.mark.parametrize("case", SLICE_CASES, ids=str)
def test_slice_agrees_with_onnxruntime(case: str) -> None:
    """Slice with starts, ends, axes and steps as initializers: negative indices and axes, clamping to the bounds,
    positive and negative steps (a reverse, then a strided slice)."""
    starts, ends, axes, steps = SLICE_CASES[case]
    inputs = {"starts": _ints(starts), "ends": _ints(ends), **({"axes": _ints(axes)} if axes else {}),
              **({"steps": _ints(steps)} if steps else {})}
    names = ["x", "starts", "ends", "axes" if axes else "", *(["steps"] if steps else [])]
    graph = _agree(_model([helper.make_node("Slice", names, ["y"])], {"x": (2, 4, 5, 6)}, ["y"], inputs))
    assert ("reverse" in _kinds(graph)) == any(s < 0 for s in steps or [])


# --- Split, Expand, Tile ------------------------------------------------------------------------


@pytest.mark.parametrize(("opset", "outputs", "attrs", "split"), [
    (13, 3, {"axis": 1}, None),
    (13, 3, {"axis": -1}, [1, 5, 1]),
    (13, 2, {"axis": 0}, [0, 2]),
    (18, 3, {"axis": 1, "num_outputs": 3}, None),
    (18, 4, {"axis": 3, "num_outputs": 4}, None),
    (18, 2, {"axis": 2}, [3, 2]),
], ids=str)
def test_split_agrees_with_onnxruntime(opset: int, outputs: int, attrs: dict[str, Any], split: list[int] | None) -> None:
    """Split into equal parts, by a split input (uneven, an empty part) and by num_outputs (opset 18, the last part
    smaller when uneven): one slice per output."""
    names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node("Split", ["x", *(["split"] if split else [])], names, **attrs)
    _agree(_model([node], {"x": (2, 6, 5, 7)}, names, {"split": _ints(split)} if split else {}, opset=opset))


@pytest.mark.parametrize(("x_shape", "shape"), [((3, 1), (2, 3, 4)), ((1, 4, 1), (2, 1, 3)), ((2, 3), (1, 1)), ((5,), (2, 1, 1))],
                         ids=str)
def test_expand_broadcasts_both_ways(x_shape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """Expand to the numpy broadcast of the input's shape and the shape input: one broadcast_in_dim, none where the
    shape changes nothing."""
    graph = _agree(_model([helper.make_node("Expand", ["x", "shape"], ["y"])], {"x": x_shape}, ["y"], {"shape": _ints(list(shape))}))
    same = np.broadcast_shapes(x_shape, shape) == x_shape
    assert _kinds(graph) == (["reshape"] if same else ["broadcast_in_dim"])  # reshape: the output's copy of the input


@pytest.mark.parametrize("repeats", [[2, 1, 3], [1, 1, 1], [1, 4, 1], [3, 2, 2]], ids=str)
def test_tile_agrees_with_onnxruntime(repeats: list[int]) -> None:
    """Tile by repeats known at import: a broadcast_in_dim and a reshape."""
    _agree(_model([helper.make_node("Tile", ["x", "repeats"], ["y"])], {"x": (2, 3, 4)}, ["y"], {"repeats": _ints(repeats)}))


# --- --input-shape and --inputs on the command line ---------------------------------------------


def _dynamic_model(tmp_path: Path) -> Path:
    """A Conv over an input with symbolic batch and height, saved as m.onnx."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    path = tmp_path / "m.onnx"
    path.write_bytes(_model([node], {"x": ("batch", 2, "height", 5)}, ["y"], {"w": _random((3, 2, 3, 3), 1)}))
    return path


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = convc_main(args)
    except SystemExit as stop:  # argparse's usage errors
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_input_shape_flag_sizes_symbolic_dims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--input-shape x=3,2,6,5` makes the emitted module static at that shape, with no note on stderr; without it
    each symbolic dim is 1 and one note says so."""
    path = _dynamic_model(tmp_path)
    code, out, err = _main([str(path), "--emit", "convc", "--input-shape", "x=3,2,6,5"], capsys)
    assert code == 0 and err == ""
    assert "tensor<3x2x6x5xf32>" in out and "tensor<3x3x6x5xf32>" in out
    code, out, err = _main([str(path), "--emit", "convc"], capsys)
    assert code == 0 and "tensor<1x2x1x5xf32>" in out
    assert err.strip() == (f"{path}: note: input 'x' has symbolic dimensions (batch, height), taken as 1 "
                           "(--input-shape or input_shapes= sets them)")


@pytest.mark.parametrize("value", ["x", "x=", "=1,2", "x=1,,2", "x=1,-2,3", "x=a,b"])
def test_input_shape_malformed_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    """A malformed --input-shape value is a usage error (exit 2) naming the expected form; nothing is written."""
    path = _dynamic_model(tmp_path)
    code, out, err = _main([str(path), "--input-shape", value, "-o", str(tmp_path / "out.mlir")], capsys)
    assert code == 2 and "expected NAME=D0,D1,..." in err and not (tmp_path / "out.mlir").exists()


def test_input_shape_repeated_or_not_onnx_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same name twice, or --input-shape on a JSON model, is a usage error (exit 2) in one line."""
    path = _dynamic_model(tmp_path)
    code, _, err = _main([str(path), "--input-shape", "x=1,2,5,5", "--input-shape", "x=2,2,5,5"], capsys)
    assert code == 2 and err.strip() == "convc: error: --input-shape gives 'x' twice"
    json_model = tmp_path / "m.json"
    json_model.write_text('{"inputs": {"x": [1, 2]}, "ops": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"]}')
    code, _, err = _main([str(json_model), "--input-shape", "x=1,2"], capsys)
    assert code == 2 and "--input-shape applies to ONNX models only" in err


def test_input_shape_naming_no_input_or_misfitting_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--input-shape naming no graph input, or giving a shape that contradicts a static dim, is one located line [O7]."""
    path = _dynamic_model(tmp_path)
    err = _cli_error(tmp_path, capsys, path.read_bytes(), "O7", "--input-shape", "z=1,2,5,5")
    assert err.strip() == f"{path}: error: a shape is given for 'z', which is no graph input (inputs: x) [O7]"
    err = _cli_error(tmp_path, capsys, path.read_bytes(), "O7", "--input-shape", "x=1,4,5,5")
    assert "the shape [1, 4, 5, 5] given for 'x' does not fit its declared shape ['?', 2, '?', 5]" in err


def test_inputs_npz_sizes_symbolic_dims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With `--run --inputs FILE.npz` the symbolic dims take the arrays' sizes (no note), and the outputs written by
    --outputs agree with ONNX Runtime on those arrays; --input-shape still wins where both are given."""
    path = _dynamic_model(tmp_path)
    x = _random((4, 2, 7, 5), 3)
    np.savez(tmp_path / "in.npz", x=x)
    code, out, err = _main([str(path), "--run", "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")], capsys)
    assert code == 0 and err == "" and out.startswith("y: [4, 3, 7, 5] f32")
    import onnxruntime as ort

    want = ort.InferenceSession(path.read_bytes(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], want, rtol=1e-4, atol=1e-4)
    code, _, err = _main([str(path), "--run", "--inputs", str(tmp_path / "in.npz"), "--input-shape", "x=1,2,7,5"], capsys)
    assert code == 1 and err.strip().endswith("array 'x' has shape [4, 2, 7, 5], expected [1, 2, 7, 5] [R2]")


def test_convc_opt_takes_input_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`convc-opt m.onnx --input-shape ...` imports at that shape too."""
    from convc.cli import opt_main

    path = _dynamic_model(tmp_path)
    assert opt_main([str(path), "--input-shape", "x=2,2,4,5", "-p", "infer-shapes"]) == 0
    assert "tensor<2x3x4x5xf32>" in capsys.readouterr().out


def test_grad_through_conv_transpose_pad_and_slice_agrees_with_jax_vjp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--grad w --check` on an imported ConvTranspose (grouped, output_padding, bias), reflect Pad, reversed Slice and
    Split: the gradient step agrees with jax.vjp of the imported graph's oracle, and the forward run with ONNX Runtime."""
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["t"], strides=[2, 2], pads=[1, 0, 0, 1], output_padding=[1, 1],
                              group=2),
             helper.make_node("Pad", ["t", "pads"], ["p"], mode="reflect"),
             helper.make_node("Slice", ["p", "starts", "ends", "axes", "steps"], ["s"]),
             helper.make_node("Split", ["s"], ["y0", "y1"], axis=1)]
    inits = {"w": _random((4, 2, 3, 3), 1), "b": _random((4,), 2), "pads": _ints([0, 0, 1, 2, 0, 0, 2, 1]),
             "starts": _ints([-1, 1]), "ends": _ints([-100, 9]), "axes": _ints([2, 3]), "steps": _ints([-2, 3])}
    model = _model(nodes, {"x": (1, 4, 3, 4)}, ["y0", "y1"], inits)
    _agree(model)
    path = tmp_path / "m.onnx"
    path.write_bytes(model)
    code, out, err = _main([str(path), "--check", "--grad", "w,b"], capsys)
    assert code == 0, err
    assert "w.grad: max abs error vs jax.lax" in out and "b.grad: max abs error vs jax.lax" in out


def test_a_constant_node_feeds_ops_evaluated_at_import() -> None:
    """A Constant's output is known at import before anything is built, so an op without a converter reading it
    (ConstantOfShape, as PyTorch's ReflectionPad2d export has) is evaluated there rather than refused [O5]."""
    nodes = [helper.make_node("Constant", [], ["dims"], value_ints=[2, 3]),
             helper.make_node("ConstantOfShape", ["dims"], ["ones"], value=onnx.numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y"])]
    graph = _agree(_model(nodes, {"x": (2, 3)}, ["y"]))
    assert _kinds(graph) == ["constant", "add"]


CLASSIFIER = Path(__file__).resolve().parents[2] / "examples" / "onnx" / "classifier.onnx"


def test_keep_as_inputs_flag_makes_initializers_inputs_that_onnxruntime_is_fed(capsys: pytest.CaptureFixture[str]) -> None:
    """`--keep-as-inputs fc.weight,conv.weight` makes both initializers graph inputs after the model's own, and
    `--run --check` compares with ONNX Runtime given those random draws as its initializers (not the file's weights)."""
    code, out, err = _main([str(CLASSIFIER), "--emit", "convc", "--keep-as-inputs", "fc.weight,conv.weight"], capsys)
    assert code == 0
    assert "func.func @main(%input: tensor<1x3x16x16xf32>, %fc.weight: tensor<10x8xf32>, %conv.weight: tensor<8x3x3x3xf32>)" in out
    code, out, err = _main([str(CLASSIFIER), "--run", "--check", "--keep-as-inputs", "fc.weight,conv.weight"], capsys)
    assert code == 0
    assert [line.split(" max abs error vs ")[1].split()[0] for line in out.splitlines() if "max abs error" in line] == \
        ["jax.lax", "onnxruntime"]


def test_keep_as_inputs_misuse_is_a_usage_error_or_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--keep-as-inputs with no name or on a JSON model is a usage error (exit 2); a name that is no initializer is O7."""
    code, _, err = _main([str(CLASSIFIER), "--keep-as-inputs", ","], capsys)
    assert code == 2 and "expected one or more initializer names" in err
    json_model = tmp_path / "m.json"
    json_model.write_text('{"inputs": {"x": [1, 2]}, "ops": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"]}')
    code, _, err = _main([str(json_model), "--keep-as-inputs", "w"], capsys)
    assert code == 2 and err.strip() == "convc: error: --keep-as-inputs applies to ONNX models only (the others have no initializers)"
    err = _cli_error(tmp_path, capsys, CLASSIFIER.read_bytes(), "O7", "--keep-as-inputs", "nope")
    assert "keep_as_inputs names 'nope', which is no initializer" in err
