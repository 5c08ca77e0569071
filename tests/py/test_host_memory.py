"""Huge pages for the temporaries XLA:CPU allocates on every call: with glibc's malloc asked
for transparent huge pages (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, what `bench` reruns
itself with), a call of an executable with a large temporary no longer pays a page fault per
4 KiB of it.

The page-fault counts come from the kernel (`getrusage`), in fresh processes: glibc reads its
tunables at process start only."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from convc.tools import bench

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _huge_page_malloc_unavailable() -> str | None:
    """Why glibc cannot ask for huge pages here, or None."""
    libc, version = platform.libc_ver()
    if libc != "glibc" or tuple(int(part) for part in version.split(".")[:2]) < (2, 35):
        return f"glibc.malloc.hugetlb needs glibc 2.35 or later; the C library here is {libc or 'unknown'} {version}"
    if not THP.exists() or "[never]" in THP.read_text():
        return "the kernel's transparent huge pages are off or absent"
    return None


needs_huge_page_malloc = pytest.mark.skipif(_huge_page_malloc_unavailable() is not None,
                                            reason=str(_huge_page_malloc_unavailable()))

# A dot whose result, 5120 x 4096 f32 (80 MiB), XLA:CPU keeps as a temporary, and a copy of
# it shifted down a row (another 80 MiB) added to it before a reduce: larger than a pool
# thread's malloc arena heap (64 MiB), so glibc maps them afresh on every call.
TEMP_BYTES = 2 * 5120 * 4096 * 4
MODULE = """
func.func @main(%x: tensor<5120x64xf32>, %w: tensor<64x4096xf32>) -> tensor<5120xf32> {
  %t = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<5120x64xf32>, tensor<64x4096xf32>) -> tensor<5120x4096xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %padded = stablehlo.pad %t, %zero, low = [1, 0], high = [0, 0], interior = [0, 0] : (tensor<5120x4096xf32>, tensor<f32>) -> tensor<5121x4096xf32>
  %shifted = stablehlo.slice %padded [0:5120, 0:4096] : (tensor<5121x4096xf32>) -> tensor<5120x4096xf32>
  %sum = stablehlo.add %shifted, %t : tensor<5120x4096xf32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%sum init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<5120x4096xf32>, tensor<f32>) -> tensor<5120xf32>
  return %m : tensor<5120xf32>
}
"""

# Run in a fresh interpreter on the module in argv[1]: the median minor page faults of a call
# after two warm-up calls, and the first rows' error against numpy's f64.
SCRIPT = """
import json, resource, sys
import numpy as np
from convc.runtime import compile_stablehlo

exe = compile_stablehlo(sys.argv[1], "cpu")
rng = np.random.default_rng(0)
x, w = rng.standard_normal((5120, 64)).astype(np.float32), rng.standard_normal((64, 4096)).astype(np.float32)
faults = []
for call in range(7):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    (out,) = exe(x, w)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
t = x[:8].astype(np.float64) @ w.astype(np.float64)
expected = (t + np.vstack([np.zeros((1, 4096)), t[:-1]])).max(axis=1)
print(json.dumps({"faults": sorted(faults[2:])[2], "error": float(abs(out[:8] - expected).max())}))
"""


def _call_faults(tunables: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    env.update({"GLIBC_TUNABLES": tunables} if tunables else {})
    completed = subprocess.run([sys.executable, "-c", SCRIPT, MODULE], capture_output=True, text=True, check=True, env=env)
    return json.loads(completed.stdout.strip().splitlines()[-1])


@needs_huge_page_malloc
def test_huge_page_malloc_faults_160_mib_of_temporaries_in_2_mib_pages_on_each_call() -> None:
    """With `bench.HUGE_PAGE_TUNABLE` a call of an executable with 160 MiB of temporaries faults
    in under 5% of their 4 KiB pages (the kernel maps them 2 MiB at a time), and computes
    the same values (the first rows against numpy's f64). With glibc's defaults the same call
    faults in at least half of them; should a future jaxlib pool its temporaries itself, that
    side is only reported."""
    pages = TEMP_BYTES // 4096
    huge, default = _call_faults(bench.HUGE_PAGE_TUNABLE), _call_faults(None)
    assert huge["faults"] < 0.05 * pages, huge
    assert huge["error"] < 1e-3 and default["error"] < 1e-3
    if default["faults"] < 0.5 * pages:
        warnings.warn(f"with malloc's defaults a call faulted {default['faults']} pages of {pages}: "
                      "this jaxlib no longer maps its temporaries afresh on every call", stacklevel=1)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the bench reruns itself with a glibc tunable only on glibc")
@pytest.mark.parametrize("extra", [[], ["--no-malloc-tuning"]], ids=["default", "no-malloc-tuning"])
def test_bench_command_reruns_itself_with_huge_page_malloc_unless_told_not_to(tmp_path: Path, extra: list[str]) -> None:
    """`python -m convc.tools.bench` replaces itself by the same command with the tunable in
    GLIBC_TUNABLES (the JSON's machine.host_memory records the process's own), keeping what
    GLIBC_TUNABLES held; `--no-malloc-tuning` runs with the environment as given."""
    out = tmp_path / "bench.json"
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.tcache_count=7")
    subprocess.run([sys.executable, "-m", "convc.tools.bench", "--quick", "--platform", "cpu", "--cases", "depthwise3x3",
                    "--budget", "0.01", "--no-peak", "--no-torch", "--json", str(out), *extra],
                   capture_output=True, text=True, check=True, env=env)
    memory = json.loads(out.read_text())["machine"]["host_memory"]
    expected = "glibc.malloc.tcache_count=7" + ("" if extra else f":{bench.HUGE_PAGE_TUNABLE}")
    assert memory["glibc_tunables"] == expected
    assert memory["libc"].startswith("glibc ")
