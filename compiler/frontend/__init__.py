"""The JSON model frontend: `json_model.py` reads a model file into a verified Graph.

The other frontends are `convc.builder` (Python) and `convc.textual` (convc IR text).
"""

from .json_model import load_model, load_model_text

__all__ = ["load_model", "load_model_text"]
