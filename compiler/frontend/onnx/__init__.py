"""The ONNX frontend: `load_onnx` reads an ONNX model into a verified Graph (docs/onnx.md).

`registry.py` holds the table from (op type, since-opset) to converter and the context
converters build with; one module per op family registers its converters (`conv.py`,
`pooling.py`, `reduce.py`, `elementwise.py`, `activations.py`, `normalization.py`, `resize.py`, `gemm.py`, `tensor.py`, `slicing.py`), sharing
`shared.py`; `integer.py` has the integer kernels, `dynamic.py` the run-time quantizer that feeds them; `qdq.py` fuses a QDQ pattern around a Conv or ConvTranspose into one quantized conv; `model.py` reads and checks the model with the `onnx` package, `importer.py`
plans and runs the conversion, `check.py` is `--check`'s comparison with ONNX Runtime. The
`onnx` package is imported only when a model is loaded.
"""

from . import activations, conv, elementwise, gemm, normalization, pooling, reduce, resize, slicing, tensor  # noqa: F401  (each registers its converters)
from . import dynamic as dynamic_converters  # noqa: F401  (DynamicQuantizeLinear: issue 19)
from . import integer as integer_converters  # noqa: F401  (ConvInteger, MatMulInteger, QLinearMatMul: issue 19)
from . import quantized as quantized_converters  # noqa: F401  (QuantizeLinear, DequantizeLinear, QLinearConv: issue 19)
from .importer import load_onnx
from .registry import CONVERTERS, lookup, op_table

__all__ = ["CONVERTERS", "load_onnx", "lookup", "op_table"]
