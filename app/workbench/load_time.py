"""How the CLI and the app speak of a run's load-time work: the ops the compiler evaluates once when
the model is loaded (const-eval: transposes, reshapes, typecasts and broadcasts of weights), which
are not part of the per-step time."""

from __future__ import annotations

from collections.abc import Iterable

from tilescope.perfdb.records import LoadOp

LOAD_TIME = "load time (const-eval, once per model load)"
SHOWN_KINDS = 3  # op kinds named on a load-time line; the rest are counted


def duration_text(ns: float) -> str:
    """`1.23 ms`, `45.60 us` or `120 ns`: load-time work spans all three."""
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:,.2f} us"
    return f"{ns:,.0f} ns"


def ops_text(count: int, ns: float) -> str:
    """`24 ops, 1.23 ms`, or `none`"""
    if not count:
        return "none"
    return f"{count} op{'s' * (count != 1)}, {duration_text(ns)}"


def load_line(count: int, load_ns: float) -> str:
    """`load time (const-eval, once per model load): 24 ops, 1.23 ms`"""
    return f"{LOAD_TIME}: {ops_text(count, load_ns)}"


def by_kind(ops: Iterable[LoadOp]) -> list[tuple[str, int, float]]:
    """(kind, ops, ns) of the load ops per kind, the longest first."""
    found: dict[str, tuple[int, float]] = {}
    for op in ops:
        count, ns = found.get(op.kind, (0, 0.0))
        found[op.kind] = (count + 1, ns + op.duration_ns)
    return sorted(((kind, count, ns) for kind, (count, ns) in found.items()), key=lambda k: (-k[2], k[0]))


def kinds_text(ops: Iterable[LoadOp], shown: int = SHOWN_KINDS) -> str:
    """`broadcast 20 (1.00 ms), typecast 4 (230 ns), ... and 2 more`"""
    kinds = by_kind(ops)
    named = [f"{kind} {count} ({duration_text(ns)})" for kind, count, ns in kinds[:shown]]
    return ", ".join(named + ([f"... and {len(kinds) - shown} more"] if len(kinds) > shown else []))
