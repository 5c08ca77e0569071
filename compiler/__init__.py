"""convc: a convolution graph compiler that emits StableHLO.

Data flows one way: JSON model or `Builder` -> IR (`convc.ir`) -> passes
(`convc.passes`) -> emitter (`convc.emit`) -> PJRT (`convc.runtime`). `Compiler`
(`convc.compile`) loads, runs the pipeline and emits; `run` (`convc.runner`) compiles,
runs and checks; `convc.cli` holds the two command lines over both.

This folder is the package itself: the frontends (`frontend/` for JSON, `builder.py`,
`textual/` for convc IR text), the IR and its verifier (`ir.py`, `verify.py`,
`diagnostics.py`), the op declarations (`ops/`), what passes share (`pass_manager.py`,
`rewrite.py`, `builders.py`, `conv_lowering.py`, `conv_facts.py`), the emitters (`emit/`),
MLIR and PJRT (`mlir.py`, `runtime*.py`), the jax.lax oracle (`reference.py`) and the
drivers (`compile.py`, `runner.py`, `cli.py`). docs/architecture.md maps every module.
"""

from __future__ import annotations

# Importing convc registers its passes, and with them the conv rewrites a `lowering` may pin.
from convc import passes as _passes  # noqa: F401

from .autodiff import grad
from .builder import Builder
from .diagnostics import ConvcError, Location
from .frontend import load_model, load_model_text
from .frontend.onnx import load_onnx
from .ir import Graph, Op, TensorType, Value
from .runner import CheckReport, RunResult, run
from .textual import parse_ir, print_graph


def _installed_version() -> str:
    """The installed distribution's version; a source tree that was never installed has none."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("convc")
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _installed_version()


def compile_graph(graph: Graph, pipeline: str | None = None, target: str | None = None, verify: bool = True,
                  autotune: bool = False, autotune_cache: str | None = None) -> str:
    """Run the pipeline on a copy of `graph` and return verified StableHLO text. `target`
    defaults, as `convc --target` does, to the platform PJRT finds ("cpu" or "gpu", else
    "generic"), as jax.jit compiles for the default backend. `autotune` (target "cpu")
    measures each conv's candidate lowerings, as `convc --autotune`. A bad `target` or
    `pipeline` raises `PipelineError` (a `ConvcError` without an id, as `convc -p` exits 2)."""
    from .compile import Compiler
    from .runner import prepare_run

    prepare_run(graph, None)  # a mesh's host devices, before the default target starts JAX's backend
    compiler = Compiler(pipeline=pipeline, target=target, verify=verify, autotune=autotune, autotune_cache=autotune_cache)
    lowered = compiler.run_passes(graph.clone())
    return compiler.emit(lowered, "stablehlo").decode()


__all__ = [
    "Builder", "CheckReport", "ConvcError", "Graph", "Location", "Op", "RunResult", "TensorType", "Value",
    "__version__", "compile_graph", "grad", "load_model", "load_model_text", "load_onnx", "parse_ir", "print_graph", "run",
]
