"""Write a small ONNX model of a normalization and a resize for the importer's lit tests:
`make_onnx_norm_resize.py NAME OUT.onnx` (written as make_onnx.py writes its models)."""

import sys

import make_onnx
import numpy as np
from onnx import helper


def norm_resize() -> tuple[list, dict, dict]:
    """LayerNormalization over the last dim (Scale and B) + a nearest Resize doubling H and W (asymmetric, floor)."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["norm"], axis=-1, epsilon=0.25, name="norm"),
        helper.make_node("Resize", ["norm", "", "scales"], ["y"], mode="nearest", coordinate_transformation_mode="asymmetric",
                         nearest_mode="floor", name="resize"),
    ]
    consts = {"gamma": np.array([1, 2], np.float32), "beta": np.array([0, 1], np.float32),
              "scales": np.array([1, 1, 2, 2], np.float32)}
    return nodes, {"x": [1, 3, 1, 2]}, consts


def group_norm_cubic() -> tuple[list, dict, dict]:
    """Opset 18's GroupNormalization (scale and bias per group) + a cubic Resize doubling W (asymmetric)."""
    nodes = [
        helper.make_node("GroupNormalization", ["x", "gamma", "beta"], ["norm"], num_groups=2, epsilon=0.25, name="norm"),
        helper.make_node("Resize", ["norm", "", "scales"], ["y"], mode="cubic", coordinate_transformation_mode="asymmetric",
                         name="resize"),
    ]
    consts = {"gamma": np.array([1, 2], np.float32), "beta": np.array([0, 1], np.float32),
              "scales": np.array([1, 1, 1, 2], np.float32)}
    return nodes, {"x": [1, 4, 1, 3]}, consts


make_onnx.MODELS["norm_resize"] = norm_resize
make_onnx.MODELS["group_norm_cubic"] = group_norm_cubic
make_onnx.OPSETS["group_norm_cubic"] = 18
make_onnx.OUTPUT_SHAPES["group_norm_cubic"] = [1, 4, 1, 6]  # onnx infers no shape through the deprecated GroupNormalization

if __name__ == "__main__":
    make_onnx.main(*sys.argv[1:])
