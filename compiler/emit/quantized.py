"""StableHLO rules of the quantized ops: `uniform_quantize` and `uniform_dequantize` are
StableHLO's own ops, emitted as they are (`--target generic`); the `lower-quantized` pass
rewrites them, and quantized convs, into integer and float ops for XLA, which runs none."""

from __future__ import annotations

from ..ir import Op
from .stablehlo import EmitContext, rule


@rule("round_nearest_even")
def _round(op: Op, ctx: EmitContext, result: str) -> None:
    ctx.emit(result, f"stablehlo.round_nearest_even {ctx.use(op.operands[0])} : {op.result.type}")


@rule("uniform_quantize", "uniform_dequantize", "bitcast_convert")
def _uniform(op: Op, ctx: EmitContext, result: str) -> None:
    x = op.operands[0]
    ctx.emit(result, f"stablehlo.{op.kind} {ctx.use(x)} : ({x.type}) -> {op.result.type}")
