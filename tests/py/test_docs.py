"""The reference docs name everything the registries hold, so a new op, pass or
diagnostic id cannot land undocumented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from convc.ops import OPS
from convc.passes import PASSES

DOCS = Path(__file__).resolve().parents[2] / "docs"
COMPILER = Path(__file__).resolve().parents[2] / "compiler"


def _headings(doc: str) -> set[str]:
    """Backquote-free words of every markdown heading (`### a, b` names a and b)."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    words: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            words.update(re.findall(r"[a-z0-9_\-]+", line.lstrip("#")))
    return words


def test_model_format_has_a_section_per_op() -> None:
    assert set(OPS) - _headings("model-format.md") == set()


def test_model_format_documents_every_attribute() -> None:
    text = (DOCS / "model-format.md").read_text(encoding="utf-8")
    missing = {f"{op}.{attr}" for op, opdef in OPS.items() for attr in opdef.attrs
               if op != "constant" and f"`{attr}`" not in text}
    assert missing == set()


def test_passes_doc_has_a_section_per_pass() -> None:
    assert set(PASSES) - _headings("passes.md") == set()


def test_diagnostics_doc_lists_every_conv_constraint_id() -> None:
    raised = set(re.findall(r'"([CL][0-9]+)"', (COMPILER / "ops" / "conv.py").read_text(encoding="utf-8")))
    table = set(re.findall(r"^\| ([CL][0-9]+) \|", (DOCS / "diagnostics.md").read_text(encoding="utf-8"), re.M))
    assert raised and raised <= table
    assert {f"C{i}" for i in range(1, 28)} <= table  # the spec's non-quantized ids, each explained


# An id written in an op module: namespaced (`"dot_general.C5"`, `f"{v.opdef.name}.C4"` is
# spelled per op in the docs) or one of the shared A ids (compiler/ops/base.py).
_OP_ID = re.compile(r'"([a-z_]+\.[A-Z][0-9]+|A[0-9]+)"')


def _op_module_ids() -> set[str]:
    return {found for path in (COMPILER / "ops").glob("*.py") for found in _OP_ID.findall(path.read_text(encoding="utf-8"))}


def test_diagnostics_doc_lists_every_op_constraint_id() -> None:
    text = (DOCS / "diagnostics.md").read_text(encoding="utf-8")
    ids = _op_module_ids()
    assert {"A1", "dot_general.C5", "broadcast_in_dim.C5", "slice.C3"} <= ids
    assert {i for i in ids if f"| `{i}` |" not in text and f"| {i} |" not in text} == set()


def test_every_namespaced_id_and_shared_rule_has_a_negative_lit_test() -> None:
    lit = Path(__file__).resolve().parents[1] / "lit"
    tested = "\n".join(path.read_text(encoding="utf-8") for path in [*lit.glob("*.mlir"), *lit.glob("json/*.test")])
    assert {i for i in _op_module_ids() if f"[{i}]" not in tested} == set()


def test_every_quantized_type_id_is_documented_and_has_a_negative_lit_test() -> None:
    """The spec's quantized-type rules (compiler/dtypes.py) and Q1 (compiler/ops/base.py)."""
    ids = set(re.findall(r'"(quant\.C[0-9]+)"', (COMPILER / "dtypes.py").read_text(encoding="utf-8"))) | {"Q1"}
    text = (DOCS / "diagnostics.md").read_text(encoding="utf-8")
    lit = Path(__file__).resolve().parents[1] / "lit"
    tested = "\n".join(path.read_text(encoding="utf-8") for path in lit.glob("*.mlir"))
    assert len(ids) >= 13
    assert {i for i in ids if f"| {i} |" not in text or f"[{i}]" not in tested} == set()


# An id of a family outside the op declarations (files, JSON, convc text, builder, graph,
# emitter, run, sharding, gradients, ONNX models), written as a string anywhere in the compiler.
_STAGE_ID = re.compile(r'"([IJXUVERGO][0-9]+|S[0-9]+)"')


def _stage_ids() -> set[str]:
    return {found for path in COMPILER.rglob("*.py") if "ops" not in path.relative_to(COMPILER).parts
            for found in _STAGE_ID.findall(path.read_text(encoding="utf-8"))}


def test_diagnostics_doc_lists_every_stage_id() -> None:
    text = "".join((DOCS / doc).read_text(encoding="utf-8") for doc in ("diagnostics.md", "autodiff.md"))  # G ids: autodiff.md
    ids = _stage_ids()
    assert {"I1", "J1", "X1", "U1", "V1", "E1", "R1", "S10", "G1", "O1"} <= ids
    assert {i for i in ids if f"| {i} |" not in text} == set()


def test_every_stage_id_has_a_negative_test() -> None:
    tests = Path(__file__).resolve().parents[1]
    sources = [*(tests / "lit").rglob("*.mlir"), *(tests / "lit" / "json").glob("*.test"), *(tests / "py").glob("test_*.py")]
    tested = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in sources)
    assert {i for i in _stage_ids() if f"[{i}]" not in tested and f'"{i}"' not in tested} == set()


def test_relative_links_between_docs_resolve() -> None:
    for doc in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([a-z\-]+\.md)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (DOCS / target).exists(), f"{doc.name} links to missing {target}"


# --- documented commands ------------------------------------------------------------------------

ROOT = DOCS.parent
DOC_TEST = re.compile(r"<!-- doc-test -->\n```[a-z]*\n(.*?)```", re.S)
# Figures XLA computes: another XLA version may round differently from the one the doc names,
# and the last bits (crc32, the error figure) follow the host's vector units on any version.
XLA_FIGURES = re.compile(r"(sum=)\S+ (crc32=)\S+|(error vs jax\.lax )\S+")
HOST_BITS = re.compile(r"(crc32=)\S+|(error vs jax\.lax )\S+")


def documented_sessions(doc: str) -> list[tuple[str, str]]:
    """(command, expected output) for every `$ ` line of the blocks marked `<!-- doc-test -->`."""
    sessions: list[tuple[str, str]] = []
    for block in DOC_TEST.findall((DOCS / doc).read_text(encoding="utf-8")):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            sessions.append((command, output))
    return sessions


def _documented_jaxlib() -> str:
    match = re.search(r"come from jaxlib (\S+) on XLA:CPU", (DOCS / "cli.md").read_text(encoding="utf-8"))
    assert match, "docs/cli.md names the jaxlib its outputs come from"
    return match.group(1)


def _without(figures: re.Pattern[str], text: str) -> str:
    return figures.sub(lambda m: "".join(g for g in m.groups() if g) + "*", text)


@pytest.mark.parametrize(("command", "expected"), documented_sessions("cli.md"), ids=lambda value: value[:60])
def test_documented_commands_print_what_the_docs_show(command: str, expected: str) -> None:
    """Run each documented command from the repository root, on the CPU platform, and compare
    stdout and stderr with the doc: a changed checksum, message or listing fails here."""
    import importlib.metadata
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    argv = shlex.split(command)
    tool = Path(sys.executable).with_name(argv[0])
    executable = str(tool) if tool.exists() else shutil.which(argv[0])
    if executable is None:
        pytest.skip(f"console script '{argv[0]}' is not installed")
    done = subprocess.run([executable, *argv[1:]], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    figures = HOST_BITS if importlib.metadata.version("jaxlib") == _documented_jaxlib() else XLA_FIGURES
    assert _without(figures, done.stdout) == _without(figures, expected)


def test_every_cli_doc_test_block_has_commands() -> None:
    assert len(documented_sessions("cli.md")) >= 4


def test_generated_doc_sections_are_current() -> None:
    """Every section tools/gen_docs.py writes from the registries matches the committed docs."""
    from convc.tools import gen_docs

    assert gen_docs.stale_sections(write=False) == [], "stale docs: run `python -m convc.tools.gen_docs`"
