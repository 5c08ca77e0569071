"""Passes, MLIR-style pipeline text (`-p "a,b{opt=1 flag=true}"`) and the pass manager.

A pass is a frozen dataclass with a class attribute `name`; its fields are its
options. The manager verifies the graph after every pass that changed it.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, get_type_hints

from .diagnostics import ConvcError, InternalError, UsageError, suggest
from .ir import Graph
from .verify import verify_graph


@dataclasses.dataclass(frozen=True)
class Pass:
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def run(self, graph: Graph) -> bool:
        """Transform `graph` in place; return whether anything changed."""
        raise NotImplementedError

    def spelling(self) -> str:
        """This pass as pipeline text, options included (round-trips through parse_pipeline)."""
        options = " ".join(f"{f.name}={_format_option(getattr(self, f.name))}" for f in dataclasses.fields(self))
        return f"{self.name}{{{options}}}" if options else self.name


class PipelineError(UsageError):
    """A malformed pipeline string or an unknown pass or option (a usage error: exit 2)."""


def _format_option(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _parse_option(pass_name: str, field: str, kind: Any, text: str) -> Any:
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        return text
    except ValueError:
        raise PipelineError(f"pass '{pass_name}': option '{field}' expects {getattr(kind, '__name__', kind)}, got '{text}'") from None


_ENTRY = re.compile(r"\s*([A-Za-z0-9_\-]+)\s*(?:\{([^{}]*)\})?\s*(?:,|$)")


def parse_pipeline(text: str, registry: dict[str, type[Pass]]) -> list[Pass]:
    """`"a,b{opt=1 other=x}"` -> pass instances, checking names and option types."""

    passes: list[Pass] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _ENTRY.match(text, pos)
        if match is None or match.end() == pos:
            raise PipelineError(f"malformed pipeline at character {pos + 1}: '{text[pos:]}'")
        name, options = match.group(1), match.group(2) or ""
        cls = registry.get(name)
        if cls is None:
            raise PipelineError(f"unknown pass '{name}'{suggest(name, registry)}")
        hints, fields = _options(cls)
        kwargs: dict[str, Any] = {}
        for item in options.split():
            key, sep, value = item.partition("=")
            if not sep:
                raise PipelineError(f"pass '{name}': option '{item}' needs a value (key=value)")
            if key not in fields:
                raise PipelineError(f"pass '{name}' has no option '{key}'{suggest(key, fields)}")
            kwargs[key] = _parse_option(name, key, hints[key], value)
        passes.append(cls(**kwargs))
        pos = match.end()
    return passes


_OPTIONS: dict[type[Pass], tuple[dict[str, Any], tuple[str, ...]]] = {}


def _options(cls: type[Pass]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A pass class's option types and names, kept per class (resolving the annotations is
    the slow part of parsing a pipeline, and every compile parses one)."""
    found = _OPTIONS.get(cls)
    if found is None:
        found = _OPTIONS[cls] = (get_type_hints(cls), tuple(f.name for f in dataclasses.fields(cls)))
    return found


PrintHook = Callable[[Pass, Graph], None]


@dataclasses.dataclass
class PassManager:
    passes: Sequence[Pass]
    verify_each: bool = True
    print_after: PrintHook | None = None
    timings: list[tuple[str, float]] = dataclasses.field(default_factory=list)

    def run(self, graph: Graph) -> Graph:
        for p in self.passes:
            start = time.perf_counter()
            changed = p.run(graph)
            elapsed = time.perf_counter() - start
            # As MLIR's pass manager: a pass that reports no change (False) left
            # verified IR verified, so only changed IR is verified again.
            if self.verify_each and changed is not False:
                try:
                    verify_graph(graph)
                except ConvcError as err:
                    raise InternalError(f"pass '{p.name}' produced invalid IR: {err}") from None
            self.timings.append((p.name, elapsed))
            if self.print_after is not None:
                self.print_after(p, graph)
        return graph

    def timing_report(self) -> str:
        total = sum(t for _, t in self.timings) or 1e-12
        lines = ["===- Pass execution timing report -===", f"  Total: {total * 1e3:.3f} ms"]
        lines += [f"  {t * 1e3:9.3f} ms ({100 * t / total:5.1f}%)  {name}" for name, t in self.timings]
        return "\n".join(lines)
