"""Regenerate the sections of docs/ that are written from convc's registries.

A generated section sits between two markers in a Markdown file:

    <!-- generated: NAME (python -m convc.tools.gen_docs) -->
    ...
    <!-- end generated: NAME -->

and `SECTIONS` maps NAME to the function that writes its body from the declarations (the
op registry, the passes), so the docs cannot drift from the code: `tests/py/test_docs.py`
fails until the committed text is regenerated.

    python -m convc.tools.gen_docs           # rewrite every generated section
    python -m convc.tools.gen_docs --check   # exit 1 if any is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from convc.builder import builder_reference
from convc.frontend.onnx import op_table as onnx_op_table
from convc.ops import gradient_rules_table

DOCS = Path(__file__).resolve().parents[1] / "docs"

# NAME -> (the doc that holds it, what writes its body). Each section's writer lives with the
# registry it reads; this table only says where its text goes.
SECTIONS: dict[str, tuple[str, Callable[[], str]]] = {
    "builder-reference": ("builder.md", builder_reference),
    "gradient-rules": ("autodiff.md", gradient_rules_table),
    "onnx-ops": ("onnx.md", onnx_op_table),
}


def _markers(name: str) -> re.Pattern[str]:
    start = re.escape(f"<!-- generated: {name} (python -m convc.tools.gen_docs) -->")
    end = re.escape(f"<!-- end generated: {name} -->")
    return re.compile(f"({start}\n)(.*?)({end})", re.S)


def regenerated(text: str, name: str, body: str) -> str:
    """`text` with section `name`'s body replaced by `body` (which ends with a newline)."""
    pattern = _markers(name)
    if pattern.search(text) is None:
        raise KeyError(f"no generated section '{name}' (its two markers) in the document")
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def stale_sections(write: bool) -> list[str]:
    """The sections whose committed text differs from what the code generates (rewritten when `write`)."""
    stale = []
    for name, (doc, writer) in SECTIONS.items():
        path = DOCS / doc
        text = path.read_text(encoding="utf-8")
        fresh = regenerated(text, name, writer())
        if fresh != text:
            stale.append(f"{doc}: {name}")
            if write:
                path.write_text(fresh, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m convc.tools.gen_docs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated section is stale; write nothing")
    args = parser.parse_args(argv)
    stale = stale_sections(write=not args.check)
    for entry in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {entry}", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
