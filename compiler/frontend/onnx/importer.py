"""An ONNX model -> a verified Graph, built through the `Builder` by the registry's converters.

The steps, each failing with one located line (docs/diagnostics.md, O1-O10): parse with
`onnx` (O1); refuse nodes outside the default domain (O4); check the initializers' size
(O9) and read their external data (O10); bring an opset below 13 up with
`onnx.version_converter` (O3); list every node that has no converter and cannot be
evaluated at import (O5), before anything is built; `onnx.checker` (O2); give symbolic
input dims their sizes (O7), then strict `onnx.shape_inference` (O2); convert node by node.
A node whose inputs are all known at import (initializers, Constants, shapes, and what is
computed from them) is evaluated then, with `onnx.reference`, rather than built: shape
arithmetic becomes numbers.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...builder import Builder
from ...diagnostics import ConvcError, Location
from ...dtypes import from_numpy
from ...ir import Graph, Value
from .registry import (
    CONSTANT_BYTES,
    DOMAIN,
    EXTERNAL_DATA,
    INPUT_SPEC,
    INVALID_MODEL,
    NO_ONNX_PACKAGE,
    NOT_ONNX,
    OPSET,
    UNSUPPORTED_ATTR,
    UNSUPPORTED_OP,
    Context,
    Node,
    Operand,
    lookup,
)
from .shared import ONNX_DTYPES

MIN_OPSET = 13
DEFAULT_DOMAINS = ("", "ai.onnx")
# Ops never evaluated at import even with known inputs: random ones, and those with subgraphs.
NOT_FOLDED = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
                        "If", "Loop", "Scan", "SequenceMap"})
DEFAULT_MAX_BYTES = 1 << 31

Log = Callable[[str], None]
ModelSource = str | os.PathLike[str] | bytes | Any  # Any: an onnx.ModelProto


def load_onnx(model: ModelSource, *, input_shapes: Mapping[str, Sequence[int]] | None = None, keep_as_inputs: Sequence[str] = (),
              file: str | None = None, base_dir: str | os.PathLike[str] | None = None, allow_external_data: bool = False,
              max_bytes: int = DEFAULT_MAX_BYTES, log: Log | None = None) -> Graph:
    """Read an ONNX model (a path, its bytes, or an `onnx.ModelProto`) into a verified Graph
    whose inputs and outputs carry the ONNX graph's names.

    Initializers become constants, except those named in `keep_as_inputs`, which become
    inputs after the graph's own (so `convc.grad` / `--grad` can name them as weights).
    `input_shapes` gives symbolic input dims their sizes (`{"x": (8, 3, 224, 224)}`); a
    symbolic dim it does not cover is 1, said in one line to `log` (default: stderr).
    External data is read from `base_dir` (default: the model's directory; for bytes or a
    ModelProto, the working directory), and a location
    outside it is refused unless `allow_external_data`; initializers together may take at
    most `max_bytes`. `file` names the model in diagnostics. User errors raise `ConvcError`."""
    onnx = _onnx_package(file or (os.fspath(model) if isinstance(model, str | os.PathLike) else "<model>"))
    proto, file, directory = _read(onnx, model, file)
    _check_domains(proto, file)
    _read_external_data(onnx, proto, Path(base_dir) if base_dir is not None else directory, allow_external_data, max_bytes, file)
    proto, opset = _at_supported_opset(onnx, proto, file)
    nodes = [_node(onnx, proto_node, index, file) for index, proto_node in enumerate(proto.graph.node)]
    initializers = {t.name: t for t in proto.graph.initializer}
    _check_names(input_shapes or {}, keep_as_inputs, proto, initializers, file)
    _check_supported(nodes, set(initializers) - set(keep_as_inputs), opset, file)
    _check_model(onnx, proto, file)
    inputs = _input_types(proto, initializers, input_shapes or {}, file, log or _stderr)
    _infer_shapes(onnx, proto, inputs, file)
    arrays = _initializer_arrays(onnx, proto, file)
    return _Build(proto, nodes, opset, file).run(inputs, arrays, keep_as_inputs)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _onnx_package(file: str) -> Any:
    try:
        import onnx
        import onnx.checker
        import onnx.external_data_helper
        import onnx.helper
        import onnx.numpy_helper
        import onnx.shape_inference
        import onnx.version_converter
    except ImportError:
        raise ConvcError("reading ONNX models needs the onnx package: pip install 'convc[onnx]'", Location(file=file),
                         NO_ONNX_PACKAGE) from None
    return onnx


# --- reading and checking -----------------------------------------------------------------


def _read(onnx: Any, model: ModelSource, file: str | None) -> tuple[Any, str, Path]:
    """The model as a ModelProto of our own (a given one is copied), its name, its directory."""
    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        return proto, file or "<model>", Path.cwd()
    if isinstance(model, bytes | bytearray):
        return _parse(onnx, bytes(model), file or "<model>"), file or "<model>", Path.cwd()
    path = Path(model)
    name = file or os.fspath(model)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConvcError(f"cannot read model: {err.strerror}", Location(file=name), "I1") from None
    return _parse(onnx, data, name), name, path.resolve().parent


def _parse(onnx: Any, data: bytes, file: str) -> Any:
    from google.protobuf.message import DecodeError

    try:
        proto = onnx.load_from_string(data)
    except DecodeError as err:
        raise ConvcError(f"not an ONNX model: {err}", Location(file=file), NOT_ONNX) from None
    if not proto.HasField("graph") or proto.ir_version <= 0:
        raise ConvcError("not an ONNX model: it has no graph or no IR version", Location(file=file), NOT_ONNX)
    return proto


def _node(onnx: Any, proto: Any, index: int, file: str) -> Node:
    """A NodeProto with its attributes decoded: strings as str, tensors as arrays."""
    node = Node(proto.name, proto.op_type, tuple(proto.input), tuple(proto.output), {}, index, proto.domain)
    for attribute in proto.attribute:
        try:
            value = onnx.helper.get_attribute_value(attribute)
            if isinstance(value, onnx.TensorProto):
                value = onnx.numpy_helper.to_array(value)
        except (KeyError, ValueError, TypeError) as err:  # a tensor of an unknown type, data that does not fill its dims
            raise ConvcError(f"invalid attribute '{attribute.name}': {_first_line(err)}", _node_location(file, node),
                             INVALID_MODEL) from None
        node.attrs[attribute.name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return node


def _node_location(file: str, node: Node) -> Location:
    return Location(file=file, pointer=f"/graph/node/{node.index}", node=node.label, op=node.op_type)


def _listed(nodes: Sequence[Node], kind: Callable[[Node], str]) -> str:
    return ", ".join(f"'{node.label}' ({kind(node)})" for node in nodes)


def _check_domains(proto: Any, file: str) -> None:
    foreign = [Node(n.name, n.op_type, tuple(n.input), tuple(n.output), {}, i, n.domain)
               for i, n in enumerate(proto.graph.node) if n.domain not in DEFAULT_DOMAINS]
    if foreign:
        raise ConvcError(f"ops outside the default ONNX domain are not supported: "
                         f"{_listed(foreign, lambda node: f'{node.domain}.{node.op_type}')}", _node_location(file, foreign[0]), DOMAIN)


def _default_opset(proto: Any) -> int | None:
    versions = [entry.version for entry in proto.opset_import if entry.domain in DEFAULT_DOMAINS]
    return max(versions) if versions else None


def _at_supported_opset(onnx: Any, proto: Any, file: str) -> tuple[Any, int]:
    """The model at opset 13 or newer: an older one converted by onnx.version_converter."""
    opset, newest = _default_opset(proto), onnx.defs.onnx_opset_version()
    loc = Location(file=file)
    if opset is None:
        raise ConvcError("the model imports no opset of the default ONNX domain", loc, OPSET)
    if opset > newest:
        raise ConvcError(f"opset {opset} is newer than the installed onnx package knows ({newest}): upgrade onnx", loc, OPSET)
    if opset >= MIN_OPSET:
        return proto, opset
    try:
        return onnx.version_converter.convert_version(proto, MIN_OPSET), MIN_OPSET
    except Exception as err:  # noqa: BLE001 - the converter raises bare RuntimeErrors from C++
        raise ConvcError(f"cannot convert opset {opset} to {MIN_OPSET} (onnx.version_converter): {_first_line(err)}", loc,
                         OPSET) from None


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def _check_names(input_shapes: Mapping[str, Sequence[int]], keep_as_inputs: Sequence[str], proto: Any, initializers: Mapping[str, Any],
                 file: str) -> None:
    graph_inputs = {value.name for value in proto.graph.input} - set(initializers)
    for name in input_shapes:
        if name not in graph_inputs:
            raise ConvcError(f"input_shapes names '{name}', which is no graph input (inputs: {', '.join(sorted(graph_inputs))})",
                             Location(file=file), INPUT_SPEC)
    for name in keep_as_inputs:
        if name not in initializers:
            raise ConvcError(f"keep_as_inputs names '{name}', which is no initializer", Location(file=file), INPUT_SPEC)


def foldable(node: Node, known: Mapping[str, Any] | set[str]) -> bool:
    """Whether the node is evaluated at import: it has inputs, all known, and is deterministic."""
    present = [name for name in node.inputs if name]
    return bool(present) and node.op_type not in NOT_FOLDED and all(name in known for name in present)


def _check_supported(nodes: Sequence[Node], known: set[str], opset: int, file: str) -> None:
    """One error listing every node that has no converter at this opset and is not evaluated at import."""
    known = set(known)
    unsupported = []
    for node in nodes:
        found = lookup(node.op_type, opset)
        if foldable(node, known) or (found is not None and found.known_output):
            known.update(node.outputs)
        elif found is None:
            unsupported.append(node)
    if unsupported:
        raise ConvcError(f"{len(unsupported)} node(s) with unsupported ops at opset {opset}: "
                         f"{_listed(unsupported, lambda node: node.op_type)} (docs/onnx.md lists the supported ones)",
                         _node_location(file, unsupported[0]), UNSUPPORTED_OP)


def _check_model(onnx: Any, proto: Any, file: str) -> None:
    try:
        onnx.checker.check_model(proto)
    except (onnx.checker.ValidationError, ValueError) as err:  # ValueError: a model over protobuf's 2 GB
        raise ConvcError(f"invalid ONNX model (onnx.checker): {_first_line(err)}", Location(file=file), INVALID_MODEL) from None


def _input_types(proto: Any, initializers: Mapping[str, Any], input_shapes: Mapping[str, Sequence[int]], file: str,
                 log: Log) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, static shape, convc dtype) of each graph input that is no initializer."""
    found = []
    for index, value in enumerate(proto.graph.input):
        if value.name in initializers:
            continue
        loc = Location(file=file, pointer=f"/graph/input/{index}", node=value.name)
        tensor = value.type.tensor_type
        if not value.type.HasField("tensor_type") or tensor.elem_type not in ONNX_DTYPES:
            raise ConvcError(f"input '{value.name}' is not a tensor of an element type convc has "
                             f"({', '.join(ONNX_DTYPES.values())})", loc, INPUT_SPEC)
        dims = [dim.dim_value if dim.HasField("dim_value") else None for dim in tensor.shape.dim]
        given = input_shapes.get(value.name)
        if given is not None:
            shape = _given_shape(value.name, dims if tensor.HasField("shape") else None, given, loc)
        elif not tensor.HasField("shape"):
            raise ConvcError(f"input '{value.name}' has no shape: give it with input_shapes", loc, INPUT_SPEC)
        else:
            symbolic = [dim.dim_param or "?" for dim in tensor.shape.dim if not dim.HasField("dim_value")]
            if symbolic:
                log(f"{file}: note: input '{value.name}' has symbolic dimensions ({', '.join(symbolic)}), taken as 1 "
                    "(input_shapes= sets them)")
            shape = tuple(1 if d is None else d for d in dims)
        found.append((value.name, shape, ONNX_DTYPES[tensor.elem_type]))
    return found


def _given_shape(name: str, dims: list[int | None] | None, given: Sequence[int], loc: Location) -> tuple[int, ...]:
    shape = tuple(int(d) for d in given)
    if any(d < 0 for d in shape) or (dims is not None and (len(dims) != len(shape) or
                                                           any(d is not None and d != s for d, s in zip(dims, shape)))):
        declared = "?" if dims is None else [d if d is not None else "?" for d in dims]
        raise ConvcError(f"input_shapes gives '{name}' the shape {list(shape)}, which does not fit its declared shape {declared}",
                         loc, INPUT_SPEC)
    return shape


def _initializer_arrays(onnx: Any, proto: Any, file: str) -> dict[str, np.ndarray]:
    arrays = {}
    for index, tensor in enumerate(proto.graph.initializer):
        try:
            arrays[tensor.name] = onnx.numpy_helper.to_array(tensor)
        except (ValueError, TypeError) as err:  # data that does not fill its dims
            raise ConvcError(f"invalid initializer: {_first_line(err)}", Location(file=file, pointer=f"/graph/initializer/{index}",
                                                                                  node=tensor.name), INVALID_MODEL) from None
    return arrays


def _infer_shapes(onnx: Any, proto: Any, inputs: Sequence[tuple[str, tuple[int, ...], str]], file: str) -> None:
    """Strict onnx.shape_inference with the inputs' static shapes: inconsistent shapes are an error."""
    shapes = dict((name, shape) for name, shape, _ in inputs)
    for value in proto.graph.input:
        if value.name in shapes:
            tensor = value.type.tensor_type
            tensor.shape.Clear()
            for size in shapes[value.name]:
                tensor.shape.dim.add().dim_value = size
    try:
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    except (onnx.shape_inference.InferenceError, ValueError) as err:
        raise ConvcError(f"inconsistent ONNX model (onnx.shape_inference): {_first_line(err)}", Location(file=file),
                         INVALID_MODEL) from None


def _read_external_data(onnx: Any, proto: Any, base_dir: Path, allow_external_data: bool, max_bytes: int, file: str) -> None:
    """Initializers stored in files next to the model, read into the model (the checker and
    converters see plain tensors), after their sizes are checked against `max_bytes`."""
    total = 0
    for index, tensor in enumerate(proto.graph.initializer):
        total += math.prod(tensor.dims) * _itemsize(onnx, tensor, Location(file=file, pointer=f"/graph/initializer/{index}",
                                                                            node=tensor.name))
    if total > max_bytes:
        raise ConvcError(f"the initializers would need {total} bytes, over the limit of {max_bytes} (--max-bytes)",
                         Location(file=file), CONSTANT_BYTES)
    for index, tensor in enumerate(proto.graph.initializer):
        if onnx.external_data_helper.uses_external_data(tensor):
            loc = Location(file=file, pointer=f"/graph/initializer/{index}", node=tensor.name)
            _load_external(onnx, tensor, base_dir, allow_external_data, loc)


def _itemsize(onnx: Any, tensor: Any, loc: Location) -> int:
    """The bytes of one element of an initializer, which must have a known type and no negative dim."""
    try:
        if min(tensor.dims, default=0) < 0:
            raise ValueError(f"negative dimension in {list(tensor.dims)}")
        return int(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize)
    except (KeyError, ValueError, TypeError) as err:
        raise ConvcError(f"invalid initializer: {_first_line(err) if not isinstance(err, KeyError) else f'unknown data type {err}'}",
                         loc, INVALID_MODEL) from None


def _load_external(onnx: Any, tensor: Any, base_dir: Path, allow: bool, loc: Location) -> None:
    location = onnx.external_data_helper.ExternalDataInfo(tensor).location
    path = (base_dir / location).resolve()
    if not allow and not path.is_relative_to(base_dir.resolve()):
        raise ConvcError(f"external data file '{location}' is outside the model's directory (use --allow-external-data)", loc,
                         EXTERNAL_DATA)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConvcError(f"cannot read external data file '{location}': {err.strerror}", loc, EXTERNAL_DATA) from None
    info = onnx.external_data_helper.ExternalDataInfo(tensor)
    offset = info.offset or 0
    tensor.raw_data = data[offset:offset + info.length] if info.length else data[offset:]
    tensor.data_location = onnx.TensorProto.DEFAULT
    del tensor.external_data[:]


# --- building -------------------------------------------------------------------------------


class _Build:
    """The node-by-node conversion into a Builder."""

    def __init__(self, proto: Any, nodes: Sequence[Node], opset: int, file: str):
        self.proto = proto
        self.nodes = nodes
        self.opset = opset
        self.file = file
        graph = proto.graph
        self.onnx_names = {v.name for v in graph.input} | {t.name for t in graph.initializer} | {
            name for node in graph.node for name in node.output if name}
        used = {name for node in graph.node for name in node.input} | {v.name for v in graph.output}
        self.builder = Builder(graph.name or "main")
        self.ctx = Context(self.builder, file, self.onnx_names, used)

    def run(self, inputs: Sequence[tuple[str, tuple[int, ...], str]], arrays: dict[str, np.ndarray],
            keep_as_inputs: Sequence[str]) -> Graph:
        ctx, graph = self.ctx, self.builder.graph
        for name, shape, dtype in inputs:
            ctx.values[name] = self.builder.input(name, shape, dtype)
        for name in keep_as_inputs:
            ctx.values[name] = self._kept_input(name, arrays.pop(name))
        ctx.known.update(arrays)
        for node, proto_node in zip(self.nodes, self.proto.graph.node):
            self._convert(node, proto_node)
        self.builder.output(*(self._output(index, value.name) for index, value in enumerate(self.proto.graph.output)))
        input_index = {v.name: i for i, v in enumerate(self.proto.graph.input)}
        graph.input_locs = {v.name: Location(file=self.file, pointer=f"/graph/input/{input_index[v.name]}" if v.name in input_index
                                             else None, node=v.name) for v in graph.inputs}
        return self.builder.build()

    def _kept_input(self, name: str, array: np.ndarray) -> Value:
        dtype = from_numpy(array.dtype)
        if dtype is None:
            raise ConvcError(f"cannot keep initializer '{name}' as an input: its element type {array.dtype} is not one convc has",
                             Location(file=self.file, node=name), INPUT_SPEC)
        return self.builder.input(name, array.shape, dtype)

    def _convert(self, node: Node, proto_node: Any) -> None:
        ctx, ops = self.ctx, self.builder.graph.ops
        ctx.node, start = node, len(ops)
        loc = ctx.location(node)
        try:
            results = self._evaluate(node, proto_node) if foldable(node, ctx.known) else self._converter(node)(node, ctx)
        except ConvcError as err:
            raise ConvcError(err.message, loc, err.constraint) from None
        made = {id(op.result) for op in ops[start:]}
        for name, result in zip(node.outputs, results):
            if not name:
                continue
            if isinstance(result, np.ndarray):
                ctx.known[name] = result
                continue
            if id(result) in made and result.name not in self.onnx_names:
                result.name = name  # the node's result carries its ONNX name
            ctx.values[name] = result
        for op in ops[start:]:
            op.loc = loc

    def _converter(self, node: Node) -> Callable[[Node, Context], Sequence[Operand]]:
        found = lookup(node.op_type, self.opset)
        assert found is not None, "_check_supported let an unsupported node through"
        return found.convert

    def _evaluate(self, node: Node, proto_node: Any) -> list[np.ndarray]:
        """The node's outputs from known inputs, by the ONNX reference implementation (numpy)."""
        from onnx.reference import ReferenceEvaluator

        feeds = {name: self.ctx.known[name] for name in node.inputs if name}
        try:
            return [np.asarray(out) for out in ReferenceEvaluator(proto_node, opsets={"": self.opset}).run(None, feeds)]
        except Exception as err:  # noqa: BLE001 - onnx.reference raises whatever numpy raises
            raise self.ctx.error(f"cannot evaluate at import (onnx.reference): {_first_line(err)}", UNSUPPORTED_ATTR) from None

    def _output(self, index: int, name: str) -> Value:
        """The value of graph output `name`, named `name` (a copy when it already has another name)."""
        value = self.ctx.value(name)
        if value.name == name:
            return value
        copy = self.builder.op("reshape", value, name=name, new_sizes=value.type.shape)
        copy.producer.loc = Location(file=self.file, pointer=f"/graph/output/{index}", node=name)  # type: ignore[union-attr]
        return copy
