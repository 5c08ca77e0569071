"""The front-end benchmark runs and compares like with like. No timing is asserted."""

from __future__ import annotations

import json

import pytest
from convc import load_model_text
from convc.tools import bench_frontend


@pytest.mark.parametrize("block", [False, True])
def test_chain_model_has_the_requested_convs(block: bool) -> None:
    graph = load_model_text(json.dumps(bench_frontend.chain_model(7, block)))
    assert sum(op.kind == "conv" for op in graph.ops) == 7
    assert graph.outputs[0].type.shape == bench_frontend.SHAPE


def test_tiny_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Both paths lower the same number of convolutions (checked inside), and a row per size."""
    assert bench_frontend.main(["--sizes", "3", "5", "--repeat", "1", "--block", "--target", "generic"]) == 0
    out = capsys.readouterr().out
    assert "| nodes | convc ms | JAX ms | speedup | convc µs/node |" in out
    rows = [line for line in out.splitlines() if line.startswith("| 3 |") or line.startswith("| 5 |")]
    assert len(rows) == 2


def test_tiny_grad_run_compares_the_same_gradient_step(capsys: pytest.CaptureFixture[str]) -> None:
    """--grad: convc's step and JAX's vjp both hold 3N - 1 convolutions (checked inside)."""
    assert bench_frontend.main(["--grad", "--sizes", "3", "--repeat", "1", "--target", "generic"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gradient step (convc --grad every weight vs jax.vjp trace + lower)")
    assert any(line.startswith("| 3 |") for line in out.splitlines())
