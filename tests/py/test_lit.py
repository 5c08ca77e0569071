"""The lit + FileCheck suite in tests/lit as one pytest test, so that the README's single
test command (`python -m pytest tests/py`) runs it too. A failure shows lit's report."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

LIT_SUITE = Path(__file__).resolve().parents[2] / "tests" / "lit"

# lit has no `python -m lit`; this is what its console script runs.
LIT = [sys.executable, "-c", "import sys, lit.main; sys.exit(lit.main.main())"]


def _environment() -> dict[str, str]:
    """PATH led by this interpreter's scripts folder, so lit finds the convc, convc-opt and
    filecheck installed beside the Python running pytest (a venv need not be activated)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), env.get("PATH", "")])
    return env


def test_lit_suite() -> None:
    result = subprocess.run([*LIT, "-v", str(LIT_SUITE)], capture_output=True, text=True, env=_environment())
    report = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, f"lit failed (exit {result.returncode}):\n{report}"
    assert "Passed:" in result.stdout, f"lit ran no tests:\n{report}"
