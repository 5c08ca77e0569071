"""The optional oracle frameworks some tests compare convc with. A test whose framework cannot
be imported skips, unless the environment variable CONVC_REQUIRE_ORACLES (comma-separated
names from `KNOWN`) names it: then it fails, so an environment that promises an oracle (CI's,
`.ci/run`) cannot lose it to a silent skip. docs/testing.md lists the names."""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

KNOWN = ("torch", "tensorflow", "keras", "onnx", "onnxruntime", "onnxscript", "torchvision", "tf2onnx", "iree")
ENV = "CONVC_REQUIRE_ORACLES"


def required() -> set[str]:
    """The names CONVC_REQUIRE_ORACLES lists."""
    return {name.strip() for name in os.environ.get(ENV, "").split(",") if name.strip()}


def unknown_required() -> list[str]:
    """Names in CONVC_REQUIRE_ORACLES that are no oracle (a typo would otherwise require nothing)."""
    return sorted(required() - set(KNOWN))


def oracle(module: str) -> ModuleType:
    """`module` imported; where it cannot be, a skip, or a failure if its top-level package
    is required. Works at module level too (a whole file skips or fails at collection)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        _unavailable(module, str(err))


def _unavailable(module: str, why: str) -> NoReturn:
    name = module.split(".")[0]
    if name in required():
        pytest.fail(f"{ENV} requires the {name} oracle, but `import {module}` fails: {why}", pytrace=False)
    pytest.skip(f"optional oracle {name} is not importable ({why}); {ENV}={name} makes this a failure", allow_module_level=True)


@functools.cache
def torchvision_models() -> ModuleType:
    """`torchvision.models` (an oracle as above), importable next to the CPU build of torch:
    the benchmark's loader (convc.tools.bench_models.torchvision_models) says how."""
    oracle("torch")
    from convc.tools.bench_models import torchvision_models as load

    try:
        return load()
    except (ImportError, RuntimeError) as err:
        _unavailable("torchvision.models", str(err))


