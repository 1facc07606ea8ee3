"""Level of detail for the timeline, as Tracy draws it: zones too short to see at the current zoom
are merged into one "N zones" marker per track, so a window query returns at most a few thousand
items per track whatever the size of the trace.

Level `l` has buckets `BASE_NS * 4**l` wide. A zone's `lod` is the highest level whose bucket it
is at least as long as (-1 when shorter than BASE_NS). At level `l` a window query returns the zones
with lod >= l one by one, and the markers of level `l`: per track, depth and bucket, the zones with
lod < l that start in it, merged. Markers are computed once, when a run is stored, each level from
the one below (a bucket holds four of the level below), so storing them costs about as much as
sorting the zones once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BASE_NS = 100.0  # the finest bucket: below this, zones are always drawn one by one
FACTOR = 4
LEVELS = 16  # 100 ns .. 107 s buckets


def width(level: int) -> float:
    return BASE_NS * FACTOR**level


def lod_of(durations: np.ndarray) -> np.ndarray:
    """Each zone's level: the highest l with duration >= width(l), or -1."""
    with np.errstate(divide="ignore"):
        levels = np.floor(np.log(np.maximum(durations, 1e-9) / BASE_NS) / np.log(FACTOR))
    levels = np.where(durations >= BASE_NS, levels, -1)
    # floating point at exact powers: a zone exactly width(l) long belongs to level l
    levels = np.where((levels + 1 < LEVELS) & (durations >= BASE_NS * FACTOR ** (levels + 1)), levels + 1, levels)
    return np.clip(levels, -1, LEVELS - 1).astype(np.int16)


def level_for(resolution_ns: float) -> int:
    """The level whose buckets are at least `resolution_ns` wide (merging what is narrower than a
    pixel or so), so a window holds at most (t1 - t0) / resolution buckets per track."""
    for level in range(LEVELS):
        if width(level) >= resolution_ns:
            return level
    return LEVELS - 1


@dataclass(frozen=True)
class Markers:
    """Markers of every level, as parallel arrays."""

    level: np.ndarray
    track: np.ndarray  # index into the run's track names
    depth: np.ndarray
    start: np.ndarray
    end: np.ndarray
    count: np.ndarray
    busy: np.ndarray  # summed durations of the merged zones

    def rows(self, tracks: Sequence[str]):
        for i in range(len(self.level)):
            yield (
                int(self.level[i]), tracks[self.track[i]], int(self.depth[i]), float(self.start[i]),
                float(self.end[i]), int(self.count[i]), float(self.busy[i]),
            )


def markers(track: np.ndarray, depth: np.ndarray, start: np.ndarray, end: np.ndarray, lod: np.ndarray) -> Markers:
    """Markers for levels 1.. of zones given as arrays (track as an integer index)."""
    out: list[tuple[np.ndarray, ...]] = []
    # carried from level to level: markers so far (zones with lod below the level), not yet bucketed
    cur = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, np.int64), np.empty(0))
    for level in range(1, LEVELS):
        newly = lod == level - 1 if level > 1 else lod <= 0  # zones now too short to draw alone
        t, d, s, e = track[newly].astype(np.int64), depth[newly].astype(np.int64), start[newly], end[newly]
        parts = (
            np.concatenate([cur[0], t]), np.concatenate([cur[1], d]), np.concatenate([cur[2], s]),
            np.concatenate([cur[3], e]), np.concatenate([cur[4], np.ones(len(t), np.int64)]),
            np.concatenate([cur[5], e - s]),
        )
        if not len(parts[0]):
            continue
        bucket = np.floor(parts[2] / width(level)).astype(np.int64)
        order = np.lexsort((bucket, parts[1], parts[0]))
        tt, dd, bb = parts[0][order], parts[1][order], bucket[order]
        first = np.ones(len(order), bool)
        first[1:] = (tt[1:] != tt[:-1]) | (dd[1:] != dd[:-1]) | (bb[1:] != bb[:-1])
        at = np.flatnonzero(first)
        cur = (
            tt[at], dd[at],
            np.minimum.reduceat(parts[2][order], at), np.maximum.reduceat(parts[3][order], at),
            np.add.reduceat(parts[4][order], at), np.add.reduceat(parts[5][order], at),
        )
        out.append((np.full(len(at), level, np.int16), *cur))
    if not out:
        empty = np.empty(0)
        return Markers(empty.astype(np.int16), empty.astype(np.int64), empty.astype(np.int64), empty, empty, empty.astype(np.int64), empty)
    columns = [np.concatenate(c) for c in zip(*out)]
    return Markers(*columns)
