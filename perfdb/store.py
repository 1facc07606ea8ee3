"""Write a run with its per-op records, zones (in blocks), counters and load-time ops in one
transaction; its model and target are stored once and shared by every run of them."""

from __future__ import annotations

import hashlib
import json
import math
import operator
from collections.abc import Sequence

import numpy as np
from sqlalchemy import Connection, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from tilescope.perfdb import blocks
from tilescope.perfdb import lod
from tilescope.perfdb import pages
from tilescope.perfdb import shared_blocks
from tilescope.perfdb.errors import DatabaseError
from tilescope.perfdb.records import OP_FIELDS, CounterColumns, NewRun, ZoneColumns
from tilescope.perfdb.schema import Model, Run, Target

# stored as JSON text (the bulk path skips the ORM's types); the rest as they are
_JSON_FIELDS = ("bytes", "tensors")
_PLAIN_FIELDS = tuple(k for k in OP_FIELDS if k not in _JSON_FIELDS)
_plain = operator.attrgetter(*_PLAIN_FIELDS)
_TEXT_FIELDS = ("name", "kind", "bound", "why", "memory", "grid", "level", "fidelity", "config", "op_code")
_TEXT_FIELDS += ("code_line", "code")
_RUN_TEXT = ("model_ref", "model_name", "source_text", "target", "target_ref", "target_text", "label")
_INT_BITS = {"flops": 64, "cores": 32, "device": 16}  # BIGINT, INTEGER and SMALLINT columns
_BLOCK_COLUMNS = ("run_id", "kind", "level", "top_level", "track", "start_ns", "end_ns", "rows", "data", "digest")
_BLOCK_COLUMNS += ("source_id", "shift_ns")


def save_run(session: Session, new: NewRun) -> int:
    """Store `new` and return its run id; nothing is stored if any part fails."""
    with session.begin():
        return add_run(session, new)


def add_run(session: Session, new: NewRun) -> int:
    """Write `new` in the session's transaction, which the caller commits with whatever else
    belongs with the run; returns its id."""
    check_storable(new)
    # a simulated re-run stores what its parent holds as the parent's (perfdb.shared_blocks)
    sharing = new.parent_id is not None and new.kind == "simulated"
    parent = shared_blocks.parent(session, new.parent_id) if sharing else shared_blocks.Parent()
    page_ops = parent.page_ops or pages.page_ops(len(new.ops))
    page_cuts = pages.cuts([(op.name, op.start_ns) for op in new.ops], page_ops)
    # before the first write: the write lock is held shorter
    timeline = run_blocks(new.zones, new.counters, page_cuts, parent.names)
    run = Run(
        model_id=_row_id(session, Model, name=new.model_name, source_hash=new.source_hash, source_text=new.source_text),
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
        data_tiling=new.data_tiling,
        overrides=list(new.overrides),
        override_outcomes=list(new.override_outcomes),
        label=new.label,
        parent_id=new.parent_id,
        total_ns=new.total_ns,
        device_ns=new.device_ns,
        kind=new.kind,
        tracks=list(new.zones.tracks),
        load_ops=[op.as_dict() for op in new.load_ops],
        load_ns=new.load_ns,
        mesh=[[axis, size] for axis, size in new.mesh],
    )
    session.add(run)
    session.flush()
    bulk_insert(
        session.connection(),
        "op_records",
        ("run_id", *_PLAIN_FIELDS, *_JSON_FIELDS),
        [(run.id, *_plain(op), json.dumps(op.bytes), json.dumps([t.as_dict() for t in op.tensors])) for op in new.ops],
    )
    write_blocks(session.connection(), run.id, timeline, parent)
    return run.id


def check_storable(new: NewRun) -> None:
    """One line naming the value, not a driver's error after part of the work, for what no column
    can hold: NUL in text (PostgreSQL's text refuses it) and integers wider than their column."""
    for name in _RUN_TEXT:
        if "\0" in getattr(new, name):
            raise DatabaseError(f"cannot store the run: its {name} has a NUL character")
    for op in new.ops:
        for column, bits in _INT_BITS.items():
            value = getattr(op, column)
            if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                raise DatabaseError(
                    f"cannot store the run: op {op.name[:80]!r} has {column} {value:.3g}, past {bits} bits"
                )
        for column in _TEXT_FIELDS:
            if "\0" in (getattr(op, column) or ""):
                raise DatabaseError(f"cannot store the run: op {op.name[:80]!r} has a NUL character in its {column}")
    for op in new.load_ops:
        for column in ("name", "kind", "bound", "memory"):
            if "\0" in getattr(op, column):
                raise DatabaseError(
                    f"cannot store the run: load op {op.name[:80]!r} has a NUL character in its {column}"
                )
        # load ops are JSON, and JSON has no NaN or infinity (PostgreSQL refuses Python's spelling)
        if not all(math.isfinite(v) for v in (op.duration_ns, *op.bytes.values())):
            raise DatabaseError(f"cannot store the run: load op {op.name[:80]!r} has a time or byte count not finite")
    if not math.isfinite(new.load_ns):
        raise DatabaseError(f"cannot store the run: its load time is {new.load_ns}")


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


def run_blocks(
    zones: ZoneColumns, counters: CounterColumns, page_cuts: np.ndarray | None = None, names_first: Sequence[str] = ()
) -> list[blocks.Block]:
    """The blocks of a run's zones with their levels of detail, of the markers of every level, of
    its counter samples, and of the names they index: cut into pages at `page_cuts`
    (perfdb.pages), the names listed after `names_first` (a re-run's parent's)."""
    tracks = zones.tracks
    page_cuts = np.empty(0) if page_cuts is None else page_cuts
    origin = pages.page_start(page_cuts, np.arange(len(page_cuts) + 1))
    names = {name: i for i, name in enumerate(names_first)}
    index = np.array([names.setdefault(name, len(names)) for name in zones.names], np.int64)
    renamed = bool(names_first) and not np.array_equal(index, np.arange(len(index)))
    found: list[blocks.Block] = []
    same_as: dict[str, str] = {}
    seen: dict[bytes, int] = {}  # digest of a track's zones -> the first track that holds them
    # track by track: markers never span tracks, and a large run's level-of-detail arrays for all
    # its zones at once would take gigabytes
    by_track = np.argsort(zones.track, kind="stable")
    for rows in np.split(by_track, np.flatnonzero(np.diff(zones.track[by_track])) + 1) if len(by_track) else ():
        track, depth = zones.track[rows], zones.depth[rows]
        start, end, name, op = zones.start[rows], zones.end[rows], zones.name[rows], zones.op[rows]
        if renamed:
            name, op = index[name], index[op]
        # tracks are told apart by a digest of their zones (a 256-bit hash: equal digests are equal
        # zones, as in content-addressed stores), so no track's zones are kept to compare
        digest = hashlib.blake2b(digest_size=32)
        for column in (depth, name, start, end, op):
            digest.update(column)
        twin = seen.setdefault(digest.digest(), int(track[0]))
        if twin != track[0]:  # a core that did the same work as an earlier one: share its blocks
            same_as[tracks[track[0]]] = tracks[twin]
            continue
        page = pages.page_of(page_cuts, start)
        merged = lod.markers(page, depth, start, end, origin)  # by page: their `track` is their page
        found += blocks.zone_blocks(tracks, merged.zone_lod, track, depth, start, end, name, op, page)
        on_track = np.full(len(merged.level), track[0])
        found += blocks.marker_blocks(
            tracks,
            merged.level,
            on_track,
            merged.depth,
            merged.start,
            merged.end,
            merged.count,
            merged.busy,
            merged.track,
        )
    if len(counters):
        # the counters' names join the zones' in the run's one list of names
        counter_names = np.array([names.setdefault(n, len(names)) for n in counters.names], np.int64)
        found += blocks.counter_blocks(
            counters.tracks,
            counters.track,
            counter_names[counters.name],
            counters.t,
            counters.value,
            pages.page_of(page_cuts, counters.t),
        )
    return [blocks.names_block(list(names), same_as), *found] if found else []


def write_blocks(
    connection: Connection, run_id: int, found: list[blocks.Block], parent: shared_blocks.Parent | None = None
) -> None:
    """`found` as rows of run `run_id`; those `parent` holds as rows naming its block."""
    rows = []
    for b in found:
        source = parent.source(b) if parent is not None else None
        data, source_id, shift = (b.data, None, 0.0) if source is None else (b"", *source)
        rows.append((run_id, b.kind, b.level, b.top_level, b.track, b.start_ns, b.end_ns, b.rows, data, b.digest))
        rows[-1] += (source_id, shift)
    bulk_insert(connection, "timeline_blocks", _BLOCK_COLUMNS, rows)


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
