"""`--check` on an ONNX model, second half: ONNX Runtime runs the `.onnx` itself on the run's
inputs, and its outputs are compared with convc's. The jax.lax oracle evaluates the imported
graph, so it checks the lowering; this checks the translation from ONNX too. Skipped (None)
where onnxruntime is not installed."""

from __future__ import annotations

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


def onnxruntime_check(data: bytes, file: str, input_names: Sequence[str], inputs: Sequence[np.ndarray], output_names: Sequence[str],
                      outputs: Sequence[np.ndarray], precision: str, kept: Sequence[str] = ()) -> tuple[list[str], bool] | None:
    """One `--check` line per output, compared with ONNX Runtime within TOLERANCE[precision],
    and whether all agree; None without onnxruntime. `kept`: initializers imported as inputs."""
    from ...runtime_inputs import compare

    source = file if Path(file).is_file() else data
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
