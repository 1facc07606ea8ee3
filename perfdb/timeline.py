"""A run's timeline read back from its packed blocks (perfdb.blocks): its zones, the window of them
a timeline draws at a zoom (perfdb.lod), and its counter samples. Each function takes a Session;
the caller owns its lifecycle.

The records are named tuples, not dataclasses: a window or a run's zones may hold hundreds of
thousands, and a tuple is made four times faster than a frozen dataclass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
from sqlalchemy.orm import Session

from tilescope.perfdb import blocks
from tilescope.perfdb import lod
from tilescope.perfdb import shared_blocks
from tilescope.perfdb.runs import get_run
from tilescope.perfdb.schema import TimelineBlock


class StoredZone(NamedTuple):
    track: str
    depth: int
    name: str
    start_ns: float
    end_ns: float
    op: str
    lod: int  # the first level of detail that draws it inside a marker (perfdb.lod)


class WindowItem(NamedTuple):
    """One thing to draw: a zone (count 1), or a marker of `count` zones merged."""

    track: str
    depth: int
    name: str  # the zone's name, or "N zones"
    start_ns: float
    end_ns: float
    op: str  # the zone's op; "" for a marker
    count: int = 1
    busy_ns: float = 0.0  # a marker's summed zone time (its zones need not fill it)

    @property
    def label(self) -> str:
        """What a timeline names it by: its op, an engine's phase of its op, or the marker's name."""
        return f"{self.op} · {self.name}" if self.op and self.depth else (self.op or self.name)


class StoredCounter(NamedTuple):
    track: str
    name: str
    t_ns: float
    value: float


def zone_names(session: Session, run_id: int) -> tuple[list[str], dict[str, str]]:
    """The names a run's zone blocks index, and which tracks share another's zones (perfdb.blocks)."""
    for _, _, data, _ in shared_blocks.stored(session, run_id, blocks.NAMES):
        return blocks.unpack_names(data)
    return [], {}


def _blocks(
    session: Session,
    run_id: int,
    kind: str,
    t0: float,
    t1: float,
    tracks: Sequence[str] | None = None,
    *where,
    same_as: dict[str, str] | None = None,
) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
    """(track, columns) of the blocks of `kind` that may hold rows in [t0, t1] on `tracks` (all
    when None) and meet the SQL conditions `where`, by stored track and start. A track that shares
    another's zones (`same_as`) gets that track's blocks."""
    b = TimelineBlock.__table__.c
    where = list(where)
    shown: dict[str, list[str]] = {}  # stored track -> the tracks its blocks are shown on
    if tracks is not None:
        for track in dict.fromkeys(tracks):  # each once, as SQL's IN would
            shown.setdefault((same_as or {}).get(track, track), []).append(track)
        where.append(b.track.in_(list(shown)))
    else:
        for alias, track in (same_as or {}).items():
            shown.setdefault(track, [track]).append(alias)
    if t1 < np.inf:
        where.append(b.start_ns <= t1)
    if t0 > -np.inf:
        where.append(b.end_ns >= t0)
    for track, _, data, shift in shared_blocks.stored(session, run_id, kind, *where, order_by=(b.track, b.start_ns)):
        columns = shared_blocks.columns_and_names(kind, data, shift)[0]
        for on in shown.get(track, (track,)):
            yield on, columns


def zones(
    session: Session,
    run_id: int,
    t0: float | None = None,
    t1: float | None = None,
    tracks: Sequence[str] | None = None,
    depth: int | None = None,
    op: str | None = None,
) -> list[StoredZone]:
    """Zones overlapping [t0, t1] on the given tracks (all when None) at one nesting depth (all when
    None), of one op (all when None), by start time."""
    t0 = -np.inf if t0 is None else t0
    t1 = np.inf if t1 is None else t1
    names, same_as = zone_names(session, run_id)
    wanted = names.index(op) if op in names else -1
    found = []
    for track, rows in _blocks(session, run_id, blocks.ZONES, t0, t1, tracks, same_as=same_as):
        keep = (rows["start"] <= t1) & (rows["end"] >= t0)
        if depth is not None:
            keep &= rows["depth"] == depth
        if op is not None:
            keep &= rows["op"] == wanted
        found += [
            StoredZone(track, d, names[n], s, e, names[o], lod)
            for d, s, e, n, o, lod in zip(
                *(rows[c][keep].tolist() for c in ("depth", "start", "end", "name", "op", "lod"))
            )
        ]
    return sorted(found, key=lambda z: z.start_ns)


def timeline_window(
    session: Session,
    run_id: int,
    t0: float,
    t1: float,
    resolution_ns: float,
    tracks: Sequence[str] | None = None,
) -> list[WindowItem]:
    """What to draw of [t0, t1] at `resolution_ns` per pixel, on `tracks` (default all of the run's):
    zones at least about one pixel long one by one, shorter ones merged into one marker per track,
    depth and bucket (perfdb.lod). At most about 2 * (t1 - t0) / resolution_ns items per track and
    depth, however many zones the run holds. By track, then start."""
    if tracks is None:
        tracks = get_run(session, run_id).tracks
    tracks = list(tracks)
    if not tracks or t1 < t0:
        return []
    level = lod.level_for(resolution_ns) if resolution_ns > lod.BASE_NS else 0
    b = TimelineBlock.__table__.c
    names, same_as = zone_names(session, run_id)
    items = []
    # the zones not merged at this level one by one, then this level's markers
    for track, rows in _blocks(session, run_id, blocks.ZONES, t0, t1, tracks, b.top_level > level, same_as=same_as):
        keep = (rows["lod"] > level) & (rows["start"] <= t1) & (rows["end"] >= t0)
        items += [
            WindowItem(track, d, names[n], s, e, names[o])
            for d, s, e, n, o in zip(*(rows[c][keep].tolist() for c in ("depth", "start", "end", "name", "op")))
        ]
    if level >= 1:
        for track, rows in _blocks(
            session, run_id, blocks.MARKERS, t0, t1, tracks, b.level <= level, b.top_level >= level, same_as=same_as
        ):
            keep = (rows["level"] == level) & (rows["start"] <= t1) & (rows["end"] >= t0)
            items += [
                WindowItem(track, d, f"{count} zones", s, e, "", count, busy)
                for d, s, e, count, busy in zip(
                    *(rows[c][keep].tolist() for c in ("depth", "start", "end", "count", "busy"))
                )
            ]
    order = {track: i for i, track in enumerate(tracks)}
    return sorted(items, key=lambda item: (order[item.track], item.depth, item.start_ns))


def merged(
    track: str, names: Sequence[str], start: Sequence[float], end: Sequence[float], resolution_ns: float
) -> list[WindowItem]:
    """Zones of one row made on the fly (the device row: each op from its start to its end),
    merged as timeline_window merges stored ones: at `resolution_ns` per pixel, runs of short
    zones become "N zones" markers, so a 100k-op run's row is a few thousand items, not 100k."""
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    level = lod.level_for(resolution_ns) if resolution_ns > lod.BASE_NS else 0
    if level == 0 or not len(start):
        return [WindowItem(track, 0, n, s, e, n) for n, s, e in zip(names, start.tolist(), end.tolist())]
    zero = np.zeros(len(start), np.int64)
    found = lod.markers(zero, zero, start, end)
    alone = np.flatnonzero(found.zone_lod > level)  # not inside a marker at this level
    items = [
        WindowItem(track, 0, names[i], s, e, names[i])
        for i, s, e in zip(alone.tolist(), start[alone].tolist(), end[alone].tolist())
    ]
    at = found.level == level
    items += [
        WindowItem(track, 0, f"{count} zones", s, e, "", count, busy)
        for s, e, count, busy in zip(*(c[at].tolist() for c in (found.start, found.end, found.count, found.busy)))
    ]
    return sorted(items, key=lambda item: item.start_ns)


def counters(
    session: Session, run_id: int, name: str | None = None, tracks: Sequence[str] | None = None
) -> list[StoredCounter]:
    """A run's counter samples (optionally one counter, some tracks), by track and time."""
    names = zone_names(session, run_id)[0]
    wanted = names.index(name) if name in names else -1
    found = []
    for track, rows in _blocks(session, run_id, blocks.COUNTERS, -np.inf, np.inf, tracks):
        keep = rows["name"] == wanted if name is not None else slice(None)
        found += [
            StoredCounter(track, names[n], t, v)
            for n, t, v in zip(*(rows[c][keep].tolist() for c in ("name", "t", "value")))
        ]
    return found  # blocks come by track and time, each by time


def counter_names(session: Session, run_id: int) -> list[str]:
    """The names of the counters a run recorded."""
    names = zone_names(session, run_id)[0]
    used = {
        n
        for _, rows in _blocks(session, run_id, blocks.COUNTERS, -np.inf, np.inf)
        for n in np.unique(rows["name"]).tolist()
    }
    return sorted(names[n] for n in used)


def counter_envelope(session: Session, run_id: int, name: str) -> list[tuple[float, float]]:
    """(t, the largest value of counter `name` over all its tracks at t), by time: the fullest
    core's L1 over a run."""
    names = zone_names(session, run_id)[0]
    if name not in names:
        return []
    wanted = names.index(name)
    t, value = [], []
    for _, rows in _blocks(session, run_id, blocks.COUNTERS, -np.inf, np.inf):
        keep = rows["name"] == wanted
        t.append(rows["t"][keep])
        value.append(rows["value"][keep])
    if not t:
        return []
    t, value = np.concatenate(t), np.concatenate(value)
    times, at = np.unique(t, return_inverse=True)
    largest = np.full(len(times), -np.inf)
    np.maximum.at(largest, at, value)
    return list(zip(times.tolist(), largest.tolist()))
