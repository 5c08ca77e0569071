"""Frontends: ways to get a convc Graph (JSON model files; the builder lives in convc.builder)."""

from .json_model import load_model, load_model_text

__all__ = ["load_model", "load_model_text"]
