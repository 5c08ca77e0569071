"""An ONNX model -> a verified Graph, built through the `Builder` by the registry's converters.

The steps, each failing with one located line (docs/diagnostics.md, O1-O10): parse (O1);
refuse nodes outside the default domain (O4); check the initializers' size (O9) and read
their external data (O10); bring an opset below 13 up with `onnx.version_converter` (O3);
list every node that has no converter and cannot be evaluated at import (O5), before
anything is built; `onnx.checker` (O2); give symbolic input dims their sizes (O7), then
strict `onnx.shape_inference` (O2); convert node by node (a QDQ pattern around a Conv or ConvTranspose as
the one quantized conv it stands for, one around an average pool as ONNX Runtime runs it, `qdq.py`). The steps that use the `onnx`
package are `model.py`'s.
A node whose inputs are all known at import (initializers, Constants, shapes, and what is
computed from them) is evaluated then, with `onnx.reference`, rather than built: shape
arithmetic becomes numbers.
"""

from __future__ import annotations

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
from .model import (
    InputType,
    Log,
    ModelSource,
    at_supported_opset,
    check_domains,
    check_model,
    check_names,
    decode_node,
    first_line,
    infer_shapes,
    initializer_arrays,
    input_types,
    listed,
    node_location,
    onnx_package,
    read,
    read_external_data,
    skeleton,
)
from .qdq import QDQPatterns
from .registry import INPUT_SPEC, UNSUPPORTED_ATTR, UNSUPPORTED_OP, Context, ConvertFn, Node, Operand, lookup

# Ops never evaluated at import even with known inputs: random ones, and those with subgraphs.
NOT_FOLDED = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
                        "If", "Loop", "Scan", "SequenceMap"})
DEFAULT_MAX_BYTES = 1 << 31


def load_onnx(model: ModelSource, *, input_shapes: Mapping[str, Sequence[int]] | None = None, keep_as_inputs: Sequence[str] = (),
              file: str | None = None, base_dir: str | os.PathLike[str] | None = None, allow_external_data: bool = False,
              max_bytes: int = DEFAULT_MAX_BYTES, log: Log | None = None,
              array_shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Read an ONNX model (a path, its bytes, or an `onnx.ModelProto`) into a verified Graph
    whose inputs and outputs carry the ONNX graph's names.

    Initializers become constants, except those named in `keep_as_inputs`, which become
    inputs after the graph's own (so `convc.grad` / `--grad` can name them as weights).
    `input_shapes` gives symbolic input dims their sizes (`{"x": (8, 3, 224, 224)}`); a
    symbolic dim it does not cover takes its size from `array_shapes` (the shapes of the arrays
    the model will run on, by input name: `--inputs`) where the ranks match, else is 1, said in
    one line to `log` (default: stderr).
    External data is read from `base_dir` (default: the model's directory; for bytes or a
    ModelProto, the working directory), and a location
    outside it is refused unless `allow_external_data`; initializers together may take at
    most `max_bytes`. `file` names the model in diagnostics. User errors raise `ConvcError`."""
    onnx = onnx_package(file or (os.fspath(model) if isinstance(model, str | os.PathLike) else "<model>"))
    proto, file, directory = read(onnx, model, file)
    check_domains(proto, file)
    read_external_data(onnx, proto, Path(base_dir) if base_dir is not None else directory, allow_external_data, max_bytes, file)
    proto, opset = at_supported_opset(onnx, proto, file)
    nodes = [decode_node(onnx, proto_node, index, opset, file) for index, proto_node in enumerate(proto.graph.node)]
    initializers = {t.name: t for t in proto.graph.initializer}
    check_names(input_shapes or {}, keep_as_inputs, proto, initializers, file)
    _check_supported(nodes, set(initializers) - set(keep_as_inputs), opset, file)
    light = skeleton(onnx, proto)
    check_model(onnx, light, file, opset)
    inputs = input_types(proto, initializers, input_shapes or {}, array_shapes or {}, file, log or _stderr)
    infer_shapes(onnx, light, inputs, file)
    arrays = initializer_arrays(onnx, proto, file)
    return _Build(proto, nodes, opset, file).run(inputs, arrays, keep_as_inputs)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def foldable(node: Node, known: Mapping[str, Any] | set[str]) -> bool:
    """Whether the node is evaluated at import: it has inputs, all known, and is deterministic."""
    present = [name for name in node.inputs if name]
    return bool(present) and node.op_type not in NOT_FOLDED and all(name in known for name in present)


def _check_supported(nodes: Sequence[Node], known: set[str], opset: int, file: str) -> None:
    """One error listing every node that has no converter at this opset and is not evaluated at
    import, and every node with an attribute value its converter does not handle (the first
    such attribute): O5 when some op has no converter, else O6."""
    known = set(known)
    missing, refused = [], {}
    for node in nodes:
        found = lookup(node.op_type, opset)
        if foldable(node, known):
            known.update(node.outputs)
            continue
        if found is None:
            missing.append(node)
            continue
        try:
            reason = found.refusal(node)
        except TypeError:  # an attribute of the wrong type (p='x'): onnx.checker, which runs next, reports it (O2)
            reason = None
        if reason is not None:
            refused[node.index] = reason
        if found.known_output:
            known.update(node.outputs)
    lacking = {node.index for node in missing}
    offenders = [node for node in nodes if node.index in lacking or node.index in refused]
    if not offenders:
        return
    first = node_location(file, offenders[0])
    if not refused:
        raise ConvcError(f"{len(missing)} node(s) with unsupported ops at opset {opset}: "
                         f"{listed(missing, lambda node: node.op_type)} (docs/onnx.md lists the supported ones)", first, UNSUPPORTED_OP)
    if len(offenders) == 1:
        raise ConvcError(refused[offenders[0].index], first, UNSUPPORTED_ATTR)
    described = listed(offenders, lambda node: f"{node.op_type}: {refused[node.index]}" if node.index in refused else node.op_type)
    raise ConvcError(f"{len(offenders)} node(s) unsupported at opset {opset}: {described} (docs/onnx.md lists what is supported)",
                     first, UNSUPPORTED_OP if missing else UNSUPPORTED_ATTR)


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

    def run(self, inputs: Sequence[InputType], arrays: dict[str, np.ndarray],
            keep_as_inputs: Sequence[str]) -> Graph:
        ctx, graph = self.ctx, self.builder.graph
        for name, shape, dtype in inputs:
            ctx.values[name] = self.builder.input(name, shape, dtype)
        for name in keep_as_inputs:
            ctx.values[name] = self._kept_input(name, arrays.pop(name))
        ctx.known.update(arrays)
        qdq = QDQPatterns(self.nodes, {v.name for v in self.proto.graph.output})
        for node in self.nodes:
            if node.index not in qdq.absorbed:
                fused = qdq.fused(node, ctx)
                self._convert(*fused) if fused is not None else self._convert(node)
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

    def _convert(self, node: Node, convert: ConvertFn | None = None) -> None:
        """Convert `node` by `convert` (a fused pattern's), else by its op type's converter."""
        ctx, ops = self.ctx, self.builder.graph.ops
        ctx.node, start = node, len(ops)
        loc = ctx.location(node)
        try:
            results = self._evaluate(node) if foldable(node, ctx.known) else (convert or self._converter(node))(node, ctx)
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

    def _evaluate(self, node: Node) -> list[np.ndarray]:
        """The node's outputs from known inputs, by the ONNX reference implementation (numpy)."""
        from onnx.reference import ReferenceEvaluator

        proto_node = self.proto.graph.node[node.index]
        feeds = {name: self.ctx.known[name] for name in node.inputs if name}
        try:
            return [np.asarray(out) for out in ReferenceEvaluator(proto_node, opsets={"": self.opset}).run(None, feeds)]
        except Exception as err:  # noqa: BLE001 - onnx.reference raises whatever numpy raises
            raise self.ctx.error(f"cannot evaluate at import (onnx.reference): {first_line(err)}", UNSUPPORTED_ATTR) from None

    def _output(self, index: int, name: str) -> Value:
        """The value of graph output `name`, named `name` (a copy when it already has another name)."""
        value = self.ctx.value(name)
        if value.name == name:
            return value
        copy = self.builder.op("reshape", value, name=name, new_sizes=value.type.shape)
        copy.producer.loc = Location(file=self.file, pointer=f"/graph/output/{index}", node=name)  # type: ignore[union-attr]
        return copy
