"""Bad ONNX files on the command line: a truncated file, one that is not ONNX, an unknown op, a
bad attribute value, external data outside the model's directory (relative and absolute),
a missing external data file, inconsistent shapes. Through `convc` (with `--run`) and
`convc-opt`, each is exactly one located line on stderr ending with its id, exit 1, nothing
on stdout, an existing `-o` file byte for byte unchanged (its mode too) and no file added
beside it. (test_onnx_import.py holds one negative test per O id through the library.)"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from optional_oracles import oracle
from strategies import run_cli

onnx = oracle("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_files import make_model  # noqa: E402

OLD = b"// the previous compile's output\n"


def _model(nodes: list[object], shapes: dict[str, tuple[int, ...]], out: tuple[int, ...],
           weights: dict[str, np.ndarray] | None = None) -> object:
    """A one-graph opset-17 ModelProto: inputs by shape, f32 output 'y' of shape `out`."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in shapes.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out))],
                              [numpy_helper.from_array(a, n) for n, a in (weights or {}).items()])
    return make_model(graph, 17)


def _bias_model() -> object:
    return _model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (2, 3)}, (2, 3), {"b": np.arange(3, dtype=np.float32)})


def _external(location: str) -> Callable[[Path], bytes]:
    """The bias model with its initializer's data in `location` (written beside the models
    folder as w.bin, which a location may point at)."""
    def write(folder: Path) -> bytes:
        proto = _bias_model()
        tensor = proto.graph.initializer[0]  # type: ignore[attr-defined]
        (folder.parent / "w.bin").write_bytes(tensor.raw_data)
        onnx.external_data_helper.set_external_data(tensor, location=location)
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        return proto.SerializeToString()  # type: ignore[attr-defined,no-any-return]
    return write


def _truncated_large_weight() -> bytes:
    """A 32768-element weight (more than the checker's skeleton keeps) whose data is 8 bytes short."""
    proto = _model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (32768,)}, (32768,), {"b": np.ones(32768, np.float32)})
    tensor = proto.graph.initializer[0]  # type: ignore[attr-defined]
    tensor.raw_data = tensor.raw_data[:-8]
    return proto.SerializeToString()  # type: ignore[attr-defined,no-any-return]


def _serialized(proto: object) -> Callable[[Path], bytes]:
    return lambda folder: proto.SerializeToString()  # type: ignore[attr-defined,no-any-return]


# name -> (writer of the model's bytes, given the folder it goes in; id; a piece of the line)
BAD_FILES: dict[str, tuple[Callable[[Path], bytes], str, str]] = {
    "truncated": (lambda folder: _bias_model().SerializeToString()[:-9], "O1", "not an ONNX model"),  # type: ignore[attr-defined]
    "not_onnx": (lambda folder: b"\x89PNG\r\n\x1a\n not a model at all", "O1", "not an ONNX model"),
    "unknown_op": (_serialized(_model([helper.make_node("Frobnicate", ["x"], ["y"], name="mystery")], {"x": (2, 3)}, (2, 3))), "O5",
                   "'mystery' (Frobnicate)"),
    "bad_attribute": (_serialized(_model([helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_MIDDLE", name="c1")],
                                         {"x": (1, 2, 5, 5)}, (1, 3, 3, 3), {"w": np.ones((3, 2, 3, 3), np.float32)})), "O6",
                      "/graph/node/0: error: 'c1' (Conv): auto_pad 'SAME_MIDDLE' is not one of"),
    "external_data_escapes": (_external("../w.bin"), "O10", "external data file '../w.bin' is outside the model's directory"),
    "external_data_absolute": (lambda folder: _external(str(folder.parent.resolve() / "w.bin"))(folder), "O10",
                               "is outside the model's directory"),
    "external_data_missing": (_external("gone.bin"), "O10", "cannot read external data file 'gone.bin'"),
    "inconsistent_shapes": (_serialized(_model([helper.make_node("Add", ["a", "b"], ["y"])], {"a": (2, 3), "b": (4, 5)}, (2, 3))), "O2",
                            "inconsistent ONNX model (onnx.shape_inference)"),
    # initializers larger than the checker's skeleton keeps (compiler/frontend/onnx/model.py: SKELETON_BYTES)
    "large_initializer_truncated": (lambda folder: _truncated_large_weight(), "O2", "invalid initializer"),
    "large_initializer_inconsistent": (_serialized(_model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": (5,)}, (5,),
                                                          {"b": np.ones(32768, np.float32)})), "O2",
                                       "inconsistent ONNX model (onnx.shape_inference)"),
}

ENTRIES = {"convc": ["--run", "--target", "cpu"], "convc-opt": ["-p", "canonicalize-dimension-numbers"]}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_onnx_file_is_one_located_line_and_writes_nothing(case: str, entry: str, tmp_path: Path) -> None:
    """`convc`/`convc-opt` on the bad file: exit 1, one line `<model path>:... error: ... [id]`
    holding the case's text, empty stdout, the old -o file untouched and nothing new beside it."""
    write, constraint, text = BAD_FILES[case]
    folder = tmp_path / "models"
    folder.mkdir()
    model = folder / "m.onnx"
    model.write_bytes(write(folder))
    output = tmp_path / "out.mlir"
    output.write_bytes(OLD)
    output.chmod(0o640)
    before = sorted(path.name for path in tmp_path.rglob("*"))
    result = run_cli([str(model), *ENTRIES[entry], "-o", str(output)], entry=entry)
    lines = result.stderr.splitlines()
    assert result.code == 1 and len(lines) == 1 and result.stdout == "", result
    assert lines[0].startswith(f"{model}:") and lines[0].endswith(f"[{constraint}]") and text in lines[0], lines[0]
    assert "Traceback" not in lines[0] and "internal error" not in lines[0]
    assert output.read_bytes() == OLD and stat.S_IMODE(output.stat().st_mode) == 0o640
    assert sorted(path.name for path in tmp_path.rglob("*")) == before
