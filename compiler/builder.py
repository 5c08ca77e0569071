"""The builder API for frontend authors: shapes are inferred and checked at each call.

    b = convc.Builder("net")
    x = b.input("x", (1, 64, 64, 3), "f32")
    w = b.constant("w", np.ones((3, 3, 3, 16), np.float32))
    y = b.conv(x, w, window_strides=(2, 2), padding="SAME",
               dimension_numbers=("NHWC", "HWIO", "NHWC"))
    b.output(y)
    graph = b.build()

Attribute names are jax.lax's; their kinds and defaults are the ops' declarations
(`convc.ops`), which each helper's help lists. An invalid call raises `ConvcError` at
the call site.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from .diagnostics import ConvcError, Location
from .dtypes import canonical_dtype, from_numpy, numpy_dtype
from .ir import Graph, Op, TensorType, Value
from .ops import OPS, Attr, suggest
from .ops.base import KNOWN_OP
from .sharding import check_spec, read_mesh, read_spec
from .verify import coerce_attrs, infer_type

Helper = TypeVar("Helper", bound=Callable[..., Value])


def _declared(kind: str) -> Callable[[Helper], Helper]:
    """Append op `kind`'s declared attributes (kind, default, doc) to a helper's docstring."""
    def document(helper: Helper) -> Helper:
        opdef = OPS[kind]
        lines = [f"  {name}{': ' + spec.doc if spec.doc else ''}{_default_text(spec)}" for name, spec in opdef.attrs.items()]
        summary = (helper.__doc__ or opdef.doc).strip()
        helper.__doc__ = "\n".join([summary, "", f"Attributes of '{kind}' (convc.ops):", *lines]) if lines else summary
        return helper
    return document


def _default_text(spec: Attr) -> str:
    if spec.required:
        return " (required)"
    return "" if spec.default is None or callable(spec.default) else f" (default {spec.default!r})"


def _call_site() -> Location:
    """The first frame outside this module: where the user called the builder."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return Location()
    return Location(file=frame.f_code.co_filename, line=frame.f_lineno)


class Builder:
    """Builds a `Graph` call by call: `input`, `constant`, the op helpers (or `op` for any
    registered op), then `output` and `build`. Each call checks its operands and
    attributes and infers the result type, so a mistake fails where it was made."""

    def __init__(self, name: str = "main", mesh: Mapping[str, int] | None = None):
        self.graph = Graph(name)
        self._names: set[str] = set()
        self._counter = 0
        if mesh is not None:  # named axes and sizes, in order: {"data": 4, "space": 2}
            self.graph.mesh = read_mesh(mesh, _call_site())

    # --- values -------------------------------------------------------------

    def input(self, name: str, shape: Sequence[int], dtype: str = "f32", sharding: Sequence[Any] | None = None) -> Value:
        """A graph input; `sharding` (per dimension None, an axis or a tuple of axes) pins the argument's."""
        loc = _call_site()
        canonical = canonical_dtype(dtype)
        if canonical is None:
            raise ConvcError(f"unknown dtype '{dtype}'", loc, "U1")
        if any(isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in shape):
            raise ConvcError(f"input '{name}' has an invalid shape {list(shape)}", loc, "U2")
        value = Value(self._claim(name, loc), TensorType(tuple(int(d) for d in shape), canonical))
        if sharding is not None:
            self._pin(value, sharding, loc)
        self.graph.inputs.append(value)
        self.graph.input_locs[value.name] = loc
        return value

    def constant(self, name: str, value: Any, dtype: str | None = None) -> Value:
        """A literal tensor. Python scalars and lists default to f32 / i32, as JAX's
        weakly typed literals do; numpy arrays keep their dtype."""
        array = np.asarray(value)
        if dtype is None and not isinstance(value, np.ndarray | np.generic):
            dtype = "f32" if array.dtype.kind == "f" else "i32" if array.dtype.kind in "iub" else None
        if dtype is not None:
            canonical = canonical_dtype(dtype)
            if canonical is None:
                raise ConvcError(f"unknown dtype '{dtype}'", _call_site(), "U1")
            array = array.astype(numpy_dtype(canonical))
        if from_numpy(array.dtype) is None:
            array = array.astype(np.float32) if array.dtype.kind == "f" else array.astype(np.int32)
        return self.op("constant", name=name, value=array)

    def output(self, *values: Value, sharding: Sequence[Any] | None = None) -> None:
        """Mark `values` as the graph's results, in order (may be called more than once);
        `sharding` (with one value) pins the result's sharding."""
        if sharding is not None:
            if len(values) != 1:
                raise ConvcError(f"output(..., sharding=) takes one value, got {len(values)}", _call_site(), "U3")
            self._pin(values[0], sharding, _call_site())
        self.graph.outputs.extend(values)

    def shard(self, value: Value, spec: Sequence[Any]) -> Value:
        """A sharding constraint on `value` (on an input: the argument's sharding), as
        `jax.lax.with_sharding_constraint`; returns `value`."""
        self._pin(value, spec, _call_site())
        return value

    def _pin(self, value: Value, spec: Sequence[Any], loc: Location) -> None:
        if self.graph.mesh is None:
            raise ConvcError(f"'{value.name}' has a sharding but the builder has no mesh (Builder(..., mesh={{...}}))", loc, "S7")
        value.sharding = check_spec(read_spec(spec, loc), value.type.shape, self.graph.mesh, f"'{value.name}'")

    def build(self) -> Graph:
        """The graph; it needs at least one output, as a JSON model does."""
        if not self.graph.outputs:
            raise ConvcError(f"graph '{self.graph.name}' has no outputs: call output(...) before build()", _call_site(), "U4")
        return self.graph

    # --- ops ------------------------------------------------------------------

    def op(self, kind: str, *operands: Value, name: str | None = None, **attrs: Any) -> Value:
        """Append any registered op; the typed helpers below call this."""
        loc = _call_site()
        op_name = self._claim(name or self._fresh(kind), loc)
        loc = Location(loc.file, None, loc.line, loc.col, op_name, kind)
        try:
            if kind not in OPS:
                raise ConvcError(f"unknown op '{kind}'{suggest(kind, OPS)}", loc, KNOWN_OP)
            typed = coerce_attrs(kind, {k: v for k, v in attrs.items() if v is not None}, loc)
            result_type = infer_type(kind, [v.type for v in operands], typed, loc)
        except ConvcError:
            self._names.discard(op_name)  # a rejected call leaves the builder as it was
            raise
        op = Op(kind, list(operands), typed, op_name, result_type, loc)
        self.graph.ops.append(op)
        return op.result

    # Typed helpers: the operands and the attributes lax takes positionally; every other
    # attribute by keyword. None leaves an attribute to its declared default, which only the
    # op's declaration (convc.ops) states; each helper's help lists them.

    @_declared("conv")
    def conv(self, lhs: Value, rhs: Value, window_strides: Sequence[int] | None = None, padding: Any = None,
             name: str | None = None, **attrs: Any) -> Value:
        """jax.lax.conv_general_dilated; `lowering=` pins how the cpu target lowers it
        ("xla" or a cpu rewrite pass's name), as the JSON attribute does."""
        return self.op("conv", lhs, rhs, name=name, window_strides=window_strides, padding=padding, **attrs)

    @_declared("conv_transpose")
    def conv_transpose(self, lhs: Value, rhs: Value, strides: Sequence[int] | None = None, padding: Any = None,
                       name: str | None = None, **attrs: Any) -> Value:
        """jax.lax.conv_transpose, plus feature_group_count (grouped transposed conv)."""
        return self.op("conv_transpose", lhs, rhs, name=name, strides=strides, padding=padding, **attrs)

    @_declared("conv_backprop_input")
    def conv_backprop_input(self, out_grad: Value, rhs: Value, window_strides: Sequence[int] | None = None, padding: Any = None,
                            name: str | None = None, **attrs: Any) -> Value:
        """The input gradient of the forward conv these attributes describe, sized by
        `input_shape` (TF input_sizes) or `output_padding` (PyTorch/ONNX)."""
        return self.op("conv_backprop_input", out_grad, rhs, name=name, window_strides=window_strides, padding=padding, **attrs)

    @_declared("conv_backprop_filter")
    def conv_backprop_filter(self, lhs: Value, out_grad: Value, kernel_shape: Sequence[int],
                             window_strides: Sequence[int] | None = None, padding: Any = None, name: str | None = None,
                             **attrs: Any) -> Value:
        """The kernel gradient of the forward conv these attributes describe, in the layout of `kernel_shape`."""
        return self.op("conv_backprop_filter", lhs, out_grad, name=name, kernel_shape=kernel_shape, window_strides=window_strides,
                       padding=padding, **attrs)

    @_declared("bias_add")
    def bias_add(self, x: Value, bias: Value, name: str | None = None, **attrs: Any) -> Value:
        return self.op("bias_add", x, bias, name=name, **attrs)

    @_declared("add")
    def add(self, lhs: Value, rhs: Value, name: str | None = None) -> Value:
        return self.op("add", lhs, rhs, name=name)

    @_declared("multiply")
    def multiply(self, lhs: Value, rhs: Value, name: str | None = None) -> Value:
        return self.op("multiply", lhs, rhs, name=name)

    @_declared("relu")
    def relu(self, x: Value, name: str | None = None) -> Value:
        return self.op("relu", x, name=name)

    @_declared("reshape")
    def reshape(self, x: Value, new_sizes: Sequence[int], name: str | None = None) -> Value:
        return self.op("reshape", x, name=name, new_sizes=new_sizes)

    @_declared("transpose")
    def transpose(self, x: Value, permutation: Sequence[int], name: str | None = None) -> Value:
        return self.op("transpose", x, name=name, permutation=permutation)

    @_declared("reverse")
    def reverse(self, x: Value, dimensions: Sequence[int], name: str | None = None) -> Value:
        return self.op("reverse", x, name=name, dimensions=dimensions)

    @_declared("pad")
    def pad(self, x: Value, padding_config: Sequence[Sequence[int]], padding_value: float | None = None,
            name: str | None = None) -> Value:
        return self.op("pad", x, name=name, padding_config=padding_config, padding_value=padding_value)

    @_declared("slice")
    def slice(self, x: Value, start_indices: Sequence[int], limit_indices: Sequence[int],
              strides: Sequence[int] | None = None, name: str | None = None) -> Value:
        return self.op("slice", x, name=name, start_indices=start_indices, limit_indices=limit_indices, strides=strides)

    @_declared("concatenate")
    def concatenate(self, inputs: Sequence[Value], dimension: int, name: str | None = None) -> Value:
        return self.op("concatenate", *inputs, name=name, dimension=dimension)

    @_declared("convert")
    def convert(self, x: Value, new_dtype: str, name: str | None = None) -> Value:
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

