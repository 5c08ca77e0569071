"""Emitters: the canonical Graph -> StableHLO text."""

from .stablehlo import emit_stablehlo

__all__ = ["emit_stablehlo"]
