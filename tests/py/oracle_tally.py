"""The session's count of what each differential check ran and what it skipped, per test,
per `--target` and per reason: an oracle that does not run on a module is counted here and
printed at the end of the run (conftest's `pytest_terminal_summary`), never silent."""

from __future__ import annotations

import os
import re
from collections import Counter

# (test, outcome, check, target) -> modules; outcome "ran" or "skipped"
TALLY: Counter[tuple[str, str, str, str]] = Counter()


def current_test() -> str:
    """The running test's function name, without its parameters ("test_regression_replays")."""
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "outside a test").split(" ")[0]
    return re.sub(r"\[.*\]$", "", nodeid.split("::")[-1])


def ran(check: str, target: str) -> None:
    TALLY[(current_test(), "ran", check, target)] += 1


def skipped(check: str, target: str) -> None:
    TALLY[(current_test(), "skipped", check, target)] += 1


def summary(targets: tuple[str, ...]) -> list[str]:
    """A table per test: one row per check, what ran then what was skipped and why (in the
    order first met), one column of module counts per target."""
    lines: list[str] = []
    for test in dict.fromkeys(key[0] for key in TALLY):
        lines.append(f"{test} (modules per --target):")
        lines.append("  " + "".join(f"{target:>8}" for target in targets))
        for outcome in ("ran", "skipped"):
            for check in dict.fromkeys(key[2] for key in TALLY if key[0] == test and key[1] == outcome):
                counts = "".join(f"{TALLY[(test, outcome, check, target)]:>8}" for target in targets)
                lines.append(f"  {counts}  {outcome}: {check}")
    return lines
