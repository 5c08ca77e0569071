"""convc's textual IR: MLIR generic-op syntax in a `convc` namespace."""

from .parser import parse_ir
from .printer import print_graph

__all__ = ["parse_ir", "print_graph"]
