"""The pass registry. A pass's command-line name, its file and its lit test share one word."""

from __future__ import annotations

from convc.pass_manager import Pass

from .canonicalize_dimension_numbers import CanonicalizeDimensionNumbers
from .dce import DeadCodeElimination
from .infer_shapes import InferShapes
from .lower_conv_backprop_filter import LowerConvBackpropFilter
from .lower_conv_backprop_input import LowerConvBackpropInput
from .lower_conv_transpose import LowerConvTranspose
from .resolve_padding import ResolvePadding

ALL_PASSES: tuple[type[Pass], ...] = (
    InferShapes,
    LowerConvTranspose,
    LowerConvBackpropInput,
    LowerConvBackpropFilter,
    CanonicalizeDimensionNumbers,
    ResolvePadding,
    DeadCodeElimination,
)

PASSES: dict[str, type[Pass]] = {cls.name: cls for cls in ALL_PASSES}

TARGETS = ("generic", "cpu", "gpu")

_CANONICAL = (
    "infer-shapes", "lower-conv-transpose", "lower-conv-backprop-input", "lower-conv-backprop-filter",
    "canonicalize-dimension-numbers", "resolve-padding", "dce")


def default_pipeline(target: str = "generic") -> str:
    """What `convc` runs before emitting, per target."""
    return ",".join(_CANONICAL)


__all__ = ["ALL_PASSES", "PASSES", "TARGETS", "default_pipeline"]
