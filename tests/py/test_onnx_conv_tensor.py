"""ONNX converters that need no new convc op: ConvTranspose with every attribute, Pad, Slice,
Split, Expand and Tile, each built with onnx.helper, run through convc (default pipeline,
PJRT on the CPU) and compared with ONNX Runtime on the same inputs; and `--input-shape` on
the command line (`convc.cli.main`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.cli import main as convc_main
from test_onnx_import import _agree, _cli_error, _kinds, _model, _random

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

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


def test_conv_transpose_bad_auto_pad_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An auto_pad ONNX does not define names the node and the attribute [O6]."""
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], auto_pad="SAME_MIDDLE", name="up")
    err = _cli_error(tmp_path, capsys, _model([node], {"x": (1, 2, 4, 4)}, ["y"], {"w": _random((2, 2, 3, 3))}), "O6")
    assert "'up' (ConvTranspose): auto_pad 'SAME_MIDDLE' is not one of" in err
