"""autotune-conv-lowering: each conv without a `lowering` gets the one measured fastest on
the PJRT device among "xla" and the cpu rewrites legal on it, from the cache file when that
conv signature was measured on this device before (convc.autotune chooses and caches; the
measure it times with is given, see `measure`).

Runs in the cpu pipeline right after cpu-crop-negative-padding (`convc --autotune`), so the
rewrites after it obey the pins. Prints one line per measured signature and a summary
("autotune: 3 convs: 1 measured, 2 cached, 0 with one candidate") to stderr.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass
from pathlib import Path

from convc.autotune import Autotuner, Measure, default_cache_path
from convc.ir import Graph
from convc.pass_manager import Pass


@dataclass(frozen=True)
class AutotuneConvLowering(Pass):
    name = "autotune-conv-lowering"
    summary = "pin each conv's lowering to the candidate measured fastest on the PJRT device (cached)"
    cache: str = ""  # the cache file; "": $XDG_CACHE_HOME/convc/autotune.json (~/.cache/...)
    platform: str = ""  # the PJRT platform to measure on; "": the one PJRT finds
    budget_ms: float = 100.0  # timed calls per candidate per conv signature stop after about this long
    # How to time candidates: no option (pipeline text cannot spell it) but given by whoever
    # builds the pipeline, from `platform` and `budget_ms` (convc's Compiler: on PJRT).
    measure: InitVar[Measure | None] = None

    def __post_init__(self, measure: Measure | None) -> None:
        object.__setattr__(self, "_measure", measure)

    def run(self, graph: Graph) -> bool:
        cache = Path(self.cache) if self.cache else default_cache_path()
        report = Autotuner(cache, self._measure).tune(graph)
        return report.outcomes["measured"] + report.outcomes["cached"] > 0
