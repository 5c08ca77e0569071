"""One memo cache for the pure functions of an op's signature (its types and attributes).

A network repeats a few layer signatures thousands of times, and verification, conv facts,
layout resolution and emission each ask the same question of every copy. Attribute values
are immutable and hashable (tuples, strings, numbers), so the signature is the key; the one
exception, a constant's array, is left uncached (see `convc.ops.attr_kinds.TensorKind`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")
_MISSING = object()


class Memoized(Generic[P, R]):
    """`fn` with its results kept by `key(*args)`. An unhashable key computes directly; errors
    are not kept; at `maxsize` entries the cache starts over (cheaper than LRU bookkeeping,
    and a network's signatures fit many times over)."""

    def __init__(self, fn: Callable[P, R], maxsize: int, key: Callable[P, Hashable] | None):
        self.fn = fn
        self.maxsize = maxsize
        self.key = key
        self.cache: dict[Hashable, R] = {}
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        key = self.key(*args, **kwargs) if self.key is not None else (args, tuple(kwargs.items()))
        try:
            hit = self.cache.get(key, _MISSING)
        except TypeError:  # an unhashable attribute value (a constant's array)
            return self.fn(*args, **kwargs)
        if hit is not _MISSING:
            return hit  # type: ignore[return-value]
        result = self.fn(*args, **kwargs)
        if len(self.cache) >= self.maxsize:
            self.cache.clear()
        self.cache[key] = result
        return result

    def cache_clear(self) -> None:
        self.cache.clear()


@overload
def memoized(maxsize: int) -> Callable[[Callable[P, R]], Memoized[P, R]]: ...
@overload
def memoized(maxsize: int, key: Callable[P, Hashable]) -> Callable[[Callable[P, R]], Memoized[P, R]]: ...


def memoized(maxsize: int, key: Callable[P, Hashable] | None = None) -> Callable[[Callable[P, R]], Memoized[P, R]]:
    """Decorator: memoize a pure function by `key(*args)` (default: the arguments themselves)."""
    def wrap(fn: Callable[P, R]) -> Memoized[P, R]:
        return Memoized(fn, maxsize, key)
    return wrap
