"""What the target lowerings need to know about a canonical `conv`, every default filled
in (the steps that build values from them are in convc.builders)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import product

from convc.ir import Op, TensorType, attrs_key
from convc.memo import memoized
from convc.ops import ConvDimensionNumbers, view
from convc.ops.conv import spatial

# Element types the elementwise rewrites may sum in directly: as precise as XLA's conv.
WIDE_FLOATS = ("f32", "f64")


@dataclass(frozen=True)
class ConvFacts:
    """A canonical conv's types and attributes, defaults filled in. Memoized per signature and
    so shared by every conv like it: the derived sizes are computed once (cached properties)."""

    lhs: TensorType
    rhs: TensorType
    out: TensorType
    dn: ConvDimensionNumbers
    strides: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_groups: int
    batch_groups: int
    precision: object
    preferred_element_type: str | None

    @cached_property
    def kernel_spatial(self) -> tuple[int, ...]:
        return spatial(self.rhs.shape, self.dn.rhs_spec)

    @cached_property
    def out_spatial(self) -> tuple[int, ...]:
        return spatial(self.out.shape, self.dn.out_spec)

    @cached_property
    def in_features(self) -> int:
        return self.lhs.shape[self.dn.lhs_spec[1]]

    @cached_property
    def out_features(self) -> int:
        return self.rhs.shape[self.dn.rhs_spec[0]]

    def taps(self) -> list[tuple[int, ...]]:
        """Every kernel position, row-major over the kernel's spatial dims."""
        return list(product(*(range(k) for k in self.kernel_spatial)))

    def channels_last(self) -> bool:
        """Whether the input and the output both read [batch, spatial..., feature] (the spatial
        dims in the kernel's order)."""
        rank = self.lhs.rank
        return all(tuple(spec) == (0, rank - 1, *range(1, rank - 1)) for spec in (self.dn.lhs_spec, self.dn.out_spec))

    def accumulates_in_input_type(self) -> bool:
        """Rewrites that sum in the operand type keep the conv's result type only then."""
        return self.preferred_element_type in (None, self.lhs.dtype)

    def with_attrs(self, op: Op, **changes: object) -> dict[str, object]:
        """The op's attributes with `changes` applied (a None value drops the attribute).
        A conv a rewrite creates follows the cost model: the op's `lowering` pin is dropped
        unless `changes` names it again."""
        attrs = {**op.attrs, "lowering": None, **changes}
        return {k: v for k, v in attrs.items() if v is not None}

    def is_empty(self) -> bool:
        return self._empty

    @cached_property
    def _empty(self) -> bool:
        return self.out.num_elements() == 0 or self.lhs.num_elements() == 0 or self.rhs.num_elements() == 0


def _signature(op: Op) -> object:
    return op.operand_types(), op.result.type, attrs_key(op.attrs)


def conv_facts(op: Op) -> ConvFacts | None:
    """The facts of a conv in canonical form (explicit dimension numbers and pads), else None."""
    return _conv_facts(op) if op.kind == "conv" else None


# Every cpu-* pass asks for the facts of every conv; they depend only on the conv's
# types and attributes, which a network's convs share, so they are memoized.
@memoized(1 << 14, key=_signature)
def _conv_facts(op: Op) -> ConvFacts | None:
    v = view(op)
    dn, padding = v.dimension_numbers, v.padding
    if not isinstance(dn, ConvDimensionNumbers) or isinstance(padding, str) and padding != "VALID":
        return None
    lhs, rhs = v.types
    n = lhs.rank - 2
    return ConvFacts(
        lhs, rhs, op.result.type, dn, v.window_strides,
        ((0, 0),) * n if padding == "VALID" else tuple((int(lo), int(hi)) for lo, hi in padding),
        v.lhs_dilation, v.rhs_dilation, v.feature_group_count, v.batch_group_count, v.precision, v.preferred_element_type,
    )


def crops(facts: ConvFacts) -> bool:
    """Whether cpu-crop-negative-padding rewrites the conv: any negative pad on a non-empty conv."""
    return not facts.is_empty() and any(lo < 0 or hi < 0 for lo, hi in facts.pads)


def misread_by_xla_cpu(op: Op) -> bool:
    """Whether XLA:CPU would compute `op` wrongly: a conv cpu-crop-negative-padding crops, with
    negative low next to positive high padding on some spatial dim (openxla/xla#48713; XLA:CPU
    computes other negative pads right). `convc --run` asks it of graphs lowered without that pass."""
    facts = conv_facts(op)
    return facts is not None and crops(facts) and any(lo < 0 < hi for lo, hi in facts.pads)
