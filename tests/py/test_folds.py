"""`fold-constants` and `fold-conv-affine` on convs followed by an inference-form
BatchNormalization (multiply by a broadcast per-channel scale, bias_add of a shift), as the
ONNX importer writes it: the folded graph, compiled by PJRT (XLA CPU), against the jax.lax
oracle of the unfolded graph (`convc.reference.evaluate`), in f32 and f64, for plain,
grouped and depthwise convs and transposed convs (whose reversed kernel fold-constants
turns into a constant first). Every case also checks that the folds fired: no multiply and
no reverse is left. With the kernel as a graph input (`--grad` over the weights) nothing
may be folded, and the gradient step still matches `jax.vjp` of the oracle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import convc
import numpy as np
import pytest
from convc.passes import default_pipeline
from convc.reference import evaluate, evaluate_vjp

RunStablehlo = Callable[..., list[np.ndarray]]

CANONICAL = default_pipeline("generic")
FOLDED = CANONICAL.replace("resolve-padding,", "resolve-padding,fold-constants,fold-conv-affine,")
AFFINE_ONLY = CANONICAL.replace("resolve-padding,", "resolve-padding,fold-conv-affine,")


@dataclass(frozen=True)
class Case:
    """A conv (or transposed conv) of `groups` groups, optionally with a bias, then BN."""

    name: str
    layouts: tuple[str, str, str]
    in_features: int
    out_features: int
    groups: int = 1
    bias: bool = False
    transposed: bool = False
    strides: tuple[int, int] = (1, 1)

    def graph(self, dtype: str, rng: np.random.Generator, kernel_as_input: bool = False) -> convc.Graph:
        np_dtype = np.dtype(dtype.replace("f", "float"))
        lhs, rhs, _ = self.layouts
        sizes = {"N": 2, "C": self.in_features, "H": 6, "W": 5}
        kernel = {"O": self.out_features, "I": self.in_features // self.groups, "H": 3, "W": 3}
        if self.transposed:  # transpose_kernel: the forward conv's kernel, O and I traded
            kernel = {"O": self.in_features, "I": self.out_features // self.groups, "H": 3, "W": 3}
        b = convc.Builder(self.name)
        x = b.input("x", tuple(sizes[c] for c in lhs), dtype)
        w_value = rng.standard_normal(tuple(kernel[c] for c in rhs)).astype(np_dtype)
        w = b.input("w", w_value.shape, dtype) if kernel_as_input else b.constant("w", w_value)
        if self.transposed:
            y = b.conv_transpose(x, w, strides=self.strides, padding="SAME", dimension_numbers=self.layouts,
                                 feature_group_count=self.groups, transpose_kernel=True)
        else:
            y = b.conv(x, w, window_strides=self.strides, padding="SAME", dimension_numbers=self.layouts,
                       feature_group_count=self.groups)
        axis = self.layouts[2].index("C")
        channels = self.out_features
        if self.bias:
            y = b.bias_add(y, b.constant("b", rng.standard_normal(channels).astype(np_dtype)), axis=axis)
        scale = b.constant("scale", rng.uniform(0.5, 2.0, channels).astype(np_dtype))
        spread = b.op("broadcast_in_dim", scale, shape=y.type.shape, broadcast_dimensions=(axis,))
        y = b.multiply(y, spread)
        y = b.bias_add(y, b.constant("shift", rng.standard_normal(channels).astype(np_dtype)), axis=axis)
        b.output(b.relu(y))
        return b.build()


CASES = [
    Case("nchw_bias", ("NCHW", "OIHW", "NCHW"), 3, 4, bias=True),
    Case("nhwc_strided", ("NHWC", "HWIO", "NHWC"), 3, 5, strides=(2, 1)),
    Case("grouped", ("NCHW", "OIHW", "NCHW"), 4, 6, groups=2, bias=True),
    Case("depthwise", ("NHWC", "HWIO", "NHWC"), 4, 4, groups=4),
    Case("transposed", ("NHWC", "HWIO", "NHWC"), 3, 4, transposed=True, strides=(2, 2)),
    Case("transposed_nchw_bias", ("NCHW", "OIHW", "NCHW"), 4, 2, bias=True, transposed=True, strides=(2, 1)),
    Case("transposed_grouped", ("NCHW", "OIHW", "NCHW"), 4, 6, groups=2, transposed=True, strides=(2, 2)),
]

TOLERANCE = {"f32": 2e-5, "f64": 1e-12}  # max |folded - oracle| / max |oracle|


def _kinds_after(graph: convc.Graph, pipeline: str) -> list[str]:
    from convc.compile import Compiler

    return [op.kind for op in Compiler(pipeline=pipeline).run_passes(graph.clone()).ops]


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


@pytest.mark.parametrize("pipeline", ["both", "affine"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_folded_batchnorm_matches_oracle_of_unfolded_graph(case: Case, dtype: str, pipeline: str, rng: np.random.Generator,
                                                           run_stablehlo: RunStablehlo) -> None:
    """The folds remove the BN multiply (with fold-constants first, a transposed conv's
    kernel relayouts too; without it, fold-conv-affine scales the constant under the
    reverse, and leaves a grouped transposed conv, whose kernel is reshaped, alone) and the
    PJRT result of the folded graph equals the oracle's value of the graph as built."""
    graph = case.graph(dtype, rng)
    text = FOLDED if pipeline == "both" else AFFINE_ONLY
    kinds = _kinds_after(graph, text)
    if pipeline == "affine" and case.transposed and case.groups > 1:
        assert "multiply" in kinds and "reshape" in kinds, kinds
    else:
        assert "multiply" not in kinds, kinds
        assert kinds.count("reverse") == (1 if case.transposed and pipeline == "affine" else 0), kinds
        assert kinds.count("bias_add") == 1, kinds  # the conv's bias and the shift, merged
    x = rng.standard_normal(graph.inputs[0].type.shape).astype(np.dtype(dtype.replace("f", "float")))
    (want,) = evaluate(graph, [x])
    (got,) = run_stablehlo(convc.compile_graph(graph, pipeline=text), [x], platform="cpu")
    assert got.dtype == want.dtype
    assert _relative_error(got, want) <= TOLERANCE[dtype]


@pytest.mark.parametrize("case", [CASES[0], CASES[4]], ids=lambda c: c.name)
def test_cpu_pipeline_folds_and_matches_oracle(case: Case, rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """The cpu target's default pipeline holds the folds (no BN multiply is left) and its
    module equals the oracle of the graph as built."""
    graph = case.graph("f32", rng)
    assert "multiply" not in _kinds_after(graph, default_pipeline("cpu"))
    x = rng.standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    (want,) = evaluate(graph, [x])
    (got,) = run_stablehlo(convc.compile_graph(graph, target="cpu"), [x], platform="cpu")
    assert _relative_error(got, want) <= TOLERANCE["f32"]


@pytest.mark.parametrize("case", [CASES[0], CASES[4]], ids=lambda c: c.name)
def test_kernel_as_gradient_input_is_not_folded(case: Case, rng: np.random.Generator, run_stablehlo: RunStablehlo) -> None:
    """The gradient step with respect to the kernel, a graph input: the BN multiply stays
    (the kernel is no constant) and the step's outputs and kernel gradient equal jax.vjp
    of the oracle."""
    graph = case.graph("f64", rng, kernel_as_input=True)
    step = convc.grad(graph, ["w"])
    from convc.compile import Compiler

    folded = Compiler(pipeline=FOLDED).run_passes(step.clone())
    assert "multiply" in [op.kind for op in folded.ops]
    assert not [op.name for op in folded.ops if "kernel_scaled" in op.name]
    inputs = [rng.standard_normal(v.type.shape) for v in step.inputs]
    want = evaluate_vjp(graph, ["w"], inputs)
    got = run_stablehlo(convc.compile_graph(step, pipeline=FOLDED), inputs, platform="cpu")
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert _relative_error(g, w) <= TOLERANCE["f64"]


def test_imported_onnx_conv_batchnorm_is_folded_and_agrees_with_onnxruntime(rng: np.random.Generator,
                                                                            run_stablehlo: RunStablehlo) -> None:
    """An ONNX Conv (with B) then BatchNormalization, as load_onnx imports them: the cpu
    target's pipeline leaves one conv and one bias_add (between the layout's two transposes),
    and its result equals ONNX Runtime's."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper
    from onnx_files import make_model

    weights = {"w": rng.standard_normal((6, 3, 3, 3)), "b": rng.standard_normal(6), "gamma": rng.uniform(0.5, 2, 6),
               "beta": rng.standard_normal(6), "mean": rng.standard_normal(6), "var": rng.uniform(0.5, 2, 6)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 1]),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"], epsilon=1e-3)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 4, 7])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    model = make_model(graph, 17).SerializeToString()
    imported = convc.load_onnx(model)
    # and cpu-layout-nhwc's transposes of the NCHW input and output
    assert sorted(_kinds_after(imported, default_pipeline("cpu"))) == ["bias_add", "constant", "constant", "conv", "transpose", "transpose"]
    x = rng.standard_normal((2, 3, 8, 7)).astype(np.float32)
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (got,) = run_stablehlo(convc.compile_graph(imported, target="cpu"), [x], platform="cpu")
    assert _relative_error(got, want) <= 1e-5
