"""The JSON model format -> a verified Graph. Every error names file and JSON pointer."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..arrayfile import ArrayFileError, ArrayTooLarge, as_dtype, open_array_file
from ..diagnostics import ConvcError, Location, suggest
from ..dtypes import DTYPES, QuantTypeError, canonical_dtype, from_numpy, is_float, is_quantized, numpy_dtype, tensor_element_type
from ..ir import Graph, Op, TensorType, Value
from ..ops import OPS
from ..ops.base import KNOWN_OP
from ..sharding import pin, read_mesh
from ..verify import coerce_attrs, infer_type

TOP_LEVEL_KEYS = ("name", "mesh", "inputs", "constants", "nodes", "outputs", "shardings")
INPUT_KEYS = ("name", "shape", "dtype")
CONSTANT_KEYS = ("name", "shape", "dtype", "value", "file", "key")
NODE_KEYS = ("name", "op", "inputs")
_NODE_KEY_SET = frozenset(NODE_KEYS)
MAX_DIM = 2**31 - 1
# numpy and XLA size even an empty array by its non-zero dims: times 8 bytes it must fit in int64
MAX_SPAN = 2**60
DEFAULT_MAX_CONSTANT_BYTES = 1 << 31


def load_model(path: str | os.PathLike[str], *, allow_external_data: bool = False,
               max_constant_bytes: int = DEFAULT_MAX_CONSTANT_BYTES) -> Graph:
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ConvcError(f"cannot read model: {err.strerror}", Location(file=file), "I1") from None
    return load_model_text(data, file, base_dir=Path(path).resolve().parent,
                           allow_external_data=allow_external_data, max_constant_bytes=max_constant_bytes)


def load_model_text(data: bytes | str, file: str = "<model>", *, base_dir: Path | None = None,
                    allow_external_data: bool = False, max_constant_bytes: int = DEFAULT_MAX_CONSTANT_BYTES) -> Graph:
    doc = _parse_json(data, file)
    reader = _ModelReader(file, base_dir or Path.cwd(), allow_external_data, max_constant_bytes)
    return reader.read(doc)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json(data: bytes | str, file: str) -> Any:
    root = Location(file=file, pointer="")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ConvcError(f"model is not UTF-8 text (byte {err.start})", root, "J1") from None
    if not data.strip():
        raise ConvcError("the file is empty: expected a JSON model object", root, "J1")
    try:
        doc = json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ConvcError(f"invalid JSON: {err.msg}", Location(file=file, line=err.lineno, col=err.colno), "J1") from None
    except ValueError as err:
        raise ConvcError(f"invalid JSON: {err}", root, "J1") from None
    except RecursionError:
        raise ConvcError("invalid JSON: nested too deeply", root, "J1") from None
    if _SURROGATE_ESCAPE.search(data):  # rare: only then look for a lone one
        pointer = _lone_surrogate(doc)
        if pointer is not None:
            raise ConvcError("string is not Unicode text: it holds an unpaired surrogate escape (\\ud800-\\udfff)",
                             Location(file=file, pointer=pointer, node=_node_at(doc, pointer)), "J1")
    return doc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(doc: Any) -> str | None:
    """The JSON pointer of the first string (or key), in document order, that no UTF-8 can
    encode, else None. Iterative: the document may nest as deep as json.loads allows."""
    stack: list[tuple[Any, str]] = [(_items(doc), "")]
    while stack:
        items, pointer = stack[-1]
        for key, child in items:
            child_pointer = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if not _encodable(str(key)) or isinstance(child, str) and not _encodable(child):
                return child_pointer
            if isinstance(child, dict | list):
                stack.append((_items(child), child_pointer))
                break
        else:
            stack.pop()
    return None


def _items(value: Any) -> Any:
    return iter(value.items()) if isinstance(value, dict) else iter(enumerate(value)) if isinstance(value, list) else iter(())


def _node_at(doc: Any, pointer: str) -> str | None:
    """The name of the node `pointer` lies in, when it has a usable one."""
    match = re.match(r"/nodes/(\d+)/", pointer)
    try:
        name = doc["nodes"][int(match.group(1))]["name"] if match else None
    except (KeyError, IndexError, TypeError):
        return None
    return name if isinstance(name, str) and name and _encodable(name) else None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _ModelReader:
    def __init__(self, file: str, base_dir: Path, allow_external_data: bool, max_constant_bytes: int):
        self.file = file
        self.base_dir = base_dir
        self.allow_external_data = allow_external_data
        self.max_constant_bytes = max_constant_bytes
        self.constant_bytes = 0
        self.values: dict[str, Value] = {}
        self.caller_errstate: Any = {}  # np.geterr()'s, when read() starts

    def loc(self, pointer: str, node: str | None = None, op: str | None = None) -> Location:
        return Location(file=self.file, pointer=pointer, node=node, op=op)

    def read(self, doc: Any) -> Graph:
        root = self.loc("")
        obj = _expect(doc, dict, "an object", root)
        _check_keys(obj, TOP_LEVEL_KEYS, root)
        name = obj.get("name", "main")
        _expect(name, str, "a string", root.child("name"))
        graph = Graph(name or "main")
        if "mesh" in obj:  # --- sharding (convc.sharding) ---
            graph.mesh = read_mesh(_expect(obj["mesh"], dict, "an object of axis sizes", root.child("mesh")), root.child("mesh"))
        for index, entry in enumerate(_list(obj, "inputs", root, required=True)):
            self._read_input(graph, entry, self.loc(f"/inputs/{index}"))
        # Inline values convert with overflow reported by the finiteness check, not by numpy
        # warnings; one errstate for all of them (entering one costs more than a small
        # constant's conversion). Values read from files keep the caller's error state.
        self.caller_errstate = np.geterr()
        with np.errstate(over="ignore", invalid="ignore"):
            for index, entry in enumerate(_list(obj, "constants", root)):
                self._read_constant(graph, entry, f"/constants/{index}")
        nodes = _list(obj, "nodes", root)
        for index in self._topological_order(nodes):
            self._read_node(graph, nodes[index], index)
        outputs = _list(obj, "outputs", root, required=True)
        if not outputs:
            raise ConvcError("a model needs at least one output", root.child("outputs"), "J9")
        for index, out in enumerate(outputs):
            loc = root.child("outputs").child(index)
            _expect(out, str, "a value name", loc)
            if out not in self.values:
                raise ConvcError(f"output '{out}' is not defined{suggest(out, self.values)}", loc, "J7")
            graph.outputs.append(self.values[out])
        if "shardings" in obj:  # --- sharding (convc.sharding) ---
            shardings = _expect(obj["shardings"], dict, "an object of value name -> sharding", root.child("shardings"))
            pin(graph, self.values, shardings, root.child("shardings"))
        return graph

    # --- entries ---------------------------------------------------------------

    def _define(self, name: Any, loc: Location) -> str:
        _expect(name, str, "a non-empty string", loc, "name")
        if not name:
            raise ConvcError("names must be non-empty", loc.child("name"), "J5")
        if "\0" in name:  # .npz archives (--inputs, --outputs) cannot hold such a name
            raise ConvcError(f"name {name!r} contains a NUL character", loc.child("name"), "J5")
        if name in self.values:
            raise ConvcError(f"name '{name}' is defined twice", loc.child("name"), "J6")
        return name

    def _read_input(self, graph: Graph, entry: Any, loc: Location) -> None:
        _expect(entry, dict, "an object", loc)
        _check_keys(entry, INPUT_KEYS, loc)
        name = self._define(_required(entry, "name", loc), loc)
        shape = _shape(_required(entry, "shape", loc), loc, "shape")
        dtype = _input_dtype(entry.get("dtype", "f32"), shape, loc.child("dtype"))
        value = Value(name, TensorType(shape, dtype))
        graph.inputs.append(value)
        graph.input_locs[name] = loc
        self.values[name] = value

    def _read_constant(self, graph: Graph, entry: Any, pointer: str) -> None:
        name = entry.get("name") if type(entry) is dict else None
        if not (type(name) is str and name and "\0" not in name and name not in self.values
                and all(key in CONSTANT_KEYS for key in entry)):
            loc = self.loc(pointer)  # the checks in order, located
            _expect(entry, dict, "an object", loc)
            _check_keys(entry, CONSTANT_KEYS, loc)
            name = self._define(_required(entry, "name", loc), loc)
        loc = Location(file=self.file, pointer=pointer, node=name, op="constant")
        if ("value" in entry) == ("file" in entry):
            raise ConvcError("a constant needs exactly one of 'value' or 'file'", loc, "J12")
        array = self._inline_value(entry, loc) if "value" in entry else self._file_value(entry, loc)
        op = Op("constant", [], {"value": array}, name, infer_type("constant", [], {"value": array}, loc), loc)
        graph.ops.append(op)
        self.values[name] = op.result

    def _inline_value(self, entry: dict[str, Any], loc: Location) -> np.ndarray:
        dtype = _dtype(entry.get("dtype", "f32"), loc, "dtype")
        shape = _shape(entry["shape"], loc, "shape") if "shape" in entry else None
        count = 0 if shape is None else math.prod(shape)
        if shape is not None:
            self._check_size(count * numpy_dtype(dtype).itemsize, loc)
        try:
            array = np.array(entry["value"], dtype=numpy_dtype(dtype))
        except (ValueError, TypeError, OverflowError) as err:
            raise ConvcError(f"value is not a numeric array: {err}", loc.child("value"), "J13") from None
        if is_float(dtype) and not _all_finite(array):
            # JSON has no inf/NaN literals, so a non-finite element is a value too large for its type
            raise ConvcError(f"value has elements that overflow {dtype}", loc.child("value"), "J13")
        if shape is None:
            self._check_size(array.nbytes, loc)
        else:
            if array.size == 1 and count != 1:
                # a read-only splat view (constants are held read-only): no copies, and the
                # emitter sees at once that every element is the same
                return _splat(array if array.ndim == 0 else array.reshape(()), shape)
            if array.size != count:
                raise ConvcError(f"value has {array.size} elements but shape {list(shape)} needs {count}", loc.child("value"), "J13")
            array = array.reshape(shape)
        return array

    def _file_value(self, entry: dict[str, Any], loc: Location) -> np.ndarray:
        with np.errstate(**self.caller_errstate):
            return self._file_array(entry, loc)

    def _file_array(self, entry: dict[str, Any], loc: Location) -> np.ndarray:
        ref = _expect(entry["file"], str, "a file path", loc.child("file"))
        if "\0" in ref:
            raise ConvcError("constant file path contains a NUL character", loc.child("file"), "J14")
        try:
            path = (self.base_dir / ref).resolve()
        except (OSError, RuntimeError) as err:  # e.g. a symlink loop
            raise ConvcError(f"cannot resolve constant file '{ref}': {err}", loc.child("file"), "J14") from None
        if not self.allow_external_data and (Path(ref).is_absolute() or self.base_dir.resolve() not in (path, *path.parents)):
            raise ConvcError(f"constant file '{ref}' is outside the model's directory (use --allow-external-data)", loc.child("file"),
                             "J14")
        dtype = numpy_dtype(_dtype(entry["dtype"], loc, "dtype")) if "dtype" in entry else None
        shape = _shape(entry["shape"], loc, "shape") if "shape" in entry else None
        remaining = self.max_constant_bytes - self.constant_bytes
        try:
            with open_array_file(path) as arrays:
                key = None
                if arrays.is_archive:
                    key = _expect(entry.get("key", "arr_0"), str, "a string", loc.child("key"))
                    if key not in arrays.names:
                        raise ConvcError(f"'{ref}' has no array '{key}'{suggest(key, arrays.names)} "
                                         f"(has: {', '.join(arrays.names) or 'none'})", loc.child("key"), "J16")
                array = arrays.read(key, remaining)
        except ArrayTooLarge as err:  # the header alone says so: report the total, as for inline values
            self._check_size(err.nbytes, loc)
            raise
        except ArrayFileError as err:
            raise ConvcError(f"cannot load '{ref}': {err}", loc.child("file"), "J15") from None
        if dtype is not None:
            try:
                array = as_dtype(array, dtype)
            except (ValueError, TypeError) as err:
                raise ConvcError(f"cannot convert '{ref}' ({array.dtype}) to {entry['dtype']}: {err}", loc.child("dtype"),
                                 "J15") from None
        if from_numpy(array.dtype) is None:
            raise ConvcError(f"'{ref}' holds an unsupported element type {array.dtype}", loc.child("file"), "J15")
        self._check_size(array.nbytes, loc)
        if shape is not None and tuple(array.shape) != shape:
            raise ConvcError(f"'{ref}' has shape {list(array.shape)}, the model says {list(shape)}", loc.child("shape"), "J15")
        return array

    def _check_size(self, nbytes: int, loc: Location) -> None:
        """Constants together may take at most `max_constant_bytes`; checked before allocating."""
        if self.constant_bytes + nbytes > self.max_constant_bytes:
            raise ConvcError(f"constants would need {self.constant_bytes + nbytes} bytes, over the limit of "
                             f"{self.max_constant_bytes} (--max-bytes)", loc, "J17")
        self.constant_bytes += nbytes

    def _read_node(self, graph: Graph, entry: dict[str, Any], index: int) -> None:
        name, kind = entry["name"], entry["op"]
        loc = Location(file=self.file, pointer=f"/nodes/{index}", node=name, op=kind)
        values = self.values
        operands = [values[ref] for ref in entry["inputs"]]
        raw = {k: v for k, v in entry.items() if k not in _NODE_KEY_SET}
        attrs = coerce_attrs(kind, raw, loc)
        result_type = infer_type(kind, [v.type for v in operands], attrs, loc)
        op = Op(kind, operands, attrs, name, result_type, loc)
        graph.ops.append(op)
        self.values[name] = op.result

    # --- graph order -------------------------------------------------------------

    def _topological_order(self, nodes: list[Any]) -> list[int]:
        """Kahn's algorithm over node names; undefined names, duplicates and cycles are errors.
        Nodes that only use values defined above them (the usual file) keep file order at once."""
        producer: dict[str, int] = {}
        values = self.values
        in_file_order = True
        for index, entry in enumerate(nodes):
            name = entry.get("name") if type(entry) is dict else None
            if not (type(name) is str and name and "\0" not in name and name not in producer and name not in values
                    and type(entry.get("op")) is str and entry["op"] in OPS):
                self._check_node_head(entry, index, producer)  # the checks in order, located
            if in_file_order:
                refs = entry.get("inputs")
                in_file_order = type(refs) is list and all(type(ref) is str and (ref in producer or ref in values) for ref in refs)
            producer[entry["name"]] = index
        if in_file_order:  # every input defined above its node: no cycle, nothing undefined
            return list(range(len(nodes)))
        pending = [0] * len(nodes)
        consumers: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
        for index, entry in enumerate(nodes):
            refs = entry.get("inputs")
            if type(refs) is not list:
                loc = self.loc(f"/nodes/{index}", entry["name"], entry["op"])
                _expect(_required(entry, "inputs", loc), list, "a list of value names", loc, "inputs")
            for pos, ref in enumerate(refs):
                if type(ref) is str and ref in producer:
                    pending[index] += 1
                    consumers[producer[ref]].append(index)
                elif type(ref) is not str or ref not in self.values:
                    inputs_loc = self.loc(f"/nodes/{index}", entry["name"], entry["op"]).child("inputs")
                    _expect(ref, str, "a value name", inputs_loc, pos)
                    known = list(self.values) + list(producer)
                    raise ConvcError(f"input '{ref}' is not defined{suggest(ref, known)}", inputs_loc.child(pos), "J7")
        ready = [i for i in range(len(nodes)) if pending[i] == 0]
        order: list[int] = []
        while ready:
            index = ready.pop()
            order.append(index)
            for consumer in consumers[index]:
                pending[consumer] -= 1
                if pending[consumer] == 0:
                    ready.append(consumer)
        if len(order) != len(nodes):
            stuck = min(i for i in range(len(nodes)) if pending[i])
            entry = nodes[stuck]
            raise ConvcError("node is part of a cycle", self.loc(f"/nodes/{stuck}", entry["name"], entry["op"]).child("inputs"), "J8")
        return _file_order_first(nodes, producer)

    def _check_node_head(self, entry: Any, index: int, producer: dict[str, int]) -> None:
        """A node's object, name and op, checked in order and located (called on a failure)."""
        loc = self.loc(f"/nodes/{index}")
        _expect(entry, dict, "an object", loc)
        name = self._define(_required(entry, "name", loc), loc)
        if name in producer:
            raise ConvcError(f"name '{name}' is defined twice (also /nodes/{producer[name]})", loc.child("name"), "J6")
        loc = self.loc(f"/nodes/{index}", name)
        kind = _expect(_required(entry, "op", loc), str, "an op name", loc, "op")
        if kind not in OPS:
            raise ConvcError(f"unknown op '{kind}'{suggest(kind, OPS)}", Location(self.file, loc.child("op").pointer, node=name),
                             KNOWN_OP)


def _file_order_first(nodes: list[Any], producer: dict[str, int]) -> list[int]:
    """A topological order of an acyclic node list that keeps file order wherever the
    dependencies allow (iterative DFS, so deep chains cannot overflow the stack)."""
    placed: set[int] = set()
    result: list[int] = []

    def visit(index: int) -> None:
        stack = [(index, iter(nodes[index]["inputs"]))]
        while stack:
            current, refs = stack[-1]
            for ref in refs:
                dep = producer.get(ref)
                if dep is not None and dep not in placed:
                    placed.add(dep)
                    stack.append((dep, iter(nodes[dep]["inputs"])))
                    break
            else:
                stack.pop()
                result.append(current)

    for index in range(len(nodes)):
        if index not in placed:
            placed.add(index)
            visit(index)
    return result


# --- small typed accessors ------------------------------------------------------


def _splat(scalar: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only view repeating a 0-d array's one element over `shape` (zero strides)."""
    array = np.ndarray(shape, scalar.dtype, scalar, 0, (0,) * len(shape))
    array.flags.writeable = False
    return array


def _all_finite(array: np.ndarray) -> bool:
    if array.ndim == 0:  # a splat's one value: no array machinery
        return math.isfinite(float(array))
    return bool(np.isfinite(array).all())


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _expect(value: Any, kind: type, what: str, loc: Location, key: str | int | None = None) -> Any:
    """`value` if it is a `kind`, else an error at `loc` (or its member `key`: located only on failure)."""
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ConvcError(f"expected {what}, got {_type_name(value)}", loc if key is None else loc.child(key), "J2")
    return value


def _required(obj: dict[str, Any], key: str, loc: Location) -> Any:
    if key not in obj:
        raise ConvcError(f"missing required key '{key}'", loc, "J3")
    return obj[key]


def _list(obj: dict[str, Any], key: str, loc: Location, required: bool = False) -> list[Any]:
    if key not in obj:
        if required:
            raise ConvcError(f"missing required key '{key}'", loc, "J3")
        return []
    return _expect(obj[key], list, "a list", loc.child(key))


def _check_keys(obj: dict[str, Any], allowed: tuple[str, ...], loc: Location) -> None:
    for key in obj:
        if key not in allowed:
            raise ConvcError(f"unknown key '{key}'{suggest(key, allowed)}", loc.child(key), "J4")


def _shape(value: Any, loc: Location, key: str | None = None) -> tuple[int, ...]:
    """A list of dimension sizes (located at `loc`, or its member `key`: made only on failure)."""
    if type(value) is list:  # the usual case, in one loop; any doubt takes the located checks below
        span = 1
        for dim in value:
            if type(dim) is not int or not 0 <= dim <= MAX_DIM:
                break
            span *= dim or 1
        else:
            if span < MAX_SPAN:
                return tuple(value)
    if key is not None:
        loc = loc.child(key)
    _expect(value, list, "a list of dimension sizes", loc)
    dims = []
    for index, dim in enumerate(value):
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise ConvcError(f"dimension {index} must be an integer, got {_brief(dim)}", loc.child(index), "J10")
        if not 0 <= dim <= MAX_DIM:
            raise ConvcError(f"dimension {index} must be in [0, {MAX_DIM}], got {dim}", loc.child(index), "J10")
        dims.append(dim)
    if math.prod(max(d, 1) for d in dims) >= MAX_SPAN:
        raise ConvcError(f"shape {dims} is too large: its non-zero dimensions multiply to 2^60 or more", loc, "J10")
    return tuple(dims)


def _brief(value: Any) -> str:
    """A JSON value for a message: short, and safe for any nesting depth."""
    try:
        text = json.dumps(value)
    except (ValueError, RecursionError):
        return _type_name(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _input_dtype(value: Any, shape: tuple[int, ...], loc: Location) -> str:
    """An input's element type: a plain dtype, or a quantized one in its StableHLO spelling
    (checked by the spec's quantized-type rules, quant.C1..C13)."""
    if not (isinstance(value, str) and is_quantized(value)):
        return _dtype(value, loc)
    try:
        name = tensor_element_type(value, shape)
    except QuantTypeError as err:
        raise ConvcError(err.message, loc, err.constraint or "J11") from None
    assert name is not None
    return name


# Spellings from other frameworks that name one convc dtype, for the suggestion only.
_DTYPE_HINTS = {"float": "f32", "half": "f16", "double": "f64", "int": "i32", "long": "i32", "char": "i8"}


def _dtype(value: Any, loc: Location, key: str | None = None) -> str:
    """A dtype name -> its canonical spelling (located at `loc`, or its member `key`)."""
    name = canonical_dtype(value) if isinstance(value, str) else None
    if name is None:
        if key is not None:
            loc = loc.child(key)
        hint = ""
        if isinstance(value, str):
            lowered = value.lower().removeprefix("torch.").removeprefix("np.").removeprefix("jnp.")
            guess = canonical_dtype(lowered) or _DTYPE_HINTS.get(lowered)
            hint = f" (did you mean '{guess}'?)" if guess else suggest(value, DTYPES)
        raise ConvcError(f"unknown dtype {json.dumps(value)}{hint}; expected one of {', '.join(DTYPES)}", loc, "J11")
    return name


__all__: list[str] = ["load_model", "load_model_text"]
