"""Write `classifier.onnx`, the small ONNX model the docs' ONNX commands run on, and
`classifier_batch.npz`, a batch of 4 inputs for it (`--inputs` sizes the dynamic batch).

A PyTorch-style image classifier as its TorchScript exporter writes one: a dynamic batch
(`N`), Conv + BatchNormalization + Relu, MaxPool, GlobalAveragePool, Flatten and a Gemm
whose weight is the initializer `fc.weight` (what `--grad fc.weight` names). Weights are
seeded random draws, so the file is the same on every run:

    python examples/onnx/make_classifier.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, checker, helper, numpy_helper

HERE = Path(__file__).resolve().parent
OPSET = 17  # torch.onnx.export's default


def initializers(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def draw(*shape: int, scale: float = 0.3) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {"conv.weight": draw(8, 3, 3, 3), "conv.bias": draw(8), "bn.weight": 1 + draw(8, scale=0.1),
            "bn.bias": draw(8, scale=0.1), "bn.running_mean": draw(8, scale=0.1), "bn.running_var": 1 + np.abs(draw(8, scale=0.1)),
            "fc.weight": draw(10, 8), "fc.bias": draw(10)}


def classifier() -> bytes:
    weights = initializers(np.random.default_rng(0))
    nodes = [
        helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("BatchNormalization", ["conv", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"], ["bn"],
                         name="bn"),
        helper.make_node("Relu", ["bn"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("GlobalAveragePool", ["pool"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], transB=1, name="fc"),
    ]
    graph = helper.make_graph(nodes, "classifier",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
                              [numpy_helper.from_array(array, name) for name, array in weights.items()])
    opsets = [helper.make_opsetid("", OPSET)]
    # the oldest IR version the opset allows: an ONNX Runtime older than the onnx package refuses newer ones
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets), producer_name="convc examples")
    checker.check_model(model, full_check=True)
    return model.SerializeToString()


if __name__ == "__main__":
    path = HERE / "classifier.onnx"
    path.write_bytes(classifier())
    batch = np.random.default_rng(1).standard_normal((4, 3, 16, 16)).astype(np.float32)
    np.savez(HERE / "classifier_batch.npz", input=batch)
    print(f"wrote {path} and classifier_batch.npz")
