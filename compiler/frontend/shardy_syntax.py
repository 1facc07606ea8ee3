"""Shardy's attribute syntax, read as text: meshes, tensor shardings and the axis lists of its
explicit collectives (https://openxla.org/shardy/sdy_dialect).

MLIR keeps attributes of unregistered dialects as opaque text (`#sdy.sharding<@mesh, [{"x"}, {}]>`),
so their meaning is read here. Each reader takes one attribute's text and raises ValueError with
the cause on anything it does not know; the callers add file:line. Flat grammars, no recursion: a
token list walked once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_TOKEN = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|@[\w.$-]++|->|\d++|[A-Za-z_][\w.]*+|\S')


@dataclass(frozen=True)
class MeshSpec:
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None  # None: the default order, row-major over the axes


@dataclass(frozen=True)
class ShardingSpec:
    """One tensor's `<@mesh, [{"x", ?}, {}], replicated={"y"}, unreduced={"z"}>` as written.
    Axes are names, or `name:(pre)size` for a sub-axis (resolved against the mesh later)."""

    mesh: str  # the mesh's symbol name without @, or "" when the mesh is written inline
    dims: tuple[tuple[str, ...], ...]
    unreduced: tuple[str, ...] = ()
    inline_mesh: MeshSpec | None = None


class _Tokens:
    def __init__(self, text: str) -> None:
        self.items = _TOKEN.findall(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        return self.items[self.i + ahead] if self.i + ahead < len(self.items) else ""

    def take(self, *expected: str) -> str:
        token = self.peek()
        if expected and token not in expected:
            shown = token or "the end"
            raise ValueError(f"expected {' or '.join(repr(e) for e in expected)}, found {shown!r}")
        if not token:
            raise ValueError("unexpected end")
        self.i += 1
        return token

    def string(self) -> str:
        token = self.take()
        if not token.startswith('"'):
            raise ValueError(f"expected an axis name in quotes, found {token!r}")
        return token[1:-1]

    def number(self) -> int:
        token = self.take()
        if not token.isdigit():
            raise ValueError(f"expected a number, found {token!r}")
        return int(token)

    def end(self) -> None:
        if self.peek():
            raise ValueError(f"unexpected {self.peek()!r}")

    def listed(self, item: Callable[[], T]) -> list[T]:
        """`[item, item, ...]`, each read by `item`."""
        self.take("[")
        found = []
        while self.peek() != "]":
            found.append(item())
            if self.peek() != "]":
                self.take(",")
        self.take("]")
        return found


def parse_mesh(text: str) -> MeshSpec:
    """`<["x"=2, "y"=4], device_ids=[...]>`, `<[]>` or `<device_ids=[0]>`."""
    tokens = _Tokens(text)
    mesh = _mesh(tokens)
    tokens.end()
    return mesh


def _mesh(tokens: _Tokens) -> MeshSpec:
    tokens.take("<")
    axes: list[tuple[str, int]] = []
    ids: tuple[int, ...] | None = None
    if tokens.peek() == "[":
        axes = tokens.listed(lambda: _sized_axis(tokens))
        if tokens.peek() == ",":
            tokens.take(",")
    if tokens.peek() == "device_ids":
        tokens.take("device_ids")
        tokens.take("=")
        ids = tuple(_numbers(tokens))
    tokens.take(">")
    return MeshSpec(tuple(axes), ids)


def _sized_axis(tokens: _Tokens) -> tuple[str, int]:
    name = tokens.string()
    tokens.take("=")
    return name, tokens.number()


def _numbers(tokens: _Tokens) -> list[int]:
    return tokens.listed(tokens.number)


def parse_sharding(text: str) -> ShardingSpec:
    """`#sdy.sharding<...>` or the bare `<...>` of an op's out_sharding."""
    tokens = _Tokens(text.removeprefix("#sdy.sharding"))
    spec = _sharding(tokens)
    tokens.end()
    return spec


def parse_sharding_list(text: str) -> list[ShardingSpec]:
    """`#sdy.sharding_per_value<[<...>, ...]>` or the bare `[<...>, ...]` of in/out_shardings."""
    body = text.removeprefix("#sdy.sharding_per_value")
    tokens = _Tokens(body)
    wrapped = body.startswith("<")
    if wrapped:
        tokens.take("<")
    found = tokens.listed(lambda: _sharding(tokens))
    if wrapped:
        tokens.take(">")
    tokens.end()
    return found


def _sharding(tokens: _Tokens) -> ShardingSpec:
    tokens.take("<")
    inline = None
    if tokens.peek().startswith("@"):
        mesh = tokens.take()[1:]
    elif tokens.peek() in ("mesh", "#"):
        if tokens.take() == "#":
            tokens.take("sdy.mesh")
        mesh, inline = "", _mesh(tokens)
    else:
        raise ValueError(f"expected a mesh (@name), found {tokens.peek() or 'the end'!r}")
    tokens.take(",")
    dims = tokens.listed(lambda: _dim(tokens))
    unreduced: tuple[str, ...] = ()
    while tokens.peek() == ",":
        tokens.take(",")
        key = tokens.take("replicated", "unreduced")
        tokens.take("=")
        if tokens.peek() in ("sum", "max", "min", "and", "or", "mul"):
            tokens.take()  # the reduction of unreduced axes: a sum unless it says otherwise
        axes = _axis_set(tokens)
        if key == "unreduced":
            unreduced = axes
    tokens.take(">")
    return ShardingSpec(mesh, tuple(dims), unreduced, inline)


def _dim(tokens: _Tokens) -> tuple[str, ...]:
    """`{"x", "y":(1)2, ?}` with an optional priority `p1` after it; `?` (open) adds no axis."""
    tokens.take("{")
    axes = []
    while tokens.peek() != "}":
        if tokens.peek() == "?":
            tokens.take("?")
        else:
            axes.append(_axis(tokens))
        if tokens.peek() != "}":
            tokens.take(",")
    tokens.take("}")
    if re.fullmatch(r"p\d+", tokens.peek()):
        tokens.take()
    return tuple(axes)


def _axis(tokens: _Tokens) -> str:
    name = tokens.string()
    if tokens.peek() != ":":
        return name
    tokens.take(":")
    tokens.take("(")
    pre = tokens.number()
    tokens.take(")")
    return f"{name}:({pre}){tokens.number()}"


def _axis_set(tokens: _Tokens) -> tuple[str, ...]:
    tokens.take("{")
    axes = []
    while tokens.peek() != "}":
        axes.append(_axis(tokens))
        if tokens.peek() != "}":
            tokens.take(",")
    tokens.take("}")
    return tuple(axes)


def parse_axis_set(text: str) -> tuple[str, ...]:
    """`{"x", "y"}`: all_reduce's reduction axes, manual_computation's manual axes."""
    tokens = _Tokens(text)
    axes = _axis_set(tokens)
    tokens.end()
    return axes


def parse_axes_per_dim(text: str) -> tuple[tuple[str, ...], ...]:
    """`[{}, {"x"}]`: the axes an all_gather, all_slice or reduce_scatter works over, per dimension."""
    tokens = _Tokens(text)
    dims = tokens.listed(lambda: _dim(tokens))
    tokens.end()
    return tuple(dims)


def parse_all_to_all(text: str) -> list[tuple[tuple[str, ...], int, int]]:
    """`[{"x"}: 0->2, ...]`: (axes, source dimension, target dimension) per parameter."""
    tokens = _Tokens(text)

    def move() -> tuple[tuple[str, ...], int, int]:
        axes = _axis_set(tokens)
        tokens.take(":")
        source = tokens.number()
        tokens.take("->")
        return axes, source, tokens.number()

    found = tokens.listed(move)
    tokens.end()
    return found


def sub_axis(axis: str) -> tuple[str, int, int] | None:
    """(axis, pre-size, size) of a sub-axis `x:(1)2`; None for a whole axis."""
    name, colon, rest = axis.rpartition(":")
    match = re.fullmatch(r"\((\d+)\)(\d+)", rest) if colon else None
    return (name, int(match.group(1)), int(match.group(2))) if match else None
