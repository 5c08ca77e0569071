"""convc's textual IR: MLIR generic-op syntax in a `convc` namespace.

`printer.py` writes a Graph as that text (`print_graph`), `parser.py` reads it back into a
verified Graph (`parse_ir`), keeping value names as node names.
"""

from .parser import parse_ir
from .printer import print_graph

__all__ = ["parse_ir", "print_graph"]
