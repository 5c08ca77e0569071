"""One memo cache for the pure functions of an op's signature (its types and attributes).

A network repeats a few layer signatures thousands of times, and verification, conv facts,
layout resolution and emission each ask the same question of every copy. Attribute values
are immutable and hashable (tuples, strings, numbers), so the signature is the key; the one
exception, a constant's array, is left uncached (see `convc.ops.attr_kinds.TensorKind`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast

P = ParamSpec("P")
R = TypeVar("R", covariant=True)
_MISSING = object()


class Memoized(Protocol, Generic[P, R]):
    cache: dict[Hashable, Any]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...

    def cache_clear(self) -> None: ...


def memoized(maxsize: int, key: Callable[..., Hashable] | None = None) -> Callable[[Callable[P, R]], Memoized[P, R]]:
    """Decorator: keep a pure function's results by `key(*args)` (default: the positional
    arguments). An unhashable key computes directly; errors are not kept; at `maxsize`
    entries the cache starts over (cheaper than LRU bookkeeping, and a network's signatures
    fit many times over)."""
    def wrap(fn: Callable[P, R]) -> Memoized[P, R]:
        cache: dict[Hashable, Any] = {}
        compute: Callable[..., Any] = fn

        def call(*args: Any) -> Any:
            signature = args if key is None else key(*args)
            try:
                hit = cache.get(signature, _MISSING)
            except TypeError:  # an unhashable attribute value (a constant's array)
                return compute(*args)
            if hit is not _MISSING:
                return hit
            result = compute(*args)
            if len(cache) >= maxsize:
                cache.clear()
            cache[signature] = result
            return result

        functools.update_wrapper(call, fn)
        call.cache = cache  # type: ignore[attr-defined]
        call.cache_clear = cache.clear  # type: ignore[attr-defined]
        return cast(Memoized[P, R], call)
    return wrap
