"""Tracy's find zone: the zones of one op (one per core it ran on) or the ops of one kind, their
durations in the buckets the statistics tab's histogram draws, and the zones of the buckets a user
picks there. Buckets are made here, not by Plotly, so a pick names the same zones the bars count,
and the browser gets at most MAX_BUCKETS bars however many zones there are."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy.orm import Session

from tilescope.compiler.profiles.measured_ops import MEASURED
from tilescope.compiler.sim.tracks import parse_track
from tilescope.perfdb import timeline
from tilescope.perfdb.runs import op_record

MAX_BUCKETS = 60
MIN_BUCKETS = 10
LISTED = 200  # zones a pick lists, the longest first; the rest are counted
OP_ROW = "device"  # where an op of a kind ran: the timeline's device row, from its start to its end


@dataclass(frozen=True)
class FoundZone:
    op: str
    track: str  # the core it ran on ("core 0,1"), or OP_ROW for a whole op of a kind
    start_ns: float
    duration_ns: float


@dataclass(frozen=True)
class Buckets:
    """Equal buckets from the shortest duration to the longest, the last one holding the longest."""

    start_ns: float
    width_ns: float
    counts: tuple[int, ...]

    @classmethod
    def of(cls, durations: Sequence[float]) -> Buckets:
        """Half as many buckets as durations, within MIN_BUCKETS..MAX_BUCKETS; one when all are
        equal (as the zones of cores given equal shares are)."""
        if not len(durations):
            return cls(0.0, 1.0, ())
        lo, hi = float(min(durations)), float(max(durations))
        if hi > lo:
            n = min(MAX_BUCKETS, max(MIN_BUCKETS, len(durations) // 2))
            start, width = lo, (hi - lo) / n
        else:
            n, width = 1, max(abs(lo) * 0.02, 1.0)
            start = lo - width / 2
        counts = np.bincount(_index(durations, start, width, n), minlength=n)
        return cls(start, width, tuple(int(c) for c in counts))

    def index(self, durations: Sequence[float]) -> np.ndarray:
        """The bucket of each duration."""
        return _index(durations, self.start_ns, self.width_ns, len(self.counts))

    def edges(self, i: int) -> tuple[float, float]:
        return self.start_ns + i * self.width_ns, self.start_ns + (i + 1) * self.width_ns


def _index(durations: Sequence[float], start: float, width: float, n: int) -> np.ndarray:
    # the longest duration ends the last bucket: it belongs to it, not to one past the end
    at = np.floor((np.asarray(durations, dtype=float) - start) / width)
    return np.clip(at, 0, max(n - 1, 0)).astype(int)


@dataclass(frozen=True)
class Picked:
    """The zones of the buckets a user picked: `listed` of them, the longest first, of `total`."""

    listed: list[FoundZone]
    total: int
    span_ns: tuple[float, float]  # from the start of the first bucket picked to the end of the last

    @property
    def more(self) -> int:
        return self.total - len(self.listed)


def op_zones(session: Session, run_id: int, op: str | None) -> list[FoundZone]:
    """One op's zones, one per core it ran on (a measured op's, one per device it ran on), by start."""
    record = op_record(session, run_id, op) if op else None
    if record is None:
        return []
    if record.level == MEASURED:  # no cores measured: the op's zone on each device's row, each on its own clock
        zones = timeline.zones(session, run_id, depth=0, op=op)
        return [FoundZone(z.op, z.track, z.start_ns, z.end_ns - z.start_ns) for z in zones]
    # the op's own time window bounds the scan; the device row is not a core
    zones = timeline.zones(session, run_id, record.start_ns, record.start_ns + record.duration_ns, depth=0, op=op)
    return [
        FoundZone(z.op, z.track, z.start_ns, z.end_ns - z.start_ns) for z in zones if parse_track(z.track) is not None
    ]


def kind_ops(records: Iterable, kind: str, by: str = "kind") -> list[FoundZone]:
    """The ops of one kind (or, `by` "code", of one op code: a measured op's, a simulated op's kind)
    among a run's op records, each as one zone on the device row."""
    if by == "code":
        return [FoundZone(r.name, OP_ROW, r.start_ns, r.duration_ns) for r in records if (r.op_code or r.kind) == kind]
    return [FoundZone(r.name, OP_ROW, r.start_ns, r.duration_ns) for r in records if r.kind == kind]


def pick(zones: Sequence[FoundZone], chosen: Iterable[int], limit: int = LISTED) -> Picked:
    """The zones in the buckets numbered `chosen` (as Buckets.of draws them; numbers out of range
    are left out), the longest `limit` of them listed."""
    buckets = Buckets.of([z.duration_ns for z in zones])
    wanted = sorted({int(i) for i in chosen if 0 <= int(i) < len(buckets.counts)})
    if not wanted:
        return Picked([], 0, (0.0, 0.0))
    inside = np.isin(buckets.index([z.duration_ns for z in zones]), wanted)
    found = [z for z, keep in zip(zones, inside.tolist()) if keep]
    listed = heapq.nsmallest(limit, found, key=lambda z: (-z.duration_ns, z.start_ns, z.track))
    return Picked(listed, len(found), (buckets.edges(wanted[0])[0], buckets.edges(wanted[-1])[1]))
