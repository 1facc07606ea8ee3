"""Write a run with its per-op records, zones (in blocks) and counters in one transaction; its
model and target are stored once and shared by every run of them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from sqlalchemy import Connection, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from . import blocks, lod
from .engine import DatabaseError
from .schema import Model, Run, Target

_OP_FIELDS = (
    "name",
    "kind",
    "start_ns",
    "duration_ns",
    "flops",
    "bytes",
    "bound",
    "why",
    "memory",
    "grid",
    "cores",
    "roofline_ns",
    "pct_peak",
    "dispatch_wait_ns",
    "level",
    "fidelity",
    "tensors",
    "compute_ns",
    "bandwidth_ns",
)
# optional fields; the rest are required
_DEFAULTS = {
    "why": "",
    "pct_peak": 0.0,
    "dispatch_wait_ns": 0.0,
    "level": "kernel",
    "fidelity": "",
    "tensors": [],
    "compute_ns": 0.0,
    "bandwidth_ns": 0.0,
}
_JSON_FIELDS = {"bytes", "tensors"}  # stored as JSON text (the bulk path skips the ORM's types)
_TEXT_FIELDS = ("name", "kind", "bound", "why", "memory", "grid", "level", "fidelity")
_RUN_TEXT = ("model_ref", "model_name", "source_text", "target", "target_ref", "target_text", "label")
_INT_BITS = {"flops": 64, "cores": 32}  # BIGINT and INTEGER columns
_BLOCK_COLUMNS = ("run_id", "kind", "level", "top_level", "track", "start_ns", "end_ns", "rows", "data")


@dataclass
class NewRun:
    """Everything about one run; the caller converts its simulator output into this."""

    model_ref: str
    model_name: str
    source_hash: str
    source_text: str
    target: str  # the target's name
    total_ns: float
    device_ns: float
    ops: Sequence[dict]  # keys: _OP_FIELDS
    zones: Iterable[tuple[str, int, str, float, float, str]]  # track, depth, name, start, end, op; or columns
    counters: Iterable[tuple[str, str, float, float]] = ()  # track, name, t_ns, value; or columns
    dispatch: str = "host"
    policy: str = "dram-interleaved"
    target_ref: str = ""  # how the target was asked for: a built-in name or a file path
    target_text: str = ""  # the target description it ran on
    l1_usage_cap: float = 0.8
    overrides: list[str] = field(default_factory=list)
    override_outcomes: list[dict] = field(default_factory=list)
    label: str = ""
    parent_id: int | None = None
    kind: str = "simulated"  # or measured (an imported ops perf report)


def save_run(session: Session, new: NewRun) -> int:
    """Store `new` and return its run id; nothing is stored if any part fails."""
    check_storable(new)
    tracks, zones = zone_columns(new.zones)
    timeline = run_blocks(tracks, zones, new.counters)
    with session.begin():
        run = Run(
            model_id=_row_id(
                session, Model, name=new.model_name, source_hash=new.source_hash, source_text=new.source_text
            ),
            model_ref=new.model_ref,
            target_id=_row_id(
                session,
                Target,
                name=new.target,
                description_hash=hashlib.sha256(new.target_text.encode()).hexdigest(),
                description=new.target_text,
            ),
            target_ref=new.target_ref or new.target,
            dispatch=new.dispatch,
            policy=new.policy,
            l1_usage_cap=new.l1_usage_cap,
            overrides=list(new.overrides),
            override_outcomes=list(new.override_outcomes),
            label=new.label,
            parent_id=new.parent_id,
            total_ns=new.total_ns,
            device_ns=new.device_ns,
            kind=new.kind,
            tracks=tracks,
        )
        session.add(run)
        session.flush()
        bulk_insert(
            session.connection(),
            "op_records",
            ("run_id", *_OP_FIELDS),
            [
                (
                    run.id,
                    *(
                        json.dumps(v) if k in _JSON_FIELDS else v
                        for k, v in ((k, op[k] if k not in _DEFAULTS else op.get(k, _DEFAULTS[k])) for k in _OP_FIELDS)
                    ),
                )
                for op in new.ops
            ],
        )
        write_blocks(session.connection(), run.id, timeline)
    return run.id


def check_storable(new: NewRun) -> None:
    """One line naming the value, not a driver's error after part of the work, for what no column
    can hold: NUL in text (PostgreSQL's text refuses it) and integers wider than their column."""
    for name in _RUN_TEXT:
        if "\0" in getattr(new, name):
            raise DatabaseError(f"cannot store the run: its {name} has a NUL character")
    for op in new.ops:
        for column, bits in _INT_BITS.items():
            if not -(2 ** (bits - 1)) <= op[column] < 2 ** (bits - 1):
                raise DatabaseError(
                    f"cannot store the run: op {op['name'][:80]!r} has {column} {op[column]:.3g}, past {bits} bits"
                )
        for column in _TEXT_FIELDS:
            if "\0" in (op.get(column) or ""):
                raise DatabaseError(f"cannot store the run: op {op['name'][:80]!r} has a NUL character in its {column}")


def _row_id(session: Session, table: type[Model] | type[Target], **row) -> int:
    """The id of the model or target with these values, inserted if new. Two writers storing runs
    of a new model at once both get the one row: the second insert does nothing (its unique key,
    name and hash, is taken) and the select then finds the first's row."""
    dialect = session.get_bind().dialect.name
    if dialect in ("sqlite", "postgresql"):
        make = sqlite.insert if dialect == "sqlite" else postgresql.insert
        session.execute(make(table).values(**row).on_conflict_do_nothing())
    key = {k: row[k] for k in ("name", "source_hash" if table is Model else "description_hash")}
    found = session.scalar(select(table.id).filter_by(**key))
    if found is None:  # other databases: no upsert statement in common
        found = session.execute(insert(table).values(**row)).inserted_primary_key[0]
    return found


class ZoneColumns(NamedTuple):
    names: list[str]  # what `name` and `op` index
    track: np.ndarray  # index into the run's tracks
    depth: np.ndarray
    name: np.ndarray
    start: np.ndarray
    end: np.ndarray
    op: np.ndarray


def zone_columns(zones, tracks: Sequence[str] = ()) -> tuple[list[str], ZoneColumns]:
    """The run's tracks (`tracks` first, then any others in the order seen) and its zones as
    columns, from zones given as columns (an object with track_names(), name_list() and
    sequences track, depth, name, start, end, op, as the simulator gives them) or as tuples
    (track, depth, name, start, end, op)."""
    if hasattr(zones, "track_names") and not tracks:
        return zones.track_names(), ZoneColumns(
            zones.name_list(),
            *(np.asarray(c) for c in (zones.track, zones.depth, zones.name, zones.start, zones.end, zones.op)),
        )
    rows = list(zones)
    index = {track: i for i, track in enumerate(tracks)}
    names: dict[str, int] = {}
    track_of, depth, name, start, end, op = zip(*rows) if rows else ((),) * 6  # transposed in C
    columns = ZoneColumns(
        [],
        np.array([index.setdefault(t, len(index)) for t in track_of], np.int64),
        np.array(depth, np.int64),
        np.array([names.setdefault(n, len(names)) for n in name], np.int64),
        np.array(start, np.float64),
        np.array(end, np.float64),
        np.array([names.setdefault(o, len(names)) for o in op], np.int64),
    )
    return list(index), columns._replace(names=list(names))


def run_blocks(tracks: list[str], zones: ZoneColumns, counters) -> list[blocks.Block]:
    """The blocks of a run's zones with their levels of detail, of the markers of every level, of
    its counter samples (tuples of track, name, t_ns, value, or columns: track_names(),
    name_list() and sequences track, name, t, value), and of the names they index."""
    names = {name: i for i, name in enumerate(zones.names)}
    found: list[blocks.Block] = []
    same_as: dict[str, str] = {}
    seen: dict[bytes, int] = {}  # digest of a track's zones -> the first track that holds them
    # track by track: markers never span tracks, and a large run's level-of-detail arrays for all
    # its zones at once would take gigabytes
    by_track = np.argsort(zones.track, kind="stable")
    for rows in np.split(by_track, np.flatnonzero(np.diff(zones.track[by_track])) + 1) if len(by_track) else ():
        track, depth = zones.track[rows].astype(np.int64), zones.depth[rows].astype(np.int64)
        start, end, name, op = zones.start[rows], zones.end[rows], zones.name[rows], zones.op[rows]
        # tracks are told apart by a digest of their zones (a 256-bit hash: equal digests are equal
        # zones, as in content-addressed stores), so no track's zones are kept to compare
        digest = hashlib.blake2b(digest_size=32)
        for column in (depth, name, start, end, op):
            digest.update(column)
        twin = seen.setdefault(digest.digest(), int(track[0]))
        if twin != track[0]:  # a core that did the same work as an earlier one: share its blocks
            same_as[tracks[track[0]]] = tracks[twin]
            continue
        merged = lod.markers(track, depth, start, end)
        found += blocks.zone_blocks(tracks, merged.zone_lod, track, depth, start, end, name, op)
        found += blocks.marker_blocks(
            tracks, merged.level, merged.track, merged.depth, merged.start, merged.end, merged.count, merged.busy
        )
    if hasattr(counters, "track_names"):  # columns, as the simulator gives them
        counter_tracks = counters.track_names()
        counter_name = np.array([names.setdefault(n, len(names)) for n in counters.name_list()], np.int64)[
            counters.name
        ]
        counter_track, t, value = np.asarray(counters.track, np.int64), counters.t, counters.value
    else:
        samples = list(counters)
        track_of, name_of, t, value = zip(*samples) if samples else ((),) * 4
        numbered: dict[str, int] = {}
        counter_track = np.array([numbered.setdefault(x, len(numbered)) for x in track_of], np.int64)
        counter_name = np.array([names.setdefault(n, len(names)) for n in name_of], np.int64)
        counter_tracks = list(numbered)
    if len(counter_track):
        found += blocks.counter_blocks(
            counter_tracks, counter_track, counter_name, np.asarray(t, np.float64), np.asarray(value, np.float64)
        )
    return [blocks.names_block(list(names), same_as), *found] if found else []


def write_blocks(connection: Connection, run_id: int, found: list[blocks.Block]) -> None:
    bulk_insert(
        connection,
        "timeline_blocks",
        _BLOCK_COLUMNS,
        [(run_id, b.kind, b.level, b.top_level, b.track, b.start_ns, b.end_ns, b.rows, b.data) for b in found],
    )


def bulk_insert(connection: Connection, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
    """Many rows at the driver's fastest: SQLite's executemany of one prepared statement,
    PostgreSQL's COPY. (The ORM's per-row bookkeeping costs more than the database here.)"""
    if not rows:
        return
    names = ", ".join(columns)
    if connection.dialect.name == "postgresql":
        cursor = connection.connection.driver_connection.cursor()
        with cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    marks = ", ".join("?" if connection.dialect.paramstyle == "qmark" else "%s" for _ in columns)
    connection.exec_driver_sql(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
