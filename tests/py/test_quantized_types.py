"""Quantized element types (`!quant.uniform`, StableHLO's spelling) in convc's type system:
parsed and canonicalized the same way from JSON, the Builder and convc text, checked by the
spec's quantized-type rules, accepted by the schema and by MLIR's own quant dialect."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from convc import Builder, ConvcError, load_model_text
from convc.dtypes import QuantTypeError, element_type, numpy_dtype, parse_quant, tensor_element_type
from convc.mlir import parse_module
from convc.tools import gen_schema


@pytest.mark.parametrize(("written", "canonical"), [
    ("!quant.uniform<i8:f32, 0.5:-3>", "!quant.uniform<i8:f32, 5.000000e-01:-3>"),
    ("!quant.uniform<u8:f32, 0.25:0>", "!quant.uniform<u8:f32, 2.500000e-01>"),
    ("!quant.uniform<i8:f32:0, {0.1:1, 0.2:2}>", "!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:2}>"),
    ("!quant.uniform<i8<-127:127>:f32, 1.0>", "!quant.uniform<i8<-127:127>:f32, 1.000000e+00>"),
    ("!quant.uniform<i32:f32, 0.00392156862745098>", "!quant.uniform<i32:f32, 0.00392156862745098>"),
])
def test_quantized_spellings_canonicalize_and_read_back_the_same(written: str, canonical: str) -> None:
    """Each spelling canonicalizes to one form, which parses to the same parameters."""
    assert element_type(written) == canonical
    assert parse_quant(canonical) == parse_quant(written)


def test_canonical_spelling_is_what_mlir_prints() -> None:
    """MLIR's quant dialect parses convc's canonical spellings and prints them identically."""
    types = ["!quant.uniform<i8:f32, 5.000000e-01:-3>", "!quant.uniform<i8:f32:0, {1.000000e-01:1,2.000000e-01:2}>",
             "!quant.uniform<u8<1:200>:f32, 2.500000e-01:3>"]
    args = ", ".join(f"%a{i}: tensor<2x{t}>" for i, t in enumerate(types))
    text = f"func.func @main({args}) -> tensor<2x{types[0]}> {{\n  return %a0 : tensor<2x{types[0]}>\n}}"
    printed = str(parse_module(text))
    for t in types:
        assert f"tensor<2x{t}>" in printed


def test_quantized_types_store_as_their_storage_dtype() -> None:
    assert numpy_dtype("!quant.uniform<i8:f32, 0.5>") == np.int8
    assert numpy_dtype("!quant.uniform<u8:f32, 0.5>") == np.uint8
    assert numpy_dtype("!quant.uniform<i16:f32, 0.5>") == np.int16
    assert parse_quant("!quant.uniform<u8:f32, 0.5>").storage_dtype() == "ui8"
    assert parse_quant("!quant.uniform<i8<-127:127>:f32, 0.5>").limits() == (-127, 127)


def test_per_axis_type_checks_the_tensor_shape() -> None:
    """C12 (dimension in the rank) and C13 (its size is the scale count) need the shape."""
    with pytest.raises(QuantTypeError) as rank:
        tensor_element_type("!quant.uniform<i8:f32:1, {0.1, 0.2}>", (2,))
    assert rank.value.constraint == "quant.C12"
    with pytest.raises(QuantTypeError) as size:
        tensor_element_type("!quant.uniform<i8:f32:0, {0.1, 0.2}>", (3,))
    assert size.value.constraint == "quant.C13"


def _model(dtype: str, shape: list[int]) -> str:
    return json.dumps({"name": "q", "inputs": [{"name": "x", "shape": shape, "dtype": dtype}], "nodes": [], "outputs": ["x"]})


def test_json_input_takes_a_quantized_dtype_in_the_stablehlo_spelling() -> None:
    graph = load_model_text(_model("!quant.uniform<i8:f32:1, {0.1:1, 0.2:2}>", [3, 2]))
    assert graph.inputs[0].type.dtype == "!quant.uniform<i8:f32:1, {1.000000e-01:1,2.000000e-01:2}>"


@pytest.mark.parametrize(("dtype", "shape", "constraint"), [
    ("!quant.uniform<i8:f32, 0.5:200>", [2], "quant.C8"),
    ("!quant.uniform<i8:f32:0, {0.1, 0.2}>", [3], "quant.C13"),
    ("!quant.uniform<i4:f32, 0.5>", [2], "J11"),
    ("!quant.uniform<i8:f32 0.5>", [2], "J11"),
])
def test_json_quantized_dtype_errors_are_located_at_the_dtype(dtype: str, shape: list[int], constraint: str) -> None:
    with pytest.raises(ConvcError) as err:
        load_model_text(_model(dtype, shape), "m.json")
    assert err.value.constraint == constraint
    assert str(err.value).startswith("m.json:/inputs/0/dtype: error: ")


def test_builder_input_takes_a_quantized_dtype() -> None:
    b = Builder("q")
    x = b.input("x", (2,), "!quant.uniform<i8:f32, 0.5:-3>")
    assert x.type.dtype == "!quant.uniform<i8:f32, 5.000000e-01:-3>"
    with pytest.raises(ConvcError) as err:
        b.input("y", (2,), "!quant.uniform<i8:f32, -1.0>")
    assert err.value.constraint == "quant.C5"


def test_schema_accepts_quantized_input_dtypes_and_rejects_others() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(gen_schema.SCHEMA_PATH.read_text(encoding="utf-8")))
    validator.validate(json.loads(_model("!quant.uniform<i8:f32, 0.5:-3>", [2])))
    validator.validate(json.loads(_model("i16", [2])))
    assert not validator.is_valid(json.loads(_model("quant.uniform<i8:f32, 0.5>", [2])))


@pytest.mark.parametrize("dtype", ["i16", "i64", "ui8"])
def test_plain_i16_i64_ui8_inputs_are_element_types(dtype: str) -> None:
    graph = load_model_text(_model(dtype, [2]))
    assert graph.inputs[0].type.dtype == dtype
