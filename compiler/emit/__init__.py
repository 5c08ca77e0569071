"""Emitters: the canonical Graph -> StableHLO text.

`stablehlo.py` holds one rule per op kind and writes the module; `sdy.py` writes the
Shardy mesh and sharding attributes of a graph with a mesh.
"""

from .stablehlo import emit_stablehlo, emits, weight_constants

__all__ = ["emit_stablehlo", "emits", "weight_constants"]
