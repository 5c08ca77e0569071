"""Measured facts about the installed XLA and StableHLO interpreter: whether an upstream bug
convc (or its tests) works around is present, decided by running a tiny module rather than by
reading version numbers."""

from __future__ import annotations

import functools
import subprocess
import sys

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


# JAX's own lowering of a conv whose output puts the feature dim before the batch dim ("CNW"),
# on the StableHLO reference interpreter: some jaxlibs abort the process there, through LLVM's
# fatal error "Incompatible index and shape found while flattening index" (openxla/stablehlo#3011).
_INTERPRETER_PROBE = """
import jax
import numpy as np
from jax import lax
from convc.mlir import eval_module
x, w = np.ones((2, 3, 4), np.float32), np.ones((5, 3, 1), np.float32)
fn = lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID", dimension_numbers=("NCW", "OIW", "CNW"))
(out,) = eval_module(jax.jit(fn).lower(x, w).as_text(), [x, w])
assert np.array_equal(out, np.asarray(fn(x, w))), "wrong result"
"""


@functools.cache
def interpreter_feature_major_probe() -> subprocess.CompletedProcess[str]:
    """The interpreter probe above, run once per process in a child Python (an abort would
    take the asking process down): exit 0 when the interpreter gives the right answer."""
    return subprocess.run([sys.executable, "-c", _INTERPRETER_PROBE], capture_output=True, text=True, timeout=300)


def interpreter_handles_feature_major_output() -> bool:
    """Whether the installed StableHLO interpreter runs a conv whose output puts the feature
    dim before the batch dim (openxla/stablehlo#3011), as measured by the probe."""
    return interpreter_feature_major_probe().returncode == 0
