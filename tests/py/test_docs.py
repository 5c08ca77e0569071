"""The reference docs name everything the registries hold, so a new op, pass or
diagnostic id cannot land undocumented."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_relative_links_between_docs_resolve() -> None:
    for doc in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([a-z\-]+\.md)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (DOCS / target).exists(), f"{doc.name} links to missing {target}"
