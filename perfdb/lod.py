"""Level of detail for the timeline, as Tracy draws it: zones too short to see at the current zoom
are merged into one "N zones" marker per track, so a window query returns at most a few thousand
items per track whatever the size of the trace.

Level `l` has buckets `BASE_NS * 4**l` wide. At level `l`, the zones shorter than a bucket are
grouped by track, depth and the bucket they start in; a group of two or more is a marker. A zone's
`lod` is the first level at which it is inside a marker (LEVELS if never): a window query at
level `l` returns the zones with lod > l one by one (long ones, and short ones alone in their
bucket) and the markers of level `l`. Markers are computed once, when a run is stored, each level
from the one below (a bucket holds four of the level below), and only groups that merge something
are stored, so they add far fewer rows than the zones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BASE_NS = 100.0  # the finest bucket: below this, zones are always drawn one by one
FACTOR = 4
LEVELS = 16  # 100 ns .. 107 s buckets


def width(level: int) -> float:
    return BASE_NS * FACTOR**level


def short_level(durations: np.ndarray) -> np.ndarray:
    """The first level whose bucket is longer than each zone (0 when shorter than BASE_NS)."""
    with np.errstate(divide="ignore"):
        levels = np.floor(np.log(np.maximum(durations, 1e-9) / BASE_NS) / np.log(FACTOR)) + 1
    levels = np.where(durations >= BASE_NS, levels, 0)
    # floating point at exact powers: a zone exactly width(l) long is not shorter than level l's bucket
    levels = np.where((levels < LEVELS) & (durations >= BASE_NS * FACTOR**levels), levels + 1, levels)
    return np.clip(levels, 0, LEVELS).astype(np.int64)


def level_for(resolution_ns: float) -> int:
    """The level whose buckets are at least `resolution_ns` wide (merging what is narrower than a
    pixel or so), so a window holds at most (t1 - t0) / resolution buckets per track."""
    for level in range(LEVELS):
        if width(level) >= resolution_ns:
            return level
    return LEVELS - 1


@dataclass(frozen=True)
class Markers:
    """Markers of every level, as parallel arrays, and each zone's `lod`."""

    level: np.ndarray
    track: np.ndarray  # index into the run's track names
    depth: np.ndarray
    start: np.ndarray
    end: np.ndarray
    count: np.ndarray
    busy: np.ndarray  # summed durations of the merged zones
    zone_lod: np.ndarray  # per zone: the first level at which it is inside a marker, LEVELS if never


def markers(
    track: np.ndarray, depth: np.ndarray, start: np.ndarray, end: np.ndarray, origin: np.ndarray | None = None
) -> Markers:
    """Markers of levels 1.. of zones given as arrays (track as an integer index). With `origin`,
    `track` is a page (perfdb.pages) and origin[page] its start, from which its buckets count."""
    n = len(start)
    many_tracks = n > 0 and bool((track != track[0]).any())
    short_from = short_level(end - start)
    zone_lod = np.full(n, LEVELS, np.int64)
    group = np.full(n, -1, np.int64)  # each short zone's group at the current level
    # the current level's groups: track, depth, start, end, count, busy
    cur = [np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, np.int64), np.empty(0)]
    out: list[list[np.ndarray]] = []
    for level in range(1, LEVELS):
        newly = np.flatnonzero(short_from == level) if level > 1 else np.flatnonzero(short_from <= 1)
        group[newly] = len(cur[0]) + np.arange(len(newly))
        parts = [
            np.concatenate([cur[0], track[newly]]),
            np.concatenate([cur[1], depth[newly]]),
            np.concatenate([cur[2], start[newly]]),
            np.concatenate([cur[3], end[newly]]),
            np.concatenate([cur[4], np.ones(len(newly), np.int64)]),
            np.concatenate([cur[5], end[newly] - start[newly]]),
        ]
        if not len(parts[0]):
            continue
        since = parts[2] if origin is None else parts[2] - origin[parts[0]]
        bucket = np.floor(since / width(level)).astype(np.int64)
        # one track, as a run is stored (track by track): a key less to sort and compare by
        order = np.lexsort((bucket, parts[1], parts[0]) if many_tracks else (bucket, parts[1]))
        tt, dd, bb = parts[0][order], parts[1][order], bucket[order]
        first = np.ones(len(order), bool)
        first[1:] = (dd[1:] != dd[:-1]) | (bb[1:] != bb[:-1])
        if many_tracks:
            first[1:] |= tt[1:] != tt[:-1]
        at = np.flatnonzero(first)
        renumber = np.empty(len(order), np.int64)
        renumber[order] = np.cumsum(first) - 1
        cur = [
            tt[at],
            dd[at],
            np.minimum.reduceat(parts[2][order], at),
            np.maximum.reduceat(parts[3][order], at),
            np.add.reduceat(parts[4][order], at),
            np.add.reduceat(parts[5][order], at),
        ]
        short = np.flatnonzero(group >= 0)
        group[short] = renumber[group[short]]
        merged = short[(zone_lod[short] == LEVELS) & (cur[4][group[short]] >= 2)]
        zone_lod[merged] = level
        keep = cur[4] >= 2
        out.append([np.full(int(keep.sum()), level, np.int64), *(column[keep] for column in cur)])
    columns = [np.concatenate(c) for c in zip(*out)] if out else [np.empty(0, np.int64)] * 7
    return Markers(*columns, zone_lod=zone_lod)
