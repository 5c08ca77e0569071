"""Reading and checking an ONNX model with the `onnx` package, before any conversion: parse
(O1), domains (O4), initializer sizes and external data (O9, O10), opset (O3), the checker
and strict shape inference (O2), the graph's inputs and the names the caller gives (O7).
Every function takes the `onnx` module `onnx_package` returned, so nothing here imports it
at module import."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...diagnostics import ConvcError, Location
from .registry import (
    CONSTANT_BYTES,
    DOMAIN,
    EXTERNAL_DATA,
    INPUT_SPEC,
    INVALID_MODEL,
    NO_ONNX_PACKAGE,
    NOT_ONNX,
    OPSET,
    Node,
)
from .shared import ONNX_DTYPES

MIN_OPSET = 13
DEFAULT_DOMAINS = ("", "ai.onnx")
Log = Callable[[str], None]
ModelSource = str | os.PathLike[str] | bytes | Any  # Any: an onnx.ModelProto
InputType = tuple[str, tuple[int, ...], str]  # a graph input's name, static shape, convc dtype


def onnx_package(file: str) -> Any:
    """The `onnx` module, with the submodules the importer uses; O8 where it is not installed."""
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


def read(onnx: Any, model: ModelSource, file: str | None) -> tuple[Any, str, Path]:
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


def decode_node(onnx: Any, proto: Any, index: int, opset: int, file: str) -> Node:
    """A NodeProto with its attributes decoded (strings as str, tensors as arrays), and those
    it leaves out that ONNX's op schema gives a default, that default: converters read
    `node.attrs["group"]`, and no default is restated here."""
    node = Node(proto.name, proto.op_type, tuple(proto.input), tuple(proto.output), dict(_schema_defaults(proto.op_type, opset)),
                index, proto.domain)
    for attribute in proto.attribute:
        try:
            node.attrs[attribute.name] = _decoded(onnx, onnx.helper.get_attribute_value(attribute))
        except (KeyError, ValueError, TypeError) as err:  # a tensor of an unknown type, data that does not fill its dims
            raise ConvcError(f"invalid attribute '{attribute.name}': {first_line(err)}", node_location(file, node),
                             INVALID_MODEL) from None
    return node


def _decoded(onnx: Any, value: Any) -> Any:
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@functools.lru_cache(maxsize=512)
def _schema_defaults(op_type: str, opset: int) -> tuple[tuple[str, Any], ...]:
    """The default of every attribute the default domain's schema of `op_type` at `opset` declares one for."""
    import onnx.defs

    try:
        schema = onnx.defs.get_schema(op_type, opset)
    except (onnx.defs.SchemaError, TypeError, ValueError):  # no such op, or a name onnx cannot take (bytes, not UTF-8): no defaults
        return ()
    return tuple((name, _decoded(onnx, onnx.helper.get_attribute_value(spec.default_value)))
                 for name, spec in schema.attributes.items() if spec.default_value.type)


def node_location(file: str, node: Node) -> Location:
    return Location(file=file, pointer=f"/graph/node/{node.index}", node=node.label, op=node.shown_op)


def listed(nodes: Sequence[Node], kind: Callable[[Node], str]) -> str:
    return ", ".join(f"'{node.label}' ({kind(node)})" for node in nodes)


def check_domains(proto: Any, file: str) -> None:
    foreign = [Node(n.name, n.op_type, tuple(n.input), tuple(n.output), {}, i, n.domain)
               for i, n in enumerate(proto.graph.node) if n.domain not in DEFAULT_DOMAINS]
    if foreign:
        raise ConvcError(f"ops outside the default ONNX domain are not supported: "
                         f"{listed(foreign, lambda node: f'{node.domain}.{node.op_type}')}", node_location(file, foreign[0]), DOMAIN)


def _default_opset(proto: Any) -> int | None:
    versions = [entry.version for entry in proto.opset_import if entry.domain in DEFAULT_DOMAINS]
    return max(versions) if versions else None


def at_supported_opset(onnx: Any, proto: Any, file: str) -> tuple[Any, int]:
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
        raise ConvcError(f"cannot convert opset {opset} to {MIN_OPSET} (onnx.version_converter): {first_line(err)}", loc,
                         OPSET) from None


def first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def check_names(input_shapes: Mapping[str, Sequence[int]], keep_as_inputs: Sequence[str], proto: Any, initializers: Mapping[str, Any],
                 file: str) -> None:
    graph_inputs = {value.name for value in proto.graph.input} - set(initializers)
    for name in input_shapes:
        if name not in graph_inputs:
            raise ConvcError(f"a shape is given for '{name}', which is no graph input (inputs: {', '.join(sorted(graph_inputs))})",
                             Location(file=file), INPUT_SPEC)
    for name in keep_as_inputs:
        if name not in initializers:
            raise ConvcError(f"keep_as_inputs names '{name}', which is no initializer", Location(file=file), INPUT_SPEC)


# Ops onnx deprecated at an opset that still has a converter here (exporters of that opset
# write them), and whose output has their first input's type: onnx.checker refuses them, so it
# checks the model with an Identity of that input in their place; the converter checks the node.
CONVERTED_DEPRECATED = frozenset({"GroupNormalization"})


# initializers of more bytes than this stay out of what onnx.checker and shape inference read
SKELETON_BYTES = 1 << 16


def skeleton(onnx: Any, proto: Any) -> Any:
    """The model without the data of its large initializers, each a graph input of its type
    instead: all onnx.checker and onnx.shape_inference read of them. Both serialize the model
    they are given (100 MB, twice, for a ResNet-50) and need no weight's values; the values
    are checked where convc reads them (`initializer_arrays`)."""
    graph = proto.graph
    light = onnx.ModelProto(ir_version=proto.ir_version)
    light.opset_import.extend(proto.opset_import)
    light.functions.extend(proto.functions)
    light.graph.name = graph.name
    for field in ("node", "input", "output", "value_info", "sparse_initializer"):
        getattr(light.graph, field).extend(getattr(graph, field))
    declared = {value.name for value in graph.input}
    for tensor in graph.initializer:
        if tensor.ByteSize() <= SKELETON_BYTES:
            light.graph.initializer.append(tensor)
        elif tensor.name not in declared:
            light.graph.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, tensor.dims))
    return light


def check_model(onnx: Any, proto: Any, file: str, opset: int) -> None:
    """onnx.checker on the model (on a copy with `CONVERTED_DEPRECATED` nodes as Identities, where it has any)."""
    checked = proto
    for index, node in enumerate(proto.graph.node):
        if node.op_type in CONVERTED_DEPRECATED and node.domain in DEFAULT_DOMAINS and _deprecated(onnx, node.op_type, opset):
            if checked is proto:
                checked = onnx.ModelProto()
                checked.CopyFrom(proto)
            checked.graph.node[index].CopyFrom(onnx.helper.make_node("Identity", node.input[:1], node.output[:1], name=node.name))
    try:
        onnx.checker.check_model(checked)
    except (onnx.checker.ValidationError, ValueError) as err:  # ValueError: a model over protobuf's 2 GB
        raise ConvcError(f"invalid ONNX model (onnx.checker): {first_line(err)}", Location(file=file), INVALID_MODEL) from None


def _deprecated(onnx: Any, op_type: str, opset: int) -> bool:
    try:
        return bool(onnx.defs.get_schema(op_type, opset).deprecated)
    except onnx.defs.SchemaError:
        return False


def input_types(proto: Any, initializers: Mapping[str, Any], input_shapes: Mapping[str, Sequence[int]],
                array_shapes: Mapping[str, Sequence[int]], file: str, log: Log) -> list[InputType]:
    """(name, static shape, convc dtype) of each graph input that is no initializer. Symbolic
    dims take `input_shapes`'s sizes, else those of the array of the input's name in
    `array_shapes` (when the ranks match; its static dims are the run's to check), else 1."""
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
        elif not tensor.HasField("shape") and value.name in array_shapes:
            shape = tuple(int(d) for d in array_shapes[value.name])
        elif not tensor.HasField("shape"):
            raise ConvcError(f"input '{value.name}' has no shape: give it with --input-shape or input_shapes", loc, INPUT_SPEC)
        else:
            symbolic = [dim.dim_param or "?" for dim in tensor.shape.dim if not dim.HasField("dim_value")]
            array = array_shapes.get(value.name)
            fitting = array is not None and len(array) == len(dims)
            fill = list(array) if array is not None and fitting else [1] * len(dims)
            if symbolic and not fitting:
                log(f"{file}: note: input '{value.name}' has symbolic dimensions ({', '.join(symbolic)}), taken as 1 "
                    "(--input-shape or input_shapes= sets them)")
            shape = tuple(int(f) if d is None else d for d, f in zip(dims, fill))
        found.append((value.name, shape, ONNX_DTYPES[tensor.elem_type]))
    return found


def _given_shape(name: str, dims: list[int | None] | None, given: Sequence[int], loc: Location) -> tuple[int, ...]:
    shape = tuple(int(d) for d in given)
    if any(d < 0 for d in shape) or (dims is not None and (len(dims) != len(shape) or
                                                           any(d is not None and d != s for d, s in zip(dims, shape)))):
        declared = "?" if dims is None else [d if d is not None else "?" for d in dims]
        raise ConvcError(f"the shape {list(shape)} given for '{name}' does not fit its declared shape {declared}",
                         loc, INPUT_SPEC)
    return shape


def initializer_arrays(onnx: Any, proto: Any, file: str) -> dict[str, np.ndarray]:
    arrays = {}
    for index, tensor in enumerate(proto.graph.initializer):
        try:
            arrays[tensor.name] = onnx.numpy_helper.to_array(tensor)
        except (ValueError, TypeError) as err:  # data that does not fill its dims
            raise ConvcError(f"invalid initializer: {first_line(err)}", Location(file=file, pointer=f"/graph/initializer/{index}",
                                                                                  node=tensor.name), INVALID_MODEL) from None
    return arrays


def infer_shapes(onnx: Any, proto: Any, inputs: Sequence[InputType], file: str) -> None:
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
        raise ConvcError(f"inconsistent ONNX model (onnx.shape_inference): {first_line(err)}", Location(file=file),
                         INVALID_MODEL) from None


def read_external_data(onnx: Any, proto: Any, base_dir: Path, allow_external_data: bool, max_bytes: int, file: str) -> None:
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
        raise ConvcError(f"invalid initializer: {first_line(err) if not isinstance(err, KeyError) else f'unknown data type {err}'}",
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
