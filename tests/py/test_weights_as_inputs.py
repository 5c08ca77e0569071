"""`--weights-as-inputs`: a model's large constants as leading arguments of @main, their
arrays in an .npz beside the module. Both constant forms go emit -> MLIR parse and
verify -> PJRT and must equal the jax.lax oracle; the written pair (module + .npz) runs
on its own; the flags' usage errors. (Why arguments and not `dense_resource` blobs:
PJRT's StableHLO -> HLO conversion rejects them, docs/cli.md.)"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from convc import Builder, cli, mlir, run
from convc.cli import main as convc_main
from convc.compile import Compiler, weight_arguments
from convc.dtypes import numpy_dtype
from convc.emit import bindable_constants, emit_stablehlo, weight_constants
from convc.literals import INLINE_ELEMENTS
from convc.reference import evaluate
from convc.runtime import compile_stablehlo
from jaxlib.mlir.dialects import stablehlo

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS = ["mobilenet_block.json", "dcgan_generator.json", "wavenet_stack.json", "onnx/classifier.onnx"]  # real weights (.npz, ONNX)


def hex_constants(text: str) -> int:
    """Hex blobs of more than 16 f32 elements (a scalar -inf is a short blob too)."""
    return len(re.findall(r'dense<"0x[0-9A-F]{129,}"', text))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("weights_larger", [None, 16], ids=["constants", "arguments"])
def test_both_constant_forms_parse_verify_run_and_equal_the_lax_oracle(model: str, weights_larger: int | None) -> None:
    """emit -> MLIR parse + verify -> PJRT (the weights fed as leading arguments) -> the
    outputs within --check's tolerance of jax.lax; the arguments form has no hex blob left."""
    path = REPO_ROOT / "examples" / model
    compiler = Compiler(target="cpu", weights_larger=weights_larger)
    graph = compiler.load(str(path))
    compiler.run_passes(graph)
    text = compiler.stablehlo(graph)
    mlir.parse_module(text)  # raises on a module MLIR's parser or verifier rejects
    assert (hex_constants(text) == 0) if weights_larger is not None else (hex_constants(text) > 0 and not compiler.weights)
    result = run(path, check=True, platform="cpu", weights_larger=weights_larger)
    assert result.ok, str(result.check)
    if weights_larger is not None:
        assert compiler.weights, "the example has large constants"
        main_args = text.split("func.func public @main(", 1)[1].split(") -> (", 1)[0]
        assert main_args.count(": tensor<") == len(compiler.weights) + len(graph.inputs)


def test_weights_and_inputs_fed_by_hand_equal_the_oracle(rng: np.random.Generator) -> None:
    """The module's argument order is the .npz's order, then the graph's inputs: running the
    module text with exactly those arrays gives the oracle's outputs."""
    b = Builder("net")
    x = b.input("x", (1, 4, 6, 6), "f32")
    w = b.constant("w", rng.standard_normal((8, 4, 3, 3)).astype(np.float32))
    bias = b.constant("bias", rng.standard_normal(8).astype(np.float32) + 16)  # 8 elements: stays inline
    b.output(b.relu(b.bias_add(b.conv(x, w, padding="SAME", precision="HIGHEST"), bias, axis=1), name="y"))
    graph = b.build()
    compiler = Compiler(target="generic", weights_larger=4)
    lowered = graph.clone()
    compiler.run_passes(lowered)
    text = compiler.stablehlo(lowered)
    assert list(compiler.weights) == ["w", "bias"]
    assert "func.func public @main(%w: tensor<8x4x3x3xf32> loc(\"w\"), %bias: tensor<8xf32> loc(\"bias\"), %x:" in text
    arrays = np.load(io.BytesIO(compiler.weights_npz()))
    assert arrays.files == ["w", "bias"]
    xs = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    (got,) = compile_stablehlo(text)(*(arrays[name] for name in arrays.files), xs)
    (want,) = evaluate(graph, [xs])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_threshold_keeps_small_constants_and_splats_inline() -> None:
    b = Builder("sizes")
    x = b.input("x", (32,), "f32")
    big = b.constant("big", np.arange(32, dtype=np.float32))
    small = b.constant("small", np.arange(32, dtype=np.float32)[:4])
    splat = b.constant("splat", np.full(32, 2.0, np.float32))
    b.output(b.multiply(b.add(x, big), splat, name="y"))
    b.output(b.multiply(small, small, name="s"))
    graph = b.build()
    assert [op.name for op in weight_constants(graph, 16)] == ["big"]
    assert [op.name for op in weight_constants(graph, 3)] == ["big", "small"]
    assert weight_constants(graph, 32) == []


def test_cli_writes_module_and_npz_that_run_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o m.mlir --weights-as-inputs` writes m.weights.npz; the pair run by hand gives
    the outputs `--run --outputs` wrote; --check passes with the weights as arguments."""
    model, inputs = REPO_ROOT / "examples" / "mobilenet_block.json", tmp_path / "in.npz"
    x = np.random.default_rng(3).standard_normal((1, 16, 16, 8)).astype(np.float32)
    np.savez(inputs, x=x)
    out, outputs = tmp_path / "m.mlir", tmp_path / "out.npz"
    args = [str(model), "--platform", "cpu", "--weights-as-inputs", "-o", str(out)]
    assert convc_main([*args, "--check", "--inputs", str(inputs), "--outputs", str(outputs)]) == 0
    assert "(MISMATCH)" not in capsys.readouterr().out
    weights = np.load(tmp_path / "m.weights.npz")
    (got,) = compile_stablehlo(out.read_text(), "cpu")(*(weights[name] for name in weights.files), x)
    want = np.load(outputs)
    np.testing.assert_array_equal(got, want[want.files[0]])


def test_bytecode_with_weights_as_inputs_deserializes_with_the_weights_as_arguments(tmp_path: Path) -> None:
    model, out = REPO_ROOT / "examples" / "mobilenet_block.json", tmp_path / "m.mlirbc"
    weights_file = tmp_path / "w.npz"
    assert convc_main([str(model), "--target", "generic", "--emit", "bytecode", "--weights-as-inputs",
                       "--weights-file", str(weights_file), "-o", str(out)]) == 0
    weights = np.load(weights_file)
    with mlir.context() as ctx:
        module = stablehlo.deserialize_portable_artifact(ctx, out.read_bytes())
        restored, signature = str(module), str(module.body.operations[0].attributes["function_type"])
    assert hex_constants(restored) == 0 and len(weights.files) > 0
    types = [f"tensor<{'x'.join(map(str, weights[name].shape))}xf32>" for name in weights.files] + ["tensor<1x16x16x8xf32>"]
    assert signature.startswith(f"({', '.join(types)}) -> ")


@pytest.mark.parametrize(("args", "message"), [
    (["--weights-larger", "4"], "--weights-larger needs --weights-as-inputs"),
    (["--weights-file", "w.npz"], "--weights-file needs --weights-as-inputs"),
    (["--weights-as-inputs"], "give -o FILE or --weights-file PATH"),
    (["--weights-as-inputs", "--emit", "convc", "-o", "m.mlir"], "applies to emitted StableHLO"),
    (["--weights-as-inputs", "-o", "m.mlir", "--weights-file", "m.mlir"], "is the output file too"),
], ids=["larger-alone", "file-alone", "nowhere-to-write", "emit-convc", "same-file"])
def test_weights_flag_misuse_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                              args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert convc_main([str(REPO_ROOT / "examples" / "resnet_block.json"), *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and len(captured.err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_model_with_a_mesh_is_refused_with_weights_as_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = REPO_ROOT / "examples" / "sharded" / "seg3d_block.json"
    assert convc_main([str(model), "--target", "generic", "--weights-as-inputs", "-o", str(tmp_path / "m.mlir")]) == 2
    assert "does not apply to a model with a mesh" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_runnable_binds_large_constants_from_their_arrays_and_computes_what_the_hex_module_does(rng: np.random.Generator) -> None:
    """What a run compiles (Compiler.runnable) is MLIR bytecode whose large constants were
    emitted as zero placeholders and bound from their arrays after parsing: the placeholder
    text holds no hex blob, and PJRT's outputs equal, bit for bit, those of the emitted text
    module that spells the same constants in hex."""
    compiler = Compiler(target="cpu")
    graph = compiler.load(str(REPO_ROOT / "examples" / "mobilenet_block.json"))
    compiler.run_passes(graph)
    bound = weight_arguments(bindable_constants(graph, INLINE_ELEMENTS))
    assert bound, "the example must have constants large enough to bind"
    assert '"0x' not in emit_stablehlo(graph, bound=bound)
    text = compiler.emit(graph, "stablehlo").decode()
    assert '"0x' in text
    handed = compiler.runnable(graph)
    assert handed.startswith(b"ML\xefR") and compiler.weights == {}
    x = rng.standard_normal((1, 16, 16, 8)).astype(np.float32)
    (from_bound,), (from_text,) = compile_stablehlo(handed, "cpu")(x), compile_stablehlo(text, "cpu")(x)
    np.testing.assert_array_equal(from_bound, from_text)


def test_bindable_constants_leave_types_mlir_cannot_take_from_a_buffer_in_hex() -> None:
    """Only float and signed-integer constants whose storage is their element type are bound;
    unsigned and bfloat16 constants keep their hex literal in the runnable module."""
    b = Builder("kinds")
    constants = [b.constant(f"c_{dtype}", np.arange(64).astype(numpy_dtype(dtype)), dtype) for dtype in ("ui8", "bf16", "i8", "f32")]
    b.output(*constants)
    graph = b.build()
    assert sorted(op.name for op in bindable_constants(graph, INLINE_ELEMENTS)) == ["c_f32", "c_i8"]


def test_bench_compile_reports_every_phase_of_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    from convc.tools import bench_compile

    lines: list[str] = []
    assert bench_compile.main([str(REPO_ROOT / "examples" / "mobilenet_block.json"), "--rounds", "1"], out=lines.append) == 0
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[3:]}
    assert list(rows) == [*bench_compile.PHASES, "total"]
    assert all(len(re.findall(r"\d+\.\d\d", row)) == 4 for row in rows.values())


def _large_weight_model(tmp_path: Path) -> Path:
    """A JSON model adding a 17 MB constant (more than LARGE_WEIGHTS_MIB) to its input."""
    elements = (cli.LARGE_WEIGHTS_MIB << 20) // 4 + 4096
    np.savez(tmp_path / "w.npz", w=np.arange(elements, dtype=np.float32))
    model = {"name": "big", "inputs": [{"name": "x", "shape": [elements], "dtype": "f32"}],
             "constants": [{"name": "w", "file": "w.npz", "key": "w"}],
             "nodes": [{"name": "y", "op": "add", "inputs": ["x", "w"]}], "outputs": ["y"]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(model))
    return path


def test_large_weights_go_beside_an_output_file_by_default_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a --weights-* flag, text to -o FILE whose weights exceed LARGE_WEIGHTS_MIB has them
    as leading arguments and writes FILE's .weights.npz, with one note line saying so; the
    module holds no hex blob."""
    model = _large_weight_model(tmp_path)
    assert convc_main([str(model), "--target", "generic", "-o", str(tmp_path / "m.mlir")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "note: the weights (17 MB) go to" in err[0] and "--weights-inline" in err[0], err
    assert hex_constants((tmp_path / "m.mlir").read_text()) == 0
    assert list(np.load(tmp_path / "m.weights.npz").files) == ["w"]


@pytest.mark.parametrize("where", ["inline", "stdout", "bytecode"])
def test_large_weights_stay_in_the_module_inline_to_stdout_and_in_bytecode(where: str, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--weights-inline, output to stdout (nowhere to put an .npz) and --emit bytecode (raw bytes,
    no hex) keep large weights as constants: no note, no .npz, one argument in @main."""
    model = _large_weight_model(tmp_path)
    out = tmp_path / "m.out"
    flags = {"inline": ["--weights-inline", "-o", str(out)], "stdout": [], "bytecode": ["--emit", "bytecode", "-o", str(out)]}[where]
    assert convc_main([str(model), "--target", "generic", *flags]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and not list(tmp_path.glob("*.weights.npz"))
    if where != "bytecode":
        text = out.read_text() if where == "inline" else captured.out
        assert hex_constants(text) == 1 and text.split("@main(", 1)[1].split(") ->", 1)[0].count("tensor<") == 1


def test_weights_inline_contradicts_weights_as_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--weights-inline with --weights-as-inputs is a usage error (exit 2), nothing written."""
    model = _large_weight_model(tmp_path)
    assert convc_main([str(model), "--weights-inline", "--weights-as-inputs", "-o", str(tmp_path / "m.mlir")]) == 2
    assert "contradict" in capsys.readouterr().err and not (tmp_path / "m.mlir").exists()
