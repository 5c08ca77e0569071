"""The benchmark suite runs: `--quick` on two tiny cases, in process, and convc's result
matches JAX's. No timing is asserted (a benchmark, not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

from convc.tools import bench


def test_quick_suite_runs_and_matches_jax(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    code = bench.main(["--quick", "--cases", "depthwise3x3,weight_grad_g32", "--budget", "0.05", "--no-peak",
                       "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    names = [case["name"] for case in report["cases"]]
    assert names == ["depthwise3x3", "weight_grad_g32"]
    for case in report["cases"]:
        assert case["max_error_vs_jax"] <= bench.TOLERANCE
        assert set(case["ms"]) >= {"convc", "jax"}
        if case["torch_error_vs_jax"] is not None:
            assert case["torch_error_vs_jax"] <= bench.TOLERANCE
    assert report["geomean_convc_over_jax"] > 0


def test_every_case_builds_the_same_shapes_in_convc_and_jax() -> None:
    """Each case's convc model and JAX function agree on the result shape (full sizes,
    traced abstractly: nothing is compiled or run)."""
    import convc
    import jax

    for spec in bench.selected_cases(bench.parse_args([])):
        graph = bench.convc_graph(spec)
        shapes = [jax.ShapeDtypeStruct(v.type.shape, "float32") for v in graph.inputs]
        expected = jax.eval_shape(bench.jax_function(spec), *shapes)
        assert graph.outputs[0].type.shape == expected.shape, spec.name
        convc.compile_graph(graph, target="cpu")  # every case lowers for cpu and verifies
