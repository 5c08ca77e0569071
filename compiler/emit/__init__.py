"""Emitters: the canonical Graph -> StableHLO text.

`stablehlo.py` holds one rule per op kind and writes the module; `sdy.py` writes the
Shardy mesh and sharding attributes of a graph with a mesh; `quantized.py` the rules of the
quantized ops.
"""

from . import quantized  # noqa: F401 - registers the quantized ops' rules
from .stablehlo import bindable_constants, emit_stablehlo, emits, weight_constants

__all__ = ["bindable_constants", "emit_stablehlo", "emits", "weight_constants"]
