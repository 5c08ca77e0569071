"""The names a conv's `lowering` attribute may pin: "xla" (XLA's own conv), then every conv
rewrite registered (convc.conv_lowering.register_conv_lowerings, which `convc.passes` calls
when it registers its passes). The op reads them here, for its check (P1) and its schema,
so it names no pass and depends on nothing after it."""

from __future__ import annotations

XLA = "xla"  # the choice no rewrite takes

_REGISTERED: dict[str, None] = {}  # insertion-ordered: the order they are listed in


def register_pin(name: str) -> None:
    _REGISTERED[name] = None


def lowering_pins() -> tuple[str, ...]:
    """Every legal pin, "xla" first, the rest in the order they were registered."""
    return (XLA, *_REGISTERED)
