"""The convs MobileNet v2 and EfficientNet-B0 are made of, one at a time, against ONNX
Runtime's kernel (`python -m convc.tools.bench --suite dw-limit`): issue 18's measurement of
where the inference target's limit lies on the depthwise networks, the best StableHLO form of
each conv against the best kernel ONNX Runtime has for it.

Each case is one conv at MobileNet v2's shapes (224x224 input): 3x3 and 5x5 depthwise convs
(EfficientNet-B0's 5x5 ones taken at the same positions) at stride 1 and 2, and the 1x1
expand and project convs, each at every `--batch`. The kernel is a constant, as in an
imported network. It runs, interleaved in one process (`bench.Timer`), as

* ort: a one-node ONNX model (Conv, NCHW, the kernel an initializer, `group` = channels for
  depthwise) on ONNX Runtime's CPU provider, its default graph optimizations, one intra-op
  thread per core as the models suite runs it;
* cpu: the conv channels-last (NHWC/HWIO, as `cpu-layout-nhwc` leaves the convs inside a
  network), compiled by convc for `--target cpu`: what the cpu pipeline emits for it (a tap
  sum for depthwise, a dot for 1x1; the report names the lowering it chose);
* tap_pads (depthwise only): the tap sum written without a padded copy of the input. The cpu
  rewrite pads the input once and slices every tap from it; XLA:CPU then runs the pad as a
  fusion of its own (the padded input written out, then read by the sum). Here each tap's
  window is a `pad` of the unpadded input (negative where it crops) and a strided `slice`,
  each with one consumer, so XLA may fuse them into the sum's loop (it did at batch 8; at
  batch 1 it kept some pads as fusions of their own);
* rewrite_nchw: the same rewrite pinned (`lowering`), channels-first (NCHW/OIHW), without
  `cpu-layout-nhwc`: the tap sum or dot over the layout ONNX gives;
* xla, xla_nchw: XLA's own conv pinned (`lowering: "xla"`; for depthwise the native
  feature-grouped conv), channels-last and channels-first;
* floor (depthwise only; not a conv, so neither checked nor a candidate for the best form):
  the input's strided window times one per-channel vector, channels-last, one fused loop
  that reads the input and writes an output of the conv's shape. No form of the conv can do
  less, so its time is the least a StableHLO depthwise conv costs on XLA:CPU (the call, the
  loop, the memory traffic) without its multiply-adds;
* ort1 (a reference, not convc's): the same ONNX Runtime session with one intra-op thread,
  to tell ONNX Runtime's kernel from its use of the second core.

Every convc form is compiled with the cpu target's XLA options, so only the StableHLO
differs. Each output is checked against ONNX Runtime's first (max |diff| / max |ORT| at
most TOLERANCE; exit 1 otherwise). The report gives each form's median and its ratio to ONNX
Runtime's, and the best convc form per case. This is a benchmark, nothing here asserts a time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import bench, bench_models, bench_profile

TOLERANCE = 1e-4
FORMS = ("cpu", "tap_pads", "rewrite_nchw", "xla", "xla_nchw", "floor", "ort1")
KIND_FORMS = {"depthwise": FORMS, "pointwise": ("cpu", "rewrite_nchw", "xla", "xla_nchw", "ort1")}
NOT_A_CONV = ("floor",)  # timed beside the rest, neither checked nor a candidate for the best form
REFERENCES = ("ort1",)  # ONNX Runtime's, timed beside the rest, not a candidate for the best form
REWRITE = {"depthwise": "cpu-depthwise-tap-sum", "pointwise": "cpu-conv-1x1-to-dot"}
LAYOUT_PASS = "cpu-layout-nhwc"


@dataclass(frozen=True)
class DwCase:
    """One conv of the depthwise networks: `size` x `size` input, `cin` -> `cout` features,
    depthwise (groups = cin = cout) or pointwise (1x1, ungrouped), SAME padding."""

    name: str
    kind: str  # "depthwise" or "pointwise"
    batch: int
    size: int
    cin: int
    cout: int
    kernel: int = 1
    stride: int = 1

    @property
    def groups(self) -> int:
        return self.cin if self.kind == "depthwise" else 1

    @property
    def out_size(self) -> int:
        return (self.size - 1) // self.stride + 1

    def flops(self) -> float:
        return 2.0 * self.batch * self.out_size**2 * self.cout * self.kernel**2 * (self.cin // self.groups)

    def describe(self) -> str:
        stride = f" s{self.stride}" if self.stride > 1 else ""
        return f"{self.kind} {self.kernel}x{self.kernel}{stride} {self.batch}x{self.size}x{self.size}x{self.cin}->{self.cout}"

    def shrunk(self) -> DwCase:
        """--quick: a quarter of the spatial size (at least 8) and of the features."""
        cin, cout = max(4, self.cin // 4), max(4, self.cout // 4)
        return replace(self, size=max(8, self.size // 4), cin=cin, cout=cin if self.kind == "depthwise" else cout)


def _depthwise(kernel: int, stride: int, size: int, channels: int) -> DwCase:
    return DwCase(f"dw{kernel}_s{stride}_{size}x{channels}", "depthwise", 1, size, channels, channels, kernel, stride)


def _pointwise(role: str, size: int, cin: int, cout: int) -> DwCase:
    return DwCase(f"{role}_{size}x{cin}to{cout}", "pointwise", 1, size, cin, cout)


# MobileNet v2's convs at 224x224 (the depthwise ones at their input size and channels)
CASES = (
    _depthwise(3, 1, 112, 32), _depthwise(3, 2, 112, 96), _depthwise(3, 1, 56, 144), _depthwise(3, 2, 56, 144),
    _depthwise(3, 1, 28, 192), _depthwise(3, 1, 14, 576), _depthwise(3, 2, 14, 576), _depthwise(3, 1, 7, 960),
    _depthwise(5, 1, 56, 144), _depthwise(5, 2, 56, 144), _depthwise(5, 1, 14, 576), _depthwise(5, 1, 7, 960),
    _pointwise("expand", 56, 24, 144), _pointwise("project", 56, 144, 24), _pointwise("expand", 14, 96, 576),
    _pointwise("project", 14, 576, 96), _pointwise("expand", 7, 160, 960), _pointwise("project", 7, 960, 320),
)


def cases(batches: Sequence[int], quick: bool = False) -> list[DwCase]:
    """Every case at every batch (shrunk by --quick)."""
    return [replace(c.shrunk() if quick else c, batch=batch) for c in CASES for batch in batches]


# --- the implementations ----------------------------------------------------------------------


def weights(case: DwCase, seed: int = 0) -> np.ndarray:
    """The kernel, OIHW (ONNX's layout), He-normal over fan-out (output features x taps, as
    PyTorch counts it for a grouped conv too) as torchvision draws it."""
    shape = (case.cout, case.cin // case.groups, case.kernel, case.kernel)
    scale = math.sqrt(2.0 / (case.cout * case.kernel**2))
    return (np.random.default_rng(seed + 1).standard_normal(shape) * scale).astype(np.float32)


def onnx_conv(case: DwCase, w: np.ndarray) -> bytes:
    """The one-node ONNX model: Conv of x (NCHW) with the initializer W, SAME pads."""
    pad = (case.kernel - 1) // 2
    return onnx_conv_model(case.name, (case.batch, case.cin, case.size, case.size), w,
                           (case.batch, case.cout, case.out_size, case.out_size), (case.stride,) * 2, ((pad, pad),) * 2,
                           (1, 1), case.groups)


def onnx_conv_model(name: str, x_shape: Sequence[int], w: np.ndarray, y_shape: Sequence[int], strides: Sequence[int],
                    pads: Sequence[tuple[int, int]], dilations: Sequence[int], group: int) -> bytes:
    """A one-node ONNX model (opset 17): y = Conv(x, W) with `w` (OIHW, any number of spatial
    dimensions) an initializer, x and y channels-first of the given shapes, `pads` (low,
    high) per spatial dimension."""
    from onnx import TensorProto, helper, numpy_helper

    onnx_pads = [low for low, _ in pads] + [high for _, high in pads]  # ONNX: every begin, then every end
    node = helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=list(w.shape[2:]), strides=list(strides), pads=onnx_pads,
                            dilations=list(dilations), group=group)
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))], [numpy_helper.from_array(w, "W")])
    return bench_models.onnx_model_bytes(graph, 17)


def convc_graph(case: DwCase, w: np.ndarray, nchw: bool, lowering: str | None) -> Any:
    """The conv as a convc graph with a constant kernel: NCHW/OIHW or NHWC/HWIO, `lowering`
    pinned (None: the pipeline chooses)."""
    import convc

    b = convc.Builder(case.name)
    shape = (case.batch, case.cin, case.size, case.size) if nchw else (case.batch, case.size, case.size, case.cin)
    x = b.input("x", shape)
    kernel = b.constant("w", w if nchw else np.ascontiguousarray(w.transpose(2, 3, 1, 0)))
    pad = (case.kernel - 1) // 2
    layouts = ("NCHW", "OIHW", "NCHW") if nchw else ("NHWC", "HWIO", "NHWC")
    pin = {} if lowering is None else {"lowering": lowering}
    b.output(b.conv(x, kernel, window_strides=(case.stride,) * 2, padding=((pad, pad),) * 2, dimension_numbers=layouts,
                    feature_group_count=case.groups, name="y", **pin))
    return b.build()


def tap_pads_graph(case: DwCase, w: np.ndarray) -> Any:
    """The depthwise conv (NHWC) as a sum over taps of pad(x) -> strided slice, times the
    tap's per-channel weights (constants), with no padded copy of x."""
    import convc

    b = convc.Builder(case.name)
    x = b.input("x", (case.batch, case.size, case.size, case.cin))
    pad, stride, out = (case.kernel - 1) // 2, case.stride, case.out_size
    span = (out - 1) * stride + 1  # the rows (columns) one tap's strided window covers
    shape = (case.batch, out, out, case.cout)
    total = None
    for i in range(case.kernel):
        for j in range(case.kernel):
            rows, cols = (pad - i, span - case.size - pad + i), (pad - j, span - case.size - pad + j)
            shifted = b.pad(x, ((0, 0, 0), (*rows, 0), (*cols, 0), (0, 0, 0)), name=f"shift{i}_{j}")
            window = b.slice(shifted, (0, 0, 0, 0), (case.batch, span, span, case.cin), (1, stride, stride, 1), name=f"window{i}_{j}")
            scale = b.broadcast_in_dim(b.constant(f"w{i}_{j}", np.ascontiguousarray(w[:, 0, i, j])), shape=shape, broadcast_dimensions=(3,),
                                       name=f"scale{i}_{j}")
            term = b.multiply(window, scale, name=f"term{i}_{j}")
            total = term if total is None else b.add(total, term, name=f"sum{i}_{j}")
    b.output(total)
    return b.build()


def floor_graph(case: DwCase, w: np.ndarray) -> Any:
    """Not the conv: the input's strided window (NHWC, the output's shape) times the first
    tap's per-channel weights; the least work a depthwise conv's form can do."""
    import convc

    b = convc.Builder(case.name)
    x = b.input("x", (case.batch, case.size, case.size, case.cin))
    shape = (case.batch, case.out_size, case.out_size, case.cout)
    window = b.slice(x, (0, 0, 0, 0), (case.batch, case.size, case.size, case.cin), (1, case.stride, case.stride, 1), name="window")
    scale = b.broadcast_in_dim(b.constant("w", np.ascontiguousarray(w[:, 0, 0, 0])), shape=shape, broadcast_dimensions=(3,), name="scale")
    b.output(b.multiply(window, scale, name="y"))
    return b.build()


def pipeline(nchw: bool) -> str | None:
    """The cpu target's pipeline (None: its default), without the layout pass for an NCHW
    form (which would make it channels-last)."""
    from convc.passes import default_pipeline

    return ",".join(p for p in default_pipeline("cpu").split(",") if p != LAYOUT_PASS) if nchw else None


def compile_form(case: DwCase, w: np.ndarray, form: str) -> tuple[Any, str]:
    """The form's executable on the CPU (the cpu target's XLA options) and the lowering its
    conv got."""
    from convc.compile import Compiler

    nchw = form.endswith("_nchw")
    compiler = Compiler(target="cpu", pipeline=pipeline(nchw))
    if form in ("tap_pads", "floor"):
        graph = tap_pads_graph(case, w) if form == "tap_pads" else floor_graph(case, w)
        compiler.run_passes(graph)
        return compiler.executable(graph, "cpu"), "none (no conv)"
    lowering = {"cpu": None, "rewrite_nchw": REWRITE[case.kind], "xla": "xla", "xla_nchw": "xla"}[form]
    graph = convc_graph(case, w, nchw, lowering)
    counts = bench_profile.run_passes_counting(compiler, graph)
    chosen = next((name for name, n in counts.items() if n and name not in ("convs", "xla_made_by_rewrites")), "?")
    return compiler.executable(graph, "cpu"), chosen


@dataclass
class DwResult:
    name: str
    kind: str
    batch: int
    shape: str
    gflop: float
    ms: dict[str, float]  # medians, ort and every form
    best_ms: dict[str, float]
    iqr_ms: dict[str, float]
    rounds: int
    ratio_vs_ort: dict[str, float]  # each form's median over ONNX Runtime's
    best_form: str  # the fastest convc form that computes the conv (not the floor)
    lowerings: dict[str, str]  # the lowering each form's conv got
    max_error_vs_ort: dict[str, float] = field(default_factory=dict)


def run_case(case: DwCase, budget_s: float, threads: int, seed: int = 0, wanted: Sequence[str] = FORMS) -> DwResult:
    """Compile every form of the case's kind that is `wanted`, check each against ONNX
    Runtime (BenchError on a disagreement), then time them all interleaved."""
    import jax

    w = weights(case, seed)
    x = np.random.default_rng(seed).standard_normal((case.batch, case.cin, case.size, case.size)).astype(np.float32)
    session = bench_models.ort_session(onnx_conv(case, w), threads)
    reference = session.run(None, {"x": x})[0]
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    thunks: dict[str, Callable[[], Any]] = {"ort": lambda: session.run(None, {"x": x})}
    errors, lowerings = {}, {}
    forms = tuple(f for f in KIND_FORMS[case.kind] if f in wanted)
    if not forms:
        raise bench.BenchError(f"{case.name}: none of the forms {', '.join(wanted)} applies to a {case.kind} conv")
    for form in forms:
        if form == "ort1":
            thunks[form], lowerings[form] = _ort_thunk(bench_models.ort_session(onnx_conv(case, w), 1), x), "onnxruntime, 1 thread"
            continue
        executable, lowerings[form] = compile_form(case, w, form)
        nchw = form.endswith("_nchw")
        buffers = [jax.device_put(x if nchw else x_nhwc, executable.device)]
        out = np.asarray(executable.run_on_device(buffers)[0])
        thunks[form] = _timed(executable, buffers)
        if form in NOT_A_CONV:
            continue
        errors[form] = bench_models.relative_error(out if nchw else out.transpose(0, 3, 1, 2), reference)
        if not errors[form] <= TOLERANCE:
            raise bench.BenchError(f"{case.name} (batch {case.batch}): form {form}'s output differs from ONNX Runtime's "
                                   f"(max relative error {errors[form]:.2e} > {TOLERANCE:.0e})")
    samples = bench.Timer(budget_s).run(thunks)
    medians, best, iqr = bench.summarize(samples)
    ratios = {form: medians[form] / medians["ort"] for form in forms}
    convs = [form for form in forms if form not in NOT_A_CONV + REFERENCES]
    return DwResult(case.name, case.kind, case.batch, case.describe(), case.flops() / 1e9, medians, best, iqr,
                    len(samples["ort"]), ratios, min(convs or forms, key=lambda f: medians[f]), lowerings, errors)


def _ort_thunk(session: Any, x: np.ndarray) -> Callable[[], Any]:
    return lambda: session.run(None, {"x": x})


def _timed(executable: Any, buffers: list[Any]) -> Callable[[], None]:
    return lambda: bench.block_until_ready(executable.run_on_device(buffers))


# --- the suite -------------------------------------------------------------------------------


def format_table(results: Sequence[DwResult]) -> str:
    head = (f"{'case':<22} {'b':>2} {'ORT ms':>8} " + " ".join(f"{f + ' ms':>15}" for f in FORMS)
            + f" {'cpu/ORT':>8} {'best/ORT':>9} {'best':<13} {'cpu lowering':<22}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.name:<22} {r.batch:>2} {r.ms['ort']:8.3f} " + " ".join(f"{r.ms[f]:15.3f}" if f in r.ms else f"{'-':>15}" for f in FORMS)
                     + f" {_ratio(r, 'cpu'):>8} {r.ratio_vs_ort[r.best_form]:9.2f} {r.best_form:<13} {r.lowerings.get('cpu', '-'):<22}")
    lines.append("-" * len(head))
    for kind in ("depthwise", "pointwise"):
        for batch in sorted({r.batch for r in results}):
            chosen = [r for r in results if r.kind == kind and r.batch == batch]
            if chosen:
                lines.append(f"geometric mean, {kind} batch {batch}: " + "   ".join(
                    f"{f}/ORT {bench.geomean([r.ratio_vs_ort[f] for r in chosen]):.2f}" for f in KIND_FORMS[kind]
                    if all(f in r.ratio_vs_ort for r in chosen))
                    + f"   best/ORT {bench.geomean([r.ratio_vs_ort[r.best_form] for r in chosen]):.2f}")
    return "\n".join(lines)


def _ratio(result: DwResult, form: str) -> str:
    return f"{result.ratio_vs_ort[form]:.2f}" if form in result.ratio_vs_ort else "-"


def wanted_forms(text: str | None) -> tuple[str, ...]:
    """--forms: the named forms (BenchError for a name that is not one); None: all."""
    if not text:
        return FORMS
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in FORMS]
    if unknown or not names:
        named = ", ".join(unknown) if unknown else repr(text)
        raise bench.BenchError(f"--forms: unknown form(s) {named}; the forms are {', '.join(FORMS)}")
    return names


def run_dw_limit_suite(args: Any, info: dict[str, Any], target: str, budget: float, log: Callable[[str], None]) -> dict[str, Any]:
    """--suite dw-limit's report (cpu platform and target only)."""
    if args.platform != "cpu" or target != "cpu":
        raise bench.BenchError(f"--suite dw-limit measures the cpu target's forms on the CPU (got --platform {args.platform}, "
                               f"--target {target})")
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as err:
        raise bench.BenchError(f"--suite dw-limit needs onnx and onnxruntime (pip install 'convc[onnx]'): {err}") from None
    forms = wanted_forms(getattr(args, "forms", None))
    threads = os.cpu_count() or 1
    info["onnxruntime"], info["threads"] = onnxruntime.__version__, threads
    peak = None if args.no_peak else bench.sgemm_peak_gflops(512 if args.quick else 2048, pjrt_platform="cpu")
    log(f"XLA and ONNX Runtime on {threads} intra-op threads; load {info['load_average'][0]:.2f}"
        + (f"; sgemm peak {peak:.0f} GFLOP/s (XLA, the machine's speed this run)" if peak else ""))
    results = []
    for case in bench.selected_cases(args):
        if not set(KIND_FORMS[case.kind]) & set(forms):
            log(f"  {case.name} batch {case.batch}: skipped, no {case.kind} form among --forms {','.join(forms)}")
            continue
        result = run_case(case, budget, threads, wanted=forms)
        log(f"  {case.name} batch {case.batch}: ORT {result.ms['ort']:.3f} ms, "
            + ", ".join(f"{f} {result.ms[f]:.3f}" for f in KIND_FORMS[case.kind] if f in result.ms) + f" ({result.rounds} rounds)")
        results.append(result)
    info["load_average_after"] = list(os.getloadavg())
    return {
        "machine": info, "suite": "dw-limit", "platform": "cpu", "target": "cpu", "quick": args.quick, "budget_s": budget,
        "batches": list(args.batch), "tolerance": TOLERANCE, "forms": list(forms), "sgemm_peak_gflops": peak,
        "cases": [vars(r) for r in results],
        "table": (format_table(results) + (f"\nsgemm peak this run: {peak:.0f} GFLOP/s" if peak else "")) if results else "",
    }
