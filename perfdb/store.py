"""Write a run with its per-op records and zones in one transaction; its model and target are
stored once and shared by every run of them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from . import lod
from .schema import Model, OpRecord, Run, Target, Zone

_OP_FIELDS = (
    "name", "kind", "start_ns", "duration_ns", "flops", "bytes", "bound", "why",
    "memory", "grid", "cores", "roofline_ns", "pct_peak", "dispatch_wait_ns",
    "level", "fidelity", "tensors", "compute_ns", "bandwidth_ns",
)
# optional fields; the rest are required
_DEFAULTS = {
    "why": "", "pct_peak": 0.0, "dispatch_wait_ns": 0.0, "level": "kernel", "fidelity": "", "tensors": [],
    "compute_ns": 0.0, "bandwidth_ns": 0.0,
}
_ZONE_COLUMNS = ("run_id", "track", "depth", "name", "start_ns", "end_ns", "op", "lod")
_COUNTER_COLUMNS = ("run_id", "track", "name", "t_ns", "value")
_MARKER_COLUMNS = ("run_id", "level", "track", "depth", "start_ns", "end_ns", "count", "busy_ns")


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
    zones: Iterable[tuple[str, int, str, float, float, str]]  # track, depth, name, start, end, op
    counters: Iterable[tuple[str, str, float, float]] = ()  # track, name, t_ns, value
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
    zones = list(new.zones)
    tracks = list(dict.fromkeys(z[0] for z in zones))
    with session.begin():
        run = Run(
            model_id=_row_id(session, Model, name=new.model_name, source_hash=new.source_hash, source_text=new.source_text),
            model_ref=new.model_ref,
            target_id=_row_id(
                session, Target, name=new.target, description_hash=hashlib.sha256(new.target_text.encode()).hexdigest(),
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
        if new.ops:
            session.execute(
                insert(OpRecord),
                [{"run_id": run.id, **{k: op[k] if k not in _DEFAULTS else op.get(k, _DEFAULTS[k]) for k in _OP_FIELDS}} for op in new.ops],
            )
        if zones:
            _store_zones(session.connection(), run.id, zones, tracks)
        bulk_insert(session.connection(), "counters", _COUNTER_COLUMNS, [(run.id, *c) for c in new.counters])
    return run.id


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


def _store_zones(connection: Connection, run_id: int, zones: list[tuple], tracks: list[str]) -> None:
    """Zones with their level of detail, and the markers of every level (perfdb.lod). Rows go in
    in index order (level, track, start), so the index grows at its end instead of all over."""
    index = {track: i for i, track in enumerate(tracks)}
    track = np.fromiter((index[z[0]] for z in zones), np.int64, len(zones))
    depth = np.fromiter((z[1] for z in zones), np.int64, len(zones))
    start = np.fromiter((z[3] for z in zones), np.float64, len(zones))
    end = np.fromiter((z[4] for z in zones), np.float64, len(zones))
    found = lod.markers(track, depth, start, end)
    order = np.lexsort((start, track, found.zone_lod)).tolist()
    level_list = found.zone_lod.tolist()
    bulk_insert(connection, "zones", _ZONE_COLUMNS, [(run_id, *zones[i], level_list[i]) for i in order])
    _store_markers(connection, run_id, found, tracks)


def _store_markers(connection: Connection, run_id: int, found: lod.Markers, tracks: list[str]) -> None:
    names = np.asarray(tracks, dtype=object)[found.track].tolist() if len(found.track) else []
    bulk_insert(connection, "zone_markers", _MARKER_COLUMNS, list(zip(
        [run_id] * len(names), found.level.tolist(), names, found.depth.tolist(), found.start.tolist(),
        found.end.tolist(), found.count.tolist(), found.busy.tolist(),
    )))


def add_levels_of_detail(connection: Connection, run_id: int) -> None:
    """Give a run stored before levels of detail (revision 0002) what save_run now stores: its
    track list, each zone's level and the markers, so its timeline is drawn merged too."""
    z = Zone.__table__.c
    rows = connection.execute(
        select(z.id, z.track, z.depth, z.start_ns, z.end_ns).where(z.run_id == run_id).order_by(z.id)
    ).all()
    if not rows:
        return
    tracks = list(dict.fromkeys(row.track for row in rows))
    index = {track: i for i, track in enumerate(tracks)}
    ids, track, depth, start, end = (np.asarray(column) for column in zip(*rows))
    found = lod.markers(np.array([index[t] for t in track], np.int64), depth.astype(np.int64),
                        start.astype(np.float64), end.astype(np.float64))
    merged = np.flatnonzero(found.zone_lod < lod.LEVELS)
    if len(merged):
        connection.execute(
            update(Zone.__table__).where(z.id == bindparam("zone_id")).values(lod=bindparam("level")),
            [{"zone_id": int(ids[i]), "level": int(found.zone_lod[i])} for i in merged],
        )
    _store_markers(connection, run_id, found, tracks)
    connection.execute(update(Run.__table__).where(Run.__table__.c.id == run_id).values(tracks=tracks))


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
