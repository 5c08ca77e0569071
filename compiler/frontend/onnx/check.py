"""`--check` on an ONNX model, second half: ONNX Runtime runs the `.onnx` itself on the run's
inputs, and its outputs are compared with convc's. The jax.lax oracle evaluates the imported
graph, so it checks the lowering; this checks the translation from ONNX too. Skipped (None)
where onnxruntime is not installed."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...diagnostics import ConvcError, Location

if TYPE_CHECKING:
    from ...compile import Compiler
    from ...runner import CheckReport, RunResult

ONNXRUNTIME_MISMATCH = "O11"  # --check: the outputs agree with ONNX Runtime's within tolerance


def onnxruntime_outputs(source: bytes | str, feeds: dict[str, np.ndarray], names: Sequence[str],
                        kept: Sequence[str] = ()) -> list[np.ndarray] | None:
    """ONNX Runtime's outputs `names` of the model `source` (its bytes, or its path, which lets
    it find external data), on the CPU; None without onnxruntime. `kept`: the initializers the
    import kept as inputs, whose feeds become those initializers' values."""
    try:
        import onnxruntime
    except ImportError:
        return None
    if kept:
        source, feeds = _initializers_fed(source, feeds, kept)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings are not convc's to print
    session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    return [np.asarray(out) for out in session.run(list(names), feeds)]


def _initializers_fed(source: bytes | str, feeds: dict[str, np.ndarray], kept: Sequence[str]) -> tuple[bytes, dict[str, np.ndarray]]:
    """The model and feeds ONNX Runtime takes when the import kept initializers `kept` as inputs:
    a copy of the model holding their fed values as those initializers, and the other feeds."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load_model_from_string(source) if isinstance(source, bytes) else onnx.load_model(source)
    for init in model.graph.initializer:
        if init.name in kept:
            init.CopyFrom(numpy_helper.from_array(np.asarray(feeds[init.name], numpy_helper.to_array(init).dtype), init.name))
    return model.SerializeToString(), {name: array for name, array in feeds.items() if name not in kept}


@functools.cache
def onnxruntime_saturates_u8_by_s8() -> bool:
    """Whether ONNX Runtime's CPU kernels multiply uint8 by int8 inexactly on this host: on x86
    CPUs without VNNI they add pairs of products in 16 bits, which saturate (255·127 twice is
    64770). A MatMulInteger of [255, 255] by [127, 127] tells; False without onnxruntime."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper
    except ImportError:
        return False
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 2]), helper.make_tensor_value_info("b", TensorProto.INT8, [2, 1])]
    output = helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "u8_by_s8", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (product,) = session.run(None, {"a": np.full((1, 2), 255, np.uint8), "b": np.full((2, 1), 127, np.int8)})
    return int(product[0, 0]) != 2 * 255 * 127


# The ops ONNX Runtime may run with its 8-bit integer kernels: its own, and the float ones a
# QDQ pattern around them turns into those kernels.
INTEGER_PRODUCT_OPS = frozenset({"Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "MatMul", "MatMulInteger",
                                 "QLinearMatMul", "Gemm"})


def has_8_bit_products(source: bytes | str) -> bool:
    """Whether the model holds 8-bit integer tensors (inputs or initializers) and an op ONNX
    Runtime may compute from them with its integer kernels."""
    import onnx

    model = onnx.load_model_from_string(source) if isinstance(source, bytes) else onnx.load_model(source, load_external_data=False)
    types = {init.data_type for init in model.graph.initializer}
    types |= {value.type.tensor_type.elem_type for value in model.graph.input}
    eight_bit = bool({onnx.TensorProto.UINT8, onnx.TensorProto.INT8} & types)
    return eight_bit and any(node.op_type in INTEGER_PRODUCT_OPS for node in model.graph.node)


def onnxruntime_unfit(source: bytes | str) -> str | None:
    """Why ONNX Runtime is no oracle for this model on this host, or None: its 8-bit products
    saturate here (measured on uint8 by int8; its int8 convs shift their input to uint8) and
    the model has some."""
    if onnxruntime_saturates_u8_by_s8() and has_8_bit_products(source):  # the probe first: it is cached, a model is parsed
        return ("its CPU kernels add 8-bit integer products in 16 bits on this CPU (no VNNI), which saturate, "
                "and this model has 8-bit products")
    return None


def onnxruntime_check(data: bytes, file: str, input_names: Sequence[str], inputs: Sequence[np.ndarray], output_names: Sequence[str],
                      outputs: Sequence[np.ndarray], precision: str, kept: Sequence[str] = ()) -> tuple[list[str], bool] | None:
    """One `--check` line per output, compared with ONNX Runtime within TOLERANCE[precision],
    and whether all agree; None without onnxruntime. `kept`: initializers imported as inputs."""
    from ...runtime_inputs import compare

    source = file if Path(file).is_file() else data
    unfit = onnxruntime_unfit(source)
    if unfit is not None:
        return [f"(not compared with onnxruntime: {unfit})"], True
    try:
        expected = onnxruntime_outputs(source, dict(zip(input_names, inputs)), output_names, kept)
    except Exception as err:  # noqa: BLE001 - onnxruntime's own failures (an op it lacks) are no verdict on convc
        reason = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
        return [f"(not compared with onnxruntime, which could not run the model: {reason})"], True
    if expected is None:
        return None
    compared = [compare(name, precision, got, want, against="onnxruntime") for name, got, want in zip(output_names, outputs, expected)]
    return [line for line, _ in compared], all(passed for _, passed in compared)


def onnxruntime_report(compiler: Compiler, result: RunResult) -> CheckReport | None:
    """The comparison of `result` with ONNX Runtime when the compiler's model was ONNX; else, or
    without onnxruntime, None. The tolerance is --check's for what the module computes in."""
    from ...runner import CheckReport
    from ...runtime_inputs import tolerance_for

    if compiler.onnx_source is None:
        return None
    data, file = compiler.onnx_source
    with compiler.timed("check (ONNX Runtime)"):
        found = onnxruntime_check(data, file, [v.name for v in result.graph.inputs], result.inputs,
                                  [v.name for v in result.graph.outputs], result.outputs, tolerance_for([result.graph], result.platform),
                                  compiler.keep_as_inputs)
    return None if found is None else CheckReport(*found)


def onnxruntime_mismatch(file: str) -> ConvcError:
    return ConvcError("--check: outputs differ from ONNX Runtime beyond tolerance", Location(file=file), ONNXRUNTIME_MISMATCH)
