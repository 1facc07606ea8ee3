"""Timeline blocks: up to BLOCK_ROWS zones or markers of one track packed as columns in one value.

A database row per zone (or counter sample) costs SQLite or PostgreSQL far more than the zone's 27 bytes (a row
header, an index entry, the op's name twice), and a large model's run holds millions of zones. So
a run's zones and markers are stored per track in blocks of columns, each block with its level of
detail and the time range it covers; the window query picks blocks by level and time through the
index and filters their rows with numpy.

A block holds one track's zones (or markers) by level of detail (perfdb.lod), highest first, then
by start, and keeps the lowest and highest level it holds. A level with many rows fills blocks of
its own, each a short stretch of time, so a zoomed-in window reads few; levels with few rows share
a block. Counter samples are kept per track by time. Names (of zones, their ops and counters)
are stored once per run, in a block of their own that the others index.

Cores that do the same work hold the same zones: a grid's inner cores, say, or every core of an op
mapped to them all. A track whose zones equal an earlier track's stores none of its own: the names
block maps it to that track (`alias` -> `same_as`, both indexes into its strings), and queries read
the earlier track's blocks for it. A run on 64 cores stores about a quarter of its tracks.

A block's value: a 4-byte header length, a JSON header (row count, column names and dtypes, and
strings: the names block's names), then each column's bytes. (Uncompressed: timestamps hardly
compress, and zlib would cost more than the database's write of them.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

BLOCK_ROWS = 2048  # rows per block: few enough that a window decodes little beyond what it shows
SHARED_ROWS = BLOCK_ROWS // 8  # a level with fewer zones than this shares its block with the next
ZONES = "zones"
MARKERS = "markers"
COUNTERS = "counters"  # samples of counters (L1 in use, bandwidth in use) on one track, by time
NAMES = "names"  # one per run: the strings its zone blocks' name and op columns index
_LENGTH = 4  # bytes of the header length


@dataclass(frozen=True)
class Block:
    """One block as stored: its key, its time range and its packed rows."""

    kind: str
    level: int  # the lowest level of its rows (a zone's level is its lod)
    top_level: int  # the highest
    track: str  # "" for the names
    start_ns: float  # its rows' earliest start
    end_ns: float  # its rows' latest end
    rows: int
    data: bytes


def pack(columns: dict[str, np.ndarray], strings: Sequence[str] = ()) -> bytes:
    arrays = [np.ascontiguousarray(a) for a in columns.values()]
    header = json.dumps(
        {
            "rows": len(arrays[0]) if arrays else 0,
            "columns": [[name, a.dtype.str] for name, a in zip(columns, arrays)],
            "strings": list(strings),
        }
    ).encode()
    return b"".join([len(header).to_bytes(_LENGTH, "little"), header, *(a.tobytes() for a in arrays)])


def unpack(data: bytes) -> tuple[dict[str, np.ndarray], list[str]]:
    """The columns and strings `pack` was given."""
    size = int.from_bytes(data[:_LENGTH], "little")
    header = json.loads(data[_LENGTH : _LENGTH + size])
    columns, at, rows = {}, _LENGTH + size, header["rows"]
    for name, dtype in header["columns"]:
        dtype = np.dtype(dtype)
        columns[name] = np.frombuffer(data, dtype, rows, at)
        at += rows * dtype.itemsize
    return columns, header["strings"]


def split(level: np.ndarray, track: np.ndarray, start: np.ndarray) -> Iterator[np.ndarray]:
    """Row indices of each block: per track, by level (highest first) then start; a block ends
    at BLOCK_ROWS rows, or where the level changes once it holds SHARED_ROWS."""
    order = np.lexsort((start, -level, track))
    lv, tr = level[order], track[order]
    begin = 0  # the current block's first row
    cuts = []
    for at in np.flatnonzero((lv[1:] != lv[:-1]) | (tr[1:] != tr[:-1])).tolist() + [len(order) - 1]:
        at += 1  # a run of one track's rows at one level ends before `at`
        while at - begin > BLOCK_ROWS:
            begin += BLOCK_ROWS
            cuts.append(begin)
        if at == len(order) or tr[at] != tr[at - 1] or at - begin >= SHARED_ROWS:
            begin = at
            cuts.append(at)
    for rows in np.split(order, cuts[:-1]) if len(order) else ():
        yield rows


def zone_blocks(
    tracks: Sequence[str],
    level: np.ndarray,
    track: np.ndarray,
    depth: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    name: np.ndarray,
    op: np.ndarray,
) -> list[Block]:
    """Blocks of zones given as arrays (`track`: indexes into `tracks`; `level`: each one's lod;
    `name`, `op`: indexes into the run's names)."""
    return _blocks(
        ZONES,
        tracks,
        level,
        track,
        start,
        end,
        lod=level.astype(np.int8),
        depth=depth.astype(np.int16),
        start=start,
        end=end,
        name=name.astype(np.int32),
        op=op.astype(np.int32),
    )


def marker_blocks(
    tracks: Sequence[str],
    level: np.ndarray,
    track: np.ndarray,
    depth: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    count: np.ndarray,
    busy: np.ndarray,
) -> list[Block]:
    """Blocks of markers (perfdb.lod) given as arrays."""
    return _blocks(
        MARKERS,
        tracks,
        level,
        track,
        start,
        end,
        level=level.astype(np.int8),
        depth=depth.astype(np.int16),
        start=start,
        end=end,
        count=count.astype(np.int64),
        busy=busy.astype(np.float64),
    )


def counter_blocks(
    tracks: Sequence[str], track: np.ndarray, name: np.ndarray, t: np.ndarray, value: np.ndarray
) -> list[Block]:
    """Blocks of counter samples given as arrays (`name`: indexes into the run's names)."""
    level = np.zeros(len(t), np.int64)
    return _blocks(COUNTERS, tracks, level, track, t, t, name=name.astype(np.int32), t=t, value=value)


def _blocks(
    kind: str,
    tracks: Sequence[str],
    level: np.ndarray,
    track: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    /,
    **columns,
) -> list[Block]:
    return [
        Block(
            kind,
            int(level[rows].min()),
            int(level[rows].max()),
            tracks[track[rows[0]]],
            float(start[rows].min()),
            float(end[rows].max()),
            len(rows),
            pack({name: column[rows] for name, column in columns.items()}),
        )
        for rows in split(level, track, start)
    ]


def names_block(names: Sequence[str], same_as: dict[str, str] | None = None) -> Block:
    """The run's zone and op names, which its zone blocks index, stored once, not per block; and
    which tracks hold the same zones (and markers) as which other."""
    strings = {name: i for i, name in enumerate(names)}
    pairs = [
        (strings.setdefault(a, len(strings)), strings.setdefault(b, len(strings))) for a, b in (same_as or {}).items()
    ]
    alias, target = (np.array(c, np.int32) for c in zip(*pairs)) if pairs else (np.empty(0, np.int32),) * 2
    return Block(NAMES, 0, 0, "", 0.0, 0.0, len(strings), pack({"alias": alias, "same_as": target}, list(strings)))


def unpack_names(data: bytes) -> tuple[list[str], dict[str, str]]:
    """The names and the track aliases (track -> the track whose blocks it shares) of a names block."""
    columns, strings = unpack(data)
    if "alias" not in columns:  # stored before tracks were shared
        return strings, {}
    return strings, {strings[a]: strings[b] for a, b in zip(columns["alias"].tolist(), columns["same_as"].tolist())}
