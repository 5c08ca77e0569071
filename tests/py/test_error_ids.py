"""One negative test per id of the families outside the op declarations that no lit test
reaches: graph verification (V), the builder (U), running (R), and the JSON frontend's
constant budget (J17) and malformed shardings (S10). Each error is one located line that
ends with its id (docs/diagnostics.md)."""

from __future__ import annotations

import json
from pathlib import Path

import convc
import numpy as np
import pytest
from convc.cli import main as convc_main
from convc.diagnostics import ConvcError
from convc.ir import Graph, TensorType, Value
from convc.runner import CheckReport, check_run_sizes, run_inputs
from convc.runtime_inputs import load_inputs, random_inputs
from convc.verify import verify_graph


def _two_relus() -> Graph:
    b = convc.Builder("g")
    x = b.input("x", (2, 3))
    b.output(b.relu(b.relu(x, name="a"), name="b"))
    return b.build()


def _raises(expected_id: str, call: object, *args: object, **kwargs: object) -> ConvcError:
    with pytest.raises(ConvcError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    assert caught.value.constraint == expected_id and str(caught.value).endswith(f"[{expected_id}]")
    assert "\n" not in str(caught.value)
    return caught.value


# --- V: whole-graph invariants (what a pass might break) ---------------------------------


def test_V1_operand_used_before_it_is_defined() -> None:
    graph = _two_relus()
    graph.ops.reverse()
    assert "operand 0 '%a' is used before it is defined" in str(_raises("V1", verify_graph, graph))


def test_V2_output_not_defined_in_the_graph() -> None:
    graph = _two_relus()
    graph.outputs.append(Value("ghost", TensorType((2, 3), "f32")))
    assert "output '%ghost' is not defined in the graph" in str(_raises("V2", verify_graph, graph))


def test_V3_name_defined_twice() -> None:
    graph = _two_relus()
    graph.ops[1].result.name = "a"
    assert "name 'a' is defined twice" in str(_raises("V3", verify_graph, graph))


# --- U: the builder ----------------------------------------------------------------------


def test_U1_unknown_dtype() -> None:
    _raises("U1", convc.Builder().input, "x", (2,), "float8")
    _raises("U1", convc.Builder().constant, "k", [1.0], "float8")


def test_U2_invalid_input_shape() -> None:
    _raises("U2", convc.Builder().input, "x", (2, -1))


def test_U3_output_sharding_takes_one_value() -> None:
    b = convc.Builder(mesh={"data": 2})
    x = b.input("x", (2, 2))
    _raises("U3", b.output, x, x, sharding=["data", None])


def test_U4_build_needs_an_output() -> None:
    _raises("U4", convc.Builder("forgot").build)


def test_U5_names_are_non_empty_strings() -> None:
    _raises("U5", convc.Builder().input, "", (2,))


def test_U6_name_already_defined() -> None:
    b = convc.Builder()
    b.input("x", (2,))
    _raises("U6", b.input, "x", (2,))


def test_U7_operands_and_outputs_are_values() -> None:
    b = convc.Builder()
    b.input("x", (2,))
    _raises("U7", b.output, "x")
    _raises("U7", b.relu, [1.0, 2.0])


def test_U8_values_belong_to_their_builder() -> None:
    other = convc.Builder().input("x", (2,))
    b = convc.Builder()
    _raises("U8", b.relu, other)
    _raises("U8", b.output, other)


# --- R: running --------------------------------------------------------------------------


def test_R1_inputs_name_or_count_every_graph_input() -> None:
    graph = _two_relus()
    _raises("R1", run_inputs, graph, {"z": np.zeros((2, 3))}, 0, 1 << 20, None)
    _raises("R1", run_inputs, graph, [np.zeros((2, 3))] * 2, 0, 1 << 20, None)


def test_R1_to_R4_an_inputs_archive(tmp_path: Path) -> None:
    graph = _two_relus()
    np.savez(tmp_path / "other.npz", z=np.zeros((2, 3)))
    _raises("R1", load_inputs, graph, str(tmp_path / "other.npz"))
    np.savez(tmp_path / "shape.npz", x=np.zeros((3, 2)))
    _raises("R2", load_inputs, graph, str(tmp_path / "shape.npz"))
    np.savez(tmp_path / "dtype.npz", x=np.array([["a"] * 3] * 2))
    _raises("R3", load_inputs, graph, str(tmp_path / "dtype.npz"))
    np.save(tmp_path / "one.npy", np.zeros((2, 3)))
    _raises("R4", load_inputs, graph, str(tmp_path / "one.npy"))
    (tmp_path / "broken.npz").write_bytes(b"not a zip")
    _raises("R4", load_inputs, graph, str(tmp_path / "broken.npz"))


def test_R2_R3_arrays_given_from_python() -> None:
    graph = _two_relus()
    _raises("R2", run_inputs, graph, [np.zeros((3, 2))], 0, 1 << 20, None)
    _raises("R3", run_inputs, graph, [np.array([["a"] * 3] * 2)], 0, 1 << 20, None)


def test_R5_run_sizes_over_max_bytes() -> None:
    graph = _two_relus()
    _raises("R5", check_run_sizes, graph, 10, "m.json")
    _raises("R5", random_inputs, graph, 0, 10)
    b = convc.Builder("wide")
    x = b.input("x", (1, 1))
    b.output(b.op("broadcast_in_dim", x, shape=(64, 64), broadcast_dimensions=(0, 1)))
    _raises("R5", check_run_sizes, b.build(), 1024, "m.json")


def test_R6_a_failed_check_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    model = {"inputs": [{"name": "x", "shape": [2], "dtype": "f32"}],
             "nodes": [{"name": "r", "op": "relu", "inputs": ["x"]}], "outputs": ["r"]}
    (tmp_path / "m.json").write_text(json.dumps(model))
    monkeypatch.setattr("convc.cli.check_outputs", lambda result, source, **_: CheckReport(["r: differs"], False))
    assert convc_main([str(tmp_path / "m.json"), "--run", "--check", "--platform", "cpu", "-o", str(tmp_path / "m.mlir")]) == 1
    assert capsys.readouterr().err.rstrip().endswith("error: --check: outputs differ from jax.lax beyond tolerance [R6]")


# --- J17, S10: the JSON frontend -----------------------------------------------------------


def test_J17_constants_over_max_bytes() -> None:
    model = {"inputs": [], "constants": [{"name": "k", "shape": [64], "value": 0.0}], "outputs": ["k"]}
    err = _raises("J17", convc.load_model_text, json.dumps(model), "m.json", max_constant_bytes=16)
    assert str(err).startswith("m.json:/constants/0: error: 'k' (constant): constants would need 256 bytes")


@pytest.mark.parametrize(("spec", "pointer"), [("data", "/shardings/x"), ([["data", 1]], "/shardings/x/0")])
def test_S10_a_sharding_is_a_list_of_axis_entries(spec: object, pointer: str) -> None:
    model = {"mesh": {"data": 2}, "inputs": [{"name": "x", "shape": [2], "dtype": "f32"}], "outputs": ["x"],
             "shardings": {"x": spec}}
    assert str(_raises("S10", convc.load_model_text, json.dumps(model), "m.json")).startswith(f"m.json:{pointer}: error: ")
