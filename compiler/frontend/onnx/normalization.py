"""BatchNormalization in inference mode, folded at import into one scale and one shift per channel."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...dtypes import numpy_dtype
from .registry import Context, Node, Operand, converter


@converter("BatchNormalization", since=9)
def batch_normalization(node: Node, ctx: Context) -> Sequence[Operand]:
    """Inference mode: `multiply` by scale / sqrt(var + epsilon) and `bias_add` of B - mean * that, per channel
    (axis 1), computed at import; scale, B, mean and var must be known at import. Not training_mode."""
    if node.attrs.get("training_mode"):
        raise ctx.error("training_mode=1 is not supported (inference only)")
    ctx.refuse_outputs(node, 1, "the running mean and variance outputs (training mode)")
    x = ctx.operand(node, 0)
    if x.type.rank < 2:
        raise ctx.error(f"X {x.type} needs a channel dimension (rank 2 or more)")
    channels = x.type.shape[1]
    params = [ctx.required_array(node, i, what).astype(np.float64) for i, what in enumerate(("scale", "B", "mean", "var"), start=1)]
    for (i, what), param in zip(enumerate(("scale", "B", "mean", "var"), start=1), params):
        if param.shape != (channels,):
            raise ctx.error(f"{what} (input {i}) has shape {list(param.shape)}, expected [{channels}] (one per channel)")
    scale, bias, mean, var = params
    variance = var + node.attrs["epsilon"]
    if not np.all(variance > 0):
        raise ctx.error("var + epsilon must be positive in every channel")
    factor = scale / np.sqrt(variance)
    dtype = numpy_dtype(x.type.dtype)
    spread = ctx.op("broadcast_in_dim", ctx.constant(factor.astype(dtype), "scale"), shape=x.type.shape, broadcast_dimensions=(1,))
    scaled = ctx.op("multiply", x, spread)
    return [ctx.op("bias_add", scaled, ctx.constant((bias - mean * factor).astype(dtype), "shift"), axis=1)]
