"""Every shipped example compiles to verified StableHLO, runs through PJRT, and agrees
with jax.lax (`convc examples/X.json -o out.mlir --run --check`), for the CPU target's
rewrites (run on the PJRT platform "cpu", named) and for the generic pipeline (run on
whatever PJRT finds: --check's tolerance follows that platform's precision)."""

from __future__ import annotations

from pathlib import Path

import pytest
from convc import cli

PLATFORM = {"cpu": ["--platform", "cpu"], "generic": []}
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.json"))


@pytest.mark.parametrize("target", ["cpu", "generic"])
@pytest.mark.parametrize("model", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_and_checks(model: Path, target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.mlir"
    code = cli.main([str(model), "-o", str(out), "--target", target, *PLATFORM[target], "--run", "--check"])
    report = capsys.readouterr()
    assert code == 0, report.err
    text = out.read_text()
    assert text.startswith("module @") and "func.func public @main(" in text
    assert "stablehlo.convolution" in text or target == "cpu"  # cpu may rewrite every conv
    checks = [line for line in report.out.splitlines() if "max abs error vs jax.lax" in line]
    assert checks and all(line.endswith("(ok)") for line in checks)
