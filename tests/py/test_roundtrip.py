"""convc text round trips exactly, MLIR's own parser reads it, emitted StableHLO is
byte-for-byte deterministic (also across processes), and --emit=bytecode is a
StableHLO portable artifact that deserializes to the same computation."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from convc import Builder, ConvcError, Graph, compile_graph, load_model, mlir, parse_ir, print_graph
from convc.cli import main as convc_main
from convc.compile import Compiler
from convc.ops import OPS
from convc.runtime import compile_stablehlo
from jaxlib.mlir.dialects import stablehlo

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO_ROOT / "examples").glob("*.json"))


def awkward_names() -> Graph:
    """Names MLIR cannot use as SSA ids, names that collide with the printer's fallbacks, large and
    small constants, negative pads, both precision spellings, -inf padding."""
    b = Builder("weird model-name: ψ")
    x = b.input("x/in", (1, 3, 6, 5), "f32")
    w = b.constant("3", np.arange(36, dtype=np.float32).reshape(2, 3, 3, 2) / 7)
    y = b.conv(x, w, window_strides=(1, 2), padding=((-1, 2), (1, 0)), precision=("DEFAULT", "HIGHEST"),
               preferred_element_type="f32", name="conv 1")
    y = b.relu(y, name="v")
    y = b.relu(y, name="v_1")
    y = b.bias_add(y, b.constant("%bias", np.array([0.5, -0.25], np.float32)), axis=1, name='q"uote\\back')
    y = b.pad(y, [(0, 0, 0), (0, 0, 0), (1, -1, 1), (-1, 2, 0)], padding_value=float("-inf"), name="tab\tname")
    y = b.multiply(y, y, name="new\nline")
    b.output(y, b.relu(x, name="second output"))
    return b.build()


def half_precision() -> Graph:
    """f16/bf16 values and constants (inline, splat and hex), grouped and dilated convs, layouts."""
    b = Builder("halves")
    x = b.input("x", (2, 5, 5, 4), "bf16")
    w = b.constant("w", (np.arange(72).reshape(3, 3, 2, 4) % 7 - 3).astype(ml_dtypes.bfloat16))
    y = b.conv(x, w, padding="SAME_LOWER", lhs_dilation=(2, 1), rhs_dilation=(1, 2), feature_group_count=2,
               dimension_numbers=("NHWC", "HWIO", "NHWC"), precision="HIGHEST", preferred_element_type="f32", name="grouped")
    y = b.convert(y, "f16", name="to_f16")
    bias = b.constant("bias", np.full((4,), 0.125, np.float16))
    y = b.bias_add(y, bias, name="biased")
    small = b.constant("small", np.array([[1.5, -2.0], [np.inf, 0.0]], np.float16))
    b.output(y, small, b.constant("one", np.array(1, ml_dtypes.bfloat16)))
    return b.build()


def integer_and_layout_ops() -> Graph:
    """Every plain op, integer and f64 constants, batch groups, a NaN pad value."""
    b = Builder("plain_ops")
    x = b.input("x", (4, 3, 6), "f32")
    w = b.input("w", (4, 3, 2), "f32")
    y = b.conv(x, w, window_strides=(2,), padding="SAME", batch_group_count=2, dimension_numbers=("NCW", "OIW", "NWC"))
    i = b.constant("i", np.array([[-128, 0, 127]], np.int8))
    j = b.constant("j", np.arange(-40, 40, 4, dtype=np.int32).reshape(4, 5))
    k = b.constant("k", np.linspace(0, 1, 20).reshape(4, 5))
    z = b.reshape(b.transpose(y, (2, 0, 1)), (4, 6))
    z = b.concatenate([b.slice(z, (0, 1), (4, 6), (1, 2)), b.reverse(b.convert(j, "f32"), (0, 1))], 1)
    z = b.add(z, z)
    b.output(z, i, b.convert(k, "f32"))
    return b.build()


def transposed_conv_flags() -> Graph:
    """conv_transpose carries the boolean attributes (its numbers are tested elsewhere)."""
    b = Builder("bools")
    x = b.input("x", (1, 4, 3), "f32")
    w = b.input("w", (3, 2, 3), "f32")
    b.output(b.conv_transpose(x, w, strides=(2,), padding="SAME", dimension_numbers=("NWC", "WIO", "NWC"),
                              transpose_kernel=True, name="up"))
    return b.build()


def nan_padding() -> Graph:
    b = Builder("nan_pad")
    x = b.input("x", (2, 3), "f64")
    b.output(b.pad(x, [(1, 0, 1), (0, -1, 0)], padding_value=float("nan")))
    return b.build()


def pinned_lowering() -> Graph:
    """A conv's `lowering` pin: a string attribute, kept by the generic pipeline."""
    b = Builder("pinned")
    x, w = b.input("x", (1, 4, 4, 2), "f32"), b.input("w", (3, 3, 1, 2), "f32")
    b.output(b.op("conv", x, w, feature_group_count=2, dimension_numbers=("NHWC", "HWIO", "NHWC"), lowering="cpu-depthwise-tap-sum"))
    return b.build()


GRAPHS: dict[str, Callable[[], Graph]] = {
    "awkward_names": awkward_names, "half_precision": half_precision, "integer_and_layout_ops": integer_and_layout_ops,
    "transposed_conv_flags": transposed_conv_flags, "nan_padding": nan_padding, "pinned_lowering": pinned_lowering,
    **{f"example_{path.stem}": functools.partial(load_model, path) for path in EXAMPLES},
}


def after_default_pipeline(graph: Graph) -> Graph:
    return Compiler(target="generic").run_passes(graph.clone())


STAGES: dict[str, Callable[[Graph], Graph]] = {"built": lambda graph: graph, "after_default_pipeline": after_default_pipeline}


@pytest.fixture(params=list(GRAPHS), name="graph_name")
def graph_name_fixture(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=list(STAGES), name="stage")
def stage_fixture(request: pytest.FixtureRequest) -> str:
    return request.param


def test_print_parse_print_is_the_identity(graph_name: str, stage: str) -> None:
    graph = STAGES[stage](GRAPHS[graph_name]())
    text = print_graph(graph)
    reparsed = parse_ir(text, f"{graph_name}.mlir")
    assert print_graph(reparsed) == text
    assert_same_graph(reparsed, graph)


def assert_same_graph(got: Graph, want: Graph) -> None:
    """Beyond equal text: the names (which become node names) and the attribute values survive."""
    assert got.name == want.name
    assert [(v.name, v.type) for v in got.values()] == [(v.name, v.type) for v in want.values()]
    assert [v.name for v in got.outputs] == [v.name for v in want.outputs]
    for got_op, want_op in zip(got.ops, want.ops, strict=True):
        assert got_op.kind == want_op.kind and set(got_op.attrs) == set(want_op.attrs)
        for key, value in want_op.attrs.items():
            assert_same_attr(got_op.attrs[key], value)


def assert_same_attr(got: Any, want: Any) -> None:
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()  # bit for bit: -0.0, inf, NaN payloads
    elif isinstance(want, float):
        assert got == want or (np.isnan(got) and np.isnan(want))
    else:
        assert got == want


def test_elided_constants_print_short_and_do_not_read_back() -> None:
    """As mlir-opt --mlir-elide-elementsattrs-if-larger: constants of more elements than the
    limit print as dense_resource<__elided__> (splats stay, they are short); the parser
    refuses that text at the constant, since its value is gone."""
    b = Builder("weights")
    x = b.input("x", (4, 4))
    ramp = b.add(x, b.constant("ramp", np.arange(16, dtype=np.float32).reshape(4, 4)))
    b.output(b.add(ramp, b.constant("ones", np.ones((4, 4), np.float32))))
    graph = b.build()
    whole, elided = print_graph(graph), print_graph(graph, elide_larger=15)
    assert print_graph(graph, elide_larger=16) == whole
    ramp_line = next(n for n, line in enumerate(elided.splitlines(), start=1) if "%ramp" in line)
    assert elided.splitlines()[ramp_line - 1].split("{")[1].startswith("value = dense_resource<__elided__> : tensor<4x4xf32>}")
    assert "dense<1.0> : tensor<4x4xf32>" in elided
    with pytest.raises(ConvcError) as caught:
        parse_ir(elided, "elided.mlir")
    assert caught.value.loc.line == ramp_line
    assert "was elided when the IR was printed" in str(caught.value) and "--print-constants-whole" in str(caught.value)
    assert print_graph(parse_ir(whole)) == whole


def test_convc_elides_printed_constants_unless_asked_to_print_them_whole(tmp_path: Path, capsys: Any) -> None:
    model = EXAMPLES[0]
    assert convc_main([str(model), "--target", "generic", "--emit", "convc"]) == 0
    assert "dense_resource<__elided__>" in capsys.readouterr().out
    assert convc_main([str(model), "--target", "generic", "--emit", "convc", "--print-constants-whole", "-o",
                       str(tmp_path / "whole.mlir")]) == 0
    text = (tmp_path / "whole.mlir").read_text()
    assert "dense_resource" not in text and print_graph(parse_ir(text)) == text


def test_the_graphs_use_every_attribute_kind() -> None:
    """The round-trip graphs exercise every attribute kind any registered op declares."""
    used = {OPS[op.kind].attrs[name].kind for make in GRAPHS.values() for op in make().ops for name in op.attrs}
    declared = {spec.kind for opdef in OPS.values() for spec in opdef.attrs.values()}
    assert declared <= used


def test_mlir_parses_convc_text_with_unregistered_dialects(graph_name: str, stage: str) -> None:
    text = print_graph(STAGES[stage](GRAPHS[graph_name]()))
    module = mlir.parse_module(text, allow_unregistered=True)
    ops = [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]
    graph = parse_ir(text)
    assert ops == [f"convc.{op.kind}" for op in graph.ops] + ["func.return"]


def test_mlir_rejects_convc_text_without_unregistered_dialects() -> None:
    """The flag above is what makes it parse: convc ops are not a registered dialect."""
    with pytest.raises(ValueError):
        mlir.parse_module(print_graph(awkward_names()))


# --- determinism -------------------------------------------------------------------------------

FRESH_PROCESS = """
import sys
import convc
from convc.compile import Compiler
graph = convc.load_model(sys.argv[1])
sys.stdout.write(convc.compile_graph(graph))
sys.stdout.write("\\n// -----\\n")
sys.stdout.write(convc.print_graph(Compiler(target="generic").run_passes(graph.clone())))
"""


def compiled_texts(path: Path) -> str:
    graph = load_model(path)
    return "\n// -----\n".join([compile_graph(graph), print_graph(Compiler(target="generic").run_passes(graph.clone()))])


@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.stem in ("resnet_block", "mobilenet_block")], ids=lambda p: p.stem)
def test_compiling_twice_gives_identical_bytes(path: Path) -> None:
    first, second = compiled_texts(path), compiled_texts(path)
    assert first == second
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        fresh = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(path)], capture_output=True, text=True,
                               env=env, check=True, timeout=120)
        assert fresh.stdout == first


def test_library_and_cli_default_to_the_same_target(tmp_path: Path, capsys: Any) -> None:
    """compile_graph, like convc, lowers for the platform PJRT finds unless told otherwise."""
    graph = load_model(EXAMPLES[0])
    platform_target = Compiler().resolved_target()
    assert compile_graph(graph) == compile_graph(graph, target=platform_target)
    assert convc_main([str(EXAMPLES[0]), "-o", str(tmp_path / "cli.mlir")]) == 0
    assert (tmp_path / "cli.mlir").read_text() == compile_graph(graph)


def test_builder_graphs_compile_deterministically() -> None:
    for make in (awkward_names, half_precision, integer_and_layout_ops):
        assert compile_graph(make()) == compile_graph(make())


# --- portable bytecode -----------------------------------------------------------------------------


def test_emit_bytecode_deserializes_to_the_same_computation(tmp_path: Path, rng: np.random.Generator, capsys: Any) -> None:
    model = REPO_ROOT / "examples" / "resnet_block.json"
    text_out, bytecode_out = tmp_path / "out.mlir", tmp_path / "out.mlirbc"
    assert convc_main([str(model), "--target", "generic", "-o", str(text_out)]) == 0
    assert convc_main([str(model), "--target", "generic", "--emit", "bytecode", "-o", str(bytecode_out)]) == 0
    artifact = bytecode_out.read_bytes()
    assert artifact.startswith(b"ML\xefR")  # MLIR bytecode magic
    with mlir.context() as ctx:
        module = stablehlo.deserialize_portable_artifact(ctx, artifact)
        restored = str(module)
    assert "stablehlo.convolution" in restored
    x = rng.standard_normal((1, 32, 32, 16)).astype(np.float32)
    (want,) = compile_stablehlo(text_out.read_text())(x)
    (got,) = compile_stablehlo(restored)(x)
    np.testing.assert_array_equal(got, want)
    assert capsys.readouterr().err == ""


def test_emit_bytecode_carries_the_text_modules_constants(tmp_path: Path) -> None:
    """`--emit bytecode` binds each large constant from its array after parsing (no hex on the
    way): the artifact, deserialized and printed, has the constants of the `--emit stablehlo`
    module parsed and printed, in order and bit for bit (the round trip through VHLO spells
    some other attributes out, so only the constants are compared)."""
    model = REPO_ROOT / "examples" / "mobilenet_block.json"
    text_out, bytecode_out = tmp_path / "out.mlir", tmp_path / "out.mlirbc"
    assert convc_main([str(model), "--target", "cpu", "-o", str(text_out)]) == 0
    assert convc_main([str(model), "--target", "cpu", "--emit", "bytecode", "-o", str(bytecode_out)]) == 0
    text = text_out.read_text()
    assert '"0x' in text  # the model has constants that the text spells in hex
    with mlir.context() as ctx:
        from jaxlib.mlir import ir

        restored = str(stablehlo.deserialize_portable_artifact(ctx, bytecode_out.read_bytes()))
        parsed = str(ir.Module.parse(text))
    constants = [re.findall(r"stablehlo\.constant .*", module) for module in (restored, parsed)]
    assert constants[0] == constants[1] and any('"0x' in line for line in constants[0])


def test_bytecode_of_builder_graph_keeps_names_and_types(tmp_path: Path) -> None:
    """Through the string API too: the artifact -> MLIR bytecode -> a module with @main's signature."""
    graph = after_default_pipeline(half_precision())
    artifact = Compiler(target="generic").emit(graph, "bytecode")
    with mlir.context():
        from jaxlib.mlir import ir

        module = ir.Module.parse(stablehlo.deserialize_portable_artifact_str(artifact))
        main = module.body.operations[0]
        signature = str(main.attributes["function_type"])
    inputs, outputs = (", ".join(str(v.type) for v in values) for values in (graph.inputs, graph.outputs))
    assert signature == f"({inputs}) -> ({outputs})"
