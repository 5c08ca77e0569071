"""Compile time of one model, phase by phase, with its weights as constants in the module
(the default) and as arguments (`--weights-as-inputs`):

    python -m convc.tools.bench_compile resnet50.onnx --rounds 3

Each round runs each form in a fresh interpreter (imports and XLA's first compile are part
of what a user waits for), the two forms alternating which goes first. A phase's wall time
and its CPU time (this process's, all threads) are both reported, as medians over the
rounds: on a shared machine the wall time follows the load, the CPU time much less.
The phases are those of `convc MODEL --run` up to PJRT's compile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

FORMS = ("constants", "arguments")
PHASES = ("import convc", "load (import the model)", "passes", "import jaxlib (MLIR, JAX)", "emit + MLIR parse, verify",
          "XLA compile (PJRT)")


# The child: its clocks read before anything is imported, so that importing convc counts.
CHILD = ("import time; start = (time.perf_counter(), time.process_time()); import sys; "
         "from convc.tools.bench_compile import child; child(start, *sys.argv[1:])")


def child(start: tuple[float, float], model: str, form: str, target: str) -> None:
    """Measure once in this fresh interpreter and print the phases as one JSON line."""
    print(json.dumps(measure_one(model, form, target, start)))


def measure_one(model: str, form: str, target: str, start: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """(wall s, CPU s) of each phase, in this process; `start` is (perf_counter,
    process_time) when the interpreter began running the child's code."""
    phases: dict[str, tuple[float, float]] = {}

    @contextmanager
    def phase(name: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        phases[name] = (time.perf_counter() - wall, time.process_time() - cpu)

    from convc import mlir
    from convc.compile import Compiler
    from convc.literals import INLINE_ELEMENTS
    from convc.runtime import compile_stablehlo

    phases["import convc"] = (time.perf_counter() - start[0], time.process_time() - start[1])
    compiler = Compiler(target=target, weights_larger=INLINE_ELEMENTS if form == "arguments" else None, log=lambda line: None)
    with phase("load (import the model)"):
        graph = compiler.load(model)
    with phase("passes"):
        compiler.run_passes(graph)
    with phase("import jaxlib (MLIR, JAX)"):
        mlir.load()
    with phase("emit + MLIR parse, verify"):
        module = compiler.runnable(graph)
    with phase("XLA compile (PJRT)"):
        compile_stablehlo(module, "cpu")
    return phases


def run_child(model: str, form: str, target: str) -> dict[str, tuple[float, float]]:
    command = [sys.executable, "-c", CHILD, model, form, target]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found: dict[str, tuple[float, float]] = {name: (wall, cpu) for name, (wall, cpu) in json.loads(done.stdout.splitlines()[-1]).items()}
    return found


def table(results: dict[str, list[dict[str, tuple[float, float]]]]) -> list[str]:
    """Markdown: one row per phase and the total, wall and CPU medians per form."""
    head = "| phase | " + " | ".join(f"{form}: wall s | {form}: CPU s" for form in FORMS) + " |"
    lines = [head, "|---|" + "---:|" * (2 * len(FORMS))]
    for name in (*PHASES, "total"):
        cells = []
        for form in FORMS:
            rounds = results[form]
            for index in (0, 1):
                values = [sum(r[p][index] for p in PHASES) if name == "total" else r[name][index] for r in rounds]
                cells.append(f"{statistics.median(values):.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None, out: Callable[[str], Any] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m convc.tools.bench_compile", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the model (.onnx, .json or convc IR)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per form (default 3)")
    parser.add_argument("--target", default="cpu", help="the lowering target (default cpu)")
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, tuple[float, float]]]] = {form: [] for form in FORMS}
    loads = [os.getloadavg()[0]]
    for index in range(args.rounds):
        for form in FORMS if index % 2 == 0 else FORMS[::-1]:
            results[form].append(run_child(args.model, form, args.target))
        loads.append(os.getloadavg()[0])
    from importlib.metadata import version

    out(f"{args.model}, --target {args.target}, {args.rounds} rounds, jaxlib {version('jaxlib')}, {os.cpu_count()} cores, "
        f"1-minute load average {min(loads):.1f}-{max(loads):.1f}")
    for line in table(results):
        out(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
