"""The optional oracle frameworks some tests compare convc with. A test whose framework cannot
be imported skips, unless the environment variable CONVC_REQUIRE_ORACLES (comma-separated
names from `KNOWN`) names it: then it fails, so an environment that promises an oracle (CI's,
`.ci/run`) cannot lose it to a silent skip. docs/testing.md lists the names."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType

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
    name = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        why = str(err)
    if name in required():
        pytest.fail(f"{ENV} requires the {name} oracle, but `import {module}` fails: {why}", pytrace=False)
    pytest.skip(f"optional oracle {name} is not importable ({why}); {ENV}={name} makes this a failure", allow_module_level=True)



@functools.cache
def torchvision_models() -> ModuleType:
    """`torchvision.models` (an oracle as above), importable next to the CPU build of torch.

    PyPI's torchvision wheel is built for CUDA, so its C++ ops library cannot load beside
    torch's CPU build (`.ci/run` installs it with --no-deps); the model definitions need only
    torch. Its import still registers fake kernels for two of those ops (nms, qnms), which
    fails when they were never defined: where the library does not load, their schemas are
    defined here first, so the import goes through. Calling either op would still fail; no
    classification or segmentation model calls them."""
    torch = oracle("torch")
    spec = importlib.util.find_spec("torchvision")
    library = next(Path(spec.origin).parent.glob("_C*.so"), None) if spec is not None and spec.origin else None
    if library is not None:
        try:
            torch.ops.load_library(str(library))
        except OSError:  # the CUDA build's library, beside a CPU torch
            fallback = torch.library.Library("torchvision", "DEF")
            for op in ("nms", "qnms"):
                fallback.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _KEPT.append(fallback)  # a Library drops its definitions when it is collected
    return oracle("torchvision.models")


_KEPT: list[object] = []
