"""Read the few attribute values passes need from their MLIR text (`array<i64: 1, 2>`, `3 : i32`)."""

from __future__ import annotations

import re

_INT = re.compile(r"-?\d+")


def ints(text: str | None) -> tuple[int, ...]:
    """All integers of an array or list attribute: 'array<i64: 1, 2>' and '[2 : i32, 3 : i32]'
    give (1, 2) and (2, 3). Element type widths (the 64 of i64) are not values and are skipped."""
    if not text:
        return ()
    body = text
    if body.startswith("array<"):
        body = body[body.find(":") + 1 : body.rfind(">")] if ":" in body else ""
    body = re.sub(r":\s*[a-z]+\d*", "", body)  # drop ': i32' type suffixes
    return tuple(int(v) for v in _INT.findall(body))


def integer(value) -> int:
    """An integer attribute: an int, or its MLIR text (`32 : i64`); ValueError for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    found = ints(str(value))
    if len(found) != 1:
        raise ValueError(value)
    return found[0]
