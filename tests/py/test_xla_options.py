"""The XLA options convc's own runs compile a target's module with (compile.TARGET_XLA_OPTIONS):
which compiles get them, and what they do to XLA:CPU's executable."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from convc.compile import TARGET_XLA_OPTIONS, Compiler
from convc.runtime import compile_stablehlo

REPO_ROOT = Path(__file__).resolve().parents[2]


def _ynnpack_fusion_bodies(hlo: str) -> list[str]:
    """The computations XLA:CPU hands YNNPACK as fusions (`__ynn_fusion`), as HLO text."""
    called = re.findall(r"fusion\([^\n]*calls=(%[\w.]+)[^\n]*__ynn_fusion", hlo)
    return [re.search(rf"^{re.escape(name)} [^\n]*\{{\n(.*?)\n\}}", hlo, re.S | re.M).group(1) for name in called]  # type: ignore[union-attr]


def test_cpu_target_runs_keep_convs_out_of_ynnpack_fusions(rng: np.random.Generator) -> None:
    """Compiled with the cpu target's options, no YNNPACK fusion of resnet_block's executable holds
    a convolution (its dots may stay YNNPACK's), and the outputs equal those of XLA's defaults
    to f32 rounding."""
    compiler = Compiler(target="cpu")
    graph = compiler.load(str(REPO_ROOT / "examples" / "resnet_block.json"))
    compiler.run_passes(graph)
    module = compiler.runnable(graph)
    ours, default = compile_stablehlo(module, "cpu", compiler.xla_options("cpu")), compile_stablehlo(module, "cpu")
    assert "convolution(" in ours.hlo_text()
    assert not [body for body in _ynnpack_fusion_bodies(ours.hlo_text()) if "convolution(" in body]
    x = rng.standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    (got,), (want,) = ours(x), default(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_xla_options_apply_to_the_targets_own_platform_only() -> None:
    """A target's options go with its platform's compiles: not with another platform's, not
    with the generic target's, and not with a -p pipeline that names no target."""
    assert Compiler(target="cpu").xla_options("cpu") == TARGET_XLA_OPTIONS["cpu"]
    assert Compiler(target="cpu").xla_options("gpu") == {}
    assert Compiler(target="generic").xla_options("cpu") == {}
    assert Compiler(pipeline="dce").xla_options("cpu") == {}
    assert Compiler(target="cpu", pipeline="dce").xla_options("cpu") == TARGET_XLA_OPTIONS["cpu"]
