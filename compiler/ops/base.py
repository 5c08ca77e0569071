"""How an op kind is declared: operands, typed attributes (a kind and a default each), and
one `infer` function that verifies the op and returns its result type; and the typed view
through which everything reads an op's attributes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..diagnostics import VerifyError
from ..ir import Op, TensorType, Value
from .attr_kinds import (
    BOOL,
    DIMS,
    DTYPE,
    FLOAT,
    INT,
    INTS,
    PADDING,
    PADDING_MODES,
    PRECISION,
    PRECISIONS,
    STR,
    TENSOR,
    AttrKind,
    ConvDimensionNumbers,
    IntRowsKind,
    StrKind,
    shown,
)

# The ids of the rules every op shares (docs/diagnostics.md, "Every op"); an op's own rules
# are namespaced by the op (`dot_general.C5`), except the conv family's (C1..C27, L, P, M, T, B, F).
ATTR_KIND = "A1"  # an attribute's value has its declared kind
ATTR_REQUIRED = "A2"  # a required attribute is given
ATTR_KNOWN = "A3"  # the op declares the attribute
OPERAND_COUNT = "A4"  # the op gets its declared number of operands
RESULT_TYPE = "A5"  # a written result type is the inferred one
SIZE_LIMIT = "A6"  # sizes stay within what MLIR, numpy and XLA can hold
KNOWN_OP = "A7"  # the op kind is one convc declares
QUANTIZED_OPERAND = "Q1"  # only ops declared `quantized` take quantized operands


def any_result_mismatch(written: TensorType, inferred: TensorType) -> str:
    """The id a written result type that differs from the inferred one breaks (ops with no finer rule)."""
    return RESULT_TYPE


# A default that depends on the op's operand types (e.g. one stride per spatial dimension).
DerivedDefault = Callable[[Sequence[TensorType]], Any]


class OpFactory(Protocol):
    """What a gradient rule builds its ops with (`convc.autodiff`; a `Rewriter` is one too):
    `create` appends an op of `kind`, checked and typed as any other, and returns its result."""

    def create(self, kind: str, *operands: Value, suffix: str, **attrs: Any) -> Value: ...


class NoGradientRule(Exception):
    """A gradient rule's refusal: the op's attributes take it outside what the rule computes
    (max_pool's window dilation). `convc.grad` reports it at the op, pointing at `attr` (G7)."""

    def __init__(self, message: str, attr: str | None = None):
        super().__init__(message)
        self.message = message
        self.attr = attr


# An op's vector-Jacobian product (reverse-mode rule): given the op's typed view, its operand
# values and the cotangent of its result, the cotangent of each operand (None: none flows
# there, e.g. an integer operand), built as convc ops. Gradients keep the operand's type. A
# rule may raise NoGradientRule for attributes it does not cover. Its docstring's first line
# says what it builds (docs/autodiff.md's table of rules is generated from it).
VjpRule = Callable[[OpFactory, "OpView", Sequence[Value], Value], Sequence["Value | None"]]


@dataclass(frozen=True)
class Derived:
    """A default computed from the operand types (one stride per spatial dimension), with the
    words the builder's help and docs/builder.md show for it."""

    rule: DerivedDefault
    text: str

    def __call__(self, types: Sequence[TensorType]) -> Any:
        return self.rule(types)


@dataclass(frozen=True)
class Attr:
    """One declared attribute: its kind, its default (a value, or a function of the operand
    types), whether it is required, and a line for the schema and the builder's help."""

    kind: AttrKind
    default: Any = None
    required: bool = False
    doc: str = ""
    constraint: str = ATTR_KIND  # the id a value that is not of `kind` breaks (an op may name its own rule)

    def default_for(self, types: Sequence[TensorType]) -> Any:
        return self.default(types) if callable(self.default) else self.default

    def default_text(self) -> str:
        """The default as the builder's help and docs/builder.md show it."""
        if self.required:
            return "required"
        if isinstance(self.default, Derived):
            return self.default.text
        if callable(self.default):
            return "from the operand types"
        return "none" if self.default is None else repr(self.default)

    def check(self, name: str, value: Any) -> Any:
        """A raw value -> the typed value (None: absent)."""
        if value is None:
            if self.required:
                raise VerifyError(f"attribute '{name}' is required", ATTR_REQUIRED, attr=name)
            return None
        try:
            return self.kind.check(value, name)
        except VerifyError as err:  # a kind that names a finer rule (a quantized type's) keeps it
            raise VerifyError(err.message, err.constraint or self.constraint, attr=name) from None


# The default of a conv's strides and dilations; of a window op's or slice's, per dimension.
ones_per_spatial_dim = Derived(lambda types: (1,) * (types[0].rank - 2), "1 per spatial dimension")
ones_per_dim = Derived(lambda types: (1,) * types[0].rank, "1 per dimension")


@dataclass(frozen=True)
class ForeignAttr:
    """What an attribute name an op does not declare means there: another framework's
    spelling (PyTorch's `groups`, ONNX's `kernel_shape`), with `source` naming who spells it
    so, or another op's attribute (`output_padding` on `conv_transpose`: `op` takes it). convc
    spells it `attr` of `op` (None: this op; no `attr`: nothing does, and `note` says why);
    `note` says what else differs. The unknown-attribute error (A3) shows it as its hint, and
    an importer can read the same table."""

    attr: str | None = None
    op: str | None = None
    source: str = ""
    note: str = ""

    def hint(self, name: str, op_name: str) -> str:
        """The A3 error's suffix for attribute `name` given to op `op_name`."""
        if self.attr is None:
            return f" ({self.note})"
        note = f"; {self.note}" if self.note else ""
        if self.op is not None and self.op != op_name:
            return f" ('{self.op}' takes '{self.attr}'{note})"
        source = f" '{name}' is its name in {self.source}" if self.source else ""
        return f" (did you mean '{self.attr}'?{source}{note})"


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a memo key part
class OpDef:
    name: str
    operands: tuple[str, ...]
    infer: Callable[[OpView], TensorType]
    attrs: dict[str, Attr] = field(default_factory=dict)
    variadic: bool = False  # operands repeat (concatenate)
    doc: str = ""
    result_constraint: Callable[[TensorType, TensorType], str] = any_result_mismatch  # (written, inferred) -> id
    vjp: VjpRule | None = None  # the gradient rule; None: convc.grad refuses a model that needs one
    foreign: dict[str, ForeignAttr] = field(default_factory=dict)  # undeclared names with a meaning here (A3's hints)
    quantized: bool = False  # takes quantized (`!quant.uniform`) operands; other ops refuse them (Q1)
    view_class: type[OpView] = field(init=False, repr=False)  # an accessor per attribute, from `attrs`

    def __post_init__(self) -> None:
        object.__setattr__(self, "view_class", _view_class(self.name, self.attrs))
        for name, meaning in self.foreign.items():
            if name in self.attrs:
                raise ValueError(f"op '{self.name}': '{name}' is a declared attribute, not a foreign one")
            if meaning.op is None and meaning.attr is not None and meaning.attr not in self.attrs:
                raise ValueError(f"op '{self.name}': foreign attribute '{name}' means '{meaning.attr}', which it does not declare")

    def bind(self, types: Sequence[TensorType], attrs: dict[str, Any]) -> OpView:
        """The typed view of operand types and attributes (what `infer` receives)."""
        return self.view_class(self, types, attrs)

    def view(self, op: Op) -> OpView:
        return self.view_class(self, op.operand_types(), op.attrs)


class OpView:
    """An op's typed view: operand types, and attributes with their declared defaults filled
    in (`v.window_strides`, or `v.attr("window_strides")`). What `infer` functions, passes,
    the emitter and the reference read; nothing else restates a default. Each op kind's view
    class has one property per declared attribute (`_view_class`), as ODS generates accessors."""

    __slots__ = ("opdef", "types", "attrs")

    def __init__(self, opdef: OpDef, types: Sequence[TensorType], attrs: dict[str, Any]):
        self.opdef = opdef
        self.types = types
        self.attrs = attrs

    def operand(self, index: int) -> TensorType:
        return self.types[index]

    def attr(self, name: str) -> Any:
        value = self.attrs.get(name)
        if value is None:
            return self.opdef.attrs[name].default_for(self.types)
        return value

    def has(self, name: str) -> bool:
        """Whether the op sets `name` itself (rather than taking the default)."""
        return name in self.attrs

    def __getattr__(self, name: str) -> Any:  # only for names no accessor has (and for type checkers)
        raise AttributeError(f"op '{self.opdef.name}' declares no attribute '{name}'")


def _accessor(name: str, spec: Attr) -> property:
    default = spec.default.rule if isinstance(spec.default, Derived) else spec.default
    if callable(default):
        def derived(v: OpView) -> Any:
            value = v.attrs.get(name)
            return default(v.types) if value is None else value
        return property(derived, doc=spec.doc)

    def plain(v: OpView) -> Any:
        value = v.attrs.get(name)
        return default if value is None else value
    return property(plain, doc=spec.doc)


def _view_class(op_name: str, attrs: dict[str, Attr]) -> type[OpView]:
    clashes = sorted(name for name in attrs if hasattr(OpView, name))
    if clashes:
        raise ValueError(f"op '{op_name}': attribute names {clashes} clash with OpView's own members")
    accessors: dict[str, Any] = {name: _accessor(name, spec) for name, spec in attrs.items()}
    return type(f"{op_name}_view", (OpView,), {"__slots__": (), **accessors})


# --- small shared checks used by many infer functions ---


def same_types(v: OpView) -> TensorType:
    """The shape rule of an elementwise op whose operands share one type: that type (else `<op>.C1`)."""
    first = v.operand(0)
    for index, other in enumerate(v.types[1:], start=1):
        if other != first:
            raise VerifyError(f"operand types differ: {first} and {other}", f"{v.opdef.name}.C1", operand=index)
    return first


def operand_type(v: OpView) -> TensorType:
    """The shape rule of an op whose result has its (first) operand's type."""
    return v.operand(0)


def check_rank(t: TensorType, rank: int, what: str, constraint: str | None = None, operand: int | None = None) -> None:
    if t.rank != rank:
        raise VerifyError(f"{what} must have rank {rank}, got {t}", constraint, operand=operand)


def check_same_dtype(a: TensorType, b: TensorType, constraint: str | None = None) -> None:
    if a.dtype != b.dtype:
        raise VerifyError(f"element types differ: {a.dtype} and {b.dtype}", constraint, operand=1)


def check_permutation(perm: Sequence[int], rank: int, attr: str, constraint: str) -> None:
    if sorted(perm) != list(range(rank)):
        raise VerifyError(f"{attr} {list(perm)} is not a permutation of 0..{rank - 1}", constraint, attr=attr)


def check_axes(axes: Sequence[int], rank: int, attr: str, range_id: str, unique_id: str) -> None:
    """Each axis is in [0, rank) (`range_id`) and named once (`unique_id`)."""
    for axis in axes:
        if not 0 <= axis < rank:
            raise VerifyError(f"{attr} has dimension {axis} out of range for rank {rank}", range_id, attr=attr)
    if len(set(axes)) != len(axes):
        raise VerifyError(f"{attr} {list(axes)} repeats a dimension", unique_id, attr=attr)


__all__ = [
    "ATTR_KIND", "ATTR_KNOWN", "ATTR_REQUIRED", "KNOWN_OP", "OPERAND_COUNT", "RESULT_TYPE", "SIZE_LIMIT", "any_result_mismatch",
    "BOOL", "DIMS", "DTYPE", "FLOAT", "INT", "INTS", "PADDING", "PADDING_MODES", "PRECISION", "PRECISIONS", "STR", "TENSOR",
    "Attr", "AttrKind", "ConvDimensionNumbers", "Derived", "ForeignAttr", "IntRowsKind", "NoGradientRule", "OpDef", "OpFactory", "OpView",
    "StrKind", "VjpRule", "check_axes", "check_permutation",
    "check_rank", "check_same_dtype", "ones_per_dim", "ones_per_spatial_dim", "operand_type", "same_types", "shown",
]
