"""ONNX's own backend node test cases (`onnx.backend.test.case.node`: one-node models with
inputs and the outputs ONNX computed for them, generated from the installed `onnx` package)
for every op type convc's ONNX registry converts, run through convc (`load_onnx`, the
default pipeline, PJRT on the CPU) and compared with the expected outputs: the op-level
peer suite of issue 17 (docs/testing.md).

Which cases run is derived from the registry: a case runs when each of its nodes has a
converter at the case's opset, so an op's cases run as soon as its converter is registered.
Each case that runs ends in one of three ways; anything else fails its op's test:

- its outputs agree with the expected ones: same shape and element type (an int64 output,
  a type convc lacks, is compared as convc's int32 of the same values) and values within
  TOLERANCE (exact for integers; AT_BACKEND_TOLERANCE names the cases held to ONNX's own
  tolerance instead, with why);
- it is refused because it holds an element type convc lacks (uint8 or int16 data, float8,
  strings, sequences): a one-line O6/O7 about that type, its reason derived from the case;
- it fails as EXPECTED_FAILURES lists it, with the reason written there. A listed case that
  passes, or fails otherwise, fails the test, so the list cannot go stale.

Inputs convc needs at import (a Reshape's shape, Squeeze's axes, Gather's indices: int64
graph inputs in these cases, or whatever input a converter says must be known at import)
become initializers holding the case's values, as an exporter writes them, as long as one
input is left to feed at run time: with every input known, onnx.reference would evaluate
the node at import and the case would test nothing of convc. The census (cases ran, passed,
refused per reason, adapted) is printed at the end of the run.
"""

from __future__ import annotations

import functools
import re
import textwrap
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import convc
import numpy as np
import pytest
from convc.diagnostics import ConvcError
from convc.frontend.onnx import CONVERTERS, lookup
from convc.frontend.onnx.model import MIN_OPSET
from convc.frontend.onnx.registry import INPUT_SPEC, UNSUPPORTED_ATTR
from convc.frontend.onnx.shared import ONNX_DTYPES
from optional_oracles import oracle
from suite_census import record

onnx = oracle("onnx")
from onnx import TensorProto, numpy_helper  # noqa: E402

# rtol / atol per expected element type. ONNX's backend runner uses rtol 1e-3, atol 1e-7 for
# every case; convc meets tighter bounds for the wider floats. Integers compare exactly.
TOLERANCE = {np.dtype(np.float64): (1e-7, 1e-12), np.dtype(np.float32): (1e-5, 1e-7), np.dtype(np.float16): (1e-3, 1e-7)}
BACKEND_TOLERANCE = (1e-3, 1e-7)  # bfloat16 (and any float dtype not above)
# Cases compared at BACKEND_TOLERANCE whatever their type: name -> why the tighter bound is
# not met. One that meets it fails the test, so the entry goes when its reason does.
AT_BACKEND_TOLERANCE: dict[str, str] = {
    "test_averagepool_2d_ceil_last_window_starts_on_pad": "its expected outputs are written to 4 decimals (0.2841 for 0.28404)",
}

MULTI_NODE = "multi-node"  # the group of cases with more than one node (function bodies)

_DROPOUT_MASK = ("O6", "Dropout's mask output is not converted: only inference Dropout, an identity, is")
_TRAINING_DROPOUT = ("O6", "training-mode Dropout is random; convc converts inference Dropout only")
_MAXPOOL_INDICES = ("O6", "MaxPool's Indices output (argmax) is not converted")
_TRAINING_BATCHNORM = ("O6", "training-mode BatchNormalization (batch statistics, running-mean outputs) is not converted")
_ALIGN_CORNERS_LENGTH = ("mismatch", "its expected outputs take align_corners' length_resized as scale * in (fractional: 1.2, "
                         "3.2), as onnx.reference does; ONNX Runtime and convc take the integral output size (1, 3)")
_INTEGER_POW = ("O6", "Pow of an integer base is not converted (floating bases only; docs/onnx.md)")

# Cases that fail for a reason of their own: name -> (the diagnostic id they are refused
# with, or "mismatch"; why). An entry may name a case whose op has no converter yet (it is
# checked once the op's cases run).
EXPECTED_FAILURES: dict[str, tuple[str, str]] = {
    "test_quantizelinear_blocked_symmetric": ("O6", "blocked quantization (block_size, opset 21) is not converted"),
    "test_quantizelinear_blocked_asymmetric": ("O6", "blocked quantization (block_size, opset 21) is not converted"),
    "test_dequantizelinear_blocked": ("O6", "blocked quantization (block_size, opset 21) is not converted"),
    "test_batchnorm_epsilon_training_mode": _TRAINING_BATCHNORM,
    "test_batchnorm_example_training_mode": _TRAINING_BATCHNORM,
    "test_dropout_default_mask": _DROPOUT_MASK,
    "test_dropout_default_mask_ratio": _DROPOUT_MASK,
    "test_training_dropout": _TRAINING_DROPOUT,
    "test_training_dropout_default": _TRAINING_DROPOUT,
    "test_training_dropout_default_mask": _TRAINING_DROPOUT,
    "test_training_dropout_mask": _TRAINING_DROPOUT,
    "test_training_dropout_zero_ratio": _TRAINING_DROPOUT,
    "test_training_dropout_zero_ratio_mask": _TRAINING_DROPOUT,
    "test_maxpool_with_argmax_2d_precomputed_pads": _MAXPOOL_INDICES,
    "test_maxpool_with_argmax_2d_precomputed_strides": _MAXPOOL_INDICES,
    "test_pow_types_int32_float32": _INTEGER_POW,
    "test_pow_types_int32_int32": _INTEGER_POW,
    "test_pow_types_int64_float32": _INTEGER_POW,
    "test_resize_downsample_scales_cubic_align_corners": _ALIGN_CORNERS_LENGTH,
    "test_resize_downsample_scales_linear_align_corners": _ALIGN_CORNERS_LENGTH,
    "test_celu_bfloat16_expanded": ("mismatch", "each step of the function body rounds to bfloat16 (exp(-0.25) to 0.777 before 1 is "
                                    "subtracted), so Y is one bfloat16 ulp (0.002) from the expected output, Celu computed in "
                                    "float and rounded once"),
}

_KNOWN_AT_IMPORT = re.compile(r"\(input \d+, '([^']*)'\) must be known at import")
_LACKED_CAST = re.compile(r"to=(\d+) is an element type convc lacks")


@functools.cache
def _all_cases() -> tuple[Any, ...]:
    """Every node test case of the installed onnx package (generated once: a few seconds)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(collect_testcases(None))


def _opset(model: Any) -> int:
    return max((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), default=0)


def _runs(case: Any) -> bool:
    """Whether every node of the case has a converter at its opset (one below 13 is converted up)."""
    opset = max(_opset(case.model), MIN_OPSET)
    return all(node.domain in ("", "ai.onnx") and lookup(node.op_type, opset) is not None for node in case.model.graph.node)


def _group(case: Any) -> str:
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else MULTI_NODE


@functools.cache
def _cases_by_group() -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for case in _all_cases():
        if _runs(case):
            groups.setdefault(_group(case), []).append(case)
    return groups


def _array(value: Any) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


def _type_name(value_info: Any) -> str:
    """A graph input's or output's type as ONNX names it: an element type, or sequence/optional/map."""
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        return str(kind).removesuffix("_type")
    return str(TensorProto.DataType.Name(value_info.type.tensor_type.elem_type))


# --- running one case --------------------------------------------------------------------


@dataclass
class Outcome:
    """How one case ended: "passed", "refused" (a ConvcError: its id and line) or "mismatch"."""

    kind: str
    detail: str = ""
    constraint: str | None = None
    moved: list[str] = field(default_factory=list)  # inputs given as initializers


def _with_initializer(model: Any, name: str, array: np.ndarray) -> Any:
    """A copy of `model` where graph input `name` is an initializer holding `array`."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    kept = [value for value in copy.graph.input if value.name != name]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    copy.graph.initializer.append(numpy_helper.from_array(array, name))
    return copy


def _needed_at_import(err: ConvcError, model: Any) -> str | None:
    """The graph input `err` says convc needs at import: one of a type convc has only for
    values known at import (O7 on int64 or bool), or one a converter needs known (O6)."""
    if err.constraint == INPUT_SPEC and err.loc.pointer is not None and err.loc.pointer.startswith("/graph/input/"):
        value = model.graph.input[int(err.loc.pointer.rsplit("/", 1)[1])]
        return value.name if _type_name(value) in ("INT64", "BOOL") else None
    found = _KNOWN_AT_IMPORT.search(err.message) if err.constraint == UNSUPPORTED_ATTR else None
    return found.group(1) if found else None


def _differences(got: Sequence[np.ndarray], want: Sequence[np.ndarray], names: Sequence[str], loose: bool = False) -> list[str]:
    """What differs between convc's outputs and the expected ones, one entry per output
    (`loose`: floats at BACKEND_TOLERANCE)."""
    found = []
    for name, ours, theirs in zip(names, got, want, strict=True):
        dtype = np.dtype(np.int32) if theirs.dtype == np.int64 else theirs.dtype
        if ours.shape != theirs.shape or ours.dtype != dtype:
            found.append(f"{name}: {ours.dtype}{list(ours.shape)}, expected {dtype}{list(theirs.shape)}")
        elif dtype.kind in "iub":
            if not np.array_equal(ours, theirs):
                found.append(f"{name}: integers differ at {int(np.sum(ours != theirs))} of {ours.size} places")
        else:
            rtol, atol = BACKEND_TOLERANCE if loose else TOLERANCE.get(dtype, BACKEND_TOLERANCE)
            wide, expected = ours.astype(np.float64), theirs.astype(np.float64)
            if not np.allclose(wide, expected, rtol=rtol, atol=atol, equal_nan=True):
                found.append(f"{name}: max abs error {np.nanmax(np.abs(wide - expected)):.3g} beyond rtol {rtol:g}, atol {atol:g}")
    return found


def _run_case(case: Any) -> Outcome:
    """Import the case (giving inputs needed at import as initializers), run it on the CPU and compare."""
    inputs, expected = case.data_sets[0]
    model = case.model
    feeds = {value.name: _array(array) for value, array in zip(model.graph.input, inputs, strict=True)}
    moved: list[str] = []
    while True:
        try:
            graph = convc.load_onnx(model, file=case.name, log=lambda line: None)
            break
        except ConvcError as err:
            name = _needed_at_import(err, model)
            if name is None or name not in feeds or len(feeds) == 1:
                return Outcome("refused", str(err), err.constraint, moved)
            model = _with_initializer(model, name, feeds.pop(name))
            moved.append(name)
    try:
        got = convc.run(graph, [feeds[value.name] for value in graph.inputs], platform="cpu").outputs
    except ConvcError as err:
        return Outcome("refused", str(err), err.constraint, moved)
    wanted = [_array(array) for array in expected]
    names = [value.name for value in graph.outputs]
    differences = _differences(got, wanted, names)
    if case.name in AT_BACKEND_TOLERANCE:
        if not differences:
            return Outcome("mismatch", "it is listed in AT_BACKEND_TOLERANCE but meets the tighter bound: take it off", None, moved)
        differences = _differences(got, wanted, names, loose=True)
    return Outcome("mismatch" if differences else "passed", "; ".join(differences), None, moved)


def _lacked_type(outcome: Outcome, case: Any) -> str | None:
    """Where `outcome` is a refusal of an element type convc lacks, that reason; else None."""
    line = outcome.detail
    if outcome.constraint == INPUT_SPEC and "is not a tensor of an element type convc has" in line:
        name = re.search(r"input '([^']*)'", line)
        types = {value.name: _type_name(value) for value in case.model.graph.input}
        if name and types.get(name.group(1), "FLOAT") not in {TensorProto.DataType.Name(n) for n in ONNX_DTYPES}:
            return f"an input of type {types[name.group(1)]}, which convc lacks"
    cast = _LACKED_CAST.search(line) if outcome.constraint == UNSUPPORTED_ATTR else None
    if cast:
        return f"a Cast to {TensorProto.DataType.Name(int(cast.group(1)))}, which convc lacks"
    return None


# --- the tests ---------------------------------------------------------------------------

CENSUS: dict[str, Counter[str]] = {}
ADAPTED: dict[str, list[str]] = {}


def _verdict(case: Any, outcome: Outcome) -> tuple[str, str | None]:
    """(census row, failure or None) for one case's outcome."""
    listed = EXPECTED_FAILURES.get(case.name)
    if listed is not None:
        constraint, why = listed
        happened = "mismatch" if outcome.kind == "mismatch" else outcome.constraint
        if outcome.kind != "passed" and happened == constraint:
            return f"listed ({constraint}): {why}", None
        return "FAILED", (f"{case.name} is listed in EXPECTED_FAILURES as {constraint} ({why}) but it "
                          f"{'passes: take it off the list' if outcome.kind == 'passed' else 'ends otherwise: ' + outcome.detail}")
    if outcome.kind == "passed":
        how = [*(["inputs given as initializers"] if outcome.moved else []),
               *(["at ONNX's tolerance: " + AT_BACKEND_TOLERANCE[case.name]] if case.name in AT_BACKEND_TOLERANCE else [])]
        return "passed" + (f" ({'; '.join(how)})" if how else ""), None
    lacked = _lacked_type(outcome, case) if outcome.kind == "refused" else None
    if lacked is not None:
        return f"refused ({outcome.constraint}): {lacked}", None
    return "FAILED", f"{case.name}: {outcome.kind}: {outcome.detail}"


def _check_group(group: str) -> None:
    cases = _cases_by_group().get(group, [])
    counts: Counter[str] = Counter()
    failures = []
    for case in cases:
        outcome = _run_case(case)
        row, failure = _verdict(case, outcome)
        counts[row] += 1
        if outcome.moved:
            ADAPTED[case.name] = outcome.moved
        if failure:
            failures.append(failure)
    CENSUS[group] = counts
    _record_census()
    assert not failures, f"{len(failures)} of {len(cases)} {group} case(s):\n" + "\n".join(failures)


def _record_census() -> None:
    """The census so far, for the end of the run: per op type, then per reason over all of them."""
    total: Counter[str] = Counter()
    lines = []
    for group, counts in sorted(CENSUS.items()):
        total.update(counts)
        passed = sum(n for row, n in counts.items() if row.startswith("passed"))
        lines.append(f"{group:>20}: {sum(counts.values()):>4} ran, {passed:>4} passed, {sum(counts.values()) - passed:>4} not")
    lines.append(f"{'all':>20}: {sum(total.values()):>4} ran, "
                 f"{sum(n for row, n in total.items() if row.startswith('passed')):>4} passed")
    lines += [f"  {n:>4}  {row}" for row, n in sorted(total.items(), key=lambda item: (-item[1], item[0]))]
    by_inputs: dict[str, list[str]] = {}
    for name, moved in sorted(ADAPTED.items()):
        by_inputs.setdefault(", ".join(moved), []).append(name)
    for moved, names in by_inputs.items():
        lines += textwrap.wrap(", ".join(names), 130, initial_indent=f"  given as initializers ({moved}): ", subsequent_indent="      ")
    record("ONNX backend node cases (tests/py/test_onnx_backend_nodes.py)", lines)


@pytest.mark.parametrize("group", [*sorted(CONVERTERS), MULTI_NODE])
def test_backend_node_cases_agree_with_onnx(group: str) -> None:
    """Every backend node case of op type `group` (or of several nodes, every one converted)
    agrees with ONNX's expected outputs, is refused for an element type convc lacks, or fails
    as EXPECTED_FAILURES says."""
    _check_group(group)


def test_listed_cases_exist() -> None:
    """Each EXPECTED_FAILURES and AT_BACKEND_TOLERANCE entry names a case of the installed onnx
    (a misspelt name would list nothing), and each expected id is one the ONNX frontend raises
    for a case it runs."""
    cases = {case.name for case in _all_cases()}
    assert sorted((set(EXPECTED_FAILURES) | set(AT_BACKEND_TOLERANCE)) - cases) == []
    assert {constraint for constraint, _ in EXPECTED_FAILURES.values()} <= {"O6", "O7", "mismatch"}


def test_selection_follows_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A case runs exactly when its op has a converter at its opset: without Relu's converter the
    Relu cases drop out, and a converter registered from an opset above the cases' keeps them out."""
    relu = [case for case in _all_cases() if _group(case) == "Relu"]
    assert relu and all(_runs(case) for case in relu)
    monkeypatch.delitem(CONVERTERS, "Relu")
    assert not any(_runs(case) for case in relu)
    entry = lookup("Add", 13)
    assert entry is not None
    monkeypatch.setitem(CONVERTERS, "Relu", [type(entry)("Relu", onnx.defs.onnx_opset_version() + 1, entry.convert, False)])
    assert not any(_runs(case) for case in relu)
