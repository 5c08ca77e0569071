"""Write the .npz weight files the example models load (`"file": "x.npz", "key": "w"`).

The weights are seeded random draws (He-style scaling), so the examples compute
something non-trivial and `--check` compares real numbers. Rerun after changing a
shape here or in a model:

    python examples/make_weights.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# file name -> array name -> shape. Kernel layouts follow each model's rhs layout string.
SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "mobilenet_block.npz": {
        "depthwise": (3, 3, 1, 8),  # HWIO, I = 8 channels / feature_group_count 8
        "pointwise": (1, 1, 8, 16),  # HWIO
    },
    "wavenet_stack.npz": {
        **{f"dilated{d}": (2, 16, 16) for d in (1, 2, 4, 8)},  # WIO, kernel width 2
        **{f"residual{d}": (1, 16, 16) for d in (1, 2, 4, 8)},  # WIO, 1x1 projection
    },
    "conv3d_block.npz": {
        "conv1": (3, 3, 3, 4, 8),  # DHWIO
        "conv2": (3, 3, 3, 8, 8),  # DHWIO
    },
    "dcgan_generator.npz": {
        "up1": (5, 5, 16, 8),  # HWIO of conv_transpose: I = 16 features in, O = 8 out
        "up2": (5, 5, 8, 4),  # HWIO
        "to_rgb": (5, 5, 3, 4),  # Keras Conv2DTranspose layout (transpose_kernel): H, W, out 3, in 4
    },
    "unet_decoder.npz": {
        "up": (16, 8, 3, 3),  # PyTorch ConvTranspose2d weight (C_in, C_out, kH, kW) = the forward conv's OIHW
        "conv1": (8, 16, 3, 3),  # OIHW
        "conv2": (8, 8, 3, 3),  # OIHW
    },
}


def he_normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal weights scaled by sqrt(2 / fan_in); fan_in = window size x input features."""
    fan_in = int(np.prod(shape[:-1]))
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def weights(file: str) -> dict[str, np.ndarray]:
    """The arrays of one weight file; the seed is derived from the file name, so each is stable."""
    rng = np.random.default_rng(sum(file.encode()))
    return {name: he_normal(rng, shape) for name, shape in SHAPES[file].items()}


def main() -> None:
    for file in SHAPES:
        np.savez(HERE / file, **weights(file))
        print(f"wrote {HERE / file}")


if __name__ == "__main__":
    main()
