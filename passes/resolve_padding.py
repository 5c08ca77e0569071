"""resolve-padding: SAME / SAME_LOWER / VALID on convs become explicit [lo, hi] pads,
computed on the dilated kernel exactly as lax.padtype_to_pads does."""

from __future__ import annotations

from dataclasses import dataclass

from convc.ir import Graph, Op, attrs_key
from convc.memo import memoized
from convc.ops import view
from convc.ops.conv import explicit_padding, resolve_dimension_numbers, spatial
from convc.pass_manager import Pass


@dataclass(frozen=True)
class ResolvePadding(Pass):
    name = "resolve-padding"
    summary = "padding modes become explicit per-dimension (lo, hi) pairs"

    def run(self, graph: Graph) -> bool:
        changed = False
        for op in graph.ops:
            if op.kind != "conv":
                continue
            pads = _explicit_pads(op)
            if pads is not None:
                op.attrs["padding"] = pads
                changed = True
        return changed


def _signature(op: Op) -> object:
    return op.operand_types(), attrs_key(op.attrs)


@memoized(1 << 12, key=_signature)
def _explicit_pads(op: Op) -> tuple[tuple[int, int], ...] | None:
    """A conv's padding mode as explicit pads (None: already explicit); memoized, as a
    network's convs share a few signatures."""
    v = view(op)
    if not isinstance(v.padding, str):
        return None
    lhs, rhs = v.types
    dn = resolve_dimension_numbers(v.dimension_numbers, lhs.rank)
    return explicit_padding(v.padding, spatial(lhs.shape, dn.lhs_spec), spatial(rhs.shape, dn.rhs_spec), v.window_strides, v.rhs_dilation)
