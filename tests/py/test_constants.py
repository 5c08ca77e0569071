"""Constants at the edges of their element types: overflow is a located error, and
non-finite values (which only the builder or array files can supply) emit and run."""

from __future__ import annotations

import json

import convc
import ml_dtypes
import numpy as np
import pytest
from convc.runtime import compile_stablehlo


def model_with_constant(dtype: str, value: list[float]) -> str:
    return json.dumps({
        "inputs": [{"name": "x", "shape": [len(value)], "dtype": dtype}],
        "constants": [{"name": "c", "shape": [len(value)], "dtype": dtype, "value": value}],
        "nodes": [{"name": "s", "op": "add", "inputs": ["x", "c"]}],
        "outputs": ["s"],
    })


@pytest.mark.parametrize(("dtype", "too_large"), [("f16", "1e6"), ("bf16", "1e39"), ("f32", "1e39"), ("f64", "1e999")])
def test_inline_value_overflowing_its_type_is_located_error(dtype: str, too_large: str) -> None:
    text = model_with_constant(dtype, [1.0, 2.0]).replace("2.0", too_large)  # JSON number text, as a user writes it
    with pytest.raises(convc.ConvcError) as info:
        convc.load_model_text(text, "m.json")
    assert str(info.value) == f"m.json:/constants/0/value: error: 'c' (constant): value has elements that overflow {dtype} [J13]"


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
def test_largest_finite_value_is_kept(dtype: str) -> None:
    largest = float(ml_dtypes.finfo(convc.dtypes.numpy_dtype(dtype)).max)
    graph = convc.load_model_text(model_with_constant(dtype, [largest, -largest]), "m.json")
    assert graph.ops[0].attrs["value"].tolist() == [largest, -largest]


@pytest.mark.parametrize("np_dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_non_finite_builder_constants_emit_and_run(np_dtype: type) -> None:
    values = np.array([1.0, np.inf, -np.inf, 2.0], dtype=np_dtype)
    b = convc.Builder("edges")
    x = b.input("x", (4,), convc.dtypes.from_numpy(np.dtype(np_dtype)) or "f32")
    b.output(b.add(x, b.constant("c", values)))
    graph = b.build()
    text = convc.compile_graph(graph)
    ones = np.ones(4, np_dtype)
    (got,) = compile_stablehlo(text)(ones)
    np.testing.assert_array_equal(got.astype(np.float64), (ones + values).astype(np.float64))
    assert convc.print_graph(convc.parse_ir(convc.print_graph(graph))) == convc.print_graph(graph)
