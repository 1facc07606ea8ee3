"""Zones, level-of-detail markers and counter samples packed in blocks.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

A row per zone made storing a run cost about 5 us per zone and the database grow by ~200 bytes a
zone: a large model's run holds millions. `timeline_blocks` holds up to 2048 zones (or markers, or
counter samples) of one track per row, as columns, with the levels of detail and the time range
they cover, and each run's names once. Each run's zones are read, given their levels and markers
again and packed with its counters; then `zones`, `zone_markers` and `counters` are dropped.
Downgrading unpacks them into rows again.

The packing is copied below as this revision defines it (from perfdb.store, perfdb.blocks and
perfdb.lod, trimmed to what it uses), so the revision keeps writing and reading its own format
whatever those modules become.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "timeline_blocks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("top_level", sa.SmallInteger(), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_index(
        "ix_timeline_blocks_run_kind_track_start", "timeline_blocks", ["run_id", "kind", "track", "start_ns"]
    )
    bind = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.Integer()), sa.column("tracks", sa.JSON()))
    for run_id, tracks in bind.execute(sa.select(runs.c.id, runs.c.tracks).order_by(runs.c.id)).all():
        zones = bind.execute(
            sa.text("SELECT track, depth, name, start_ns, end_ns, op FROM zones WHERE run_id = :run ORDER BY id"),
            {"run": run_id},
        ).all()
        counters = bind.execute(
            sa.text("SELECT track, name, t_ns, value FROM counters WHERE run_id = :run ORDER BY id"), {"run": run_id}
        ).all()
        tracks = list(tracks or [])
        listed, names, columns = _zone_columns(zones, tracks)
        if listed != tracks:  # runs before 0002 listed none
            bind.execute(runs.update().where(runs.c.id == run_id).values(tracks=listed))
        packed = _run_blocks(listed, names, columns, counters)
        if packed:
            bind.execute(_TIMELINE_BLOCKS.insert(), [{"run_id": run_id, **block} for block in packed])
    op.drop_table("zone_markers")
    op.drop_table("zones")
    op.drop_table("counters")


def downgrade() -> None:
    zones = op.create_table(
        "zones",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("op", sa.Text(), nullable=False),
        sa.Column("lod", sa.SmallInteger(), nullable=False, server_default="16"),
    )
    op.create_index("ix_zones_run_lod_track_start", "zones", ["run_id", "lod", "track", "start_ns"])
    markers = op.create_table(
        "zone_markers",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("start_ns", sa.Float(), nullable=False),
        sa.Column("end_ns", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("busy_ns", sa.Float(), nullable=False),
    )
    op.create_index("ix_zone_markers_run_level_track_start", "zone_markers", ["run_id", "level", "track", "start_ns"])
    counters = op.create_table(
        "counters",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("track", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("t_ns", sa.Float(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
    )
    op.create_index("ix_counters_run_track_t", "counters", ["run_id", "track", "t_ns"])
    bind = op.get_bind()
    names, shown = {}, {}  # per run: its names; stored track -> the tracks that share its zones
    for run_id, data in bind.execute(sa.text("SELECT run_id, data FROM timeline_blocks WHERE kind = 'names'")):
        names[run_id], same_as = _unpack_names(data)
        shown[run_id] = {}
        for alias, track in same_as.items():
            shown[run_id].setdefault(track, []).append(alias)
    for block in bind.execute(
        sa.text("SELECT run_id, kind, track, data FROM timeline_blocks WHERE kind != 'names' ORDER BY id")
    ):
        shared = shown[block.run_id].get(block.track, []) if block.kind != COUNTERS else []
        for track in [block.track, *shared]:
            _insert_rows(bind, (zones, markers, counters), names[block.run_id], block, track)
    op.drop_table("timeline_blocks")


def _insert_rows(bind, tables, strings, block, track) -> None:
    """Insert one block's rows into the per-row tables, on `track`."""
    zones, markers, counters = tables
    rows = _unpack(block.data)[0]
    common = {"run_id": block.run_id, "track": track}
    if block.kind == COUNTERS:
        bind.execute(
            counters.insert(),
            [
                {**common, "name": strings[n], "t_ns": t, "value": v}
                for n, t, v in zip(*(rows[c].tolist() for c in ("name", "t", "value")))
            ],
        )
    elif block.kind == ZONES:
        bind.execute(
            zones.insert(),
            [
                {**common, "depth": d, "name": strings[n], "start_ns": s, "end_ns": e, "op": strings[o], "lod": lod}
                for d, s, e, n, o, lod in zip(
                    *(rows[c].tolist() for c in ("depth", "start", "end", "name", "op", "lod"))
                )
            ],
        )
    else:
        bind.execute(
            markers.insert(),
            [
                {**common, "level": lv, "depth": d, "start_ns": s, "end_ns": e, "count": n, "busy_ns": b}
                for lv, d, s, e, n, b in zip(
                    *(rows[c].tolist() for c in ("level", "depth", "start", "end", "count", "busy"))
                )
            ],
        )


# --- the packing, as this revision defines it ------------------------------------------------------

BLOCK_ROWS = 2048  # rows per block
SHARED_ROWS = BLOCK_ROWS // 8  # a level with fewer rows than this shares its block with the next
ZONES, MARKERS, COUNTERS, NAMES = "zones", "markers", "counters", "names"
_LENGTH = 4  # bytes of a block's header length
BASE_NS = 100.0  # the finest level-of-detail bucket
FACTOR = 4  # each level's buckets are this many of the level below
LEVELS = 16
_DTYPES = {"lod": np.int8, "level": np.int8, "depth": np.int16, "name": np.int32, "op": np.int32, "count": np.int64}
_DTYPES |= dict.fromkeys(("start", "end", "busy", "t", "value"), np.float64)  # each packed column's type

_TIMELINE_BLOCKS = sa.table(
    "timeline_blocks",
    *(sa.column(c) for c in ("run_id", "kind", "level", "top_level", "track", "start_ns", "end_ns", "rows")),
    sa.column("data", sa.LargeBinary()),
)


def _zone_columns(rows, tracks: list[str]) -> tuple[list[str], list[str], tuple[np.ndarray, ...]]:
    """The run's tracks (`tracks` first, then any others in the order seen), the names its zones
    use, and the zones (track, depth, name, start, end, op) as columns: track, depth, name, start,
    end, op, the strings as indexes."""
    index = {track: i for i, track in enumerate(tracks)}
    names: dict[str, int] = {}
    track_of, depth, name, start, end, op_of = zip(*rows) if rows else ((),) * 6
    columns = (
        np.array([index.setdefault(t, len(index)) for t in track_of], np.int64),
        np.array(depth, np.int64),
        np.array([names.setdefault(n, len(names)) for n in name], np.int64),
        np.array(start, np.float64),
        np.array(end, np.float64),
        np.array([names.setdefault(o, len(names)) for o in op_of], np.int64),
    )
    return list(index), list(names), columns


def _run_blocks(tracks: list[str], zone_names: list[str], zones: tuple[np.ndarray, ...], counters) -> list[dict]:
    """The blocks of a run's zones with their markers, of its counter samples (track, name, t_ns,
    value) and of the names they index; a track whose zones equal an earlier one's is stored as an
    alias of it."""
    names = {name: i for i, name in enumerate(zone_names)}
    found: list[dict] = []
    same_as: dict[str, str] = {}
    seen: dict[bytes, int] = {}
    all_tracks, *_ = zones
    by_track = np.argsort(all_tracks, kind="stable")
    for rows in np.split(by_track, np.flatnonzero(np.diff(all_tracks[by_track])) + 1) if len(by_track) else ():
        track, depth, name, start, end, op_of = (column[rows] for column in zones)
        digest = hashlib.blake2b(digest_size=32)
        for column in (depth, name, start, end, op_of):
            digest.update(column)
        twin = seen.setdefault(digest.digest(), int(track[0]))
        if twin != track[0]:
            same_as[tracks[track[0]]] = tracks[twin]
            continue
        level, m_track, m_depth, m_start, m_end, count, busy, zone_lod = _markers(track, depth, start, end)
        zone = dict(lod=zone_lod, depth=depth, start=start, end=end, name=name, op=op_of)  # packed in this order
        found += _blocks(ZONES, tracks, zone_lod, track, start, end, **zone)
        marker = dict(level=level, depth=m_depth, start=m_start, end=m_end, count=count, busy=busy)
        found += _blocks(MARKERS, tracks, level, m_track, m_start, m_end, **marker)
    track_of, name_of, t, value = zip(*counters) if counters else ((),) * 4
    numbered: dict[str, int] = {}
    counter_track = np.array([numbered.setdefault(x, len(numbered)) for x in track_of], np.int64)
    counter_name = np.array([names.setdefault(n, len(names)) for n in name_of], np.int64)
    if len(counter_track):
        t = np.asarray(t, np.float64)
        samples = dict(name=counter_name, t=t, value=np.asarray(value, np.float64))
        found += _blocks(COUNTERS, list(numbered), np.zeros(len(t), np.int64), counter_track, t, t, **samples)
    return [_names_block(list(names), same_as), *found] if found else []


def _blocks(kind: str, tracks, level, track, start, end, /, **columns) -> list[dict]:
    return [
        {
            "kind": kind,
            "level": int(level[rows].min()),
            "top_level": int(level[rows].max()),
            "track": tracks[track[rows[0]]],
            "start_ns": float(start[rows].min()),
            "end_ns": float(end[rows].max()),
            "rows": len(rows),
            "data": _pack({name: column[rows].astype(_DTYPES[name]) for name, column in columns.items()}),
        }
        for rows in _split(level, track, start)
    ]


def _split(level: np.ndarray, track: np.ndarray, start: np.ndarray):
    """Row indices of each block: per track, by level (highest first) then start; a block ends
    at BLOCK_ROWS rows, or where the level changes once it holds SHARED_ROWS."""
    order = np.lexsort((start, -level, track))
    lv, tr = level[order], track[order]
    begin = 0
    cuts = []
    for at in np.flatnonzero((lv[1:] != lv[:-1]) | (tr[1:] != tr[:-1])).tolist() + [len(order) - 1]:
        at += 1
        while at - begin > BLOCK_ROWS:
            begin += BLOCK_ROWS
            cuts.append(begin)
        if at == len(order) or tr[at] != tr[at - 1] or at - begin >= SHARED_ROWS:
            begin = at
            cuts.append(at)
    yield from np.split(order, cuts[:-1]) if len(order) else ()


def _names_block(names: list[str], same_as: dict[str, str]) -> dict:
    strings = {name: i for i, name in enumerate(names)}
    pairs = [(strings.setdefault(a, len(strings)), strings.setdefault(b, len(strings))) for a, b in same_as.items()]
    alias, target = (np.array(c, np.int32) for c in zip(*pairs)) if pairs else (np.empty(0, np.int32),) * 2
    data = _pack({"alias": alias, "same_as": target}, list(strings))
    return {
        "kind": NAMES,
        "level": 0,
        "top_level": 0,
        "track": "",
        "start_ns": 0.0,
        "end_ns": 0.0,
        "rows": len(strings),
        "data": data,
    }


def _pack(columns: dict[str, np.ndarray], strings: list[str] = ()) -> bytes:
    arrays = [np.ascontiguousarray(a) for a in columns.values()]
    header = json.dumps(
        {
            "rows": len(arrays[0]) if arrays else 0,
            "columns": [[name, a.dtype.str] for name, a in zip(columns, arrays)],
            "strings": list(strings),
        }
    ).encode()
    return b"".join([len(header).to_bytes(_LENGTH, "little"), header, *(a.tobytes() for a in arrays)])


def _unpack(data: bytes) -> tuple[dict[str, np.ndarray], list[str]]:
    size = int.from_bytes(data[:_LENGTH], "little")
    header = json.loads(data[_LENGTH : _LENGTH + size])
    columns, at, rows = {}, _LENGTH + size, header["rows"]
    for name, dtype in header["columns"]:
        dtype = np.dtype(dtype)
        columns[name] = np.frombuffer(data, dtype, rows, at)
        at += rows * dtype.itemsize
    return columns, header["strings"]


def _unpack_names(data: bytes) -> tuple[list[str], dict[str, str]]:
    """The names and the track aliases (track -> the track whose blocks it shares) of a names block."""
    columns, strings = _unpack(data)
    if "alias" not in columns:  # packed before tracks were shared
        return strings, {}
    return strings, {strings[a]: strings[b] for a, b in zip(columns["alias"].tolist(), columns["same_as"].tolist())}


def _short_level(durations: np.ndarray) -> np.ndarray:
    """The first level whose bucket is longer than each zone (0 when shorter than BASE_NS)."""
    with np.errstate(divide="ignore"):
        levels = np.floor(np.log(np.maximum(durations, 1e-9) / BASE_NS) / np.log(FACTOR)) + 1
    levels = np.where(durations >= BASE_NS, levels, 0)
    levels = np.where((levels < LEVELS) & (durations >= BASE_NS * FACTOR**levels), levels + 1, levels)
    return np.clip(levels, 0, LEVELS).astype(np.int64)


def _markers(track: np.ndarray, depth: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """Markers of levels 1.. (level, track, depth, start, end, count, busy) and each zone's lod:
    at each level, zones shorter than a bucket are grouped by track, depth and the bucket they
    start in, and a group of two or more is a marker."""
    n = len(start)
    many_tracks = n > 0 and bool((track != track[0]).any())
    short_from = _short_level(end - start)
    zone_lod = np.full(n, LEVELS, np.int64)
    group = np.full(n, -1, np.int64)
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
        bucket = np.floor(parts[2] / (BASE_NS * FACTOR**level)).astype(np.int64)
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
    return (*columns, zone_lod)
