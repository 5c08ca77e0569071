"""The XLA options convc's own runs compile a target's module with (compile.TARGET_XLA_OPTIONS):
which compiles get them, and what they do to XLA:CPU's executable."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from convc import Builder, compile
from convc.compile import (
    GRADIENT_DOTS_FROM_BATCH,
    GRADIENT_XLA_OPTIONS,
    INTEGER_CONV_XLA_OPTIONS,
    TARGET_XLA_OPTIONS,
    WITHOUT_AVX512_PASS_OPTIONS,
    WITHOUT_AVX512_XLA_OPTIONS,
    Compiler,
    host_has_avx512,
)
from convc.ir import Graph
from convc.runtime import compile_stablehlo

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def avx512_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The option rules as on a host whose CPU has AVX-512 (whatever this one has)."""
    monkeypatch.setattr(compile, "host_has_avx512", lambda: True)


def _ynnpack_fusion_bodies(hlo: str) -> list[str]:
    """The computations XLA:CPU hands YNNPACK as fusions (`__ynn_fusion`), as HLO text."""
    called = re.findall(r"fusion\([^\n]*calls=(%[\w.]+)[^\n]*__ynn_fusion", hlo)
    return [re.search(rf"^{re.escape(name)} [^\n]*\{{\n(.*?)\n\}}", hlo, re.S | re.M).group(1) for name in called]  # type: ignore[union-attr]


def test_cpu_target_runs_keep_convs_out_of_ynnpack_fusions(rng: np.random.Generator) -> None:
    """Compiled with the cpu target's options, no YNNPACK fusion of resnet_block's executable holds
    a convolution (its dots may stay YNNPACK's), and the outputs equal those of XLA's defaults
    to f32 rounding."""
    compiler = Compiler(target="cpu")
    graph = compiler.load(str(REPO_ROOT / "examples" / "resnet_block.json"))
    compiler.run_passes(graph)
    module = compiler.runnable(graph)
    ours, default = compile_stablehlo(module, "cpu", compiler.xla_options("cpu")), compile_stablehlo(module, "cpu")
    assert "convolution(" in ours.hlo_text()
    assert not [body for body in _ynnpack_fusion_bodies(ours.hlo_text()) if "convolution(" in body]
    x = rng.standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    (got,), (want,) = ours(x), default(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def test_xla_options_apply_to_the_targets_own_platform_only(avx512_host: None) -> None:
    """A target's options go with its platform's compiles: not with another platform's, not
    with the generic target's, and not with a -p pipeline that names no target."""
    assert Compiler(target="cpu").xla_options("cpu") == TARGET_XLA_OPTIONS["cpu"]
    assert Compiler(target="cpu").xla_options("gpu") == {}
    assert Compiler(target="generic").xla_options("cpu") == {}
    assert Compiler(pipeline="dce").xla_options("cpu") == {}
    assert Compiler(target="cpu", pipeline="dce").xla_options("cpu") == TARGET_XLA_OPTIONS["cpu"]


def _quantized_conv_graph(window: int = 3) -> Graph:
    """An NHWC quantized conv with a constant per-tensor kernel, as an ONNX QDQ import has it
    (window 1: a pointwise conv, which the cpu pipeline makes an i8 dot)."""
    b = Builder("qconv")
    x = b.input("x", (1, 8, 8, 32), "!quant.uniform<i8:f32, 0.5:-3>")  # more than 16 features: an i8 conv
    kernel = np.random.default_rng(0).integers(-127, 128, (window, window, 32, 32)).astype(np.float32) * np.float32(0.25)
    w = b.uniform_quantize(b.constant("w_real", kernel), name="w", new_dtype="!quant.uniform<i8:f32, 0.25>")
    b.output(b.conv(x, w, name="c", dimension_numbers=("NHWC", "HWIO", "NHWC"), padding="SAME",
                    preferred_element_type="!quant.uniform<i8:f32, 16.0:2>"))
    return b.build()


def test_a_module_with_integer_convs_hands_ynnpack_its_convs() -> None:
    """A cpu module holding an integer conv (a lowered quantized one) compiles with
    INTEGER_CONV_XLA_OPTIONS: its i8 conv is a YNNPACK fusion of i8 operands (with the
    dots-only option XLA upcasts it to an i32 conv in its generic loop), and both executables
    agree with the spec oracle on every element."""
    from convc.reference import evaluate

    compiler = Compiler(target="cpu")
    graph = compiler.run_passes(_quantized_conv_graph())
    assert compiler.xla_options("cpu", graph) == INTEGER_CONV_XLA_OPTIONS["cpu"]
    executable = compiler.executable(graph, "cpu")
    assert [body for body in _ynnpack_fusion_bodies(executable.hlo_text()) if re.search(r"convolution\(s8\[", body)
            or re.search(r"s32\[[^\n]*convolution\(%\S+, %\S+\)", body)]
    dots_only = compile_stablehlo(compiler.runnable(graph), "cpu", TARGET_XLA_OPTIONS["cpu"])
    assert not _ynnpack_fusion_bodies(dots_only.hlo_text())
    x = np.random.default_rng(1).integers(-128, 128, (1, 8, 8, 32)).astype(np.int8)
    want = evaluate(_quantized_conv_graph(), [x])[0]
    for ran in (executable, dots_only):
        np.testing.assert_array_equal(ran(x)[0], want)


def test_float_modules_keep_the_dots_only_option_on_an_avx512_host(avx512_host: None) -> None:
    """On a host with AVX-512, a module without integer convs keeps TARGET_XLA_OPTIONS (float
    convs measured faster outside YNNPACK's fusions)."""
    compiler = Compiler(target="cpu")
    graph = compiler.run_passes(compiler.load(str(REPO_ROOT / "examples" / "resnet_block.json")))
    assert compiler.xla_options("cpu", graph) == TARGET_XLA_OPTIONS["cpu"]


def test_a_gradient_step_at_batch_one_compiles_with_xla_defaults(avx512_host: None) -> None:
    """A module computing kernel gradients over a batch of 1 (convc.grad of resnet_block's weights)
    gets GRADIENT_XLA_OPTIONS (XLA's defaults, whose YNNPACK convs ran small-batch kernel gradients
    faster), its forward alone the target's; both steps compute the same to f32 rounding."""
    import convc

    compiler = Compiler(target="cpu")
    forward = compiler.load(str(REPO_ROOT / "examples" / "resnet_block.json"))
    step = compiler.run_passes(convc.grad(forward, ["w1", "w2", "wp"]))
    assert compiler.gradient_step and compiler.gradient_batch == 1 < GRADIENT_DOTS_FROM_BATCH
    assert compiler.xla_options("cpu", step) == GRADIENT_XLA_OPTIONS["cpu"] == {}
    assert Compiler(target="cpu").xla_options("cpu", forward) == TARGET_XLA_OPTIONS["cpu"]
    module = compiler.runnable(step)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(v.type.shape).astype(np.float32) for v in step.inputs]
    ours, dots_only = compiler.executable(step, "cpu"), compile_stablehlo(module, "cpu", TARGET_XLA_OPTIONS["cpu"])
    for got, want in zip(ours(*arrays), dots_only(*arrays), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _conv_relu(batch: int, depthwise: bool = False) -> Graph:
    """relu(conv(x, w)) over an NHWC batch (8 channels, depthwise or to 16): its gradient step's
    kernel gradient contracts `batch`."""
    b = Builder("conv_relu")
    x, w = b.input("x", (batch, 12, 12, 8)), b.input("w", (3, 3, 1, 8) if depthwise else (3, 3, 8, 16))
    b.output(b.relu(b.conv(x, w, padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=8 if depthwise else 1)))
    return b.build()


def test_a_gradient_step_from_batch_eight_keeps_the_targets_options(rng: np.random.Generator) -> None:
    """A kernel gradient contracting a batch of GRADIENT_DOTS_FROM_BATCH (8) or more gets the
    target's options (Eigen's conv ran such kernel gradients faster than YNNPACK's), one below it,
    or a depthwise one at any batch (a tap sum, faster with them), XLA's defaults; the batch-8
    step's gradient equals jax.vjp's at HIGHEST precision."""
    import convc
    import jax
    from jax import lax

    assert GRADIENT_DOTS_FROM_BATCH == 8
    below = Compiler(target="cpu")
    below.run_passes(convc.grad(_conv_relu(7), ["w"]))
    assert below.gradient_batch == 7 and below.xla_options("cpu") == GRADIENT_XLA_OPTIONS["cpu"]
    depthwise = Compiler(target="cpu")
    depthwise.run_passes(convc.grad(_conv_relu(8, depthwise=True), ["w"]))
    assert depthwise.gradient_step and depthwise.gradient_batch is None and depthwise.xla_options("cpu") == GRADIENT_XLA_OPTIONS["cpu"]
    compiler = Compiler(target="cpu")
    step = compiler.run_passes(convc.grad(_conv_relu(8), ["w"]))
    assert compiler.gradient_batch == 8 and compiler.xla_options("cpu", step) == TARGET_XLA_OPTIONS["cpu"]
    x, w, dy = (rng.standard_normal(shape).astype(np.float32) for shape in ((8, 12, 12, 8), (3, 3, 8, 16), (8, 12, 12, 16)))

    def forward(x: jax.Array, w: jax.Array) -> jax.Array:
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     precision=lax.Precision.HIGHEST)
        return jax.numpy.maximum(y, 0)

    want_y, vjp = jax.vjp(forward, x, w)
    got_y, got_dw = compiler.executable(step, "cpu")(x, w, dy)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-5 * float(np.abs(want_y).max()))
    want_dw = vjp(dy)[1]
    np.testing.assert_allclose(got_dw, want_dw, rtol=1e-4, atol=1e-4 * float(np.abs(want_dw).max()))


def test_cpu_modules_ask_for_wide_vectors_and_a_quantized_conv_keeps_every_integer() -> None:
    """The cpu target's forward modules, float and integer, ask XLA:CPU to prefer 512-bit vectors in its own loops
    (small-batch gradient steps keep XLA's defaults); the requantizing loops of a quantized conv give the same stored integers
    as with XLA's preferred 256 bits, both equal to the spec oracle's."""
    from convc.compile import WIDE_VECTORS
    from convc.reference import evaluate

    assert WIDE_VECTORS.items() <= TARGET_XLA_OPTIONS["cpu"].items() and WIDE_VECTORS.items() <= INTEGER_CONV_XLA_OPTIONS["cpu"].items()
    assert not WIDE_VECTORS.keys() & GRADIENT_XLA_OPTIONS["cpu"].keys()
    compiler = Compiler(target="cpu")
    graph = compiler.run_passes(_quantized_conv_graph())
    narrow = {name: value for name, value in INTEGER_CONV_XLA_OPTIONS["cpu"].items() if name not in WIDE_VECTORS}
    x = np.random.default_rng(2).integers(-128, 128, (1, 8, 8, 32)).astype(np.int8)
    want = evaluate(_quantized_conv_graph(), [x])[0]
    for options in (INTEGER_CONV_XLA_OPTIONS["cpu"], narrow):
        np.testing.assert_array_equal(compile_stablehlo(compiler.runnable(graph), "cpu", options)(x)[0], want)


@pytest.mark.parametrize("avx512", [True, False, None], ids=["avx512", "no-avx512", "unknown-cpu"])
def test_forward_modules_hand_ynnpack_nothing_only_on_a_host_without_avx512(avx512: bool | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forward float module gets WITHOUT_AVX512_XLA_OPTIONS (no YNNPACK fusion) exactly where
    the host is known to lack AVX-512, TARGET_XLA_OPTIONS where it has it or cannot tell; a
    gradient step from batch 8 and an integer conv keep their own options on any host, and a
    module whose integer products are dots (a quantized pointwise conv) gets the target's,
    whose YNNPACK runs its i8 dots."""
    import convc

    monkeypatch.setattr(compile, "host_has_avx512", lambda: avx512)
    compiler = Compiler(target="cpu")
    forward = compiler.run_passes(compiler.load(str(REPO_ROOT / "examples" / "resnet_block.json")))
    want = WITHOUT_AVX512_XLA_OPTIONS if avx512 is False else TARGET_XLA_OPTIONS
    assert compiler.xla_options("cpu", forward) == want["cpu"]
    assert Compiler(target="cpu").xla_options("gpu", forward) == {}
    step_compiler = Compiler(target="cpu")
    step = step_compiler.run_passes(convc.grad(_conv_relu(8), ["w"]))
    assert step_compiler.xla_options("cpu", step) == TARGET_XLA_OPTIONS["cpu"]
    integer = Compiler(target="cpu")
    assert integer.xla_options("cpu", integer.run_passes(_quantized_conv_graph())) == INTEGER_CONV_XLA_OPTIONS["cpu"]
    pointwise = Compiler(target="cpu")
    lowered = pointwise.run_passes(_quantized_conv_graph(window=1))
    assert [op.operands[0].type.dtype for op in lowered.ops if op.kind in ("conv", "dot_general")] == ["i8"]
    assert pointwise.xla_options("cpu", lowered) == TARGET_XLA_OPTIONS["cpu"]


def test_without_avx512_options_leave_ynnpack_no_fusion_and_compute_the_same(rng: np.random.Generator) -> None:
    """resnet_block compiled with WITHOUT_AVX512_XLA_OPTIONS has no YNNPACK fusion at all (its
    dots and convs are XLA's), and its outputs equal those under the target's options to f32
    rounding."""
    compiler = Compiler(target="cpu")
    graph = compiler.run_passes(compiler.load(str(REPO_ROOT / "examples" / "resnet_block.json")))
    module = compiler.runnable(graph)
    without, target = (compile_stablehlo(module, "cpu", table["cpu"]) for table in (WITHOUT_AVX512_XLA_OPTIONS, TARGET_XLA_OPTIONS))
    assert "__ynn_fusion" not in without.hlo_text() and "__ynn_fusion" in target.hlo_text()
    x = rng.standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    (got,), (want,) = without(x), target(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def _growth_conv() -> Graph:
    """A DenseNet growth conv: 3x3, 128 -> 32 features, NHWC, its kernel a constant (imported)."""
    b = Builder("growth")
    x = b.input("x", (1, 8, 8, 128))
    w = b.constant("w", np.random.default_rng(0).standard_normal((3, 3, 128, 32)).astype(np.float32))
    b.output(b.conv(x, w, name="c", padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    return b.build()


def _winograd_min_features(compiler: Compiler) -> int:
    (winograd,) = [p for p in compiler.passes() if p.name == "cpu-conv-winograd"]
    return int(winograd.min_features)  # type: ignore[attr-defined]


@pytest.mark.parametrize("avx512", [True, False, None], ids=["avx512", "no-avx512", "unknown-cpu"])
def test_winograd_takes_32_features_only_where_forward_dots_are_eigens(avx512: bool | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cpu target's default pipeline runs cpu-conv-winograd with WITHOUT_AVX512_PASS_OPTIONS
    (min_features=32) exactly where its forward modules get WITHOUT_AVX512_XLA_OPTIONS: on a
    host known to lack AVX-512, and not for a gradient step or a -p pipeline;
    so a 128 -> 32 growth conv with a constant kernel leaves the pipeline as a conv only where
    the host has AVX-512 or cannot tell."""
    monkeypatch.setattr(compile, "host_has_avx512", lambda: avx512)
    tuned = WITHOUT_AVX512_PASS_OPTIONS["cpu-conv-winograd"]["min_features"]
    assert _winograd_min_features(Compiler(target="cpu")) == (tuned if avx512 is False else 128)
    step = Compiler(target="cpu")
    step.gradient_step = True
    assert _winograd_min_features(step) == 128
    assert _winograd_min_features(Compiler(target="cpu", pipeline="cpu-conv-winograd")) == 128
    compiler = Compiler(target="cpu")
    kinds = [op.kind for op in compiler.run_passes(_growth_conv()).ops]
    assert ("conv" in kinds) == (avx512 is not False)


def test_host_has_avx512_is_the_avx512f_flag_of_proc_cpuinfo() -> None:
    """On Linux x86 the answer is whether the `flags` line of /proc/cpuinfo lists avx512f;
    elsewhere (no such file or line) it is None."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    flags = [line.split(":", 1)[1].split() for line in lines if line.startswith("flags")]
    assert host_has_avx512() == (("avx512f" in flags[0]) if flags else None)
