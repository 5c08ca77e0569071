"""Generate `compiler/schema/model.schema.json` (JSON Schema draft 2020-12) from the op registry.

The per-op part (which ops exist, their operand counts, attributes, kinds and
defaults) is read from `convc.ops.OPS`, so the schema cannot drift from the
compiler: `tests/py/test_schema.py` fails until the committed file is regenerated.

    python -m convc.tools.gen_schema           # rewrite the committed schema
    python -m convc.tools.gen_schema --check   # exit 1 if it is stale

The schema is never stricter than `convc` (a model convc accepts validates); it
cannot express shape rules, so validating does not imply compiling.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from convc.dtypes import DTYPES, canonical_dtype, numpy_dtype
from convc.frontend.json_model import MAX_DIM
from convc.ops import OPS, Attr, OpDef
from convc.sharding import mesh_schema, shardings_schema

# compiler/schema/ in a checkout (the package folder of `convc`), shipped as package data
SCHEMA_PATH = Path(str(resources.files("convc").joinpath("schema", "model.schema.json")))
DRAFT = "https://json-schema.org/draft/2020-12/schema"
NO_NUL = "^[^\\u0000]*$"  # names end up as .npz keys, which cannot hold NUL


def dtype_spellings() -> list[str]:
    """Canonical names, then the numpy names `canonical_dtype` also accepts."""
    aliases = [numpy_dtype(name).name for name in DTYPES]
    return list(DTYPES) + [alias for alias in aliases if canonical_dtype(alias) is not None and alias not in DTYPES]


def json_default(value: Any) -> Any:
    """Attribute defaults as JSON (tuples become lists)."""
    if isinstance(value, tuple):
        return [json_default(v) for v in value]
    return value


def attr_schema(spec: Attr) -> dict[str, Any]:
    """The attribute kind's JSON shape, its doc and its default (a default computed from
    the operand types, such as one stride per spatial dimension, has no JSON value)."""
    schema = spec.kind.schema()
    assert schema is not None, "in_json() keeps ops with unspellable attributes out"
    if spec.doc:
        schema = {**schema, "description": spec.doc}
    if spec.default is not None and not callable(spec.default):
        schema = {**schema, "default": json_default(spec.default)}
    return schema


def in_json(opdef: OpDef) -> bool:
    """Ops whose attributes JSON can spell; `constant` lives in the top-level "constants" list."""
    return all(spec.kind.schema() is not None for spec in opdef.attrs.values())


def node_inputs(opdef: OpDef) -> dict[str, Any]:
    inputs: dict[str, Any] = {"type": "array", "items": {"$ref": "#/$defs/value_name"}}
    if opdef.variadic:
        return {**inputs, "minItems": 1, "description": f"one or more {opdef.operands[0]}"}
    return {**inputs, "minItems": len(opdef.operands), "maxItems": len(opdef.operands),
            "description": "[" + ", ".join(opdef.operands) + "]"}


def op_schema(opdef: OpDef) -> dict[str, Any]:
    properties: dict[str, Any] = {"name": {"$ref": "#/$defs/value_name"}, "op": {"const": opdef.name},
                                  "inputs": node_inputs(opdef)}
    properties.update({name: attr_schema(spec) for name, spec in opdef.attrs.items()})
    required = ["name", "op", "inputs"] + [name for name, spec in opdef.attrs.items() if spec.required]
    return {"description": opdef.doc, "type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


def node_schema(ops: list[OpDef]) -> dict[str, Any]:
    """A node: its `op` picks the per-op definition (if/then keeps validator messages specific)."""
    return {
        "type": "object",
        "required": ["name", "op", "inputs"],
        "properties": {"op": {"enum": [op.name for op in ops]}},
        "allOf": [{"if": {"properties": {"op": {"const": op.name}}, "required": ["op"]},
                   "then": {"$ref": f"#/$defs/op.{op.name}"}} for op in ops],
    }


def static_defs() -> dict[str, Any]:
    """Everything but the nodes: names, dtypes, shapes, inputs, constants."""
    return {
        "value_name": {"type": "string", "minLength": 1, "pattern": NO_NUL},
        "dtype": {"enum": dtype_spellings(), "description": "element type; numpy names are accepted too"},
        "quantized_dtype": {"type": "string", "pattern": r"^!quant\.uniform<.*>$",
                            "description": "a quantized element type as StableHLO spells it: "
                                           "!quant.uniform<i8:f32, 0.5:-3> or, per axis, !quant.uniform<i8:f32:0, {0.1:1,0.2:2}>"},
        "shape": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": MAX_DIM}},
        "input": {
            "type": "object",
            "properties": {"name": {"$ref": "#/$defs/value_name"}, "shape": {"$ref": "#/$defs/shape"},
                           "dtype": {"anyOf": [{"$ref": "#/$defs/dtype"}, {"$ref": "#/$defs/quantized_dtype"}], "default": "f32"}},
            "required": ["name", "shape"],
            "additionalProperties": False,
        },
        "numbers": {"anyOf": [{"type": "number"}, {"type": "array", "items": {"$ref": "#/$defs/numbers"}}],
                    "description": "a number (a splat when shape says more) or nested lists in row-major order"},
        "constant": {
            "type": "object",
            "properties": {
                "name": {"$ref": "#/$defs/value_name"},
                "shape": {"$ref": "#/$defs/shape"},
                "dtype": {"$ref": "#/$defs/dtype", "description": "element type (inline default f32; casts a file's array)"},
                "value": {"$ref": "#/$defs/numbers"},
                "file": {"type": "string", "pattern": NO_NUL, "description": ".npy or .npz path relative to the model (never unpickled)"},
                "key": {"type": "string", "default": "arr_0", "description": "array name inside an .npz"},
            },
            "required": ["name"],
            "oneOf": [{"required": ["value"]}, {"required": ["file"]}],
            "additionalProperties": False,
        },
    }


def model_schema() -> dict[str, Any]:
    import convc.passes  # noqa: F401  (later stages register their ops on import)

    ops = [opdef for opdef in OPS.values() if in_json(opdef)]
    defs = static_defs()
    defs["node"] = node_schema(ops)
    defs.update({f"op.{op.name}": op_schema(op) for op in ops})
    return {
        "$schema": DRAFT,
        "title": "convc model",
        "description": "A convolution graph for convc: inputs, constants, nodes (any order), outputs. See docs/model-format.md.",
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "the module's name (default: main)"},
            "mesh": mesh_schema(),
            "inputs": {"type": "array", "items": {"$ref": "#/$defs/input"}, "description": "the entry function's arguments, in order"},
            "constants": {"type": "array", "items": {"$ref": "#/$defs/constant"}},
            "nodes": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            "outputs": {"type": "array", "items": {"$ref": "#/$defs/value_name"}, "minItems": 1,
                        "description": "the entry function's results, in order"},
            "shardings": shardings_schema(),
        },
        "required": ["inputs", "outputs"],
        "additionalProperties": False,
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(model_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gen_schema", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the committed schema is stale")
    parser.add_argument("-o", "--output", type=Path, default=SCHEMA_PATH, help=f"where to write (default: {SCHEMA_PATH})")
    args = parser.parse_args(argv)
    text = schema_text()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale; run: python -m convc.tools.gen_schema", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["SCHEMA_PATH", "main", "model_schema", "schema_text"]
