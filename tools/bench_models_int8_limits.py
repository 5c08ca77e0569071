"""`bench --suite models-limits --int8`: issue 19's limit of each quantized network, measured
the way issue 18's `--suite models-limits` measures the float ones: what its quantized convs
cost alone on convc against ONNX Runtime's whole int8 network and against ONNX Runtime's own
kernels for the same convs.

    python -m convc.tools.bench --suite models-limits --int8 --onnx-dir DIR --batch 1,8 --budget 2

Each network is `--suite models --int8`'s file (the models suite's network, exported or read
with `--onnx-dir`, quantized by quantize_static: QDQ, per-channel int8 weights). Each of its
QDQ convs (DequantizeLinear'd input, weights and bias -> Conv -> QuantizeLinear) is cut out
of the file as it stands (`onnx.utils.Extractor`, its weights, scales and zero points
included), and its int8 input and output are made channels-last (a Transpose on each side),
as both runtimes keep the activations between two convs inside a network: convc's
`cpu-layout-nhwc` and ONNX Runtime's NHWC transformer each cancel those transposes with their
own. A channels-first integer input at a module's boundary would instead run XLA:CPU's slow
channels-first integer conv (bench_int8_conv's note), which no conv inside a network runs.
One copy of each distinct conv (its input, weight and output shapes and attributes) runs on the
integers it reads in the network (the network run on its input by ONNX Runtime, graph
optimizations off), counted as often as it occurs, three ways:

* convc int8: the cut-out file through `convc.load_onnx` and the cpu pipeline, as the network;
* ONNX Runtime int8: the piece on its CPU provider (the same thread count) as it runs it inside
  the network, its QLinearConv: on x86-64 ONNX Runtime rewrites int8 activations to uint8 (each
  zero point plus 128) before it fuses a QDQ conv, which it does not do for an int8 graph input
  (that runs a float Conv between casts), so an int8 piece is given to it so rewritten;
* convc f32: the float conv of the same shape (the weights and bias dequantized, an f32
  channels-last input), through convc's cpu pipeline.

The two int8 outputs (ONNX Runtime's less its 128) must be at most one step apart on every element
(issue 19's bar for single quantized convs) before anything is timed. The whole int8 network
runs on convc and ONNX Runtime too, and everything is timed interleaved in one process
(`bench.Timer`, rotating the order).

Where `convs/ORT net` (convc's int8 convs alone, summed, over ONNX Runtime's whole int8
network) is above 1, no arrangement of the rest of the network reaches ONNX Runtime: that is
the shown limit, and `convs/ORT convs` says how much of it is conv for conv.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from convc.frontend.onnx.check import onnxruntime_saturates_u8_by_s8

from . import bench, bench_models, bench_models_int8

WAYS = ("convc_int8", "ort_int8", "convc_f32")
RATIOS = ("convs/ORT net", "convs/ORT convs", "convs int8/f32", "net/ORT net")
STEP_TOLERANCE = 1  # steps of the output's scale between convc's and ONNX Runtime's int8 conv


@dataclass
class QdqConv:
    """One distinct QDQ conv of a network: its cut-out int8 file (channels-last), the float
    conv of the same shape, an input for each, and how often the network holds it."""

    name: str  # the first Conv node's name
    signature: str  # input, weight and output shapes, attributes
    int8_model: bytes
    f32_model: bytes
    stored_input: np.ndarray  # int8 or uint8, channels-last: what the conv reads in the network
    real_input: np.ndarray  # f32, channels-last: the stored input dequantized
    output_scale: float
    ort_model: bytes  # int8_model as ONNX Runtime runs it inside the network: int8 activations made uint8
    ort_shift: int  # ONNX Runtime's stored integers less convc's: 128 where made uint8, else 0
    count: int = 1


@dataclass
class Int8LimitResult:
    name: str
    batch: int
    shape: str
    convs: int  # QDQ convs in the network
    distinct: int
    network_ms: dict[str, float]  # convc_int8, ort_int8
    sums: dict[str, float]  # each way, summed over the network's convs (count x median)
    ratios: dict[str, float]
    rounds: int
    conv_ms: list[dict[str, Any]] = field(default_factory=list)  # per distinct conv: signature, count, ms by way


def qdq_convs(model: bytes, x: np.ndarray) -> list[QdqConv]:
    """The distinct DequantizeLinear -> Conv -> QuantizeLinear patterns of a quantize_static
    file, each cut out channels-last with its float counterpart; each one's input is what it
    reads in the network run on `x` (ONNX Runtime, its graph optimizations off)."""
    import onnx

    proto = onnx.load_from_string(model)
    producers = {out: node for node in proto.graph.node for out in node.output}
    readers: dict[str, list[Any]] = {}
    for node in proto.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    patterns = [(node, *pattern) for node in proto.graph.node if (pattern := _pattern(node, producers, readers)) is not None]
    values = _activations(proto, [name for _, x_q, y_q in patterns for name in (x_q, y_q)], x)
    proto = _with_value_infos(proto, values)
    kernels = {t.name: list(t.dims) for t in proto.graph.initializer}
    found: dict[str, QdqConv] = {}
    for node, x_q, y_q in patterns:
        kernel = kernels.get(producers[node.input[1]].input[0])
        signature = f"{list(values[x_q].shape)} {kernel} -> {list(values[y_q].shape)} " + " ".join(
            f"{a.name}={onnx.helper.get_attribute_value(a)!r}" for a in sorted(node.attribute, key=lambda a: a.name))
        if signature in found:
            found[signature].count += 1
        else:
            found[signature] = _cut_out(proto, node, x_q, y_q, values, signature)
    return list(found.values())


def _pattern(node: Any, producers: dict[str, Any], readers: dict[str, list[Any]]) -> tuple[str, str] | None:
    """(the conv's stored input, its QuantizeLinear's output) for a QDQ conv, else None."""
    if node.op_type != "Conv" or any(producers.get(name) is None or producers[name].op_type != "DequantizeLinear"
                                     for name in node.input[:2]):
        return None
    after = readers.get(node.output[0], [])
    if len(after) != 1 or after[0].op_type != "QuantizeLinear":
        return None
    return producers[node.input[0]].input[0], after[0].output[0]


def _activations(proto: Any, names: Sequence[str], x: np.ndarray) -> dict[str, np.ndarray]:
    """The tensors `names` of the network run on `x` by ONNX Runtime with its graph optimizations off (so that
    each exists as the file has it), each made an output of its zero point's type."""
    import onnx
    import onnxruntime as ort

    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    zero_points = {t.name: t.data_type for t in proto.graph.initializer}
    quantizers = {node.output[0]: node for node in proto.graph.node if node.op_type == "QuantizeLinear"}
    del copy.graph.output[:]
    for name in dict.fromkeys(names):
        copy.graph.output.append(onnx.helper.make_tensor_value_info(name, zero_points[quantizers[name].input[2]], None))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {proto.graph.input[0].name: x})
    return dict(zip(dict.fromkeys(names), outputs, strict=True))


def _with_value_infos(proto: Any, values: dict[str, np.ndarray]) -> Any:
    """A copy of `proto` declaring each of `values` by its array's type and shape (what the Extractor reads for the
    boundaries of a piece, where shape inference left them undeclared or unsized)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    kept = [info for info in copy.graph.value_info if info.name not in values]
    del copy.graph.value_info[:]
    copy.graph.value_info.extend(kept)
    copy.graph.value_info.extend(onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)
                                 for name, array in values.items())
    return copy


def _cut_out(proto: Any, conv: Any, x_q: str, y_q: str, values: dict[str, np.ndarray], signature: str) -> QdqConv:
    """The pattern from `x_q` to `y_q` as its own channels-last file, and its float conv."""
    import onnx
    from onnx import numpy_helper

    piece = onnx.utils.Extractor(proto).extract_model([x_q], [y_q])
    arrays = {t.name: numpy_helper.to_array(t) for t in piece.graph.initializer}
    x_nchw, y_nchw = values[x_q].shape, values[y_q].shape
    _nhwc_boundaries(piece, x_q, y_q, _elem_type(piece.graph.input[0]), _elem_type(piece.graph.output[0]), x_nchw, y_nchw)
    stored = np.ascontiguousarray(values[x_q].transpose(_to_last(values[x_q].ndim)))
    producers = {out: node for node in piece.graph.node for out in node.output}
    x_dq, w_dq = producers[conv.input[0]], producers[conv.input[1]]
    real = _dequantized(stored, x_dq.input, arrays, axis=None)
    weights = _dequantized(arrays[w_dq.input[0]], w_dq.input, arrays, axis=next((a.i for a in w_dq.attribute if a.name == "axis"), 1))
    bias = None
    if len(conv.input) > 2 and conv.input[2]:
        b_dq = producers[conv.input[2]]
        bias = _dequantized(arrays[b_dq.input[0]], b_dq.input, arrays, axis=0)
    quantizer = next(node for node in piece.graph.node if node.output[0] == y_q)
    scale = float(arrays[quantizer.input[1]].reshape(()))
    int8 = piece.SerializeToString()
    shifted = stored.dtype == np.int8 and arrays[quantizer.input[2]].dtype == np.int8
    ort_model = _as_uint8(piece, x_dq, quantizer, arrays) if shifted else int8
    return QdqConv(conv.name, signature, int8, _float_conv(conv, weights, bias, x_nchw, y_nchw), stored, real, scale, ort_model,
                   128 if shifted else 0)


def _as_uint8(piece: Any, x_dq: Any, quantizer: Any, arrays: dict[str, np.ndarray]) -> bytes:
    """`piece` with its int8 input and output made uint8 (each zero point plus 128: the same reals), the form ONNX
    Runtime rewrites a network's int8 activations to on x86-64 before it fuses a QDQ conv into its QLinearConv,
    which it does not do for an int8 graph input (it runs DequantizeLinear, a float Conv and QuantizeLinear)."""
    import onnx
    from onnx import TensorProto, numpy_helper

    copy = onnx.ModelProto()
    copy.CopyFrom(piece)
    nodes = {node.output[0]: node for node in copy.graph.node}
    for node, name in ((nodes[x_dq.output[0]], "x_zero_point_u8"), (nodes[quantizer.output[0]], "y_zero_point_u8")):
        shifted = (arrays[node.input[2]].astype(np.int16) + 128).astype(np.uint8)
        copy.graph.initializer.append(numpy_helper.from_array(shifted, name))
        node.input[2] = name
    used = {name for node in copy.graph.node for name in node.input}
    unused = [t for t in copy.graph.initializer if t.name not in used]
    for tensor in unused:
        copy.graph.initializer.remove(tensor)
    retyped = {x_dq.input[0], quantizer.output[0]}
    for value in (copy.graph.input[0], copy.graph.output[0], *(v for v in copy.graph.value_info if v.name in retyped)):
        value.type.tensor_type.elem_type = TensorProto.UINT8
    return copy.SerializeToString()


def _elem_type(value: Any) -> int:
    return int(value.type.tensor_type.elem_type)


def _channels_last(shape: Sequence[int]) -> tuple[int, ...]:
    return (shape[0], *shape[2:], shape[1])


def _to_first(rank: int) -> list[int]:
    return [0, rank - 1, *range(1, rank - 1)]


def _to_last(rank: int) -> list[int]:
    return [0, *range(2, rank), 1]


def _nhwc_boundaries(piece: Any, x_q: str, y_q: str, x_type: int, y_type: int, x_shape: Sequence[int],
                     y_shape: Sequence[int]) -> None:
    """`piece` reads "x" and writes "y" channels-last, through a Transpose on each side."""
    from onnx import helper

    rank = len(x_shape)
    del piece.graph.input[:]
    del piece.graph.output[:]
    piece.graph.input.append(helper.make_tensor_value_info("x", x_type, _channels_last(x_shape)))
    piece.graph.output.append(helper.make_tensor_value_info("y", y_type, _channels_last(y_shape)))
    piece.graph.node.insert(0, helper.make_node("Transpose", ["x"], [x_q], perm=_to_first(rank)))
    piece.graph.node.append(helper.make_node("Transpose", [y_q], ["y"], perm=_to_last(rank)))


def _dequantized(stored: np.ndarray, node_inputs: Sequence[str], arrays: dict[str, np.ndarray], axis: int | None) -> np.ndarray:
    """DequantizeLinear of `stored` with the scale and zero point its node names (per axis
    `axis` where they are vectors), in f32."""
    scale = arrays[node_inputs[1]].astype(np.float32)
    zero = arrays[node_inputs[2]].astype(np.int64) if len(node_inputs) > 2 and node_inputs[2] else np.zeros_like(scale, np.int64)
    if scale.size > 1 and axis is not None:
        shape = [-1 if d == axis % stored.ndim else 1 for d in range(stored.ndim)]
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    return ((stored.astype(np.int64) - zero).astype(np.float32) * scale).astype(np.float32)


def _float_conv(conv: Any, weights: np.ndarray, bias: np.ndarray | None, x_shape: Sequence[int],
                y_shape: Sequence[int]) -> bytes:
    """A one-Conv float file of the same attributes, reading and writing channels-last."""
    from onnx import TensorProto, helper, numpy_helper

    rank = len(x_shape)
    initializers = [numpy_helper.from_array(weights, "w")] + ([numpy_helper.from_array(bias, "b")] if bias is not None else [])
    nodes = [helper.make_node("Transpose", ["x"], ["x_first"], perm=_to_first(rank)),
             helper.make_node("Conv", ["x_first", "w", *(["b"] if bias is not None else [])], ["y_first"]),
             helper.make_node("Transpose", ["y_first"], ["y"], perm=_to_last(rank))]
    nodes[1].attribute.extend(conv.attribute)
    graph = helper.make_graph(nodes, "f32_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, _channels_last(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, _channels_last(y_shape))], initializers)
    return bench_models.onnx_model_bytes(graph, 17)


# --- timing ----------------------------------------------------------------------------------


def _executable(model: bytes, name: str) -> Any:
    """ONNX bytes through convc's cpu pipeline, compiled by PJRT."""
    from convc import load_onnx
    from convc.compile import Compiler

    compiler = Compiler(target="cpu")
    return compiler.executable(compiler.run_passes(load_onnx(model, file=f"{name}.onnx")), "cpu")


def _convc_thunk(model: bytes, name: str, x: np.ndarray) -> tuple[Callable[[], None], np.ndarray]:
    import jax

    executable = _executable(model, name)
    buffers = [jax.device_put(x, executable.device)]
    return (lambda: bench.block_until_ready(executable.run_on_device(buffers))), np.asarray(executable.run_on_device(buffers)[0])


def _ort_thunk(model: bytes, x: np.ndarray, threads: int) -> tuple[Callable[[], None], np.ndarray]:
    session = bench_models.ort_session(model, threads)
    name = session.get_inputs()[0].name
    return (lambda: session.run(None, {name: x})), session.run(None, {name: x})[0]


def conv_thunks(conv: QdqConv, threads: int) -> dict[str, Callable[[], None]]:
    """The conv's three ways, after convc's int8 output is checked against ONNX Runtime's."""
    ours, mine = _convc_thunk(conv.int8_model, conv.name, conv.stored_input)
    ort_input = (conv.stored_input.astype(np.int16) + conv.ort_shift).astype(np.uint8 if conv.ort_shift else conv.stored_input.dtype)
    theirs, reference = _ort_thunk(conv.ort_model, ort_input, threads)
    steps = np.abs(mine.astype(np.int64) + conv.ort_shift - reference.astype(np.int64))
    exact = not onnxruntime_saturates_u8_by_s8()  # else ONNX Runtime's sums saturate on this host: only the shapes checked
    if mine.shape != reference.shape or exact and steps.max(initial=0) > STEP_TOLERANCE:
        raise bench.BenchError(f"{conv.name} ({conv.signature}): convc's int8 conv is up to {steps.max(initial=0)} steps "
                               f"from ONNX Runtime's (the bar: {STEP_TOLERANCE})")
    f32, _ = _convc_thunk(conv.f32_model, conv.name, conv.real_input)
    return {"convc_int8": ours, "ort_int8": theirs, "convc_f32": f32}


def run_network(spec: bench_models.ModelSpec, budget_s: float, threads: int, module: Any, seed: int = 0) -> Int8LimitResult:
    """One network's int8 file, its whole run on convc and ONNX Runtime and its distinct QDQ
    convs three ways, timed interleaved."""
    x = bench_models.network_input(spec, seed)
    int8_model = bench_models_int8.quantize(bench_models_int8.float_model(spec, module, x), spec.input_shape)
    convs = qdq_convs(int8_model, x)
    network_timer = bench.Timer(budget_s)
    network, _, _ = bench.summarize(network_timer.run({"convc_int8": _convc_thunk(int8_model, spec.name, x)[0],
                                                       "ort_int8": _ort_thunk(int8_model, x, threads)[0]}))
    medians: dict[str, float] = {}
    for index, conv in enumerate(convs):
        conv_medians, _, _ = bench.summarize(bench.Timer(budget_s).run(conv_thunks(conv, threads)))
        medians.update({f"{index}:{way}": ms for way, ms in conv_medians.items()})
    sums = {way: sum(c.count * medians[f"{i}:{way}"] for i, c in enumerate(convs)) for way in WAYS}
    ratios = {"convs/ORT net": sums["convc_int8"] / network["ort_int8"], "convs/ORT convs": sums["convc_int8"] / sums["ort_int8"],
              "convs int8/f32": sums["convc_int8"] / sums["convc_f32"], "net/ORT net": network["convc_int8"] / network["ort_int8"]}
    per_conv = [{"conv": c.name, "signature": c.signature, "count": c.count, "ms": {w: medians[f"{i}:{w}"] for w in WAYS}}
                for i, c in enumerate(convs)]
    return Int8LimitResult(spec.name, spec.batch, spec.describe(), sum(c.count for c in convs), len(convs), network, sums, ratios,
                           len(network_timer.samples["ort_int8"]) // network_timer.block, per_conv)


def format_table(results: Sequence[Int8LimitResult]) -> str:
    """One row per network and batch: the networks, the convs' sums and RATIOS; geometric means below."""
    width = max([20, *(len(r.name) for r in results)])
    head = (f"{'network':<{width}} {'input':<18} {'convs':>7} {'net ms':>8} {'ORT net':>8} {'c int8':>8} {'ORT int8':>9} "
            f"{'c f32':>8} " + " ".join(f"{name:>15}" for name in RATIOS))
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.name:<{width}} {r.shape:<18} {f'{r.distinct}/{r.convs}':>7} {r.network_ms['convc_int8']:8.2f} "
                     f"{r.network_ms['ort_int8']:8.2f} {r.sums['convc_int8']:8.2f} {r.sums['ort_int8']:9.2f} {r.sums['convc_f32']:8.2f} "
                     + " ".join(f"{r.ratios[name]:15.3f}" for name in RATIOS))
    lines.append("-" * len(head))
    lines.append("geometric mean: " + "   ".join(f"{name} {value:.3f}" for name, value in geomeans(results).items() if value is not None))
    return "\n".join(lines)


def geomeans(results: Sequence[Int8LimitResult]) -> dict[str, float | None]:
    return {name: bench.geomean([r.ratios[name] for r in results]) for name in RATIOS}


def run_int8_limits_suite(args: Any, info: dict[str, Any], budget: float, log: Callable[[str], None]) -> dict[str, Any]:
    """The `--suite models-limits --int8` report."""
    from . import bench_models_limits

    saved_dir = getattr(args, "onnx_dir", None)
    if args.no_torch and not saved_dir:
        raise bench.BenchError("--suite models-limits --int8 exports its networks from PyTorch; --no-torch leaves nothing to export")
    onnxruntime = bench_models.import_onnxruntime("--suite models-limits --int8", saved_dir, quantization=True)
    onnxruntime.set_default_logger_severity(3)
    threads = os.cpu_count() or 1
    info["onnxruntime"], info["threads"] = onnxruntime.__version__, threads
    bench_models_int8.record_onnxruntime_saturation(info, log)
    log(f"int8 networks' limits: quantize_static QDQ per-channel; XLA and ONNX Runtime on {threads} intra-op threads; "
        f"load {info['load_average'][0]:.2f}")
    results = []
    for spec, module in bench_models_limits.with_modules(bench.selected_cases(args)):
        result = run_network(spec, budget, threads, module)
        log(f"  {spec.name} batch {spec.batch}: network {result.network_ms['convc_int8']:.2f} ms (ORT {result.network_ms['ort_int8']:.2f}), "
            f"convs int8 {result.sums['convc_int8']:.2f} ms (ORT {result.sums['ort_int8']:.2f}, f32 {result.sums['convc_f32']:.2f}), "
            f"{result.distinct} distinct of {result.convs} ({result.rounds} rounds)")
        results.append(result)
    info["load_average_after"] = list(os.getloadavg())
    return {"machine": info, "suite": "models-limits", "int8": True, "platform": "cpu", "target": "cpu", "budget_s": budget,
            "batches": list(args.batch), "onnx_dir": saved_dir, "step_tolerance": STEP_TOLERANCE,
            "cases": [vars(r) for r in results], "geomeans": geomeans(results), "table": format_table(results) if results else ""}

