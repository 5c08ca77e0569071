"""Census lines a test suite leaves for the end of the run: what it ran, passed and refused,
and why. conftest's `pytest_terminal_summary` prints them under their titles, so a count
that would otherwise hide in a passing test is always in the output."""

from __future__ import annotations

# title -> lines, in the order the tests recorded them
CENSUS: dict[str, list[str]] = {}


def record(title: str, lines: list[str]) -> None:
    """Set the census printed under `title` (a later call for the same title replaces it)."""
    CENSUS[title] = list(lines)
