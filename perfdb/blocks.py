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

A run's zones, markers and counters are cut into pages first (perfdb.pages: stretches of time
that start at ops chosen by their names), then by level: a re-run after a change holds most of its
parent's pages as they were, or shifted in time, and each block keeps a digest of its rows with
their times counted from its start, by which a re-run's block is stored as its parent's
(perfdb.shared_blocks).

A block's value: a 4-byte header length, a JSON header (row count, column names and dtypes, and
strings: the names block's names), then each column's bytes. (Uncompressed: timestamps hardly
compress, and zlib would cost more than the database's write of them.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from tilescope.compiler.sim.records import TICKS_PER_NS

BLOCK_ROWS = 2048  # rows per block: few enough that a window decodes little beyond what it shows
SHARED_ROWS = BLOCK_ROWS // 8  # a level with fewer zones than this shares its block with the next
ZONES = "zones"
MARKERS = "markers"
COUNTERS = "counters"  # samples of counters (L1 in use, bandwidth in use) on one track, by time
NAMES = "names"  # one per run: the strings its zone blocks' name and op columns index
_LENGTH = 4  # bytes of the header length
TIMES = {ZONES: ("start", "end"), MARKERS: ("start", "end"), COUNTERS: ("t",)}  # a kind's time columns
_EXACT_TICKS = 2.0**53  # below this many ticks a time, and its sum or difference with another, is exact


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
    digest: bytes | None = None  # see digest(); None for times not on_ticks


def digest(kind: str, level: int, top_level: int, start_ns: float, columns: dict[str, np.ndarray]) -> bytes:
    """What a block holds, its times counted from `start_ns`: two blocks of one kind and levels have
    equal digests when one's rows are the other's shifted in time (a 128-bit hash: equal digests
    are equal rows, as in content-addressed stores). Only for times on_ticks: other shifts might
    not add back exactly."""
    found = hashlib.blake2b(f"{kind} {level} {top_level}".encode(), digest_size=16)
    times = TIMES.get(kind, ())
    for name, column in columns.items():
        found.update(name.encode())
        found.update(np.ascontiguousarray(column - start_ns if name in times else column))
    return found.digest()


def on_ticks(times: np.ndarray) -> bool:
    """Whether every time is a whole number of the simulator's ticks (compiler.sim.records), small
    enough that its sum or difference with another such is exact."""
    ticks = times * TICKS_PER_NS  # exact: a power of two
    return bool(np.all(np.abs(ticks) < _EXACT_TICKS)) and np.array_equal(np.floor(ticks), ticks)


def shifted(kind: str, columns: dict[str, np.ndarray], shift_ns: float) -> dict[str, np.ndarray]:
    """A block's columns with `shift_ns` added to its times."""
    if not shift_ns:
        return columns
    times = TIMES.get(kind, ())
    return {name: column + shift_ns if name in times else column for name, column in columns.items()}


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


def split(
    level: np.ndarray, track: np.ndarray, start: np.ndarray, page: np.ndarray | None = None
) -> Iterator[np.ndarray]:
    """Row indices of each block: per track and page (one page when None), by level (highest first)
    then start; a block ends at BLOCK_ROWS rows, or where the level changes once it holds SHARED_ROWS."""
    order, firsts = _order(level, track, start, page)
    for rows in np.split(order, firsts[1:]) if len(order) else ():
        yield rows


def _order(
    level: np.ndarray, track: np.ndarray, start: np.ndarray, page: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The rows in split's order, and where in it each block starts."""
    page = np.zeros(len(level), np.int64) if page is None else page
    order = np.lexsort((start, -level, page, track))
    lv, tr, pg = level[order], track[order], page[order]
    begin = 0  # the current block's first row
    cuts = [0]
    other = (tr[1:] != tr[:-1]) | (pg[1:] != pg[:-1])  # a row starts another track or page
    for at in np.flatnonzero((lv[1:] != lv[:-1]) | other).tolist() + [len(order) - 1]:
        at += 1  # a run of one track's rows at one level ends before `at`
        while at - begin > BLOCK_ROWS:
            begin += BLOCK_ROWS
            cuts.append(begin)
        if at == len(order) or other[at - 1] or at - begin >= SHARED_ROWS:
            begin = at
            cuts.append(at)
    return order, np.array(cuts[:-1] if len(order) else [], np.int64)


def zone_blocks(
    tracks: Sequence[str],
    level: np.ndarray,
    track: np.ndarray,
    depth: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    name: np.ndarray,
    op: np.ndarray,
    page: np.ndarray | None = None,
) -> list[Block]:
    """Blocks of zones given as arrays (`track`: indexes into `tracks`; `level`: each one's lod;
    `name`, `op`: indexes into the run's names; `page`: each one's, perfdb.pages)."""
    return _blocks(
        ZONES,
        tracks,
        level,
        track,
        start,
        end,
        page,
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
    page: np.ndarray | None = None,
) -> list[Block]:
    """Blocks of markers (perfdb.lod) given as arrays."""
    return _blocks(
        MARKERS,
        tracks,
        level,
        track,
        start,
        end,
        page,
        level=level.astype(np.int8),
        depth=depth.astype(np.int16),
        start=start,
        end=end,
        count=count.astype(np.int64),
        busy=busy.astype(np.float64),
    )


def counter_blocks(
    tracks: Sequence[str],
    track: np.ndarray,
    name: np.ndarray,
    t: np.ndarray,
    value: np.ndarray,
    page: np.ndarray | None = None,
) -> list[Block]:
    """Blocks of counter samples given as arrays (`name`: indexes into the run's names)."""
    level = np.zeros(len(t), np.int64)
    return _blocks(COUNTERS, tracks, level, track, t, t, page, name=name.astype(np.int32), t=t, value=value)


def _blocks(
    kind: str,
    tracks: Sequence[str],
    level: np.ndarray,
    track: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    page: np.ndarray | None,
    /,
    **columns,
) -> list[Block]:
    order, firsts = _order(level, track, start, page)
    if not len(order):
        return []
    shareable = all(on_ticks(columns[name]) for name in TIMES[kind])  # else no digests
    # in block order, so each block's rows are a slice; each block's bounds at once
    columns = {name: column[order] for name, column in columns.items()}
    level, track = level[order], track[order]
    low, high = np.minimum.reduceat(level, firsts).tolist(), np.maximum.reduceat(level, firsts).tolist()
    first, last = np.minimum.reduceat(start[order], firsts).tolist(), np.maximum.reduceat(end[order], firsts).tolist()
    found = []
    for i, (a, b) in enumerate(zip(firsts.tolist(), [*firsts[1:].tolist(), len(order)])):
        held = {name: column[a:b] for name, column in columns.items()}
        found.append(
            Block(
                kind,
                low[i],
                high[i],
                tracks[track[a]],
                first[i],
                last[i],
                b - a,
                pack(held),
                digest(kind, low[i], high[i], first[i], held) if shareable else None,
            )
        )
    return found


def names_block(names: Sequence[str], same_as: dict[str, str] | None = None) -> Block:
    """The run's zone and op names, which its zone blocks index, stored once, not per block; and
    which tracks hold the same zones (and markers) as which other."""
    strings = {name: i for i, name in enumerate(names)}
    pairs = [
        (strings.setdefault(a, len(strings)), strings.setdefault(b, len(strings))) for a, b in (same_as or {}).items()
    ]
    alias, target = (np.array(c, np.int32) for c in zip(*pairs)) if pairs else (np.empty(0, np.int32),) * 2
    data = pack({"alias": alias, "same_as": target}, list(strings))
    return Block(NAMES, 0, 0, "", 0.0, 0.0, len(strings), data, hashlib.blake2b(data, digest_size=16).digest())


def unpack_names(data: bytes) -> tuple[list[str], dict[str, str]]:
    """The names and the track aliases (track -> the track whose blocks it shares) of a names block."""
    columns, strings = unpack(data)
    if "alias" not in columns:  # stored before tracks were shared
        return strings, {}
    return strings, {strings[a]: strings[b] for a, b in zip(columns["alias"].tolist(), columns["same_as"].tolist())}
