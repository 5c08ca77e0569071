"""How a `cpu-*` rewrite decides to take a conv.

*Legality* (`legal`: the rewrite computes this conv exactly, and the graph it builds stays a
reasonable size) is separate from *profitability* (`profitable`: the rewrite's cost model,
thresholds measured on one machine). A conv's `lowering` attribute, written by a user or by
`autotune-conv-lowering`, replaces the cost model: the pass it names rewrites the conv (a
located error when that is illegal), every other rewrite leaves it alone, and `"xla"` leaves
it to XLA's own conv. The rewrites a pin may name are those registered here
(`register_conv_lowerings`, which `convc.passes` calls), in the order they run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from .conv_facts import ConvFacts, conv_facts
from .diagnostics import ConvcError
from .ir import Op
from .lowering_pins import XLA, register_pin
from .rewrite import RewritePattern, Rewriter

LOWERING = "lowering"  # the conv attribute (declared with the op in convc.ops.conv)


@dataclass(frozen=True)
class ConvLowering(RewritePattern):
    """A cpu rewrite of one conv. Subclasses set `name` (their pass's) and `requires`, and
    implement `legal` and `rewrite`; `profitable` is the cost model (default: always), and
    a subclass's dataclass fields are its cost model's knobs, which `pattern_pass` makes
    its pass's options."""

    kind = "conv"
    requires: ClassVar[str] = ""  # what `legal` asks of a conv, in words, for the diagnostic

    @classmethod
    def legal(cls, facts: ConvFacts) -> bool:
        raise NotImplementedError

    def profitable(self, facts: ConvFacts) -> bool:
        return True

    def rewrite(self, op: Op, facts: ConvFacts, rewriter: Rewriter) -> None:
        raise NotImplementedError

    @classmethod
    def applies(cls, facts: ConvFacts | None) -> bool:
        """Legal on this conv (None: not canonical yet, which no rewrite takes)."""
        return facts is not None and not facts.is_empty() and cls.legal(facts)

    def match_and_rewrite(self, op: Op, rewriter: Rewriter) -> None:
        pinned = op.attrs.get(LOWERING)  # no default: absent, the cost model decides
        if pinned is not None and pinned != self.name:
            return
        facts = conv_facts(op)
        if facts is None or not self.applies(facts):
            if pinned is not None:
                raise ConvcError(self._illegal_pin(facts), op.loc.child(LOWERING), "P2")
            return
        if pinned is not None or self.profitable(facts):
            self.rewrite(op, facts, rewriter)

    def _illegal_pin(self, facts: ConvFacts | None) -> str:
        if facts is None:
            return (f'lowering "{self.name}" needs a canonical conv (explicit dimension numbers and pads): '
                    "run canonicalize-dimension-numbers and resolve-padding first")
        what = "a non-empty conv" if facts.is_empty() else self.requires
        return f'lowering "{self.name}" cannot compute this conv exactly: it needs {what}'


_REGISTERED: dict[str, type[ConvLowering]] = {}


def register_conv_lowerings(patterns: Iterable[type[ConvLowering]]) -> dict[str, type[ConvLowering]]:
    """Make each rewrite a legal `lowering` pin and an autotune candidate, by its name, in
    the order given (the order autotune measures them). Returns every one registered."""
    for pattern in patterns:
        if _REGISTERED.setdefault(pattern.name, pattern) is not pattern:
            raise ValueError(f"two conv lowerings are named '{pattern.name}'")
        register_pin(pattern.name)
    return dict(_REGISTERED)


def conv_lowerings() -> dict[str, type[ConvLowering]]:
    """The registered rewrites by name, in registration order."""
    return dict(_REGISTERED)


def candidates(facts: ConvFacts | None) -> list[str]:
    """"xla", then every registered rewrite that can compute this conv exactly, in order."""
    return [XLA] + [name for name, pattern in _REGISTERED.items() if pattern.applies(facts)]
