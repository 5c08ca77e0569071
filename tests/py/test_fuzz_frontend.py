"""The front end against everything a user or a generator can throw at it.

Hypothesis mutates valid models (from `strategies.conv_models`) at the JSON-tree level
(wrong types anywhere, missing and extra keys, bad dimensions, windows, layouts, group
counts, names, cycles) and at the byte level (truncation, non-UTF-8 bytes, NaN/Infinity
literals, deep nesting), mutates printed convc IR text, and corrupts the .npy/.npz files
constants and `--inputs` name. Every input must end in exit 0 or in exit 1 with ONE
located line (`file:/json/pointer: error: ...`, naming the node when there is one) -
never a traceback or exit 3, and never a hang (each input runs under an alarm). A model
convc accepts must be one jax.lax accepts too, with the same result types: no invalid
model reaches the emitter.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc.diagnostics import one_line
from hypothesis import assume, event, given
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from strategies import REGRESSIONS, CliResult, budget, conv_models, dump_regression, run_cli

SECONDS_PER_INPUT = 60  # generous: the machine is shared; a hang is minutes, not seconds
Draw = Callable[[st.SearchStrategy[Any]], Any]

# --- junk values -----------------------------------------------------------------------

HUGE_INTS = st.sampled_from([-1, 0, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**300])
JUNK_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), HUGE_INTS,
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, -1.5, 1e308, 1e-320]),
    st.text(max_size=6), st.sampled_from(["", "SAME", "NCHW", "f32", "conv", "x0", "\n", "\u2028"]),
)
JUNK = st.recursive(JUNK_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=6)


def pick(draw: Draw, items: list[Any]) -> Any:
    """One of `items`; an empty list discards the example (the mutation does not apply)."""
    assume(items)
    return draw(st.sampled_from(items))


def index(draw: Draw, items: Any) -> int:
    """A valid index into `items`; an empty sequence discards the example."""
    assume(len(items) > 0)
    return draw(st.integers(0, len(items) - 1))


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position in a JSON tree, as a tuple of keys and indices (the root is ())."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from paths(value, (*prefix, index))


def get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """Set the value at `path` to a copy of `value` (drawn junk may be a shared constant that
    a later mutation would otherwise edit for every example after)."""
    value = copy.deepcopy(value)
    if not path:
        return value
    get(doc, path[:-1])[path[-1]] = value
    return doc


# --- tree mutations: each takes (draw, doc) and returns the mutated doc -------------------


def replace_anywhere(draw: Draw, doc: Any) -> Any:
    return put(doc, pick(draw, list(paths(doc))), draw(JUNK))


def delete_key(draw: Draw, doc: Any) -> Any:
    objects = [p for p in paths(doc) if isinstance(get(doc, p), dict) and get(doc, p)]
    assume(objects)
    obj = get(doc, pick(draw, objects))
    del obj[pick(draw, sorted(obj))]
    return doc


def add_key(draw: Draw, doc: Any) -> Any:
    objects = [p for p in paths(doc) if isinstance(get(doc, p), dict)]
    key = draw(st.sampled_from(["nodes", "node", "input", "shapes", "window_stride", "padding", "strides", "value", "file", "key"])
               | st.text(max_size=8))
    get(doc, pick(draw, objects))[key] = copy.deepcopy(draw(JUNK))
    return doc


def _int_lists(doc: Any) -> list[tuple[Any, ...]]:
    return [p for p in paths(doc) if isinstance(get(doc, p), list) and get(doc, p) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in get(doc, p))]


def bad_dimension(draw: Draw, doc: Any) -> Any:
    """One entry of a shape or integer-list attribute becomes negative, zero, huge or not an integer."""
    lists = _int_lists(doc)
    assume(lists)
    target = get(doc, pick(draw, lists))
    target[index(draw, target)] = copy.deepcopy(draw(HUGE_INTS | st.sampled_from([1.5, 2.0, "3", None, True, [2], -7])))
    return doc


def overflowing_shape(draw: Draw, doc: Any) -> Any:
    """A shape whose element count overflows int64 (each dim alone is fine)."""
    entries = doc["inputs"] + doc.get("constants", [])
    entry = pick(draw, entries)
    entry["shape"] = copy.deepcopy(draw(st.sampled_from([[2**31 - 1] * 3, [2**21] * 3 + [4], [2**31 - 1, 2**31 - 1, 2, 2], [0, 2**31 - 1, 2**31 - 1, 2**31 - 1]])))
    return doc


def _nodes(doc: Any, op: str | None = None) -> list[dict[str, Any]]:
    return [n for n in doc["nodes"] if op is None or n["op"].startswith(op)]


WINDOW_JUNK = st.sampled_from([[0], [-1], [1.5], [], [[1]], "2", 3, [10**20], [2**63], [True], [None], [1, 1, 1, 1, 1, 1]])
LAYOUT_JUNK = st.sampled_from([
    "", ["", "", ""], ["NNHW", "OIHW", "NCHW"], ["NCH", "OIW", "NCH"], ["nch", "oih", "nch"], ["NC", "OI", "NC"],
    ["NCHW", "OIHW"], ["NCH", "OIH", "NCH", "NCH"], [1, 2, 3], ["NCHH", "OIHH", "NCHH"], ["NOH", "NIH", "NOH"],
    "NCHW,OIHW,NCHW", [["N", "C", "H"], "OIH", "NCH"], ["NC\u00e9", "OI\u00e9", "NC\u00e9"]])


def bad_conv_attribute(draw: Draw, doc: Any) -> Any:
    convs = _nodes(doc, "conv")
    assume(convs)
    node = pick(draw, convs)
    name = draw(st.sampled_from(["window_strides", "strides", "lhs_dilation", "rhs_dilation", "padding", "dimension_numbers",
                                 "feature_group_count", "batch_group_count", "precision", "preferred_element_type",
                                 "output_padding", "input_shape", "kernel_shape", "transpose_kernel"]))
    if name == "dimension_numbers":
        node[name] = copy.deepcopy(draw(LAYOUT_JUNK))
    elif name.endswith("group_count"):
        node[name] = copy.deepcopy(draw(st.integers(-2, 13) | HUGE_INTS | st.sampled_from([1.0, "2", None])))
    elif name == "padding":
        node[name] = copy.deepcopy(draw(st.sampled_from(["same", "FULL", [], [[1]], [[1, 2, 3]], [[-10**6, 0]], [[10**19, 0]], [["1", 0]], [[0.5, 0]]]))
                          | WINDOW_JUNK)
    else:
        node[name] = copy.deepcopy(draw(WINDOW_JUNK | JUNK))
    return doc


def broken_graph(draw: Draw, doc: Any) -> Any:
    """Undefined names, duplicates, self-loops, cycles, empty and bad outputs."""
    nodes = doc["nodes"]
    kind = draw(st.sampled_from(["undefined", "duplicate", "self_loop", "cycle", "outputs", "empty_name", "no_inputs"]))
    node = pick(draw, nodes)
    if kind == "undefined":
        node["inputs"][index(draw, node["inputs"])] = copy.deepcopy(draw(st.sampled_from(["nope", "", "X0", node["name"] + " "])))
    elif kind == "duplicate":
        others = [e["name"] for e in doc["inputs"] + doc.get("constants", []) + nodes if e is not node]
        node["name"] = pick(draw, others)
    elif kind == "self_loop":
        node["inputs"][0] = node["name"]
    elif kind == "cycle":
        later = nodes[nodes.index(node):]
        node["inputs"][0] = pick(draw, later)["name"]
    elif kind == "outputs":
        doc["outputs"] = copy.deepcopy(draw(st.sampled_from([[], ["nope"], [1], "x0", None, [None], [[]]])))
    elif kind == "empty_name":
        node["name"] = ""
    else:
        node["inputs"] = copy.deepcopy(draw(st.sampled_from([[], None, "x0", [[]]])))
    return doc


TREE_MUTATIONS = [replace_anywhere, delete_key, add_key, bad_dimension, overflowing_shape, bad_conv_attribute, broken_graph]


# --- byte mutations: of the serialised document ----------------------------------------------

NON_UTF8 = st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xfe\xff", b"\x00"])


def byte_mutation(draw: Draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "non_utf8", "non_finite", "deep", "bom", "surrogate", "long_number", "empty"]))
    if kind == "truncate":
        return data[: index(draw, data)]
    if kind == "non_utf8":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(NON_UTF8) + data[at:]
    if kind == "non_finite":
        numbers = [m.span() for m in re.finditer(rb"-?\d+(\.\d+)?", data)]
        assume(numbers)
        start, end = pick(draw, numbers)
        return data[:start] + draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999"])) + data[end:]
    if kind == "deep":
        depth = draw(st.sampled_from([500, 990, 5000, 100_000]))
        junk = b"[" * depth + b"]" * depth
        values = [m.span() for m in re.finditer(rb"\[[^\[\]]*\]", data)]
        start, end = pick(draw, values) if values and draw(st.booleans()) else (0, len(data))
        return data[:start] + junk + data[end:]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "surrogate":  # a valid JSON escape that is no Unicode character
        names = [m.span(1) for m in re.finditer(rb'"name": "([^"]*)"', data)]
        start, end = pick(draw, names)
        return data[:start] + draw(st.sampled_from([b"\\ud800", b"x\\udfff", b"\\u0000"])) + data[end:]
    if kind == "long_number":
        numbers = [m.span() for m in re.finditer(rb"\d+", data)]
        start, end = pick(draw, numbers)
        return data[:start] + b"9" * draw(st.sampled_from([20, 400, 5000])) + data[end:]
    return b""


@st.composite
def malformed_models(draw: Draw) -> bytes:
    """A valid model, mutated one to three times at the tree level, then maybe at the byte level."""
    doc = draw(conv_models(max_convs=2, max_plain_ops=1, odd_names=False))
    for _ in range(draw(st.integers(1, 3))):
        mutation = draw(st.sampled_from(TREE_MUTATIONS))
        with contextlib.suppress(KeyError, IndexError, TypeError, AttributeError, ValueError):
            doc = mutation(draw, doc)  # fails when an earlier mutation removed what this one edits
    data = json.dumps(doc, allow_nan=True).encode()
    if draw(st.integers(0, 3)) == 0:
        data = byte_mutation(draw, data)
    return data


def record(what: str) -> None:
    """A hypothesis statistics event (`--hypothesis-show-statistics`), when inside a property test."""
    if currently_in_test_context():
        event(what)


# --- running one input ------------------------------------------------------------------------


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in the main thread after `seconds` (a hang becomes a failure)."""
    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


LOCATED = re.compile(r"(?P<where>:/.*?|:\d+:\d+)?: error: (?P<message>\S.*)")  # a JSON pointer may hold any character


def assert_one_located_line(stderr: str, file: str, data: bytes | None = None) -> None:
    """`file:/pointer: error: ...` (or `file:line:col:` for text), one line, no traceback;
    JSON input must be located in the document; an error at a node names the node."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and stderr.endswith("\n"), f"expected one line, got {len(lines)}: {stderr!r}"
    assert lines[0].startswith(file), lines[0]
    match = LOCATED.fullmatch(lines[0][len(file):])
    assert match, f"not a located diagnostic: {lines[0]!r}"
    if data is not None and data.lstrip()[:1] in (b"{", b"[") and _utf8(data):
        assert match.group("where"), f"a JSON input's error names no position: {lines[0]!r}"
        _assert_names_node(match.group("where"), match.group("message"), data)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _assert_names_node(where: str, message: str, data: bytes) -> None:
    """An error under /nodes/<i> of a node with a name of its own mentions that name."""
    pointer = re.match(r":/nodes/(\d+)(/|$)", where)
    if pointer is None:
        return
    try:
        doc = json.loads(data)
        node = doc["nodes"][int(pointer.group(1))]
        name = node["name"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return
    names = [n.get("name") for n in doc["nodes"] if isinstance(n, dict)]
    if isinstance(name, str) and name and names.count(name) == 1 and where != f":/nodes/{pointer.group(1)}/name":
        assert one_line(f"'{name}'") in message, f"the error at node '{name}' does not name it: {message!r}"


def compile_bytes(data: bytes, *extra: str, name: str = "model.json") -> tuple[CliResult, Path]:
    """Write `data` to a fresh folder and run `convc` on it (stdout to -o), under the time limit."""
    root = Path(tempfile.mkdtemp(prefix="convc-fuzz-"))
    path = root / name
    path.write_bytes(data)
    with time_limit(SECONDS_PER_INPUT):
        result = run_cli([str(path), "-o", str(root / "out.mlir"), *extra])
    return result, root


def check_front_end(data: bytes, *extra: str) -> None:
    """The contract for one input (see the module docstring)."""
    result, root = compile_bytes(data, *extra)
    path = str(root / "model.json")
    try:
        assert result.code in (0, 1), f"exit {result.code}: {result.stderr}"
        tag = re.search(r"\[([\w.]+)\]$", result.stderr.strip())
        record("accepted" if result.code == 0 else f"refused [{tag.group(1) if tag else '-'}]")
        if result.code == 1:
            assert_one_located_line(result.stderr, path, data)
            assert not (root / "out.mlir").exists(), "a failed compile wrote its output"
        else:
            assert_accepted_model_is_valid(Path(path))
    finally:
        for child in root.iterdir():
            child.unlink()
        root.rmdir()


def assert_accepted_model_is_valid(path: Path) -> None:
    """No invalid model reaches the emitter: jax.lax accepts what convc accepted, and infers
    the same result types (jax.eval_shape: tracing only, nothing allocated or run)."""
    import jax
    from convc.dtypes import numpy_dtype
    from convc.reference import lax_function

    graph = convc.load_model(path)
    args = [jax.ShapeDtypeStruct(v.type.shape, numpy_dtype(v.type.dtype)) for v in graph.inputs]
    shapes = jax.eval_shape(lax_function(graph), *args)
    for value, shape in zip(graph.outputs, shapes, strict=True):
        assert tuple(shape.shape) == value.type.shape and shape.dtype == numpy_dtype(value.type.dtype), (
            f"convc says '{value.name}' is {value.type}, jax.lax says {shape}")


@contextlib.contextmanager
def saved_on_failure(data: bytes, kind: str = "frontend") -> Iterator[None]:
    try:
        yield
    except BaseException:
        path = dump_regression(None, kind, data=data)
        if path is not None:
            print(f"failing input saved to {path}")
        raise


# --- the properties ----------------------------------------------------------------------------


@budget(ci=1500, soak=20000)
@given(data=malformed_models())
def test_malformed_models_get_one_located_line(data: bytes) -> None:
    with saved_on_failure(data):
        check_front_end(data)


@st.composite
def mutated_ir_text(draw: Draw) -> bytes:
    """convc's own printed IR of a valid model, with characters, tokens or lines damaged."""
    doc = draw(conv_models(max_convs=2, max_plain_ops=1))
    text = convc.print_graph(convc.load_model_text(json.dumps(doc)))
    assume(text)
    kind = draw(st.sampled_from(["truncate", "delete", "insert", "duplicate_line", "swap_lines"]))
    at = index(draw, text)
    if kind == "truncate":
        text = text[:at]
    elif kind == "delete":
        text = text[:at] + text[at + draw(st.integers(1, 12)):]
    elif kind == "insert":
        text = text[:at] + draw(st.sampled_from(["%", "}", "{", "(", '"', "x", "-1", "9" * 30, "tensor<", ",", ":", "\x00", "\u2028"])) + text[at:]
    else:
        lines = text.splitlines(keepends=True)
        i, j = index(draw, lines), index(draw, lines)
        if kind == "duplicate_line":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        text = "".join(lines)
    return text.encode("utf-8", "surrogatepass")


@budget(ci=500, soak=10000)
@given(data=mutated_ir_text())
def test_mutated_ir_text_gets_one_located_line(data: bytes) -> None:
    with saved_on_failure(data):
        result, root = compile_bytes(data, name="model.convc")
        assert result.code in (0, 1), f"exit {result.code}: {result.stderr}"
        if result.code == 1:
            assert_one_located_line(result.stderr, str(root / "model.convc"))


# --- corrupted array files: constants and --inputs -----------------------------------------------


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as allow_pickle
    return buffer.getvalue()


@st.composite
def corrupted_array_files(draw: Draw) -> bytes:
    """A small .npy/.npz, then damaged: truncated, bytes flipped, header shape or dtype
    rewritten (huge, negative, object arrays that only a pickle could load)."""
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    data = npz_bytes({"w": array}) if draw(st.booleans()) else npy_bytes(array)
    kind = draw(st.sampled_from(["truncate", "flip", "shape", "dtype", "pickle", "intact"]))
    if kind == "truncate":
        return data[: index(draw, data)]
    if kind == "flip":
        at = index(draw, data)
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    if kind == "pickle":
        return npy_bytes(np.array([{"a": 1}, None], dtype=object))
    if kind == "intact":
        return data
    if data.startswith(b"PK"):
        return data  # header rewriting is for plain .npy; the zip is covered by truncate/flip
    old = b"'shape': (2, 3)" if kind == "shape" else b"'descr': '<f4'"
    new = draw(st.sampled_from([b"'shape': (1000000000, 1000000000)", b"'shape': (-1, 3)", b"'shape': (2, 3, 4)", b"'shape': ()"])
               if kind == "shape" else st.sampled_from([b"'descr': '|O'", b"'descr': '<f8'", b"'descr': 'xyz'", b"'descr': '|V7'"]))
    return data.replace(old, new.ljust(len(old)) if len(new) < len(old) else new)


def check_constant_file(blob: bytes, as_npz: bool) -> None:
    """A constant's `file` holding `blob`: exit 0 or one located line, never a pickle loaded,
    never an allocation over --max-bytes (1M here)."""
    model: dict[str, Any] = {"inputs": [{"name": "x", "shape": [1, 3, 4]}],
                             "constants": [{"name": "w", "file": "w.npz" if as_npz else "w.npy", "key": "w"}],
                             "nodes": [{"name": "c", "op": "conv", "inputs": ["x", "w"]}], "outputs": ["c"]}
    if not as_npz:
        del model["constants"][0]["key"]
    with tempfile.TemporaryDirectory(prefix="convc-fuzz-") as folder:
        root = Path(folder)
        (root / ("w.npz" if as_npz else "w.npy")).write_bytes(blob)
        (root / "model.json").write_text(json.dumps(model))
        with time_limit(SECONDS_PER_INPUT):
            result = run_cli([str(root / "model.json"), "-o", str(root / "out.mlir"), "--max-bytes", "1M"])
        assert result.code in (0, 1), f"exit {result.code}: {result.stderr}"
        if result.code == 1:
            assert_one_located_line(result.stderr, str(root / "model.json"))


def check_inputs_archive(blob: bytes) -> None:
    """`--run --inputs` with `blob` as the archive: exit 0 or one located line."""
    model = {"inputs": [{"name": "w", "shape": [2, 3]}], "nodes": [{"name": "r", "op": "relu", "inputs": ["w"]}], "outputs": ["r"]}
    with tempfile.TemporaryDirectory(prefix="convc-fuzz-") as folder:
        root = Path(folder)
        (root / "in.npz").write_bytes(blob)
        (root / "model.json").write_text(json.dumps(model))
        with time_limit(SECONDS_PER_INPUT):
            result = run_cli([str(root / "model.json"), "--run", "--platform", "cpu", "--inputs", str(root / "in.npz"), "--max-bytes", "1M"])
        assert result.code in (0, 1), f"exit {result.code}: {result.stderr}"
        if result.code == 1:
            assert_one_located_line(result.stderr, str(root / "in.npz"))


@budget(ci=150, soak=5000)
@given(blob=corrupted_array_files(), as_npz=st.booleans())
def test_corrupted_constant_files_are_refused_cleanly(blob: bytes, as_npz: bool) -> None:
    with saved_on_failure(blob, "arrays"):
        check_constant_file(blob, as_npz)


@budget(ci=100, soak=5000)
@given(blob=corrupted_array_files())
def test_corrupted_inputs_archives_are_refused_cleanly(blob: bytes) -> None:
    with saved_on_failure(blob, "arrays"):
        check_inputs_archive(blob)


@pytest.mark.parametrize("path", sorted((REGRESSIONS / "arrays").glob("*")), ids=lambda p: p.name)
def test_array_file_regression_replays(path: Path) -> None:
    """Every damaged .npy/.npz that once broke a loader, as a constant file and as --inputs."""
    check_constant_file(path.read_bytes(), as_npz=path.read_bytes().startswith(b"PK"))
    check_inputs_archive(path.read_bytes())


# --- named nasty inputs, through the real console script ------------------------------------------

NASTY_INPUTS = {
    "empty": b"",
    "whitespace": b"  \n\t ",
    "deep-lists": b"[" * 100_000 + b"]" * 100_000,
    "deep-objects": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "deep-in-attribute": (b'{"inputs": [{"name": "x", "shape": [1, 1, 1]}], "nodes": [{"name": "c", "op": "relu", "inputs": ["x"], '
                          b'"axis": ' + b"[" * 900 + b"]" * 900 + b'}], "outputs": ["c"]}'),
    "nan": b'{"inputs": [{"name": "x", "shape": [NaN]}], "outputs": ["x"]}',
    "infinity-constant": b'{"inputs": [], "constants": [{"name": "k", "value": -Infinity}], "outputs": ["k"]}',
    "non-utf8": b'{"inputs": [{"name": "\xff\xfe", "shape": [1]}], "outputs": ["x"]}',
    "utf16": '{"inputs": [], "outputs": []}'.encode("utf-16"),
    "truncated": b'{"inputs": [{"name": "x", "shape": [1, 2',
    "top-level-list": b"[1, 2, 3]",
    "huge-int": b'{"inputs": [{"name": "x", "shape": [' + b"9" * 5000 + b"]}], \"outputs\": [\"x\"]}",
    "overflow": b'{"inputs": [{"name": "x", "shape": [2147483647, 2147483647, 2147483647]}], "outputs": ["x"]}',
    "self-loop": b'{"inputs": [], "nodes": [{"name": "a", "op": "relu", "inputs": ["a"]}], "outputs": ["a"]}',
    "cycle": (b'{"inputs": [], "nodes": [{"name": "a", "op": "relu", "inputs": ["b"]}, {"name": "b", "op": "relu", "inputs": ["a"]}],'
              b' "outputs": ["a"]}'),
    "binary": bytes(range(256)),
    "ir-junk": b"module @m { func.func @main( -> }",
}


@pytest.mark.parametrize("name", sorted(NASTY_INPUTS))
def test_nasty_inputs_through_the_console_script(name: str, tmp_path: Path) -> None:
    """The real `convc` process, file and stdin: exit 1, one line, no traceback, in bounded time."""
    path = tmp_path / "model.json"
    path.write_bytes(NASTY_INPUTS[name])
    command = [sys.executable, "-c", "import sys; from convc.cli import main; sys.exit(main())"]
    for argv, stdin, file in (([str(path)], None, str(path)), (["-"], NASTY_INPUTS[name], "<stdin>")):
        proc = subprocess.run([*command, *argv, "-o", str(tmp_path / "out.mlir")], input=stdin, capture_output=True, timeout=120)
        stderr = proc.stderr.decode("utf-8", "backslashreplace")
        assert proc.returncode == 1, f"exit {proc.returncode}: {stderr}"
        assert_one_located_line(stderr, file)
        assert not (tmp_path / "out.mlir").exists()


def test_names_with_nul_are_refused() -> None:
    """Regression: a NUL in a name passed the loader, then `--inputs`/`--outputs` lost the
    array (.npz member names end at NUL). Now the name itself is the located error."""
    result, root = compile_bytes((REGRESSIONS / "frontend" / "name-with-nul.json").read_bytes())
    assert result.code == 1
    assert_one_located_line(result.stderr, str(root / "model.json"))
    assert ":/inputs/1/name: error:" in result.stderr and "NUL" in result.stderr


def _malformed_regressions() -> list[Path]:
    return sorted(p for p in (REGRESSIONS / "frontend").glob("*") if p.is_file())


@pytest.mark.parametrize("path", _malformed_regressions(), ids=lambda p: p.stem)
def test_malformed_regression_replays(path: Path) -> None:
    """Every malformed input that once broke the front end stays handled."""
    check_front_end(path.read_bytes())


# --- constant files: the model's directory, symlinks, special files, pickles, sizes -----------------


def kernel_model(ref: str, **entry: Any) -> dict[str, Any]:
    return {"inputs": [{"name": "x", "shape": [1, 2, 4]}], "constants": [{"name": "w", "file": ref, **entry}],
            "nodes": [{"name": "c", "op": "conv", "inputs": ["x", "w"]}], "outputs": ["c"]}


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/model/ (the model's directory, with sub/) and tmp/outside/, each holding w.npy."""
    kernel = np.ones((3, 2, 2), np.float32)
    for folder in ("model", "model/sub", "outside"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        np.save(tmp_path / folder / "w.npy", kernel)
    return tmp_path


def compile_with_constant(layout: Path, ref: str, *extra: str, **entry: Any) -> CliResult:
    model = layout / "model" / "model.json"
    model.write_text(json.dumps(kernel_model(ref, **entry)))
    with time_limit(SECONDS_PER_INPUT):
        return run_cli([str(model), "-o", str(layout / "model" / "out.mlir"), *extra])


def assert_refused(result: CliResult, layout: Path, *words: str) -> None:
    assert result.code == 1, result.stderr
    assert_one_located_line(result.stderr, str(layout / "model" / "model.json"))
    assert ":/constants/0" in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.mark.parametrize("ref", ["w.npy", "sub/w.npy", "sub/../w.npy", "./sub/./w.npy"])
def test_constant_files_inside_the_model_directory_load(layout: Path, ref: str) -> None:
    assert compile_with_constant(layout, ref).code == 0


@pytest.mark.parametrize("ref", ["../outside/w.npy", "sub/../../outside/w.npy", "ABSOLUTE_OUTSIDE", "ABSOLUTE_INSIDE"])
def test_constant_files_escaping_the_directory_need_permission(layout: Path, ref: str) -> None:
    """`..` out of the directory, and absolute paths (even ones that point inside), are refused
    unless --allow-external-data is given."""
    ref = {"ABSOLUTE_OUTSIDE": str(layout / "outside" / "w.npy"), "ABSOLUTE_INSIDE": str(layout / "model" / "w.npy")}.get(ref, ref)
    assert_refused(compile_with_constant(layout, ref), layout, "--allow-external-data")
    assert compile_with_constant(layout, ref, "--allow-external-data").code == 0


@pytest.mark.parametrize("link", ["file", "folder"])
def test_symlinks_out_of_the_directory_need_permission(layout: Path, link: str) -> None:
    """A symlink inside the model's directory that leads out of it is an escape too."""
    if link == "file":
        (layout / "model" / "link.npy").symlink_to(layout / "outside" / "w.npy")
        ref = "link.npy"
    else:
        (layout / "model" / "linked").symlink_to(layout / "outside", target_is_directory=True)
        ref = "linked/w.npy"
    assert_refused(compile_with_constant(layout, ref), layout, "--allow-external-data")
    assert compile_with_constant(layout, ref, "--allow-external-data").code == 0


def test_symlinks_within_the_directory_load(layout: Path) -> None:
    (layout / "model" / "link.npy").symlink_to(layout / "model" / "sub" / "w.npy")
    assert compile_with_constant(layout, "link.npy").code == 0


def test_a_symlinked_model_reads_constants_beside_its_real_file(layout: Path, tmp_path: Path) -> None:
    """`model.json` reached through a symlink: constants resolve beside the file it points to."""
    (layout / "model" / "model.json").write_text(json.dumps(kernel_model("w.npy")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "model.json").symlink_to(layout / "model" / "model.json")
    assert run_cli([str(elsewhere / "model.json"), "-o", str(elsewhere / "out.mlir")]).code == 0


def test_symlink_loop_is_refused(layout: Path) -> None:
    (layout / "model" / "a.npy").symlink_to(layout / "model" / "b.npy")
    (layout / "model" / "b.npy").symlink_to(layout / "model" / "a.npy")
    assert_refused(compile_with_constant(layout, "a.npy"), layout)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "missing", "nul"])
def test_special_files_are_refused_without_blocking(layout: Path, kind: str) -> None:
    """A FIFO would block np.load forever and /dev/zero never ends: only regular files are read."""
    ref = {"fifo": "pipe.npy", "directory": "sub", "device": "/dev/zero", "missing": "absent.npy", "nul": "w.npy\u0000x"}[kind]
    if kind == "fifo":
        os.mkfifo(layout / "model" / "pipe.npy")
    result = compile_with_constant(layout, ref, "--allow-external-data")
    assert_refused(result, layout)


def test_pickles_are_never_loaded(layout: Path) -> None:
    """An object array's pickle would run code on load; convc refuses the file unopened."""
    marker = layout / "pwned"
    payload = np.array([_Exploit(str(marker))], dtype=object)
    np.save(layout / "model" / "evil.npy", payload, allow_pickle=True)
    np.savez(layout / "model" / "evil.npz", w=payload)
    assert_refused(compile_with_constant(layout, "evil.npy"), layout, "never unpickles")
    assert_refused(compile_with_constant(layout, "evil.npz", key="w"), layout, "never unpickles")
    assert not marker.exists()


class _Exploit:
    """Unpickling this creates a file: proof that a pickle ran."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (Path(self.path),))


def _npy_header_only(shape: tuple[int, ...]) -> bytes:
    """A .npy whose header declares `shape` (f32) but holds no data at all."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def test_size_limit_is_checked_before_reading(layout: Path) -> None:
    """A header that claims 4 TB is refused from the header alone, under any --max-bytes."""
    (layout / "model" / "big.npy").write_bytes(_npy_header_only((1 << 20, 1 << 20)))
    assert_refused(compile_with_constant(layout, "big.npy"), layout, "over the limit", "--max-bytes")


def test_size_limit_counts_all_constants(layout: Path) -> None:
    """Two 48-byte kernels pass --max-bytes 64 one at a time, not together."""
    model = kernel_model("w.npy")
    model["constants"].append({"name": "v", "file": "sub/w.npy"})
    (layout / "model" / "model.json").write_text(json.dumps(model))
    result = run_cli([str(layout / "model" / "model.json"), "-o", str(layout / "model" / "out.mlir"), "--max-bytes", "64"])
    assert result.code == 1 and ":/constants/1" in result.stderr and "over the limit of 64" in result.stderr, result.stderr
    assert run_cli([str(layout / "model" / "model.json"), "-o", str(layout / "model" / "out.mlir"), "--max-bytes", "96"]).code == 0


def test_inline_splat_is_sized_before_allocating(tmp_path: Path) -> None:
    """`"value": 1.0` over a shape of 2^40 elements: refused at the default limit, nothing allocated."""
    model = {"inputs": [], "constants": [{"name": "k", "shape": [1 << 20, 1 << 20], "value": 1.0}], "outputs": ["k"]}
    result, root = compile_bytes(json.dumps(model).encode())
    assert result.code == 1 and ":/constants/0: error: 'k' (constant): constants would need" in result.stderr, result.stderr


@pytest.mark.parametrize("what", ["random", "intermediate"])
def test_run_sizes_are_checked_before_allocating(tmp_path: Path, what: str) -> None:
    """--run refuses models whose inputs or any intermediate tensor exceed --max-bytes."""
    if what == "random":
        model = {"inputs": [{"name": "x", "shape": [1 << 16, 1 << 16]}], "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]}], "outputs": ["r"]}
        expected = "the inputs of --run would need"
    else:
        model = {"inputs": [{"name": "x", "shape": [1, 1, 4]}], "constants": [{"name": "w", "shape": [1, 1, 1], "value": 1.0}],
                 "nodes": [{"name": "c", "op": "conv", "inputs": ["x", "w"], "lhs_dilation": [1 << 28]}], "outputs": ["c"]}
        expected = "'c' (conv): its result tensor<1x805306369x1xf32> would need"  # NWC: the layout the cpu target computes in
    result, root = compile_bytes(json.dumps(model).encode(), "--run", "--target", "cpu", "--max-bytes", "1G")
    assert result.code == 1 and expected in result.stderr, result.stderr
    assert_one_located_line(result.stderr, str(root / "model.json"))


def test_max_bytes_is_parsed_strictly(tmp_path: Path) -> None:
    model = tmp_path / "m.json"
    model.write_text(json.dumps({"inputs": [{"name": "x", "shape": [2]}], "outputs": ["x"]}))
    for bad in ("-1", "1.5G", "lots", "", "1Q"):
        assert run_cli([str(model), "--max-bytes", bad]).code == 2
    assert run_cli([str(model), "-o", str(tmp_path / "o.mlir"), "--max-bytes", "2k"]).code == 0
