"""The builder API for frontend authors: shapes are inferred and checked at each call.

    b = convc.Builder("net")
    x = b.input("x", (1, 64, 64, 3), "f32")
    w = b.constant("w", np.ones((3, 3, 3, 16), np.float32))
    y = b.conv(x, w, window_strides=(2, 2), padding="SAME",
               dimension_numbers=("NHWC", "HWIO", "NHWC"))
    b.output(y)
    graph = b.build()

Every op kind of `convc.ops.OPS` is a method: the typed helpers below take the attributes
lax takes positionally; every other op's method is made from its declaration (operands
positional, attributes by keyword), so an op declared in `convc.ops` is a method by that
alone. Attribute names are jax.lax's; their kinds and defaults are the declarations', which
each method's help lists (and docs/builder.md, written by `builder_reference`).

An operand is a `Value` this builder returned, or a numpy array, which becomes a constant
named after the op and the operand (`conv1.rhs`) with the array's dtype, as `constant`
makes one. Anything else (a name, another builder's value, a list) is refused at the call.
An invalid call raises `ConvcError` located at the caller's line, and leaves the builder as
it was.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from .diagnostics import ConvcError, Location, suggest
from .dtypes import QuantTypeError, canonical_dtype, from_numpy, numpy_dtype, tensor_element_type
from .ir import Graph, Op, TensorType, Value, unused_name
from .ops import OPS, Attr, OpDef
from .ops.attr_kinds import shown
from .ops.base import KNOWN_OP
from .sharding import check_spec, read_mesh, read_spec
from .verify import coerce_attrs, infer_type

Helper = TypeVar("Helper", bound=Callable[..., Value])
Operand = Value | np.ndarray  # a numpy array operand becomes a constant

NOT_A_VALUE = "U7"  # an operand, output or sharded value is a Value (an operand may be a numpy array)
FOREIGN_VALUE = "U8"  # a Value is one this builder made


def _declared(kind: str) -> Callable[[Helper], Helper]:
    """Append op `kind`'s declaration (what it is, its operands, each attribute's kind,
    default and doc) to a method's docstring."""
    def document(helper: Helper) -> Helper:
        opdef = OPS[kind]
        summary = inspect.cleandoc(helper.__doc__ or opdef.doc)
        helper.__doc__ = "\n".join([summary, "", *_declaration_lines(opdef)])
        return helper
    return document


def _declaration_lines(opdef: OpDef) -> list[str]:
    lines = [f"Op '{opdef.name}' (convc.ops); operands: {_operands_text(opdef)}."]
    if not opdef.attrs:
        return [*lines, "Attributes: none."]
    lines.append("Attributes (by keyword; None or absent: the default):")
    for name, spec in opdef.attrs.items():
        doc = f" {spec.doc}" if spec.doc else ""
        lines.append(f"  {name} ({spec.kind.label}; {_default_text(spec)}){doc}")
    return lines


def _operands_text(opdef: OpDef) -> str:
    if opdef.variadic:
        return f"{opdef.operands[0]}... (one or more)"
    return ", ".join(opdef.operands) or "none"


def _default_text(spec: Attr) -> str:
    return "required" if spec.required else f"default: {spec.default_text()}"


def _call_site() -> Location:
    """The first frame outside this module: where the user called the builder."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return Location()
    return Location(file=frame.f_code.co_filename, line=frame.f_lineno)


def _what(value: object) -> str:
    """How a refused operand appears in a message, with what to pass instead."""
    if isinstance(value, str):
        return f"the string {shown(value)} (pass the Value the builder returned, not its name)"
    return f"{type(value).__name__} {shown(value)} (make it a Value with constant(name, value), or pass a numpy array)"


class Builder:
    """Builds a `Graph` call by call: `input`, `constant`, one method per op kind (or `op`
    for any registered op), then `output` and `build`. Each call checks its operands and
    attributes and infers the result type, so a mistake fails where it was made.

    Operands are the `Value`s this builder returned; a numpy array given as an operand
    becomes a constant named `<op>.<operand>` (`conv1.rhs`) that keeps its dtype. A name, a
    list or another builder's value is refused (U7, U8)."""

    def __init__(self, name: str = "main", mesh: Mapping[str, int] | None = None):
        self.graph = Graph(name)
        self._names: set[str] = set()
        self._values: set[Value] = set()  # what this builder made (Values hash by identity): its only operands
        self._counter = 0
        if mesh is not None:  # named axes and sizes, in order: {"data": 4, "space": 2}
            self.graph.mesh = read_mesh(mesh, _call_site())

    # --- values -------------------------------------------------------------

    def input(self, name: str, shape: Sequence[int], dtype: str = "f32", sharding: Sequence[Any] | None = None) -> Value:
        """A graph input; `sharding` (per dimension None, an axis or a tuple of axes) pins the argument's."""
        loc = _call_site()
        try:
            canonical = tensor_element_type(dtype, tuple(shape))
        except QuantTypeError as err:
            raise ConvcError(err.message, loc, err.constraint or "U1") from None
        if canonical is None:
            raise ConvcError(f"unknown dtype '{dtype}'", loc, "U1")
        if any(isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in shape):
            raise ConvcError(f"input '{name}' has an invalid shape {list(shape)}", loc, "U2")
        value = Value(self._claim(name, loc), TensorType(tuple(int(d) for d in shape), canonical))
        if sharding is not None:
            self._pin(value, sharding, loc)
        self.graph.inputs.append(value)
        self.graph.input_locs[value.name] = loc
        self._values.add(value)
        return value

    @_declared("constant")
    def constant(self, name: str, value: Any, dtype: str | None = None) -> Value:
        """A literal tensor. Python scalars and lists default to f32 / i32, as JAX's
        weakly typed literals do; numpy arrays keep their dtype."""
        return self.op("constant", name=name, value=_constant_array(value, dtype))

    def output(self, *values: Value, sharding: Sequence[Any] | None = None) -> None:
        """Mark `values` as the graph's results, in order (may be called more than once);
        `sharding` (with one value) pins the result's sharding."""
        loc = _call_site()
        checked = [self._own(value, f"output {index}", loc) for index, value in enumerate(values)]
        if sharding is not None:
            if len(checked) != 1:
                raise ConvcError(f"output(..., sharding=) takes one value, got {len(checked)}", loc, "U3")
            self._pin(checked[0], sharding, loc)
        self.graph.outputs.extend(checked)

    def shard(self, value: Value, spec: Sequence[Any]) -> Value:
        """A sharding constraint on `value` (on an input: the argument's sharding), as
        `jax.lax.with_sharding_constraint`; returns `value`."""
        loc = _call_site()
        self._pin(self._own(value, "the sharded value", loc), spec, loc)
        return value

    def _pin(self, value: Value, spec: Sequence[Any], loc: Location) -> None:
        if self.graph.mesh is None:
            raise ConvcError(f"'{value.name}' has a sharding but the builder has no mesh (Builder(..., mesh={{...}}))", loc, "S7")
        value.sharding = check_spec(read_spec(spec, loc), value.type.shape, self.graph.mesh, f"'{value.name}'")

    def _own(self, value: object, role: str, loc: Location) -> Value:
        """`value` if this builder made it; else a located error naming `role`."""
        if isinstance(value, Value):
            if value in self._values:
                return value
            raise ConvcError(f"{role} '{value.name}' is a Value of another Builder; a graph takes only its own builder's values", loc,
                             FOREIGN_VALUE)
        raise ConvcError(f"{role} must be a Value of this Builder, got {_what(value)}", loc, NOT_A_VALUE)

    def build(self) -> Graph:
        """The graph; it needs at least one output, as a JSON model does."""
        if not self.graph.outputs:
            raise ConvcError(f"graph '{self.graph.name}' has no outputs: call output(...) before build()", _call_site(), "U4")
        return self.graph

    # --- ops ------------------------------------------------------------------

    def op(self, kind: str, *operands: Operand, name: str | None = None, **attrs: Any) -> Value:
        """Append any registered op; every op method calls this. A numpy array operand is
        added as a constant (`<name>.<operand>`) just before the op, if the op is valid."""
        loc = _call_site()
        op_name = self._claim(name or self._fresh(kind), loc)
        loc = Location(loc.file, None, loc.line, loc.col, op_name, kind)
        constants: list[Op] = []
        try:
            if kind not in OPS:
                raise ConvcError(f"unknown op '{kind}'{suggest(kind, OPS)}", loc, KNOWN_OP)
            values = [self._operand(OPS[kind], index, operand, loc, constants) for index, operand in enumerate(operands)]
            typed = coerce_attrs(kind, {k: v for k, v in attrs.items() if v is not None}, loc)
            result_type = infer_type(kind, [v.type for v in values], typed, loc)
        except ConvcError:
            self._names.difference_update([op_name, *(c.name for c in constants)])  # a rejected call leaves the builder as it was
            raise
        for constant in constants:
            self._append(constant)
        return self._append(Op(kind, values, typed, op_name, result_type, loc))

    def _append(self, op: Op) -> Value:
        self.graph.ops.append(op)
        self._values.add(op.result)
        return op.result

    def _operand(self, opdef: OpDef, index: int, operand: object, loc: Location, constants: list[Op]) -> Value:
        """Operand `index` as a Value: one of this builder's, or a numpy array made a constant
        (collected in `constants`, which the op appends once it is valid)."""
        role = _operand_role(opdef, index)
        if not isinstance(operand, np.ndarray | np.generic):
            return self._own(operand, f"operand {index} ({role})", loc)
        name = unused_name(f"{loc.node}.{role}", self._names)
        at = Location(loc.file, None, loc.line, loc.col, name, "constant")
        typed = coerce_attrs("constant", {"value": _constant_array(operand, None)}, at)
        constant = Op("constant", [], typed, name, infer_type("constant", [], typed, at), at)
        constants.append(constant)
        self._claim(name, at)
        return constant.result

    # Typed helpers: the operands and the attributes lax takes positionally; every other
    # attribute by keyword. None leaves an attribute to its declared default, which only the
    # op's declaration (convc.ops) states; each helper's help lists them. Ops without a typed
    # helper get a method made from their declaration (`_op_method`, below the class).

    @_declared("conv")
    def conv(self, lhs: Operand, rhs: Operand, window_strides: Sequence[int] | None = None, padding: Any = None,
             name: str | None = None, **attrs: Any) -> Value:
        """jax.lax.conv_general_dilated; `lowering=` pins how the cpu target lowers it
        ("xla" or a cpu rewrite pass's name), as the JSON attribute does."""
        return self.op("conv", lhs, rhs, name=name, window_strides=window_strides, padding=padding, **attrs)

    @_declared("conv_transpose")
    def conv_transpose(self, lhs: Operand, rhs: Operand, strides: Sequence[int] | None = None, padding: Any = None,
                       name: str | None = None, **attrs: Any) -> Value:
        """jax.lax.conv_transpose, plus feature_group_count (grouped transposed conv)."""
        return self.op("conv_transpose", lhs, rhs, name=name, strides=strides, padding=padding, **attrs)

    @_declared("conv_backprop_input")
    def conv_backprop_input(self, out_grad: Operand, rhs: Operand, window_strides: Sequence[int] | None = None, padding: Any = None,
                            name: str | None = None, **attrs: Any) -> Value:
        """The input gradient of the forward conv these attributes describe, sized by
        `input_shape` (TF input_sizes) or `output_padding` (PyTorch/ONNX)."""
        return self.op("conv_backprop_input", out_grad, rhs, name=name, window_strides=window_strides, padding=padding, **attrs)

    @_declared("conv_backprop_filter")
    def conv_backprop_filter(self, lhs: Operand, out_grad: Operand, kernel_shape: Sequence[int],
                             window_strides: Sequence[int] | None = None, padding: Any = None, name: str | None = None,
                             **attrs: Any) -> Value:
        """The kernel gradient of the forward conv these attributes describe, in the layout of `kernel_shape`."""
        return self.op("conv_backprop_filter", lhs, out_grad, name=name, kernel_shape=kernel_shape, window_strides=window_strides,
                       padding=padding, **attrs)

    @_declared("bias_add")
    def bias_add(self, x: Operand, bias: Operand, name: str | None = None, **attrs: Any) -> Value:
        return self.op("bias_add", x, bias, name=name, **attrs)

    @_declared("add")
    def add(self, lhs: Operand, rhs: Operand, name: str | None = None) -> Value:
        return self.op("add", lhs, rhs, name=name)

    @_declared("multiply")
    def multiply(self, lhs: Operand, rhs: Operand, name: str | None = None) -> Value:
        return self.op("multiply", lhs, rhs, name=name)

    @_declared("relu")
    def relu(self, x: Operand, name: str | None = None) -> Value:
        return self.op("relu", x, name=name)

    @_declared("reshape")
    def reshape(self, x: Operand, new_sizes: Sequence[int], name: str | None = None) -> Value:
        return self.op("reshape", x, name=name, new_sizes=new_sizes)

    @_declared("transpose")
    def transpose(self, x: Operand, permutation: Sequence[int], name: str | None = None) -> Value:
        return self.op("transpose", x, name=name, permutation=permutation)

    @_declared("reverse")
    def reverse(self, x: Operand, dimensions: Sequence[int], name: str | None = None) -> Value:
        return self.op("reverse", x, name=name, dimensions=dimensions)

    @_declared("pad")
    def pad(self, x: Operand, padding_config: Sequence[Sequence[int]], padding_value: float | None = None,
            name: str | None = None) -> Value:
        return self.op("pad", x, name=name, padding_config=padding_config, padding_value=padding_value)

    @_declared("slice")
    def slice(self, x: Operand, start_indices: Sequence[int], limit_indices: Sequence[int],
              strides: Sequence[int] | None = None, name: str | None = None) -> Value:
        return self.op("slice", x, name=name, start_indices=start_indices, limit_indices=limit_indices, strides=strides)

    @_declared("concatenate")
    def concatenate(self, inputs: Sequence[Operand], dimension: int, name: str | None = None) -> Value:
        return self.op("concatenate", *inputs, name=name, dimension=dimension)

    @_declared("convert")
    def convert(self, x: Operand, new_dtype: str, name: str | None = None) -> Value:
        return self.op("convert", x, name=name, new_dtype=new_dtype)

    # --- names ------------------------------------------------------------------

    def _claim(self, name: str, loc: Location) -> str:
        if not isinstance(name, str) or not name:
            raise ConvcError(f"names must be non-empty strings, got {name!r}", loc, "U5")
        if name in self._names:
            raise ConvcError(f"name '{name}' is already defined", loc, "U6")
        self._names.add(name)
        return name

    def _fresh(self, kind: str) -> str:
        while True:
            self._counter += 1
            candidate = f"{kind}{self._counter}"
            if candidate not in self._names:
                return candidate



    # --- ops declared without a typed helper ----------------------------------

    def __getattr__(self, name: str) -> Callable[..., Value]:
        """An op registered after this module was imported (`convc.ops.register`) is a
        method too; the ops declared before are methods of the class (below)."""
        if name in OPS and not name.startswith("_"):
            return types.MethodType(_op_method(name), self)
        raise AttributeError(f"'Builder' object has no attribute '{name}'{suggest(name, [*OPS, *_API])}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *OPS})


_API = [name for name in vars(Builder) if not name.startswith("_")]


def _constant_array(value: Any, dtype: str | None) -> np.ndarray:
    """A constant's array: Python scalars and lists f32 / i32 unless `dtype` says, numpy
    arrays their own dtype (int64 i32, as JAX without x64 and as before convc had i64; one
    convc lacks: f32 for floats, i32 otherwise)."""
    array = np.asarray(value)
    if dtype is None and not isinstance(value, np.ndarray | np.generic):
        dtype = "f32" if array.dtype.kind == "f" else "i32" if array.dtype.kind in "iub" else None
    if dtype is None and array.dtype == np.int64:
        dtype = "i32"
    if dtype is not None:
        canonical = canonical_dtype(dtype)
        if canonical is None:
            raise ConvcError(f"unknown dtype '{dtype}'", _call_site(), "U1")
        array = array.astype(numpy_dtype(canonical))
    if from_numpy(array.dtype) is None:
        array = array.astype(np.float32) if array.dtype.kind == "f" else array.astype(np.int32)
    return array


def _operand_role(opdef: OpDef, index: int) -> str:
    """Operand `index`'s name in the declaration (`rhs`; `inputs2` of a variadic op)."""
    if opdef.variadic:
        return f"{opdef.operands[0]}{index}"
    return opdef.operands[index] if index < len(opdef.operands) else f"operand{index}"


def _op_method(kind: str) -> Callable[..., Value]:
    """The Builder method of op `kind`, made from its declaration: operands positional,
    attributes by keyword, and the declaration in its help and signature."""
    def method(self: Builder, *operands: Operand, name: str | None = None, **attrs: Any) -> Value:
        return self.op(kind, *operands, name=name, **attrs)

    method.__name__ = kind
    method.__qualname__ = f"Builder.{kind}"
    method.__signature__ = _op_signature(OPS[kind])  # type: ignore[attr-defined]
    return _declared(kind)(method)


def _op_signature(opdef: OpDef) -> inspect.Signature:
    """`(self, x, /, *, window_dimensions, window_strides=None, ..., name=None)`."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_ONLY)]
    if opdef.variadic:
        params.append(P(opdef.operands[0], P.VAR_POSITIONAL))
    else:
        params += [P(operand, P.POSITIONAL_ONLY) for operand in opdef.operands]
    params += [P(attr, P.KEYWORD_ONLY, **({} if spec.required else {"default": None})) for attr, spec in opdef.attrs.items()]
    params.append(P("name", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params, return_annotation=Value)


for _kind in OPS:
    if not hasattr(Builder, _kind):
        setattr(Builder, _kind, _op_method(_kind))


# --- the reference in docs/builder.md (tools/gen_docs.py's "builder-reference" section) ---


def builder_reference() -> str:
    """One entry per op kind: the method's call, what it computes, its operands and its
    attributes (kind, default, meaning), all from the declarations and the methods."""
    return "".join(_reference_entry(kind) for kind in OPS)


def _reference_entry(kind: str) -> str:
    opdef, method = OPS[kind], getattr(Builder, kind)
    summary = " ".join(line.strip() for line in (method.__doc__ or "").split("\n\n", 1)[0].splitlines())
    lines = [f"### {kind}", "", f"`b.{kind}{_call_text(method)}`: {summary}", "", f"Operands: {_operands_markdown(opdef)}.", ""]
    if opdef.attrs:
        lines += ["| attribute | kind | default | meaning |", "|---|---|---|---|"]
        lines += [f"| `{name}` | {_cell(spec.kind.label)} | {_cell(_default_cell(spec))} | {_cell(spec.doc)} |"
                  for name, spec in opdef.attrs.items()]
    else:
        lines.append("No attributes.")
    return "\n".join(lines) + "\n\n"


def _call_text(method: Callable[..., Value]) -> str:
    """The method's parameters without annotations or `self`: `(x, /, *, window_dimensions, ..., name=None)`."""
    signature = inspect.signature(method)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in list(signature.parameters.values())[1:]]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _operands_markdown(opdef: OpDef) -> str:
    if opdef.variadic:
        return f"`{opdef.operands[0]}`, one or more"
    return ", ".join(f"`{operand}`" for operand in opdef.operands) or "none"


def _default_cell(spec: Attr) -> str:
    """A value default in code style; a derived one, `required` and `none` in words."""
    plain = spec.required or spec.default is None or callable(spec.default)
    return spec.default_text() if plain else f"`{spec.default_text()}`"


def _cell(text: str) -> str:
    """Text in a Markdown table cell: pipes escaped."""
    return text.replace("|", "\\|")
