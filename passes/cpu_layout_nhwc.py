"""cpu-layout-nhwc: channels-first convs (NCHW, NCDHW, NCW) and the ops between them compute
channels-last, so a chain of them pays one transpose where it starts and one where it ends
rather than two per conv.

XLA:CPU's conv kernels (Eigen, YNNPACK) take channels-last data and HWIO kernels; layout
assignment puts a transpose around every conv that is written otherwise, and a pool or an
elementwise op written NCHW between two such convs computes NCHW, so the data goes back and
forth (figures in docs/benchmarks.md). The IR keeps the frontend's layout (an imported ONNX
model stays NCHW); this pass chooses the cpu target's.

How: each conv whose output is channels-first (`out_spec` the identity) gets the
channels-last output spec, and its result is replaced by a transpose back. An op of a kind
this pass knows whose operand is such a transpose back ("held" channels-last) computes on
the transpose's operand instead, its dim-numbered attributes (`bias_add` axis,
`concatenate` dimension, reduce axes, pool windows, pad/slice/reverse dims) moved with the
dims, and its result is replaced by a transpose back in turn. Transposes back that every
user absorbed are erased; the ones that remain stand before an op the pass does not know
(reshape, dot_general, ...) or a graph output. So an op it does not know is never computed in
a layout it was not written for. Constants an op moves (a conv's kernel, to HWIO; a constant
operand of an elementwise op) are transposed here, into new constants, not at run time; a
`broadcast_in_dim` operand is rebuilt broadcasting into the moved dims. A graph with a device
mesh is left as written: its sharding pins name dims of the written layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from convc.builders import transpose
from convc.ir import Graph, Op, Value
from convc.ops import ConvDimensionNumbers, view
from convc.ops.elementwise import ELEMENTWISE_OPS
from convc.pass_manager import Pass
from convc.rewrite import RewritePattern, Rewriter, apply_patterns


def channels_last(rank: int) -> tuple[int, ...]:
    """The permutation channels-first -> channels-last: (0, 2, ..., rank-1, 1)."""
    return (0, *range(2, rank), 1)


def channels_first(rank: int) -> tuple[int, ...]:
    """Its inverse, channels-last -> channels-first: (0, rank-1, 1, ..., rank-2). Also where
    channels-first dim d sits in the channels-last tensor: `channels_first(rank)[d]`."""
    return (0, rank - 1, *range(1, rank - 1))


def held(value: Value) -> Value | None:
    """The channels-last tensor `value` is a transpose back from, if it is one."""
    op = value.producer
    rank = value.type.rank
    if op is None or op.kind != "transpose" or rank < 3:
        return None
    return op.operands[0] if tuple(view(op).permutation) == channels_first(rank) else None


def moved_dims(dims: Sequence[int], rank: int) -> tuple[int, ...]:
    """Dim numbers of a channels-first tensor, as numbers of its channels-last form."""
    where = channels_first(rank)
    return tuple(where[d % rank] for d in dims)


def permuted(per_dim: Sequence[Any], rank: int) -> tuple[Any, ...]:
    """A one-entry-per-dim attribute of a channels-first tensor, for its channels-last form."""
    return tuple(per_dim[d] for d in channels_last(rank))


# Ops whose operands and result all have one shape and whose attributes name no dim: they
# compute the same in any layout (round_nearest_even and bitcast_convert: what
# lower-quantized leaves of a quantize between two convs).
SAME_SHAPE_KINDS = ("add", "multiply", "relu", "convert", "relu_grad", "round_nearest_even", "bitcast_convert",
                    *(opdef.name for opdef in ELEMENTWISE_OPS))

# Per-dim attributes of the window ops, moved with the dims.
_POOL_ATTRS = ("window_dimensions", "window_strides", "base_dilation", "window_dilation")


@dataclass
class _Moves:
    """What one run shares: the channels-last form of each value already asked for (so a
    constant or a transpose is made once), and the ops the run may have left unused."""

    made: dict[int, tuple[Value, Value]] = field(default_factory=dict)  # id -> (value, its channels-last form)
    maybe_dead: list[Op] = field(default_factory=list)
    backs: set[int] = field(default_factory=set)  # the transposes back
    kernels: dict[tuple[int, tuple[int, ...]], tuple[Value, Value]] = field(default_factory=dict)  # (id, order) -> HWIO form

    def last(self, rewriter: Rewriter, value: Value) -> Value:
        """`value` (channels-first, rank >= 3) channels-last: the held tensor, a transposed
        constant, a re-aimed broadcast, a transpose's operand transposed once, else a transpose."""
        inner = held(value)
        if inner is not None:
            if value.producer is not None:
                self.maybe_dead.append(value.producer)  # the transpose back, absorbed
            return inner
        found = self.made.get(id(value))
        if found is None or found[0] is not value:
            found = self.made[id(value)] = (value, self._make_last(rewriter, value))
        return found[1]

    def _make_last(self, rewriter: Rewriter, value: Value) -> Value:
        rank, op = value.type.rank, value.producer
        if op is not None and op.kind == "constant":
            self.maybe_dead.append(op)
            array = np.ascontiguousarray(np.transpose(np.asarray(view(op).value), channels_last(rank)))
            return rewriter.create("constant", suffix="nhwc", value=array)
        if op is not None and op.kind == "transpose":  # one transpose of its operand, not two
            self.maybe_dead.append(op)
            order = view(op).permutation
            return transpose(rewriter, op.operands[0], [order[d] for d in channels_last(rank)], "nhwc")
        if op is not None and op.kind == "broadcast_in_dim":
            self.maybe_dead.append(op)
            v = view(op)
            return rewriter.create("broadcast_in_dim", op.operands[0], suffix="nhwc", shape=permuted(v.shape, rank),
                                   broadcast_dimensions=moved_dims(v.broadcast_dimensions, rank))
        return transpose(rewriter, value, channels_last(rank), "nhwc")

    def back(self, rewriter: Rewriter, value: Value) -> None:
        """Replace the anchor by channels-last `value` transposed back (erased later if
        every user takes `value` itself)."""
        restored = transpose(rewriter, value, channels_first(value.type.rank), "nchw")
        if restored.producer is not None:
            self.maybe_dead.append(restored.producer)
            self.backs.add(id(restored.producer))
        rewriter.replace_anchor(restored)


Rewrite = Callable[[_Moves, Op, Rewriter], None]


def _any_held(op: Op) -> bool:
    return any(v.type.rank >= 3 and held(v) is not None for v in op.operands)


def _same_shape(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    operands = [moves.last(rewriter, v) for v in op.operands]
    moves.back(rewriter, rewriter.create(op.kind, *operands, suffix="nhwc", **op.attrs))


def _bias_add(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    x, bias = op.operands
    axis = moved_dims([view(op).axis], x.type.rank)[0]
    moves.back(rewriter, rewriter.create("bias_add", moves.last(rewriter, x), bias, suffix="nhwc", axis=axis))


def _concatenate(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    rank = op.result.type.rank
    inputs = [moves.last(rewriter, v) for v in op.operands]
    moves.back(rewriter, rewriter.create("concatenate", *inputs, suffix="nhwc",
                                         dimension=moved_dims([view(op).dimension], rank)[0]))


def _window(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    """max_pool, sum_pool: every per-dim attribute permuted (a padding mode is per dim too)."""
    rank = op.result.type.rank
    attrs = {name: permuted(value, rank) if name in _POOL_ATTRS else value for name, value in op.attrs.items()}
    if "padding" in attrs and not isinstance(attrs["padding"], str):  # absent: VALID, a mode like any
        attrs["padding"] = permuted(attrs["padding"], rank)
    moves.back(rewriter, rewriter.create(op.kind, moves.last(rewriter, op.operands[0]), suffix="nhwc", **attrs))


def _pad(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    rank = op.result.type.rank
    attrs = {**op.attrs, "padding_config": permuted(view(op).padding_config, rank)}
    moves.back(rewriter, rewriter.create("pad", moves.last(rewriter, op.operands[0]), suffix="nhwc", **attrs))


def _slice(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    rank = op.result.type.rank
    attrs = {name: permuted(value, rank) for name, value in op.attrs.items()}
    moves.back(rewriter, rewriter.create("slice", moves.last(rewriter, op.operands[0]), suffix="nhwc", **attrs))


def _reverse(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    dims = moved_dims(view(op).dimensions, op.result.type.rank)
    moves.back(rewriter, rewriter.create("reverse", moves.last(rewriter, op.operands[0]), suffix="nhwc", dimensions=dims))


def _reduce(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    """reduce_sum, reduce_max: the axes moved; the kept dims come out in channels-last order,
    put back in the written order by a transpose where that differs (none when every
    spatial dim is reduced, a global pool: [N, C] either way)."""
    x = op.operands[0]
    rank = x.type.rank
    axes = set(d % rank for d in view(op).axes)
    reduced = rewriter.create(op.kind, moves.last(rewriter, x), suffix="nhwc", **{**op.attrs, "axes": moved_dims(sorted(axes), rank)})
    kept_now = [d for d in channels_last(rank) if d not in axes]
    kept_written = [d for d in range(rank) if d not in axes]
    rewriter.replace_anchor(transpose(rewriter, reduced, [kept_now.index(d) for d in kept_written], "order"))


def _transpose(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    """A transpose of a held tensor: one transpose of the tensor itself (none if that is the identity)."""
    x = op.operands[0]
    where = channels_first(x.type.rank)
    permutation = [where[d] for d in view(op).permutation]
    rewriter.replace_anchor(transpose(rewriter, moves.last(rewriter, x), permutation, "composed"))


def _is_identity(spec: Sequence[int]) -> bool:
    return tuple(spec) == tuple(range(len(spec)))


def _conv(moves: _Moves, op: Op, rewriter: Rewriter) -> None:
    """A channels-first output becomes channels-last, and so does its lhs (held: read where
    it is; else transposed once). Any conv reads a held operand where it is (a gradient
    conv's activations). A constant kernel is transposed to HWIO (spatial dims, in
    features, out features)."""
    lhs, rhs = op.operands
    rank = op.result.type.rank
    dn = view(op).dimension_numbers
    if not isinstance(dn, ConvDimensionNumbers):  # layout strings: canonicalize-dimension-numbers has not run
        return
    seed = _is_identity(dn.out_spec)
    if not (seed or held(lhs) is not None or held(rhs) is not None):
        return
    lhs_spec, out_spec = dn.lhs_spec, dn.out_spec
    if seed or held(lhs) is not None:
        lhs, lhs_spec = moves.last(rewriter, lhs), moved_dims(lhs_spec, rank)
    if seed:
        out_spec = moved_dims(out_spec, rank)
    rhs_spec: Sequence[int]
    if held(rhs) is not None:
        rhs, rhs_spec = moves.last(rewriter, rhs), moved_dims(dn.rhs_spec, rank)
    else:
        rhs, rhs_spec = _hwio(moves, rewriter, rhs, dn.rhs_spec)
    attrs = {**op.attrs, "dimension_numbers": ConvDimensionNumbers(tuple(lhs_spec), tuple(rhs_spec), tuple(out_spec))}
    result = rewriter.create("conv", lhs, rhs, suffix="nhwc", **attrs)
    if seed:
        moves.back(rewriter, result)
    else:
        rewriter.replace_anchor(result)


def _hwio(moves: _Moves, rewriter: Rewriter, rhs: Value, spec: Sequence[int]) -> tuple[Value, Sequence[int]]:
    """A constant kernel as a new constant in HWIO order, with its spec; another kernel as it is."""
    op, rank = rhs.producer, len(spec)
    order = (*spec[2:], spec[1], spec[0])
    if op is None or op.kind != "constant" or _is_identity(order):
        return rhs, spec
    found = moves.kernels.get((id(rhs), order))
    if found is None or found[0] is not rhs:  # a kernel shared by several convs is transposed once
        moves.maybe_dead.append(op)
        array = np.ascontiguousarray(np.transpose(np.asarray(view(op).value), order))
        found = moves.kernels[(id(rhs), order)] = (rhs, rewriter.create("constant", suffix="hwio", value=array))
    return found[1], (rank - 1, rank - 2, *range(rank - 2))


# Every kind the pass moves: how, and the attributes that rewrite accounts for (moved with the
# dims, or naming none). An op carrying any other attribute is left as written, so an
# attribute added to a declaration later cannot be carried over unmoved; tests check that
# these sets cover every declared attribute.
_CONV_ATTRS = frozenset({"dimension_numbers", "window_strides", "padding", "lhs_dilation", "rhs_dilation",  # per spatial dim, in spec order
                         "feature_group_count", "batch_group_count", "precision", "preferred_element_type", "lowering"})
_SAME_SHAPE_ATTRS = frozenset({"new_dtype", "min", "max"})  # convert's, clamp's: scalars


@dataclass(frozen=True)
class Move:
    rewrite: Rewrite
    attrs: frozenset[str]


MOVES: dict[str, Move] = {
    "conv": Move(_conv, _CONV_ATTRS),
    **{kind: Move(_same_shape, _SAME_SHAPE_ATTRS) for kind in SAME_SHAPE_KINDS},
    "bias_add": Move(_bias_add, frozenset({"axis"})),
    "concatenate": Move(_concatenate, frozenset({"dimension"})),
    "max_pool": Move(_window, frozenset({*_POOL_ATTRS, "padding"})),
    "sum_pool": Move(_window, frozenset({*_POOL_ATTRS, "padding"})),
    "pad": Move(_pad, frozenset({"padding_config", "padding_value"})),
    "slice": Move(_slice, frozenset({"start_indices", "limit_indices", "strides"})),
    "reverse": Move(_reverse, frozenset({"dimensions"})),
    "reduce_sum": Move(_reduce, frozenset({"axes"})),
    "reduce_max": Move(_reduce, frozenset({"axes"})),
    "transpose": Move(_transpose, frozenset({"permutation"})),
}


@dataclass
class _Relayout(RewritePattern):
    """One kind's rewrite, sharing the run's `_Moves`."""

    kind: str = ""  # type: ignore[misc]  # set per instance: one pattern per kind
    moves: _Moves = field(default_factory=_Moves)

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        move = MOVES[op.kind]
        if op.result.type.rank < 3 and op.kind not in ("reduce_sum", "reduce_max"):
            return
        if not move.attrs.issuperset(op.attrs):
            return
        if op.kind == "conv" or _any_held(op):
            move.rewrite(self.moves, op, rewriter)


def _erase_unused(graph: Graph, moves: _Moves) -> None:
    """Drop the ops the run made unused (transposes back every user absorbed, kernels it
    replaced), last first so a chain of them goes. An erased transpose back hands its name
    (the rewritten op's) to the channels-last op it was made from."""
    doomed = {id(op) for op in moves.maybe_dead}
    outputs = {id(v) for v in graph.outputs}
    kept = []
    for op in reversed(graph.ops):
        if id(op) in doomed and not op.result.users and id(op.result) not in outputs:
            inner = op.operands[0] if id(op) in moves.backs else None
            if inner is not None and inner.producer is not None and inner.producer.loc == op.loc:
                inner.name = op.result.name
            op.drop_operands()
        else:
            kept.append(op)
    graph.ops = kept[::-1]


@dataclass(frozen=True)
class CpuLayoutNhwc(Pass):
    name = "cpu-layout-nhwc"
    summary = "channels-first convs and the ops between them compute channels-last: one transpose per chain, not two per conv"

    def run(self, graph: Graph) -> bool:
        if graph.mesh is not None:  # sharding pins name dims of the written layout: left as written
            return False
        moves = _Moves()
        names = [v.name for v in graph.outputs]
        changed = apply_patterns(graph, [_Relayout(kind, moves) for kind in MOVES])
        _erase_unused(graph, moves)
        _keep_output_names(graph, names)
        return changed


def _keep_output_names(graph: Graph, names: Sequence[str]) -> None:
    """Outputs keep their names (`--outputs` files and `--check` reports go by them): an
    output that is now another op's result (a transpose absorbed into the conv before it)
    takes the old name, which the erased op left free. A graph input keeps its own."""
    inputs = {id(v) for v in graph.inputs}
    for value, name in zip(graph.outputs, names):
        if value.name != name and id(value) not in inputs and graph.outputs.count(value) == 1:
            value.name = name
