"""QDQ fusion: DequantizeLinear -> Conv (or ConvTranspose) -> QuantizeLinear becomes one quantized conv (issue 19).

ONNX Runtime's quantizer writes a quantized conv as a float Conv between a DequantizeLinear
of each quantized operand (the activation, the int8 weights, an int32 bias) and a
QuantizeLinear of its output. Converted op by op that is a float conv between casts; the
pattern means one integer conv, which is what ONNX Runtime's own QDQ selectors run. So a
matched pattern is converted from QLinearConv's inputs (quantized.py's `qdq_conv`: a `conv` of
quantized operands with a quantized result, the int32 bias as QLinearConv's B), by the
spec's dequantize -> conv -> quantize arithmetic that the pattern spells out. A
ConvTranspose's pattern is matched the same way (W per tensor, or per output channel: W's
axis 1) and converted by `qlinear_conv_transpose`, as QLinearConv's inputs with
ConvTranspose's attributes. An AveragePool or GlobalAveragePool between the two casts is
matched too, and converted as ONNX Runtime runs it (its QLinear pools, or the pool's three ops
in their order of summation where ONNX Runtime leaves them unfused), which is not what the ops
compute in convc's forms (`_pool`).

Why the importer and not a pass: the pattern is ONNX's (its node types, which input is an
initializer, an int32 bias whose scale is x_scale * w_scale, the single QuantizeLinear
consumer), and the importer sees it whole before anything is built. A pass over convc's IR
would have to find a float conv of a dequantized constant and take it apart again, after
the importer had already made the weights float constants; here the weights stay integers
from the file to the emitted module. What does not match converts op by op, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...dtypes import quant_type
from .quantized import (
    dequantized_average_pool,
    node_axis,
    qdq_conv,
    qdq_gemm,
    qlinear_average_pool,
    qlinear_average_pool_as_uint8,
    qlinear_conv_transpose,
    qlinear_global_average_pool,
)
from .registry import Context, ConvertFn, Node

CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
# each fused op type: its attributes, W's output-channel axis for the node (a per-channel W's; ONNX Runtime's quantizer
# quantizes ConvTranspose's W along axis 1; a Gemm's B is [M, K] with transB, else [K, M]), and the converter of its
# QLinearConv-style fused node (quantized.py)
FUSED: dict[str, tuple[tuple[str, ...], Callable[[Node], int], ConvertFn]] = {
    "Conv": (CONV_ATTRS, lambda node: 0, qdq_conv),
    "ConvTranspose": (CONV_ATTRS + ("output_padding", "output_shape"), lambda node: 1, qlinear_conv_transpose),
    "Gemm": (("transB",), lambda node: 0 if node.attrs["transB"] else 1, qdq_gemm),
}
# each pool's pattern, by how ONNX Runtime 1.32 runs it (`QDQPatterns._pool`), to the converter of the node that stands
# for it (inputs X, x_scale, x_zero_point, y_scale, y_zero_point; the pool's attributes). "qlinear": its QLinear pool;
# "qlinear_as_uint8": that pool on an int8 pattern it made uint8 first; "ops": the three ops, unfused. A global pool is
# its QLinear pool's exact integer sum either way: ONNX Runtime's float ops add in MLAS's order, which no XLA reduce
# keeps, so a float sum would round near ties apart from it as often, and run slower (its reduce holds the chain before)
FUSED_POOLS: dict[str, dict[str, ConvertFn]] = {
    "AveragePool": {"qlinear": qlinear_average_pool, "qlinear_as_uint8": qlinear_average_pool_as_uint8,
                    "ops": dequantized_average_pool},
    "GlobalAveragePool": dict.fromkeys(("qlinear", "qlinear_as_uint8", "ops"), qlinear_global_average_pool),
}


class QDQPatterns:
    """Finds the QDQ pattern around each Conv, ConvTranspose and average pool as the importer reaches it, from the nodes'
    producers and consumers and the values known so far (`Context`)."""

    def __init__(self, nodes: Sequence[Node], graph_outputs: set[str]):
        self.producer = {name: node for node in nodes for name in node.outputs if name}
        self.consumers: dict[str, list[Node]] = {}
        for node in nodes:
            for name in set(node.inputs):
                self.consumers.setdefault(name, []).append(node)
        self.graph_outputs = graph_outputs
        self.absorbed: set[int] = set()  # the indices of QuantizeLinear nodes a fused conv stands for

    def fused(self, node: Node, ctx: Context) -> tuple[Node, ConvertFn] | None:
        """The QLinearConv-style node `node` (a Conv or ConvTranspose) and its neighbours stand for, with its converter,
        else None. The QuantizeLinear it absorbs is recorded in `absorbed`, for the importer to skip."""
        if node.domain not in ("", "ai.onnx"):
            return None
        if node.op_type in FUSED_POOLS:
            return self._pool(node, ctx)
        if node.op_type not in FUSED:
            return None
        names, output_axis, convert = FUSED[node.op_type]
        gemm = node.op_type == "Gemm"
        if gemm and not _plain_gemm(node):
            return None
        w_axis = output_axis(node)
        y = node.outputs[0]
        q = self._quantize(y, ctx)
        if q is None:
            return None
        dx, dw = self._dequantize(node.input(0), ctx), self._dequantize(node.input(1), ctx)
        if (dx is None or dw is None or not self._activation(dx, ctx) or not _weights(dw, ctx, w_axis, matrix=gemm)
                or not _per_tensor(q, ctx)):
            return None
        inputs = [dx.input(0), dx.input(1), dx.input(2), dw.input(0), dw.input(1), dw.input(2), q.input(1), q.input(2)]
        if node.input(2):
            db = self._dequantize(node.input(2), ctx)
            groups = node.attrs["group"] if node.op_type == "ConvTranspose" else 1  # W's axis 1 is per group there
            if db is None or not _bias(db, dx, dw, ctx, groups):
                return None
            inputs.append(db.input(0))
        self.absorbed.add(q.index)
        attrs = {name: node.attrs[name] for name in names if name in node.attrs}
        written_as = f"{node.op_type} (DequantizeLinear -> {node.op_type} -> QuantizeLinear)"
        return Node(node.name or y, "QLinear" + node.op_type, tuple(inputs), (q.outputs[0],), attrs, node.index, "",
                    written_as=written_as), convert

    def _pool(self, node: Node, ctx: Context) -> tuple[Node, ConvertFn] | None:
        """An AveragePool or GlobalAveragePool between a DequantizeLinear and a QuantizeLinear of 8-bit types, per
        tensor, as ONNX Runtime 1.32 on x86-64 runs it (quantized.py; each form measured equal to it on every
        element), which is not dequantize -> pool -> quantize as convc's ops compute it. ONNX Runtime fuses the
        pattern into its QLinear pool when the DequantizeLinear's input and the QuantizeLinear's output have one type,
        after it has made some int8 pairs uint8 (`_made_uint8`); otherwise it runs the three ops. The
        DequantizeLinear stays: a conv may read it."""
        if any(d != 1 for d in node.attrs.get("dilations", ())):  # QLinearAveragePool has no dilations
            return None
        q, dx = self._quantize(node.outputs[0], ctx), self._dequantize(node.input(0), ctx)
        if q is None or dx is None or not self._activation(dx, ctx) or not _per_tensor(q, ctx):
            return None
        x_zero, y_zero = ctx.array(dx.input(2)), ctx.array(q.input(2))
        if x_zero is None or y_zero is None or {x_zero.dtype, y_zero.dtype} - {np.dtype(np.uint8), np.dtype(np.int8)}:
            return None
        x_uint8 = x_zero.dtype == np.uint8 or self._made_uint8(self.producer.get(dx.input(0)), ctx)
        y_uint8 = y_zero.dtype == np.uint8 or self._made_uint8(q, ctx)
        form = "ops" if x_uint8 != y_uint8 else "qlinear_as_uint8" if y_zero.dtype == np.int8 and y_uint8 else "qlinear"
        convert = FUSED_POOLS[node.op_type][form]
        self.absorbed.add(q.index)
        written_as = f"{node.op_type} (DequantizeLinear -> {node.op_type} -> QuantizeLinear)"
        inputs = (dx.input(0), dx.input(1), dx.input(2), q.input(1), q.input(2))
        return Node(node.name or node.outputs[0], "QLinear" + node.op_type, inputs, (q.outputs[0],), dict(node.attrs),
                    node.index, "", written_as=written_as), convert

    def _made_uint8(self, q: Node | None, ctx: Context) -> bool:
        """Whether ONNX Runtime makes the int8 QuantizeLinear `q` and the DequantizeLinear after it uint8 (zero points
        plus 128) before it fuses QDQ patterns, as it does on x86-64, which runs no int8 QDQ by default: when that
        DequantizeLinear is q's one reader, with q's zero point, and is read once (one read by several nodes is
        copied first, one per reader, and then q has several)."""
        if q is None or q.outputs[0] in self.graph_outputs or not _plain(q, "QuantizeLinear", ctx) or not q.input(2):
            return False
        readers = self.consumers.get(q.outputs[0], [])
        if len(readers) != 1 or not _plain(readers[0], "DequantizeLinear", ctx) or not readers[0].input(2):
            return False
        dq, q_zero = readers[0], ctx.array(q.input(2))
        dq_zero = ctx.array(dq.input(2))
        if q_zero is None or dq_zero is None or q_zero.dtype != np.int8 or q_zero.size != 1 or not np.array_equal(q_zero, dq_zero):
            return False
        return len(self.consumers.get(dq.outputs[0], [])) + (dq.outputs[0] in self.graph_outputs) <= 1

    def _quantize(self, y: str, ctx: Context) -> Node | None:
        """The one QuantizeLinear that reads `y`, when nothing else does and `y` is no graph output."""
        readers = self.consumers.get(y, [])
        if y in self.graph_outputs or len(readers) != 1 or not _plain(readers[0], "QuantizeLinear", ctx):
            return None
        return readers[0]

    def _dequantize(self, name: str, ctx: Context) -> Node | None:
        """The DequantizeLinear that produces `name` (of the default domain, no blocks, parameters
        known), through any Identity nodes between them (the TorchScript exporter stores equal
        initializers once and aliases the others with Identity, which the quantizer keeps)."""
        node = self.producer.get(name)
        while node is not None and node.op_type == "Identity" and node.domain in ("", "ai.onnx"):
            node = self.producer.get(node.input(0))
        return node if node is not None and _plain(node, "DequantizeLinear", ctx) else None

    def _activation(self, dx: Node, ctx: Context) -> bool:
        """dx dequantizes, per tensor, a quantized convc value of 8-bit storage (the weights' kind: the spec's C31) or
        plain 8-bit integers of its zero point's type (an int8 or uint8 graph input)."""
        value = ctx.values.get(dx.input(0))
        if value is None or not _per_tensor(dx, ctx):
            return False
        quant = quant_type(value.type.dtype)
        if quant is not None:
            return quant.storage in ("i8", "u8")
        zero_point = ctx.array(dx.input(2))
        return zero_point is not None and zero_point.dtype in PLAIN_8_BITS and value.type.dtype == PLAIN_8_BITS[zero_point.dtype]


PLAIN_8_BITS = {np.dtype(np.int8): "i8", np.dtype(np.uint8): "ui8"}  # a zero point's type -> convc's plain storage type


def _plain(node: Node, op_type: str, ctx: Context) -> bool:
    """`node` is `op_type` of the default domain, unblocked, its scale and zero point known at import."""
    return (node.op_type == op_type and node.domain in ("", "ai.onnx") and not node.attrs.get("block_size", 0)
            and ctx.array(node.input(1)) is not None and (not node.input(2) or ctx.array(node.input(2)) is not None))


def _scale(node: Node, ctx: Context) -> np.ndarray:
    found = ctx.array(node.input(1))
    assert found is not None  # _plain checked it
    return np.asarray(found, np.float32).reshape(-1)


def _per_tensor(node: Node, ctx: Context) -> bool:
    return _scale(node, ctx).size == 1 and bool(node.input(2))


def _plain_gemm(node: Node) -> bool:
    """A Gemm that is a product of A and B plus C: alpha and beta 1, A not transposed (as a Linear layer exports)."""
    return node.attrs["alpha"] == 1.0 and node.attrs["beta"] == 1.0 and not node.attrs["transA"]


def _weights(dw: Node, ctx: Context, axis: int, matrix: bool = False) -> bool:
    """dw dequantizes an 8-bit initializer with a zero point (a conv's kernel, or with `matrix` a Gemm's 2-D B), per
    tensor or per output channel (along `axis`)."""
    w = ctx.array(dw.input(0))
    if w is None or w.dtype not in (np.int8, np.uint8) or not dw.input(2) or (w.ndim != 2 if matrix else w.ndim < 3):
        return False
    per_channel = _scale(dw, ctx).size > 1
    return not per_channel or (node_axis(dw) % w.ndim == axis and _scale(dw, ctx).size == w.shape[axis])


def _bias(db: Node, dx: Node, dw: Node, ctx: Context, groups: int = 1) -> bool:
    """db dequantizes an int32 initializer, zero point 0, scale x_scale * w_scale (w_scale per channel repeated for
    each of `groups`): QLinearConv's B (as ONNX Runtime's quantizer writes it; another scale is no integer bias of
    this conv). An all-zero B is zero at every scale: the quantizer writes one bias for the convs whose equal float
    biases the TorchScript exporter aliased (zero-initialized ones), at the first conv's scale."""
    b = ctx.array(db.input(0))
    zero = ctx.array(db.input(2)) if db.input(2) else np.zeros(1, np.int32)
    if b is None or b.dtype != np.int32 or b.ndim != 1 or zero is None or np.any(zero != 0):
        return False
    if not np.any(b):
        return True
    expected, scale = _scale(dx, ctx) * _scale(dw, ctx), _scale(db, ctx)
    if expected.size > 1:
        expected = np.tile(expected, groups)
    return scale.size in (1, expected.size) and bool(np.allclose(scale, expected, rtol=1e-6, atol=0))
