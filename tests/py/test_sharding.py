"""Sharding: the model (checks S1-S9), the IR keeping shardings through passes, and runs on
8 host devices. Sharded runs happen in one worker process (`sharded_cases.py`), since
XLA:CPU's device count is fixed when JAX starts: sharded output equals the single-device
jax.lax oracle for every case and target, and the partitioned HLO has the collectives
the partitioning implies."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import convc
import numpy as np
import pytest
from convc import ConvcError, cli
from convc.compile import Compiler
from convc.sharding import Mesh, ShardingSpec, parse_mesh_flag

sys.path.insert(0, str(Path(__file__).parent))
from sharded_cases import CASES, DEVICES, TARGETS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARDED_EXAMPLES = sorted((ROOT / "examples" / "sharded").glob("*.json"))


def _host_env(devices: int) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    return env


@pytest.fixture(scope="module")
def sharded_results() -> dict[tuple[str, str], dict[str, Any]]:
    """Every case on every target, run once in a worker with 8 host devices."""
    completed = subprocess.run([sys.executable, str(Path(__file__).parent / "sharded_cases.py")], env=_host_env(DEVICES),
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    results = {}
    for line in completed.stdout.splitlines():
        record = json.loads(line)
        results[(record["case"], record["target"])] = record
    return results


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", [c.name for c in CASES])
def test_sharded_equals_unsharded(sharded_results: dict[tuple[str, str], dict[str, Any]], case: str, target: str) -> None:
    record = sharded_results[(case, target)]
    assert record["ok"], record["report"]


def _kinds(record: dict[str, Any]) -> list[str]:
    return [c["kind"] for c in record["collectives"]]


def test_spatial_split_exchanges_halos_and_gathers_nothing(sharded_results: dict[tuple[str, str], dict[str, Any]]) -> None:
    for case in ("conv2d_spatial_halo", "conv1d_spatial_strided", "conv3d_spatial", "conv2d_depthwise_spatial"):
        record = sharded_results[(case, "generic")]
        assert "collective-permute" in _kinds(record), case
        assert "all-gather" not in _kinds(record), case
        # each halo is a thin slab: a few rows of the per-device activation, never all of it
        for permute in record["collectives"]:
            assert math.prod(permute["shape"]) * DEVICES < math.prod(record["global_shapes"][0]), (case, permute)


def test_batch_split_weight_gradient_all_reduces_the_kernel(sharded_results: dict[tuple[str, str], dict[str, Any]]) -> None:
    for target in TARGETS:
        record = sharded_results[("conv_backprop_filter_batch", target)]
        reduces = [c for c in record["collectives"] if c["kind"] == "all-reduce"]
        assert [r["shape"] for r in reduces] == [[3, 3, 4, 6]], record["collectives"]
        assert "all-gather" not in _kinds(record)


def test_batch_split_grad_step_all_reduces_only_the_kernel_gradient(sharded_results: dict[tuple[str, str], dict[str, Any]]) -> None:
    """convc.grad of a batch-split conv: the step (checked equal to the one-device oracle by
    test_sharded_equals_unsharded) sums the kernel gradient across devices, and nothing else moves."""
    for target in TARGETS:
        record = sharded_results[("grad_batch_split", target)]
        assert record["collectives"] == [{"kind": "all-reduce", "dtype": "f32", "shape": [3, 3, 8, 8]}], (target, record["collectives"])
        assert record["shard_shapes"][2] == [[3, 3, 8, 8]] * DEVICES  # w.grad: whole (replicated, as w) on every device


def test_each_device_holds_its_share_of_a_split_output(sharded_results: dict[tuple[str, str], dict[str, Any]]) -> None:
    for case in ("conv2d_batch", "conv2d_spatial_halo", "conv2d_2d_mesh_strided", "conv3d_spatial", "conv_transpose_spatial"):
        record = sharded_results[(case, "generic")]
        (global_shape,), (shards,) = record["global_shapes"], record["shard_shapes"]
        assert len(shards) == DEVICES
        assert all(math.prod(s) * DEVICES == math.prod(global_shape) for s in shards), (case, shards)


def test_replicated_weight_gradient_is_whole_on_every_device(sharded_results: dict[tuple[str, str], dict[str, Any]]) -> None:
    (shards,) = sharded_results[("conv_backprop_filter_batch", "generic")]["shard_shapes"]
    assert shards == [[3, 3, 4, 6]] * DEVICES


# --- examples and the command line, on 8 host devices ---------------------------------------


@pytest.mark.parametrize("model", SHARDED_EXAMPLES, ids=lambda p: p.stem)
def test_sharded_example_runs_and_checks(model: Path, tmp_path: Path) -> None:
    completed = subprocess.run([str(Path(sys.executable).parent / "convc"), str(model), "--run", "--check", "-o", str(tmp_path / "out.mlir")],
                               env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    checks = [line for line in completed.stdout.splitlines() if "max abs error vs jax.lax" in line]
    assert checks and all(line.endswith("(ok)") for line in checks)
    assert "sdy.sharding" in (tmp_path / "out.mlir").read_text()


def test_too_few_devices_is_one_located_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In this process JAX started with one CPU device, so an 8-device mesh cannot run."""
    import jax

    jax.devices("cpu")  # the backend is up: its device count is fixed
    if len(jax.devices("cpu")) >= DEVICES:
        pytest.skip("this process already has 8 CPU devices")
    model = SHARDED_EXAMPLES[0]
    code = cli.main([str(model), "--run"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and err.startswith(f"{model}: error: --run: the mesh needs") and err.rstrip().endswith("[S9]")


# --- the model, the builder, the IR ---------------------------------------------------------


def _builder() -> tuple[convc.Builder, convc.Value]:
    b = convc.Builder("net", mesh={"data": 4, "space": 2})
    return b, b.input("x", (8, 16, 16, 4), sharding=("data", "space"))


@pytest.mark.parametrize(("spec", "constraint"), [
    (("data", "model"), "S1"), (("data", "data"), "S2"), ((None,) * 5, "S3"), ((None, None, None, ("data", "space")), "S4")])
def test_builder_rejects_bad_specs_at_the_call_site(spec: tuple[Any, ...], constraint: str) -> None:
    b, x = _builder()
    with pytest.raises(ConvcError) as info:
        b.shard(b.relu(x), spec)
    assert info.value.constraint == constraint
    assert info.value.loc.file == __file__


def test_builder_mesh_and_specs() -> None:
    with pytest.raises(ConvcError, match=r"\[S5\]"):
        convc.Builder("net", mesh={"data": 0})
    with pytest.raises(ConvcError, match=r"\[S7\]"):
        convc.Builder("net").input("x", (4,), sharding=("data",))
    b, x = _builder()
    y = b.shard(b.relu(x), (("data", "space"),))
    assert y.sharding == ShardingSpec((("data", "space"), (), (), ()))
    assert x.sharding == ShardingSpec((("data",), ("space",), (), ()))
    assert b.graph.mesh == Mesh((("data", 4), ("space", 2)))


def test_mesh_flag() -> None:
    """A --mesh value that does not parse is a usage error (no id, exit 2 in the CLI), not S5."""
    from convc.diagnostics import UsageError

    assert parse_mesh_flag("data=4, space=2") == Mesh((("data", 4), ("space", 2)))
    for bad in ("data=4,data=2", "data=x", "1a=2", "data"):
        with pytest.raises(UsageError, match=r"^convc: error: --mesh: ") as caught:
            parse_mesh_flag(bad)
        assert caught.value.constraint is None


def test_replacing_a_constrained_value_carries_its_sharding() -> None:
    b, x = _builder()
    c = b.shard(b.relu(x, name="c"), ("data",))
    out = b.relu(c, name="out")
    b.output(out)
    graph = b.build()
    copy = graph.clone()
    assert copy.mesh == graph.mesh and [v.sharding for v in copy.values()] == [v.sharding for v in graph.values()]
    replacement = convc.Op("relu", [x], {}, "c2", c.type)
    graph.ops.insert(1, replacement)
    graph.replace_all_uses_with(c, replacement.result)
    assert replacement.result.sharding == ShardingSpec((("data",), (), (), ())) and c.sharding is None
    # an argument's sharding stays the argument's; its replacement gets it as a constraint
    graph.replace_all_uses_with(x, out)
    assert x.sharding is not None and out.sharding == x.sharding


def test_bytecode_keeps_the_shardy_ops() -> None:
    from convc import mlir
    from jax._src.lib import _jax

    graph = convc.load_model(ROOT / "tests" / "lit" / "json" / "inputs" / "sharded.json")
    payload = Compiler(target="generic").emit(Compiler(target="generic").run_passes(graph), "bytecode")
    with mlir.context():
        text = str(_jax.mlir.deserialize_portable_artifact(payload))
    assert 'sdy.mesh @mesh = <["data"=4, "space"=2]>' in text
    assert "sdy.sharding_constraint" in text and '#sdy.sharding<@mesh, [{"data"}, {"space"}, {}, {}]>' in text


def test_unsharded_bytecode_is_unchanged() -> None:
    graph = convc.load_model(ROOT / "examples" / "resnet_block.json")
    compiler = Compiler(target="generic")
    payload = compiler.emit(compiler.run_passes(graph), "bytecode")
    assert payload[:4] == b"ML\xefR" and np.frombuffer(payload, np.uint8).size > 0


@pytest.mark.parametrize("model", [*SHARDED_EXAMPLES, ROOT / "tests" / "lit" / "json" / "inputs" / "sharded.json"], ids=lambda p: p.stem)
def test_sharded_models_validate_against_the_schema(model: Path) -> None:
    import jsonschema
    from convc.tools import gen_schema

    validator = jsonschema.Draft202012Validator(json.loads(gen_schema.SCHEMA_PATH.read_text(encoding="utf-8")))
    assert list(validator.iter_errors(json.loads(model.read_text(encoding="utf-8")))) == []
    bad = json.loads(model.read_text(encoding="utf-8"))
    bad["mesh"] = {"data": 0}
    assert list(validator.iter_errors(bad))
