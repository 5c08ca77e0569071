"""Measured facts about the installed XLA: whether an upstream bug convc works around is
present, decided by running a tiny module rather than by reading version numbers."""

from __future__ import annotations

import functools

import numpy as np

# One 1x1 conv, NHWC/HWIO, whose W padding drops 5 columns and adds one zero: the shape of
# openxla/xla#48713's reproducer (the misread needs 8 channels).
_CROP_LOW_PAD_HIGH = (-5, 1)
_PROBE_X, _PROBE_W = (1, 15, 6, 8), (1, 1, 8, 8)
_PROBE_MODULE = """
func.func @main(%x: tensor<1x15x6x8xf32>, %w: tensor<1x1x8x8xf32>) -> tensor<1x15x2x8xf32> {
  %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
         window = {stride = [1, 1], pad = [[0, 0], [-5, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]}
         {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
         : (tensor<1x15x6x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x15x2x8xf32>
  return %y : tensor<1x15x2x8xf32>
}
"""


def _probe_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Small integers: every sum is exact in f32, so a right answer is bit-equal to numpy's."""
    rng = np.random.default_rng(48713)
    x = rng.integers(1, 5, _PROBE_X).astype(np.float32)
    w = rng.integers(-3, 4, _PROBE_W).astype(np.float32)
    return x, w


def _expected(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """numpy: keep W columns 5.. of x, append one zero column, contract the channels."""
    lo, hi = _CROP_LOW_PAD_HIGH
    cropped = np.pad(x[:, :, -lo:, :], [(0, 0), (0, 0), (0, hi), (0, 0)])
    return np.einsum("nhwc,co->nhwo", cropped, w[0, 0])


@functools.cache
def xla_cpu_misreads_crop_low_pad_high() -> bool:
    """Whether XLA:CPU computes a conv with negative low and positive high padding from
    memory outside its input (openxla/xla#48713), measured once per process on the probe
    module above. Only meaningful where PJRT has a CPU (the only place it is asked)."""
    from .runtime import compile_stablehlo

    x, w = _probe_inputs()
    (got,) = compile_stablehlo(_PROBE_MODULE, "cpu")(x, w)
    return not np.array_equal(got, _expected(x, w))
