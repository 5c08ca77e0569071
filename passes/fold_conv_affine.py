"""fold-conv-affine: a per-output-channel scale after a conv with a constant kernel goes into
the kernel, and a bias added after a bias goes into that bias.

An imported BatchNormalization in inference form is `multiply` by a per-channel scale
(`broadcast_in_dim` of a constant along the feature dim) then `bias_add` of a per-channel
shift; after a conv whose kernel is a constant, both cost a pass over the conv's output on
every call for what the weights alone decide:

    multiply(conv(x, W) [+ b], scale)  ->  conv(x, W * scale) [+ b * scale]
    bias_add(bias_add(y, b), shift)    ->  bias_add(y, b + shift)

(a scale indexed by output channel scales that channel's kernel slice and bias entry; the
shift may also be an `add` of a per-channel constant). Exact in real arithmetic; the new
kernel and bias are computed in f64 and rounded once. A kernel that is a `reverse` or
`transpose` of a constant (a lowered transposed conv's) takes the scale in that constant,
the relayouts built again on it; other kernel forms (a grouped transposed conv's reshapes)
need `fold-constants` first. Only float convs whose result has the kernel's element type,
and only where the conv (and its bias) feeds nothing else: a conv read elsewhere too would
be computed twice. A kernel that is a graph input (weights kept as inputs, a gradient's
wrt) is not a constant and is left alone. Run `dce` after it: the old kernels and biases
stay until then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from convc.builders import constant_array
from convc.dtypes import is_float, numpy_dtype
from convc.ir import Graph, Op, Value
from convc.ops import ConvDimensionNumbers, view
from convc.pass_manager import Pass
from convc.rewrite import RewritePattern, Rewriter, apply_patterns


def per_channel(value: Value, axis: int, channels: int) -> np.ndarray | None:
    """`value` (of a conv output's shape) as one number per index of `axis`, when it is a
    constant that varies along `axis` alone: a `broadcast_in_dim` of a constant whose other
    dims are 1, or a constant equal along every other dim. None otherwise."""
    op = value.producer
    if op is not None and op.kind == "broadcast_in_dim":
        source = constant_array(op.operands[0])
        if source is None:
            return None
        kept = [d for d, target in enumerate(view(op).broadcast_dimensions) if target == axis]
        if any(size != 1 for d, size in enumerate(source.shape) if d not in kept):
            return None
        return np.broadcast_to(source.reshape(-1), (channels,))
    array = constant_array(value)
    if array is None or array.ndim <= axis:
        return None
    rows = np.moveaxis(array, axis, 0).reshape(channels, -1)
    return rows[:, 0] if np.array_equal(rows, np.repeat(rows[:, :1], rows.shape[1], axis=1)) else None


def _single_use(value: Value, graph: Graph) -> bool:
    """Whether one op reads `value` and it is no result of the function."""
    return len(value.users) == 1 and all(out is not value for out in graph.outputs)


def _rounded(array: np.ndarray, like: np.ndarray) -> np.ndarray:
    """`array` (computed in f64) rounded once to `like`'s element type."""
    return np.asarray(array.astype(like.dtype))


# Ops a kernel may pass through from its constant and still take the scale: they move or
# flip whole dims, so the scale goes into the constant along the dim that becomes the
# kernel's output features (lower-conv-transpose's kernel reverse and I/O swap).
_RELAYOUTS = ("reverse", "transpose")


@dataclass(frozen=True)
class _Kernel:
    """A conv kernel: a constant, then `chain` (relayouts, first applied first); `out_dim`
    is the constant's dim that becomes the kernel's output features, `flipped` whether a
    reverse turns it around on the way."""

    array: np.ndarray
    chain: tuple[Op, ...]
    out_dim: int
    flipped: bool


def _kernel(value: Value, out_dim: int) -> _Kernel | None:
    """`value` traced back through relayouts to its constant; None when it is no constant."""
    chain: list[Op] = []
    flipped = False
    while value.producer is not None and value.producer.kind in _RELAYOUTS:
        op = value.producer
        if op.kind == "transpose":
            out_dim = view(op).permutation[out_dim]
        elif out_dim in view(op).dimensions:
            flipped = not flipped
        chain.append(op)
        value = op.operands[0]
    array = constant_array(value)
    return None if array is None else _Kernel(array, tuple(reversed(chain)), out_dim, flipped)


@dataclass(frozen=True)
class _Conv:
    """A conv that a per-channel scale may enter: its op, kernel, bias (a `bias_add` of a
    constant, or None) and output feature dim."""

    op: Op
    kernel: _Kernel
    bias_add: Op | None
    bias: np.ndarray | None
    feature: int


def _scalable_conv(value: Value, graph: Graph) -> _Conv | None:
    """The conv that produces `value` (directly or through a constant `bias_add` on its
    feature dim), when its kernel is a float constant it alone reads through this use."""
    bias_add, bias = None, None
    op = value.producer
    if op is not None and op.kind == "bias_add" and _single_use(value, graph):
        bias = constant_array(op.operands[1])
        bias_add, op = op, op.operands[0].producer
    if op is None or op.kind != "conv" or not _single_use(op.result, graph):
        return None
    dn = view(op).dimension_numbers
    if not isinstance(dn, ConvDimensionNumbers) or not is_float(op.result.type.dtype):
        return None
    kernel = _kernel(op.operands[1], dn.rhs_spec[0])
    if kernel is None:
        return None
    if kernel.array.dtype != numpy_dtype(op.result.type.dtype):
        return None  # a preferred_element_type wider than the kernel: the product would be rounded coarser
    feature = dn.out_spec[1]
    if bias_add is not None and (bias is None or view(bias_add).axis % op.result.type.rank != feature):
        return None
    return _Conv(op, kernel, bias_add, bias, feature)


class ScaleIntoConv(RewritePattern):
    """multiply(conv(x, W) [+ b], per-channel scale) -> conv(x, W * scale) [+ b * scale]."""

    kind = "multiply"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        for produced, other in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
            conv = _scalable_conv(produced, rewriter.graph)
            if conv is None:
                continue
            channels = conv.op.result.type.shape[conv.feature]
            scale = per_channel(other, conv.feature, channels)
            if scale is not None:
                rewriter.replace_anchor(_scaled(conv, scale.astype(np.float64), rewriter))
                return


def _scaled(conv: _Conv, scale: np.ndarray, rewriter: Rewriter) -> Value:
    """The conv with its kernel (and bias) scaled by `scale`, computed in f64, rounded once;
    a kernel's relayouts are built again on its scaled constant."""
    original = conv.kernel.array
    shape = [1] * original.ndim
    shape[conv.kernel.out_dim] = scale.size
    along = (scale[::-1] if conv.kernel.flipped else scale).reshape(shape)
    kernel = rewriter.create("constant", suffix="kernel_scaled", value=_rounded(np.multiply(original, along, dtype=np.float64), original))
    for op in conv.kernel.chain:
        kernel = rewriter.create(op.kind, kernel, suffix=f"kernel_scaled.{op.kind}", **dict(op.attrs))
    result = rewriter.create("conv", conv.op.operands[0], kernel, suffix="scaled", **dict(conv.op.attrs))
    if conv.bias_add is None or conv.bias is None:
        return result
    bias = rewriter.create("constant", suffix="bias_scaled", value=_rounded(np.multiply(conv.bias, scale, dtype=np.float64), conv.bias))
    return rewriter.create("bias_add", result, bias, suffix="bias", axis=conv.feature)


class MergeBiases(RewritePattern):
    """bias_add(bias_add(y, b), shift) -> bias_add(y, b + shift), `shift` a constant vector."""

    kind = "bias_add"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        shift = constant_array(op.operands[1])
        if shift is not None:
            _merge(op, view(op).axis % op.result.type.rank, shift, rewriter)


class MergeAddedBias(RewritePattern):
    """add(bias_add(y, b), per-channel constant) (either order) -> bias_add(y, b + shift)."""

    kind = "add"

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        for inner, other in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
            producer = inner.producer
            if producer is None or producer.kind != "bias_add":
                continue
            axis = view(producer).axis % op.result.type.rank
            shift = per_channel(other, axis, op.result.type.shape[axis])
            if shift is not None:
                _merge(op, axis, shift, rewriter, inner)
                return


def _merge(op: Op, axis: int, shift: np.ndarray, rewriter: Rewriter, inner: Value | None = None) -> None:
    """Replace `op` (adding `shift` along `axis` to `inner`, its first operand by default) by
    one bias_add, when `inner` is a single-use float bias_add of a constant on the same axis."""
    inner = op.operands[0] if inner is None else inner
    first = inner.producer
    if first is None or first.kind != "bias_add" or not _single_use(inner, rewriter.graph) or not is_float(op.result.type.dtype):
        return
    bias = constant_array(first.operands[1])
    if bias is None or view(first).axis % inner.type.rank != axis:
        return
    merged = rewriter.create("constant", suffix="bias_merged", value=_rounded(bias.astype(np.float64) + shift.astype(np.float64), bias))
    rewriter.replace_anchor(rewriter.create("bias_add", first.operands[0], merged, suffix="bias", axis=axis))


@dataclass(frozen=True)
class FoldConvAffine(Pass):
    name = "fold-conv-affine"
    summary = "fold a per-channel scale after a constant-kernel conv into its kernel, and chained biases into one"

    def run(self, graph: Graph) -> bool:
        return apply_patterns(graph, [ScaleIntoConv(), MergeBiases(), MergeAddedBias()])
