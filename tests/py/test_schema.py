"""The JSON Schema for models: generated from the op registry, shipped, and in
agreement with the JSON frontend on what it accepts and rejects."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from convc import ConvcError, load_model_text
from convc.ops import OPS
from convc.tools import gen_schema

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_MODELS = sorted(EXAMPLES.glob("*.json"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(gen_schema.SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_committed_schema_is_the_generated_one() -> None:
    committed = gen_schema.SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == gen_schema.schema_text(), "stale schema: run `python -m convc.tools.gen_schema`"


def test_schema_covers_every_registered_op_but_constant() -> None:
    schema = gen_schema.model_schema()
    assert set(schema["$defs"]["node"]["properties"]["op"]["enum"]) == set(OPS) - {"constant"}
    for name, opdef in OPS.items():
        if name != "constant":
            assert set(schema["$defs"][f"op.{name}"]["properties"]) == {"name", "op", "inputs", *opdef.attrs}


def test_there_are_examples() -> None:
    names = {path.stem for path in EXAMPLE_MODELS}
    assert {"resnet_block", "mobilenet_block", "wavenet_stack", "conv3d_block"} <= names


@pytest.mark.parametrize("path", EXAMPLE_MODELS, ids=lambda p: p.stem)
def test_example_validates(path: Path, validator: jsonschema.Draft202012Validator) -> None:
    validator.validate(json.loads(path.read_text(encoding="utf-8")))


def test_example_weights_match_make_weights() -> None:
    """The committed .npz files hold what examples/make_weights.py generates."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_weights", EXAMPLES / "make_weights.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for file in module.SHAPES:
        expected = module.weights(file)
        with np.load(EXAMPLES / file, allow_pickle=False) as stored:
            assert sorted(stored.files) == sorted(expected)
            for key, array in expected.items():
                np.testing.assert_array_equal(stored[key], array)


# --- the schema and the frontend agree ------------------------------------------------

Edit = Callable[[dict[str, Any]], None]


def _base() -> dict[str, Any]:
    return json.loads((EXAMPLES / "mobilenet_block.json").read_text(encoding="utf-8"))


def _node(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(node for node in doc["nodes"] if node["name"] == name)


def _set(node: str, key: str, value: Any) -> Edit:
    return lambda doc: _node(doc, node).__setitem__(key, value)


def _delete_top(key: str) -> Edit:
    return lambda doc: doc.pop(key)


ACCEPTED: dict[str, Edit] = {
    "lower-case padding": _set("depthwise", "padding", "same"),
    "explicit negative pads": _set("pointwise", "padding", [[0, -1], [-1, 0]]),
    "precision pair": _set("pointwise", "precision", ["HIGH", "highest"]),
    "numpy dtype name": lambda doc: doc["inputs"][0].__setitem__("dtype", "float32"),
    "preferred element type": _set("pointwise", "preferred_element_type", "f32"),
    "no constants or name": lambda doc: (doc.pop("name"), doc.pop("constants"), doc.__setitem__("nodes", []),
                                         doc.__setitem__("outputs", ["x"])),
}

REJECTED: dict[str, Edit] = {
    "unknown top-level key": lambda doc: doc.__setitem__("node", []),
    "missing outputs": _delete_top("outputs"),
    "empty outputs": lambda doc: doc.__setitem__("outputs", []),
    "unknown op": _set("depthwise", "op", "convolution"),
    "unknown attribute": _set("depthwise", "strides", [1, 1]),
    "too few inputs": _set("pointwise", "inputs", ["dw_relu"]),
    "padding mode": _set("depthwise", "padding", "FULL"),
    "padding row width": _set("depthwise", "padding", [[1, 1, 1], [1, 1, 1]]),
    "precision name": _set("pointwise", "precision", "LOW"),
    "two layout strings": _set("pointwise", "dimension_numbers", ["NHWC", "HWIO"]),
    "group count type": _set("depthwise", "feature_group_count", "8"),
    "dtype name": lambda doc: doc["inputs"][0].__setitem__("dtype", "float8"),
    "negative dimension": lambda doc: doc["inputs"][0].__setitem__("shape", [1, -16, 16, 8]),
    "value and file": lambda doc: doc["constants"][0].__setitem__("value", 1.0),
    "neither value nor file": lambda doc: doc["constants"][1].pop("value"),
    "empty node name": _set("dw_relu", "name", ""),
    "NUL in a name": _set("dw_relu", "name", "dw\u0000relu"),
    "missing required attribute": lambda doc: doc["nodes"].append(
        {"name": "t", "op": "transpose", "inputs": ["out"]}),
}


def _edited(edit: Edit) -> dict[str, Any]:
    doc = copy.deepcopy(_base())
    edit(doc)
    return doc


def _frontend_accepts(doc: dict[str, Any]) -> bool:
    try:
        load_model_text(json.dumps(doc), "model.json", base_dir=EXAMPLES)
    except ConvcError:
        return False
    return True


@pytest.mark.parametrize("case", ACCEPTED)
def test_both_accept(case: str, validator: jsonschema.Draft202012Validator) -> None:
    doc = _edited(ACCEPTED[case])
    assert list(validator.iter_errors(doc)) == []
    assert _frontend_accepts(doc)


@pytest.mark.parametrize("case", REJECTED)
def test_both_reject(case: str, validator: jsonschema.Draft202012Validator) -> None:
    doc = _edited(REJECTED[case])
    assert list(validator.iter_errors(doc)) != []
    assert not _frontend_accepts(doc)
