"""The `--verify-diagnostics` matcher: exactly the expected diagnostics, at their lines."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from convc.diagnostics import ConvcError, Location
from convc.verify_diagnostics import Expected, Produced, expectations, mismatches, verify_diagnostics

TEXT = """module @m {
  // expected-error@+1 {{operand types differ [add.C1]}}
  %r = ...
  %s = ...  // expected-error {{on this line}}
  // expected-error@-2 {{two lines up}}
}
"""


def test_expectations_name_their_target_lines() -> None:
    found = expectations(TEXT, first_line=10)
    assert [(e.line, e.text, e.comment_line) for e in found] == [
        (12, "operand types differ [add.C1]", 11), (13, "on this line", 13), (12, "two lines up", 14)]


def _expected(line: int, text: str) -> Expected:
    return Expected(line, text, comment_line=line - 1, comment_col=3)


def test_the_expected_diagnostic_at_its_line_matches() -> None:
    actual = [Produced(4, "'r' (add): operand types differ: tensor<2xf32> and tensor<3xf32> [add.C1]", "t.mlir:4:5")]
    assert mismatches([_expected(4, "operand types differ")], actual, "t.mlir") == []


def test_a_missing_diagnostic_is_reported_at_its_comment() -> None:
    assert mismatches([_expected(4, "operand types differ")], [], "t.mlir") == [
        't.mlir:3:3: error: expected error "operand types differ" was not produced']


def test_an_unexpected_diagnostic_is_reported_at_its_location() -> None:
    actual = [Produced(7, "'r' (relu): 'relu' takes 1 inputs (x), got 2 [A4]", "t.mlir:7:5")]
    assert mismatches([], actual, "t.mlir") == ["t.mlir:7:5: error: unexpected error: 'r' (relu): 'relu' takes 1 inputs (x), got 2 [A4]"]


@pytest.mark.parametrize(("line", "text"), [(5, "operand types differ"), (4, "takes 1 inputs")], ids=["wrong-line", "wrong-text"])
def test_a_diagnostic_at_another_line_or_with_other_text_is_both_unexpected_and_missing(line: int, text: str) -> None:
    actual = [Produced(4, "'r' (add): operand types differ [add.C1]", "t.mlir:4:5")]
    report = mismatches([_expected(line, text)], actual, "t.mlir")
    assert len(report) == 2 and "unexpected error" in report[0] and "was not produced" in report[1]


def test_double_braces_inside_the_text_are_a_regular_expression() -> None:
    assert _expected(4, "cannot {{[a-z ]+}} exactly [P2]").matches('lowering "x" cannot compute this conv exactly [P2]')
    assert not _expected(4, "cannot {{[0-9]+}} exactly").matches("cannot compute exactly")
    assert _expected(4, "[P2] (x.y)").matches("a [P2] (x.y)")  # outside {{...}} every character is literal


def _failing_at(line: int, message: str) -> Callable[[bytes], str]:
    """A chunk compiler that reports one located error."""
    def compile_chunk(data: bytes) -> str:
        raise ConvcError(message, Location(file="t.mlir", line=line, col=5))
    return compile_chunk


def test_each_split_chunk_is_checked_on_its_own_with_the_files_line_numbers() -> None:
    text = "a\n// expected-error@+1 {{boom}}\nop\n// -----\nb\n// expected-error@+1 {{boom}}\nop\n"
    seen: list[int] = []

    def compile_chunk(data: bytes) -> str:
        line = data.decode().split("\n").index("op") + 1
        seen.append(line)
        raise ConvcError("boom", Location(file="t.mlir", line=line, col=1))

    report = io.StringIO()
    assert verify_diagnostics(text.encode(), "t.mlir", "// -----", compile_chunk, report) == 0
    assert seen == [3, 7] and report.getvalue() == ""


def test_a_mismatch_exits_1_and_prints_one_line_each() -> None:
    report = io.StringIO()
    text = "// expected-error@+1 {{boom}}\nop\n"
    assert verify_diagnostics(text.encode(), "t.mlir", None, _failing_at(1, "bang"), report) == 1
    assert report.getvalue().splitlines() == ["t.mlir:1:5: error: unexpected error: bang",
                                              't.mlir:1:1: error: expected error "boom" was not produced']


def test_a_chunk_that_compiles_without_expectations_passes() -> None:
    assert verify_diagnostics(b"fine\n", "t.mlir", None, lambda data: "ir", io.StringIO()) == 0
