"""Attribute kinds, the typed op view and the memo helper: each default is stated once, in
an op's declaration, and read through `view(op)`; values are immutable and hashable."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from convc import Builder
from convc.memo import memoized
from convc.ops import OPS, view
from convc.ops.attr_kinds import DIMS, FLOAT, PADDING, ConvDimensionNumbers, IntRowsKind

ROOT = Path(__file__).resolve().parents[2]

def test_no_default_is_restated_outside_the_declarations() -> None:
    """No `attrs.get("padding", "VALID")` (any `.get` of a declared attribute with a
    fallback) and no `... or (1,) * n`: readers go through `view(op)`."""
    names = sorted({name for opdef in OPS.values() for name in opdef.attrs})
    restated = re.compile(r"\.get\(\s*[\"'](?:" + "|".join(names) + r")[\"']\s*,|\bor \((?:0|1),\) \*")
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for folder in ("compiler", "passes", "tools") for path in sorted((ROOT / folder).rglob("*.py"))
                 for number, line in enumerate(path.read_text().splitlines(), 1) if restated.search(line)]
    assert not offenders, "read attributes through convc.ops.view(op):\n" + "\n".join(offenders)


def test_view_fills_declared_defaults_from_the_operand_types() -> None:
    b = Builder()
    x3, w3 = b.input("x3", (1, 2, 8, 8, 8)), b.input("w3", (4, 2, 3, 3, 3))
    conv3d = b.conv(x3, w3, rhs_dilation=(1, 2, 1))
    v = view(conv3d.producer)  # type: ignore[arg-type]
    assert v.window_strides == (1, 1, 1) and v.lhs_dilation == (1, 1, 1) and v.rhs_dilation == (1, 2, 1)
    assert v.padding == "VALID" and v.feature_group_count == 1 and v.precision is None
    assert v.dimension_numbers == ("NC012", "OI012", "NC012")
    assert not v.has("padding") and "padding" not in conv3d.producer.attrs  # type: ignore[union-attr]
    sliced = b.slice(b.input("s", (4, 6)), (0, 0), (4, 6))
    assert view(sliced.producer).strides == (1, 1)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="declares no attribute 'stride'"):
        _ = v.stride


def test_typed_values_are_hashable() -> None:
    raw = {"window_strides": [2, 2], "padding": [[1, 1], [0, 2]], "dimension_numbers": ["NHWC", "HWIO", "NHWC"],
           "precision": ["high", "highest"], "feature_group_count": np.int64(1)}
    typed = {name: OPS["conv"].attrs[name].check(name, value) for name, value in raw.items()}
    assert typed == {"window_strides": (2, 2), "padding": ((1, 1), (0, 2)), "dimension_numbers": ("NHWC", "HWIO", "NHWC"),
                     "precision": ("HIGH", "HIGHEST"), "feature_group_count": 1}
    hash(tuple(typed.items()))


def test_constant_values_are_read_only_views() -> None:
    b = Builder()
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    held = b.constant("c", array).producer.attrs["value"]  # type: ignore[union-attr]
    assert not held.flags.writeable and array.flags.writeable and np.shares_memory(held, array)


@pytest.mark.parametrize(("kind", "value", "text"), [
    (PADDING, "SAME", '"SAME"'),
    (PADDING, ((1, 2), (0, 0)), "dense<[[1, 2], [0, 0]]> : tensor<2x2xi64>"),
    (IntRowsKind(3), (), "dense<> : tensor<0x3xi64>"),
    (DIMS, ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)), "#convc.dims<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>"),
    (FLOAT, float("-inf"), '"-inf"'),
])
def test_kinds_print_their_values(kind: object, value: object, text: str) -> None:
    assert kind.print(value) == text  # type: ignore[attr-defined]


def test_float_kind_reads_back_quoted_non_finite_values() -> None:
    assert FLOAT.parse("-inf") == float("-inf") and FLOAT.parse("x") == "x" and FLOAT.parse(1.5) == 1.5


def test_memo_computes_unhashable_keys_directly_and_starts_over_when_full() -> None:
    calls: list[object] = []

    @memoized(2)
    def double(value: object) -> object:
        calls.append(value)
        if value == "bad":
            raise ValueError(value)
        return value * 2  # type: ignore[operator]

    assert double(1) == 2 and double(1) == 2 and calls == [1]
    assert double([1]) == [1, 1] and double([1]) == [1, 1] and calls == [1, [1], [1]]  # unhashable: never kept
    for _ in range(2):
        with pytest.raises(ValueError):
            double("bad")
    assert calls.count("bad") == 2  # errors are not kept
    double(2)
    double(3)  # the third entry: the cache starts over
    assert len(double.cache) == 1
