"""Located diagnostics: every user error names where it is and which rule it breaks."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where an op or value came from: a JSON pointer, a text position, or a call site."""

    file: str | None = None
    pointer: str | None = None  # JSON pointer, e.g. "/nodes/3"
    line: int | None = None
    col: int | None = None
    node: str | None = None
    op: str | None = None

    def child(self, key: str | int) -> Location:
        """The location of a member of this object (only JSON pointers descend)."""
        if self.pointer is None:
            return self
        escaped = str(key).replace("~", "~0").replace("/", "~1")
        # spelled out rather than dataclasses.replace, which costs several times more: the frontend makes one per member read
        return Location(file=self.file, pointer=f"{self.pointer}/{escaped}", line=self.line, col=self.col,
                        node=self.node, op=self.op)

    def where(self) -> str:
        file = self.file or "<input>"
        if self.pointer is not None:
            return f"{file}:{self.pointer or '/'}"
        if self.line is not None:
            return f"{file}:{self.line}:{self.col or 1}"
        return file


UNKNOWN = Location()


class ConvcError(Exception):
    """A user error: one line, located, with the constraint it breaks."""

    def __init__(self, message: str, loc: Location = UNKNOWN, constraint: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.constraint = constraint

    def __str__(self) -> str:
        subject = ""
        if self.loc.node is not None:
            subject = f"'{self.loc.node}'"
            if self.loc.op is not None:
                subject += f" ({self.loc.op})"
            subject += ": "
        tag = f" [{self.constraint}]" if self.constraint else ""
        return one_line(f"{self.loc.where()}: error: {subject}{self.message}{tag}")


# Characters that would break a diagnostic's one line (or its encoding): controls, Unicode
# line separators, lone surrogates. They are shown as Python escapes.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")


def one_line(text: str) -> str:
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


class UsageError(ConvcError):
    """A malformed request rather than a wrong model: an unknown pass or target, pipeline
    text or a flag value that does not parse, options that do not fit together. It carries
    no id and names what was asked for instead of a place; the command lines exit 2 with
    it, as argparse does, and print `convc: error: <message>` (`str()` reads the same)."""

    def __init__(self, message: str):
        super().__init__(message)

    def __str__(self) -> str:
        return one_line(f"convc: error: {self.message}")


def suggest(name: str, choices: Iterable[str]) -> str:
    """A ' (did you mean 'x'?)' suffix, or '' when nothing is close."""
    options = list(choices)
    same_but_case = [c for c in options if c.lower() == name.lower()]  # "ReLU" for "relu"
    close = same_but_case or difflib.get_close_matches(name, options, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


class VerifyError(Exception):
    """Raised by op verifiers; the verifier driver adds the op's location.

    `attr` names the attribute at fault and `operand` the operand index, so the
    diagnostic can point into the JSON node (`/nodes/3/feature_group_count`).
    """

    def __init__(
        self,
        message: str,
        constraint: str | None = None,
        *,
        attr: str | None = None,
        operand: int | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.constraint = constraint
        self.attr = attr
        self.operand = operand


class InternalError(Exception):
    """A bug in convc, not in the user's model."""
