"""Shared fixtures for convc's Python tests: a seeded generator, JSON models in a
temp dir, and one place that compiles emitted StableHLO with PJRT (cached by text)."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.runtime import Executable, compile_stablehlo

# pytest-xdist runs one worker process per core: on a GPU, each takes GPU memory as it needs it
# rather than JAX's default 75% up front, which the second worker would not find.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: builds or spawns heavy things (a wheel); still part of the default run")
    from optional_oracles import ENV, KNOWN, unknown_required

    if unknown_required():
        raise pytest.UsageError(f"{ENV} names no oracle: {', '.join(unknown_required())} (known: {', '.join(KNOWN)})")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands its tally and censuses to the controller, which
    prints them (pytest_testnodedown): a skip in a worker is counted like one in a serial run."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        from oracle_tally import TALLY
        from suite_census import CENSUS

        workeroutput["convc_tally"] = [[*key, count] for key, count in TALLY.items()]
        workeroutput["convc_census"] = CENSUS


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller's side of pytest_sessionfinish: add a finished worker's tally and censuses to its own."""
    from oracle_tally import TALLY
    from suite_census import CENSUS

    output = getattr(node, "workeroutput", {})
    for *key, count in output.get("convc_tally", []):
        TALLY[tuple(key)] += count
    for title, lines in output.get("convc_census", {}).items():
        CENSUS.setdefault(title, []).extend(lines)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """After the run: what the differential suite's oracles checked and skipped (oracle_tally), and
    the censuses other suites recorded (suite_census)."""
    from convc.passes import TARGETS
    from oracle_tally import summary
    from suite_census import CENSUS

    lines = summary(tuple(TARGETS))
    if lines:
        terminalreporter.write_sep("=", "differential oracles: modules checked and skipped")
        for line in lines:
            terminalreporter.write_line(line)
    for title, census in CENSUS.items():
        terminalreporter.write_sep("=", title)
        for line in census:
            terminalreporter.write_line(line)


@functools.lru_cache(maxsize=256)
def _executable(text: str, platform: str | None) -> Executable:
    """PJRT executables by StableHLO text and platform, so tests that emit the same module compile it once."""
    return compile_stablehlo(text, platform)


def run_stablehlo(text: str, arrays: Sequence[np.ndarray], platform: str | None = None) -> list[np.ndarray]:
    """Run on `platform`; None: the default one (a GPU where there is one). A test that
    compiles for the cpu target or expects f32-exact numbers names "cpu"."""
    return _executable(text, platform)(*arrays)


def compile_and_run(graph: convc.Graph, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The whole path users take: default pipeline -> verified StableHLO -> PJRT."""
    return run_stablehlo(convc.compile_graph(graph), arrays)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240607)


@pytest.fixture(name="compile_and_run")
def compile_and_run_fixture() -> Callable[[convc.Graph, Sequence[np.ndarray]], list[np.ndarray]]:
    return compile_and_run


@pytest.fixture(name="run_stablehlo")
def run_stablehlo_fixture() -> Callable[[str, Sequence[np.ndarray]], list[np.ndarray]]:
    return run_stablehlo


@pytest.fixture
def write_model(tmp_path: Path) -> Callable[..., Path]:
    """Write a JSON model document into tmp_path and return its path."""

    def write(doc: dict[str, Any], name: str = "model.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path

    return write
