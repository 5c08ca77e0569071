"""Every shipped example's compiled output, byte for byte, for each target: the StableHLO
module (`convc X.json --target T`) and the lowered convc IR (`--emit=convc`). A refactor of
the front end, the passes or the emitter must not change a byte of them. The cpu target's
pipeline follows the host (compile.WITHOUT_AVX512_PASS_OPTIONS); its goldens are an AVX-512
host's, whatever CPU runs the test.

On an intended change, regenerate and review the diff:

    CONVC_UPDATE_GOLDEN=1 python -m pytest tests/py/test_golden.py -q
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from convc import compile
from convc.compile import Compiler

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
GOLDEN = Path(__file__).resolve().parent / "golden"
TARGETS = ("generic", "cpu", "gpu")
KINDS = {"stablehlo": "mlir", "convc": "convc"}
UPDATE = os.environ.get("CONVC_UPDATE_GOLDEN") == "1"


def compiled(model: Path, target: str, kind: str) -> bytes:
    compiler = Compiler(target=target, verify=False)
    graph = compiler.run_passes(compiler.load(str(model)))
    return compiler.emit(graph, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", EXAMPLES, ids=lambda p: p.stem)
def test_output_matches_golden(model: Path, target: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile, "host_has_avx512", lambda: True)
    path = GOLDEN / f"{model.stem}.{target}.{KINDS[kind]}"
    actual = compiled(model, target, kind)
    if UPDATE:
        path.write_bytes(actual)
        return
    assert path.exists(), f"no golden file {path.name}; create it with CONVC_UPDATE_GOLDEN=1"
    expected = path.read_bytes()
    if actual != expected:
        first = next(i for i, (a, b) in enumerate(zip(actual, expected, strict=True)) if a != b) if len(actual) == len(expected) else None
        line = actual[:first].count(b"\n") + 1 if first is not None else None
        where = f"first difference on line {line}" if line else f"{len(actual)} bytes, golden has {len(expected)}"
        pytest.fail(f"{model.name} --target {target} --emit={kind} differs from {path.name} ({where}); "
                    "if the change is intended, regenerate with CONVC_UPDATE_GOLDEN=1 and review the diff")


def test_every_golden_file_has_a_case() -> None:
    """A stale golden file (a removed example or target) fails rather than lingering."""
    expected = {f"{m.stem}.{t}.{ext}" for m in EXAMPLES for t in TARGETS for ext in KINDS.values()}
    assert {p.name for p in GOLDEN.iterdir()} <= expected


def test_fresh_ssa_names_take_the_first_free_suffix_when_a_suffixed_name_is_already_taken() -> None:
    """The emitter's SSA names: `base`, then `base_1`, `base_2`, ... skipping any taken by
    another value (here a value named `v_2`), also when it resumes after earlier ones."""
    from convc.emit.stablehlo import EmitContext

    context = EmitContext()
    first = [context.fresh("v") for _ in range(2)]
    taken = context.fresh("v_2")
    assert first + [taken] + [context.fresh("v") for _ in range(2)] == ["%v", "%v_1", "%v_2", "%v_3", "%v_4"]
    assert [context.fresh("0"), context.fresh("0")] == ["%0_1", "%0_2"]  # a bare number is no SSA name of its own
