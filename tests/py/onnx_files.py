"""What the ONNX tests share to write model files (import it after the onnx oracle check)."""

from __future__ import annotations

from typing import Any

from onnx import helper


def make_model(graph: Any, opset: int) -> Any:
    """`graph` as a model of the default domain's `opset`, with the oldest IR version that opset
    allows (an ONNX Runtime older than the onnx package refuses newer IR versions); an opset
    the onnx package does not know keeps its default IR version."""
    opsets = [helper.make_opsetid("", opset)]
    try:
        return helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))
    except ValueError:  # "Unsupported opset-version": a model meant to be refused
        return helper.make_model(graph, opset_imports=opsets)
