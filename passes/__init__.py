"""The passes, one per file, and their registry.

A pass's command-line name, its file and its lit test share one word
(`cpu-depthwise-tap-sum`, `cpu_depthwise_tap_sum.py`, `tests/lit/cpu-depthwise-tap-sum.mlir`).
The files hold the canonicalizing passes (`infer-shapes`, `canonicalize-dimension-numbers`,
`resolve-padding`, `dce`), the lowerings of the transposed conv and the conv gradients
(`lower-*`), the cpu target's layout choice and conv rewrites (`cpu-*`) and `autotune-conv-lowering`; this
module registers them (`ALL_PASSES`, `PASSES`) and builds each target's default pipeline.
"""

from __future__ import annotations

from typing import TypeVar

from convc.conv_lowering import ConvLowering, register_conv_lowerings
from convc.pass_manager import Pass, PipelineError
from convc.plan_lowering import LowerToPlan
from convc.rewrite import RewritePattern

from .autotune_conv_lowering import AutotuneConvLowering
from .canonicalize_dimension_numbers import CanonicalizeDimensionNumbers
from .cpu_batch_group_tap_reduce import CpuBatchGroupTapReduce
from .cpu_batch_group_to_feature_group import CpuBatchGroupToFeatureGroup
from .cpu_conv3d_as_conv2d_sum import CpuConv3dAsConv2dSum
from .cpu_conv_1x1_to_dot import CpuConv1x1ToDot
from .cpu_conv_eigen_path import CpuConvEigenPath
from .cpu_conv_winograd import CpuConvWinograd
from .cpu_crop_negative_padding import CpuCropNegativePadding
from .cpu_depthwise_tap_sum import CpuDepthwiseTapSum
from .cpu_float_sum_as_dot import CpuFloatSumAsDot
from .cpu_integer_sum_as_dot import CpuIntegerSumAsDot
from .cpu_layout_nhwc import CpuLayoutNhwc
from .cpu_materialize_shared_relu import CpuMaterializeSharedRelu
from .cpu_max_pool_tap_max import CpuMaxPoolTapMax
from .cpu_pad_before_pointwise import CpuPadBeforePointwise
from .cpu_small_map_im2col import CpuSmallMapIm2col
from .cpu_transposed_conv_phases import CpuTransposedConvPhases
from .dce import DeadCodeElimination
from .drop_padding_taps import DropPaddingTaps
from .fold_constants import FoldConstants
from .fold_conv_affine import FoldConvAffine
from .grad import Grad
from .infer_shapes import InferShapes
from .lower_conv_backprop_filter import LowerConvBackpropFilter
from .lower_conv_backprop_input import LowerConvBackpropInput
from .lower_conv_transpose import LowerConvTranspose
from .lower_quantized import QUANTIZED_KINDS, LowerQuantized
from .resolve_padding import ResolvePadding

ALL_PASSES: tuple[type[Pass], ...] = (
    Grad,
    InferShapes,
    LowerConvTranspose,
    LowerConvBackpropInput,
    LowerConvBackpropFilter,
    CanonicalizeDimensionNumbers,
    ResolvePadding,
    DeadCodeElimination,
    LowerQuantized,
    FoldConstants,
    FoldConvAffine,
    DropPaddingTaps,
    CpuLayoutNhwc,
    CpuPadBeforePointwise,
    CpuConv1x1ToDot,
    CpuDepthwiseTapSum,
    CpuBatchGroupTapReduce,
    CpuBatchGroupToFeatureGroup,
    CpuTransposedConvPhases,
    CpuConv3dAsConv2dSum,
    CpuSmallMapIm2col,
    CpuConvWinograd,
    CpuConvEigenPath,
    CpuCropNegativePadding,
    CpuIntegerSumAsDot,
    CpuFloatSumAsDot,
    CpuMaxPoolTapMax,
    CpuMaterializeSharedRelu,
    AutotuneConvLowering,
)

PASSES: dict[str, type[Pass]] = {cls.name: cls for cls in ALL_PASSES}

TARGETS = ("generic", "cpu", "gpu")

_CANONICAL = (
    "infer-shapes", "lower-conv-transpose", "lower-conv-backprop-input", "lower-conv-backprop-filter",
    "canonicalize-dimension-numbers", "resolve-padding", "dce")

# Folds of work that depends only on the weights, for the targets that compile for speed
# (cpu, gpu): before the final dce of the canonical pipeline, which drops the kernels they
# replace, and before the cpu rewrites, which would hide a conv's kernel behind slices.
# fold-constants is not among them: XLA folds constant subgraphs itself, and the jit that
# evaluates them costs compile time (docs/passes.md).
_FOLDS = ("fold-conv-affine",)


# What XLA compiles (the cpu and gpu targets) holds no quantized type: after the canonical
# pipeline (explicit pads), before the cpu rewrites (which then see the integer convs).
# XLA:GPU compiles no integer conv (cuDNN has none of this form): the gpu pipeline's are f64.
_QUANTIZED = {"cpu": ("lower-quantized",), "gpu": ("lower-quantized{integer_conv=false}",)}

# Work that adds nothing, dropped once every conv is a plain one (after lower-quantized) and
# before the cpu rewrites choose a form for what is left: the kernel taps that meet only
# padding. The cpu pipeline's own dce follows; the gpu pipeline's is this one.
_SIMPLIFY = ("drop-padding-taps",)

# After the canonical pipeline, so they see only plain convs with explicit dimension
# numbers and pads, whichever lowering produced them; cpu-layout-nhwc first, so the conv
# rewrites build on channels-last convs (their transposes then cancel or vanish);
# cpu-conv-eigen-path last of the conv rewrites, so it also sees the 2-D convs the phase and 3-D rewrites
# create; cpu-pad-before-pointwise before the 1x1 and depthwise rewrites, so they build on the
# convs it makes; then cpu-integer-sum-as-dot, cpu-float-sum-as-dot and cpu-max-pool-tap-max, on
# the channels-last sums and pools the layout pass left; then cpu-materialize-shared-relu, once
# every rewrite has made its readers (a 1x1 conv's reshape).
_CPU = ("cpu-layout-nhwc", "cpu-crop-negative-padding", "cpu-batch-group-tap-reduce", "cpu-batch-group-to-feature-group", "cpu-transposed-conv-phases",
        "cpu-conv3d-as-conv2d-sum", "cpu-pad-before-pointwise", "cpu-conv-1x1-to-dot", "cpu-depthwise-tap-sum", "cpu-small-map-im2col", "cpu-conv-winograd",
        "cpu-conv-eigen-path",
        "cpu-integer-sum-as-dot", "cpu-float-sum-as-dot", "cpu-max-pool-tap-max", "cpu-materialize-shared-relu", "dce")


P = TypeVar("P", bound=RewritePattern)


def _pattern(cls: type[Pass], base: type[P]) -> type[P] | None:
    """The rewrite pattern a `pattern_pass` applies, when it is a `base`."""
    pattern = getattr(cls, "pattern", None)
    return pattern if isinstance(pattern, type) and issubclass(pattern, base) else None


def _conv_lowering(cls: type[Pass]) -> type[ConvLowering] | None:
    return _pattern(cls, ConvLowering)


# What a conv's `lowering` may name besides "xla": the cpu rewrites, by pass name, in the
# order the cpu pipeline runs them (which autotune measures them in).
CONV_LOWERINGS: dict[str, type[ConvLowering]] = register_conv_lowerings(
    pattern for name in _CPU if (pattern := _conv_lowering(PASSES[name])) is not None)


def _lowered_kind(cls: type[Pass]) -> str | None:
    """The op kind `cls` lowers away: its pattern's, when that pattern is a `LowerToPlan`."""
    pattern = _pattern(cls, LowerToPlan)
    return pattern.kind if pattern is not None else None


# Op kinds StableHLO has no form of, by the pass that rewrites every op of that kind into ops
# it has (`lower-*`): what a pipeline must run before emitting a model that holds one.
LOWERED_BY: dict[str, str] = {kind: cls.name for cls in ALL_PASSES if (kind := _lowered_kind(cls)) is not None}

# Op kinds StableHLO has (`--target generic` emits them) but XLA runs only once this pass has
# lowered them: the quantized ones (E3, when a module to run still holds one).
LOWERED_FOR_XLA: dict[str, str] = {kind: LowerQuantized.name for kind in QUANTIZED_KINDS}


def default_pipeline(target: str = "generic", autotune: bool = False) -> str:
    """What `convc` runs before emitting, per target: `cpu` and `gpu` fold per-channel
    scales into constant conv kernels; `cpu` adds rewrites of the conv forms XLA CPU runs
    slowly; `gpu` keeps the canonical forms cuDNN maps well; `generic` keeps JAX's forms. With
    `autotune` (cpu only), measurements choose each conv's rewrite instead of the cost model.
    Another target is a usage error, as `--target` outside its choices is."""
    if target not in TARGETS:
        raise PipelineError(f"unknown target '{target}' (expected one of {', '.join(TARGETS)})")
    if autotune and target != "cpu":
        raise PipelineError(f"autotuning chooses among the cpu target's lowerings; target '{target}' has none")
    tuned = _CPU.index("cpu-crop-negative-padding") + 1  # autotune measures cropped convs, in the cpu layout
    cpu = _CPU[:tuned] + ("autotune-conv-lowering",) + _CPU[tuned:] if autotune else _CPU
    if target == "generic":
        return ",".join(_CANONICAL)
    folded = _CANONICAL[:-1] + _FOLDS + _CANONICAL[-1:]
    return ",".join(folded + _QUANTIZED[target] + _SIMPLIFY + (cpu if target == "cpu" else ("dce",)))


__all__ = ["ALL_PASSES", "CONV_LOWERINGS", "LOWERED_BY", "LOWERED_FOR_XLA", "PASSES", "TARGETS", "default_pipeline"]
