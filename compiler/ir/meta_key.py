"""A key of a graph's or an op's `meta`, and the dict that holds them. Every key is declared
once, in compiler/ir/meta.py; `Meta` is a plain dict at run time (as fast to read), typed so that
`meta[key]` has the type its key says.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

T = TypeVar("T")
D = TypeVar("D")

DECLARATIONS = "tilescope.compiler.ir.meta"  # imported by name: it imports this module
_KEYS: dict[str, MetaKey[Any]] = {}  # name -> key, for unpickling and the verifier


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per key, fast in a dict
class MetaKey(Generic[T]):
    name: str
    about: Literal["graph", "op"]
    level: str  # the first level that holds it
    written_by: tuple[str, ...]  # the passes (or importers) that write it

    def __post_init__(self) -> None:
        assert self.name not in _KEYS, f"meta key {self.name!r} declared twice"
        _KEYS[self.name] = self

    def __repr__(self) -> str:
        return f"MetaKey({self.name!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return key_named, (self.name,)  # unpickled as the one key of that name


def key_named(name: str) -> MetaKey[Any]:
    importlib.import_module(DECLARATIONS)  # declares the keys, when a pickle is read first
    return _KEYS[name]


def declared(about: Literal["graph", "op"]) -> frozenset[MetaKey[Any]]:
    """The keys a graph's (or an op's) meta may hold."""
    return frozenset(key for key in _KEYS.values() if key.about == about)


class Meta(dict):
    """A graph's or an op's pass results, by `MetaKey`. The methods below only type it."""

    if TYPE_CHECKING:

        def __getitem__(self, key: MetaKey[T]) -> T: ...
        def __setitem__(self, key: MetaKey[T], value: T) -> None: ...
        def __contains__(self, key: object) -> bool: ...
        def __delitem__(self, key: MetaKey[Any]) -> None: ...
        @overload
        def get(self, key: MetaKey[T]) -> T | None: ...
        @overload
        def get(self, key: MetaKey[T], default: D) -> T | D: ...
        def get(self, key: MetaKey[T], default: object = None) -> object: ...
        def setdefault(self, key: MetaKey[T], default: T) -> T: ...
