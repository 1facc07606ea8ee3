"""A diff summed by op kind: what `tilescope diff` and the diff view show above (or below) the per-op
rows, so a prediction against a measurement of 1,872 ops reads as a dozen lines: which kinds the
simulator over- or underestimates, and by how much in all."""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.perfdb.diff import RunDiff


@dataclass(slots=True)
class KindDelta:
    """One op kind's ops in both runs: those paired and those only one run has, their times summed."""

    kind: str
    a_ops: int
    b_ops: int
    a_ns: float
    b_ns: float

    @property
    def delta_ns(self) -> float:
        return self.b_ns - self.a_ns

    @property
    def ratio(self) -> float | None:
        """b / a of the sums; None when a took no time."""
        return self.b_ns / self.a_ns if self.a_ns else None


def kind_deltas(d: RunDiff) -> list[KindDelta]:
    """Each kind of op either run has, by |delta| descending (then by name)."""
    kinds: dict[str, KindDelta] = {}

    def add(kind: str, a_ns: float | None, b_ns: float | None) -> None:
        row = kinds.setdefault(kind, KindDelta(kind, 0, 0, 0.0, 0.0))
        if a_ns is not None:
            row.a_ops += 1
            row.a_ns += a_ns
        if b_ns is not None:
            row.b_ops += 1
            row.b_ns += b_ns

    for op in d.ops:
        add(op.kind, op.a_ns, op.b_ns)
    for op in (*d.removed, *d.collectives.removed):
        add(op.kind, op.ns, None)
    for op in (*d.inserted, *d.collectives.inserted):
        add(op.kind, None, op.ns)
    return sorted(kinds.values(), key=lambda row: (-abs(row.delta_ns), row.kind))


def kind_lines(d: RunDiff, shown: int) -> list[str]:
    """The first `shown` kinds as a table, the rest counted."""
    rows = kind_deltas(d)
    if not rows:
        return []
    width = max(len(row.kind) for row in rows[:shown])
    lines = [
        f"by kind: {'kind':<{width}}  {'a ops':>6} {'b ops':>6} {'a us':>12} {'b us':>12} {'delta us':>12} {'ratio':>7}"
    ]
    for row in rows[:shown]:
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else "-"
        lines.append(
            f"         {row.kind:<{width}}  {row.a_ops:>6,} {row.b_ops:>6,} {row.a_ns / 1e3:>12,.2f} "
            f"{row.b_ns / 1e3:>12,.2f} {row.delta_ns / 1e3:>+z12,.2f} {ratio:>7}"
        )
    if len(rows) > shown:
        lines.append(f"         ... and {len(rows) - shown} more kinds")
    return lines
