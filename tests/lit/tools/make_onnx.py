"""Write a small ONNX model for the importer's lit tests: `make_onnx.py NAME OUT.onnx`.

The models are built with onnx.helper (deterministic weights), so the tests' CHECK lines can
name the convc ops each ONNX node becomes.
"""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model


def _weights(*shape: int) -> np.ndarray:
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7 - 3) / 8


def classifier() -> tuple[list, dict, dict]:
    """Conv (SAME_UPPER, stride 2) + BatchNormalization + Relu + MaxPool (ceil_mode) + GlobalAveragePool + Flatten + Gemm."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["conv"], auto_pad="SAME_UPPER", strides=[2, 2], name="conv"),
        helper.make_node("BatchNormalization", ["conv", "scale", "shift", "mean", "var"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, name="pool"),
        helper.make_node("GlobalAveragePool", ["pool"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flat"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1, name="fc"),
    ]
    weights = {"w": _weights(4, 3, 3, 3), "b": _weights(4), "scale": _weights(4) + 1, "shift": _weights(4), "mean": _weights(4),
               "var": _weights(4) + 1, "fc_w": _weights(5, 4), "fc_b": _weights(5)}
    return nodes, {"x": [1, 3, 8, 8]}, weights


def flatten_view() -> tuple[list, dict, dict]:
    """PyTorch's x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat on a dynamic batch."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["sizes"], axis=0),
        helper.make_node("Reshape", ["x", "sizes"], ["y"], name="view"),
    ]
    consts = {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64), "minus_one": np.array([-1], np.int64)}
    return nodes, {"x": ["batch", 2, 3, 3]}, consts


def pool_reduce_matvec() -> tuple[list, dict, dict]:
    """LpPool (p 2) + ReduceMin + ReduceProd + MatMul by a 1-D B (a matrix-vector product)."""
    nodes = [
        helper.make_node("LpPool", ["x"], ["lp"], kernel_shape=[2, 2], strides=[2, 2], p=2, name="lp"),
        helper.make_node("ReduceMin", ["lp"], ["low"], axes=[3], keepdims=0, name="low"),
        helper.make_node("ReduceProd", ["low"], ["prod"], axes=[0], keepdims=0, name="prod"),
        helper.make_node("MatMul", ["prod", "v"], ["y"], name="matvec"),
    ]
    return nodes, {"x": [1, 2, 4, 4]}, {"v": _weights(2)}


def dynamic_conv() -> tuple[list, dict, dict]:
    """quantize_dynamic's conv: DynamicQuantizeLinear + ConvInteger (padded; its run-time zero point) + Cast + Mul by
    x_scale * w_scale."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "q_scale", "q_zero"], name="quant"),
        helper.make_node("Mul", ["q_scale", "w_scale"], ["scale"], name="scales"),
        helper.make_node("ConvInteger", ["q", "w", "q_zero", "w_zero"], ["acc"], pads=[1, 1, 1, 1], name="iconv"),
        helper.make_node("Cast", ["acc"], ["acc_f"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["acc_f", "scale"], ["y"], name="rescale"),
    ]
    w = np.arange(-8, 10, dtype=np.int8).reshape(2, 1, 3, 3)
    return nodes, {"x": [1, 1, 4, 4]}, {"w": w, "w_scale": np.array(0.01, np.float32), "w_zero": np.array(0, np.int8)}


def qlinear_conv() -> tuple[list, dict, dict]:
    """QuantizeLinear -> QLinearConv (per-channel int8 W, int32 B, padded) -> DequantizeLinear, as quantize_static's
    QOperator form writes a conv."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="xq"),
        helper.make_node("QLinearConv", ["xq", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "b"], ["yq"],
                         pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zero"], ["y"], name="y"),
    ]
    weights = {"x_scale": np.array(0.5, np.float32), "x_zero": np.array(128, np.uint8),
               "w": np.arange(-9, 9, dtype=np.int8).reshape(2, 1, 3, 3), "w_scale": np.array([0.25, 0.125], np.float32),
               "w_zero": np.zeros(2, np.int8), "y_scale": np.array(0.75, np.float32), "y_zero": np.array(100, np.uint8),
               "b": np.array([4, -8], np.int32)}
    return nodes, {"x": [1, 1, 4, 4]}, weights


def qdq_conv_uint8_input() -> tuple[list, dict, dict]:
    """A model that takes quantized images: its uint8 graph input x -> DQ(x), DQ(per-channel int8 W) -> Conv -> Q ->
    DQ, no QuantizeLinear before the first DequantizeLinear."""
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero"], ["xd"], name="xd"),
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], name="wd", axis=0),
        helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("QuantizeLinear", ["c", "y_scale", "y_zero"], ["yq"], name="yq"),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zero"], ["y"], name="y"),
    ]
    weights = {"x_scale": np.array(0.5, np.float32), "x_zero": np.array(128, np.uint8),
               "w": np.arange(-9, 9, dtype=np.int8).reshape(2, 1, 3, 3), "w_scale": np.array([0.25, 0.125], np.float32),
               "w_zero": np.zeros(2, np.int8), "y_scale": np.array(0.75, np.float32), "y_zero": np.array(100, np.uint8)}
    return nodes, {"x": [1, 1, 4, 4]}, weights


def _qdq_conv_transpose(per_channel: bool) -> tuple[list, dict, dict]:
    """quantize_static's ConvTranspose (stride 2, output_padding 1): Q -> DQ(x), DQ(int8 W, per tensor or per output
    channel: axis 1), DQ(int32 B, scale x_scale * w_scale) -> ConvTranspose -> Q -> DQ."""
    axis = {"axis": 1} if per_channel else {}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="xq"),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="xd"),
        helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zero"], ["wd"], name="wd", **axis),
        helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero"], ["bd"], name="bd", **({"axis": 0} if per_channel else {})),
        helper.make_node("ConvTranspose", ["xd", "wd", "bd"], ["t"], strides=[2, 2], output_padding=[1, 1], name="up"),
        helper.make_node("QuantizeLinear", ["t", "y_scale", "y_zero"], ["yq"], name="yq"),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zero"], ["y"], name="y"),
    ]
    w_scale = np.array([0.25, 0.5, 0.125] if per_channel else 0.25, np.float32)
    weights = {"x_scale": np.array(0.5, np.float32), "x_zero": np.array(128, np.uint8),
               "w": np.arange(-12, 12, dtype=np.int8).reshape(2, 3, 2, 2), "w_scale": w_scale,
               "w_zero": np.zeros(w_scale.shape, np.int8), "b": np.array([4, -8, 16], np.int32), "b_scale": 0.5 * w_scale,
               "b_zero": np.zeros(w_scale.shape, np.int32), "y_scale": np.array(2.0, np.float32), "y_zero": np.array(100, np.uint8)}
    return nodes, {"x": [1, 2, 3, 3]}, weights


def qdq_average_pool(storage: type = np.uint8) -> tuple[list, dict, dict]:
    """quantize_static's average pool: Q (odd zero point) -> DQ -> AveragePool 2x2/2 -> Q -> DQ, uint8 or int8."""
    shift = 0 if storage is np.uint8 else -128
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], name="xq"),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], name="xd"),
        helper.make_node("AveragePool", ["xd"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("QuantizeLinear", ["p", "y_scale", "y_zero"], ["yq"], name="yq"),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zero"], ["y"], name="y"),
    ]
    weights = {"x_scale": np.array(0.5, np.float32), "x_zero": np.array(131 + shift, storage),
               "y_scale": np.array(0.25, np.float32), "y_zero": np.array(100 + shift, storage)}
    return nodes, {"x": [1, 2, 4, 4]}, weights


MODELS = {"classifier": classifier, "flatten_view": flatten_view, "pool_reduce_matvec": pool_reduce_matvec,
          "dynamic_conv": dynamic_conv, "qlinear_conv": qlinear_conv, "qdq_average_pool": qdq_average_pool,
          "qdq_average_pool_int8": lambda: qdq_average_pool(np.int8), "qdq_conv_transpose": lambda: _qdq_conv_transpose(False),
          "qdq_conv_transpose_per_channel": lambda: _qdq_conv_transpose(True), "qdq_conv_uint8_input": qdq_conv_uint8_input}
OPSETS: dict[str, int] = {}  # a model's opset where it is not 17
INPUT_TYPES = {"qdq_conv_uint8_input": TensorProto.UINT8}  # a model's input element type where it is not float
OUTPUT_SHAPES: dict[str, list[int]] = {}  # a model's output shape where onnx's shape inference cannot infer it


def main(name: str, out: str) -> None:
    nodes, inputs, initializers = MODELS[name]()
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, INPUT_TYPES.get(name, TensorProto.FLOAT), s) for n, s in inputs.items()],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, OUTPUT_SHAPES.get(name))],
                              [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    opsets = [helper.make_opsetid("", OPSETS.get(name, 17))]
    # the oldest IR version the opset allows: an ONNX Runtime older than the onnx package refuses newer ones
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
    from onnx import shape_inference

    save_model(shape_inference.infer_shapes(model), out)


if __name__ == "__main__":
    main(*sys.argv[1:])
