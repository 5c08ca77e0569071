"""convc's StableHLO is portable, not only XLA's input: every shipped example, for the
generic and cpu targets, compiles with IREE (llvm-cpu) and computes what XLA:CPU computes
on the same inputs. Skipped where iree-base-compiler / iree-base-runtime are absent (failed where
CONVC_REQUIRE_ORACLES names iree, as in CI's newest environment)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from convc.compile import Compiler
from convc.dtypes import numpy_dtype
from convc.ir import Graph
from convc.runner import cropped_for_xla_cpu, xla_cpu_misread_convs
from convc.runtime import compile_stablehlo
from convc.runtime_inputs import TOLERANCE, random_inputs
from optional_oracles import oracle

iree_compiler = oracle("iree.compiler")
iree_runtime = oracle("iree.runtime")

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.json"))

IREE_FLAGS = [
    "--iree-llvmcpu-target-cpu=host",  # the host's vector units, as XLA:CPU; IREE warns when left unset
    "--iree-input-demote-f64-to-f32=false",  # IREE narrows f64 by default; keep the module's types
]
FLOAT_ULPS = 16


def _bound(dtype: str) -> float:
    """Max |IREE - XLA| / max(1, max |XLA|) accepted for a result of `dtype`. f32 and f64:
    a few ulps, as both engines compute in the module's type and differ only in summation
    order (tiling, vector width, FMA). f16/bf16: `--check`'s bound, since an engine may
    accumulate them wider. Integers: exact."""
    if dtype in ("f32", "f64"):
        return FLOAT_ULPS * float(np.finfo(numpy_dtype(dtype)).eps)
    return TOLERANCE[dtype]


def _max_error(got: np.ndarray, want: np.ndarray) -> float:
    """Max |got - want| over the scale max(1, max |want|); equal values (infinities too) agree."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (got64 == want64) | (np.isnan(got64) & np.isnan(want64))
    error = np.nan_to_num(np.where(same, 0.0, np.abs(got64 - want64)), nan=np.inf)
    finite = np.abs(want64[np.isfinite(want64)])
    scale = max(1.0, float(finite.max()) if finite.size else 0.0)
    return float(error.max()) / scale if error.size else 0.0


def _xla_text(compiler: Compiler, graph: Graph, stablehlo: str) -> str:
    """The module XLA:CPU runs, as `convc --run` picks it: the emitted one, or an exact cropped
    copy where XLA:CPU would misread a conv (openxla/xla#48713). IREE always gets the emitted one."""
    if not xla_cpu_misread_convs(graph):
        return stablehlo
    return compiler.emit(cropped_for_xla_cpu(graph), "stablehlo").decode()


@pytest.fixture(scope="module")
def iree_config() -> Any:
    """One IREE local-task device for the whole module: each one starts a thread pool."""
    return iree_runtime.Config("local-task")


def _run_iree(stablehlo: str, inputs: list[np.ndarray], config: Any) -> list[np.ndarray]:
    vmfb = iree_compiler.compile_str(stablehlo, target_backends=["llvm-cpu"], input_type="stablehlo",
                                     extra_args=IREE_FLAGS)
    context = iree_runtime.SystemContext(config=config)
    module = iree_runtime.VmModule.copy_buffer(context.instance, vmfb)
    context.add_vm_module(module)
    results = context.modules[module.name]["main"](*inputs)
    results = results if isinstance(results, (list, tuple)) else [results]
    return [np.asarray(result.to_host()) for result in results]


@pytest.mark.parametrize("target", ["generic", "cpu"])
@pytest.mark.parametrize("model", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_on_iree_as_on_xla(model: Path, target: str, iree_config: Any) -> None:
    compiler = Compiler(target=target)
    graph = compiler.load(str(model))
    # a narrow step anywhere rounds what follows it, even into an f32 output (as `--check` reasons)
    weakest = max((v.type.dtype for v in graph.values()), key=_bound)
    compiler.run_passes(graph)
    stablehlo = compiler.emit(graph, "stablehlo").decode()
    inputs = random_inputs(graph, seed=0)

    want = compile_stablehlo(_xla_text(compiler, graph, stablehlo), "cpu")(*inputs)
    got = _run_iree(stablehlo, inputs, iree_config)

    assert len(got) == len(want) == len(graph.outputs)
    for value, iree_out, xla_out in zip(graph.outputs, got, want, strict=True):
        assert iree_out.dtype == xla_out.dtype == numpy_dtype(value.type.dtype), value.name
        assert iree_out.shape == xla_out.shape, value.name
        bound = max(_bound(value.type.dtype), _bound(weakest))
        error = _max_error(iree_out, xla_out)
        assert error <= bound, f"{value.name}: IREE vs XLA:CPU max error {error:.3g} over the bound {bound:.3g}"
