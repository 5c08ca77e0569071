"""`convc-opt --verify-diagnostics`: MLIR's convention for negative tests.

A test file states the diagnostics it expects in comments, each naming the line the
diagnostic must be reported at and a substring of its message:

    // expected-error@+1 {{lhs rank 4 and rhs rank 3 differ [C1]}}
    %c = "convc.conv"(%x, %w) : ...

`@+N` / `@-N` count lines from the comment; without a suffix the comment's own line is
meant. As in MLIR, `{{regex}}` inside the text matches a regular expression
(`{{lowering "x" cannot {{.*}} [P2]}}`). The run succeeds iff exactly the expected diagnostics occur, at their lines; every
unexpected or missing one is reported as a located line. With `--split-input-file` each
chunk is checked on its own (convc stops a chunk at its first error, as it stops a file).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from .diagnostics import ConvcError, Location, UsageError, one_line

EXIT_OK, EXIT_MISMATCH = 0, 1
_EXPECTATION = re.compile(r"//\s*expected-(error)(@[+-][0-9]+)?\s*\{\{(.*)\}\}")  # the text: first {{ to last }}
_REGEX_PART = re.compile(r"\{\{(.*?)\}\}")


@dataclass(frozen=True)
class Expected:
    """One `expected-error` comment: where the diagnostic must be, and part of its text."""

    line: int  # the line the diagnostic must be located at (1-based, in the whole file)
    text: str
    comment_line: int
    comment_col: int

    def matches(self, message: str) -> bool:
        """Whether `message` contains the text (its `{{...}}` parts as regular expressions)."""
        literal_parts = _REGEX_PART.split(self.text)  # even indices literal, odd ones regexes
        pattern = "".join(part if index % 2 else re.escape(part) for index, part in enumerate(literal_parts))
        return re.search(pattern, message) is not None


@dataclass(frozen=True)
class Produced:
    """One diagnostic convc reported: its line (None: not located in the text) and message."""

    line: int | None
    message: str
    where: str


def expectations(text: str, first_line: int = 1) -> list[Expected]:
    """Every `expected-error` comment of `text`, whose first line is `first_line` of the file."""
    found = []
    for index, line in enumerate(text.split("\n")):
        for match in _EXPECTATION.finditer(line):
            here = first_line + index
            offset = int(match.group(2)[1:]) if match.group(2) else 0
            found.append(Expected(here + offset, match.group(3), here, match.start() + 1))
    return found


def produced(err: ConvcError) -> Produced:
    """A ConvcError as the matcher sees it: its line and the message after `error: `."""
    full = str(err)
    prefix = f"{err.loc.where()}: error: "
    return Produced(err.loc.line, full[len(prefix):] if full.startswith(prefix) else full, err.loc.where())


def mismatches(expected: Sequence[Expected], actual: Sequence[Produced], file: str) -> list[str]:
    """Report lines for diagnostics that occurred unexpectedly and expectations left unmet."""
    unmet = list(expected)
    report = []
    for diagnostic in actual:
        match = next((e for e in unmet if e.line == diagnostic.line and e.matches(diagnostic.message)), None)
        if match is None:
            report.append(one_line(f"{diagnostic.where}: error: unexpected error: {diagnostic.message}"))
        else:
            unmet.remove(match)
    for missing in unmet:
        report.append(one_line(f'{file}:{missing.comment_line}:{missing.comment_col}: error: '
                               f'expected error "{missing.text}" was not produced'))
    return report


def check_chunk(text: str, first_line: int, file: str, compile_chunk: Callable[[bytes], object]) -> list[str]:
    """Compile one chunk (padded so its lines keep the whole file's numbers) and match its
    diagnostics against its comments; returns the report lines (none: as expected)."""
    actual = []
    try:
        compile_chunk(("\n" * (first_line - 1) + text).encode())
    except UsageError:  # the command line's fault, no chunk's diagnostic: exit 2
        raise
    except ConvcError as err:
        actual.append(produced(err))
    return mismatches(expectations(text, first_line), actual, file)


def split_chunks(data: bytes, file: str, split_marker: str | None) -> list[tuple[int, str]]:
    """The input's chunks (split at `split_marker`, or one), each with the file line it starts on;
    input that is not UTF-8 is a user error, as it is without splitting."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConvcError(f"input is not UTF-8 text (byte {err.start})", Location(file=file), "I2") from None
    chunks, first_line = [], 1
    for chunk in text.split(split_marker) if split_marker else [text]:
        chunks.append((first_line, chunk))
        first_line += chunk.count("\n")
    return chunks


def verify_diagnostics(data: bytes, file: str, split_marker: str | None, compile_chunk: Callable[[bytes], object],
                       report: TextIO | None = None) -> int:
    """Check every chunk of `data` (split at `split_marker`, or whole); print the mismatches
    to `report` (stderr) and return 0 iff there are none, else 1."""
    lines = [line for first_line, chunk in split_chunks(data, file, split_marker)
             for line in check_chunk(chunk, first_line, file, compile_chunk)]
    for line in lines:
        print(line, file=report or sys.stderr)
    return EXIT_MISMATCH if lines else EXIT_OK
