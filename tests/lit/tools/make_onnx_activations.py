"""Write a small ONNX model of activations for the importer's lit tests:
`make_onnx_activations.py NAME OUT.onnx` (written as make_onnx.py writes its models)."""

import sys

import make_onnx
import numpy as np
from onnx import helper


def gated() -> tuple[list, dict, dict]:
    """PRelu (a slope per channel) + HardSwish + Softmax over the channels + Clip to [0, 0.5]."""
    nodes = [
        helper.make_node("PRelu", ["x", "slope"], ["prelu"], name="prelu"),
        helper.make_node("HardSwish", ["prelu"], ["hswish"], name="hswish"),
        helper.make_node("Softmax", ["hswish"], ["soft"], axis=1, name="soft"),
        helper.make_node("Clip", ["soft", "", "half"], ["y"], name="clip"),
    ]
    consts = {"slope": np.array([[[0.25]], [[0.5]], [[0.125]]], np.float32), "half": np.array(0.5, np.float32)}
    return nodes, {"x": [1, 3, 2, 2]}, consts


def smooth() -> tuple[list, dict, dict]:
    """Softplus then Softsign, as tf2onnx writes Keras' softplus and softsign activations."""
    nodes = [
        helper.make_node("Softplus", ["x"], ["plus"], name="plus"),
        helper.make_node("Softsign", ["plus"], ["y"], name="sign"),
    ]
    return nodes, {"x": [2, 3]}, {}


make_onnx.MODELS["gated"] = gated
make_onnx.MODELS["smooth"] = smooth

if __name__ == "__main__":
    make_onnx.main(*sys.argv[1:])
