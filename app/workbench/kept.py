"""Kept: the newest values of a cache, so a long-running server's memory stays bounded. The one
cache type of the workbench; callers that share one across threads hold their own lock."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    """At most `size` values by key; the one kept or made longest ago goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: dict[Hashable, V] = {}  # oldest first: dicts keep insertion order

    def get(self, key: Hashable) -> V | None:
        return self._values.get(key)

    def keep(self, key: Hashable, value: V) -> V:
        """`value` under `key`, as the newest."""
        self._values.pop(key, None)
        self._values[key] = value
        while len(self._values) > self.size:
            self._values.pop(next(iter(self._values)))
        return value

    def of(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept under `key`, made (and kept as the newest) if there is none."""
        if key in self._values:
            return self._values[key]
        return self.keep(key, make())

    def clear(self) -> None:
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
