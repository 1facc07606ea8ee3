"""Read functions the CLI and the UI share. Each takes a Session; the caller owns its lifecycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from sqlalchemy import and_, func, literal, select, union_all
from sqlalchemy.orm import Session, selectinload

from . import lod
from .schema import Counter, Model, OpRecord, Run, Zone, ZoneMarker


class RunNotFound(LookupError):
    def __init__(self, run_id: int) -> None:
        super().__init__(f"no run with id {run_id}")


def list_runs(session: Session, model_ref: str | None = None) -> list[Run]:
    """Newest first."""
    query = select(Run).order_by(Run.id.desc())
    if model_ref is not None:
        query = query.where(Run.model_ref == model_ref)
    return list(session.scalars(query))


def get_run(session: Session, run_id: int) -> Run:
    """The run with its model's source text, enough to re-compile it once the session is closed."""
    run = session.get(Run, run_id, options=[selectinload(Run.model).undefer(Model.source_text)])
    if run is None:
        raise RunNotFound(run_id)
    return run


def op_records(session: Session, run_id: int) -> list[OpRecord]:
    return list(session.scalars(select(OpRecord).where(OpRecord.run_id == run_id).order_by(OpRecord.start_ns)))


def op_records_between(session: Session, run_id: int, t0: float, t1: float) -> list[OpRecord]:
    """The ops running at some time in [t0, t1], by start."""
    return list(session.scalars(
        select(OpRecord)
        .where(OpRecord.run_id == run_id, OpRecord.start_ns <= t1, OpRecord.start_ns + OpRecord.duration_ns >= t0)
        .order_by(OpRecord.start_ns)
    ))


def op_record(session: Session, run_id: int, name: str) -> OpRecord | None:
    return session.scalars(select(OpRecord).where(OpRecord.run_id == run_id, OpRecord.name == name)).first()


def zones(
    session: Session,
    run_id: int,
    t0: float | None = None,
    t1: float | None = None,
    tracks: Sequence[str] | None = None,
    depth: int | None = None,
    op: str | None = None,
) -> list[Zone]:
    """Zones overlapping [t0, t1] on the given tracks (all when None) at one nesting depth (all when
    None), of one op (all when None), by start time."""
    query = select(Zone).where(Zone.run_id == run_id)
    if depth is not None:
        query = query.where(Zone.depth == depth)
    if op is not None:
        query = query.where(Zone.op == op)
    if t1 is not None:
        query = query.where(Zone.start_ns <= t1)
    if t0 is not None:
        query = query.where(Zone.end_ns >= t0)
    if tracks is not None:
        query = query.where(Zone.track.in_(list(tracks)))
    return list(session.scalars(query.order_by(Zone.start_ns)))


class WindowItem(NamedTuple):
    """One thing to draw: a zone (count 1), or a marker of `count` zones merged. (A tuple: a window
    may hold thousands.)"""

    track: str
    depth: int
    name: str  # the zone's name, or "N zones"
    start_ns: float
    end_ns: float
    op: str  # the zone's op; "" for a marker
    count: int = 1
    busy_ns: float = 0.0  # a marker's summed zone time (its zones need not fill it)


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
    z = Zone.__table__.c
    parts = []
    # the zones not merged at this level, one index range per lod: a zone merged at level m is
    # shorter than m's bucket, which bounds how early it can start
    for merged_at in range(level + 1, lod.LEVELS + 1):
        where = [z.run_id == run_id, z.lod == merged_at, z.track.in_(tracks), z.start_ns <= t1, z.end_ns >= t0]
        if merged_at < lod.LEVELS:
            where.append(z.start_ns >= t0 - lod.width(merged_at))
        parts.append(
            select(z.track, z.depth, z.name, z.start_ns, z.end_ns, z.op, literal(1).label("count"), literal(0.0).label("busy"))
            .where(and_(*where))
        )
    rows = list(session.execute(union_all(*parts)))
    if level >= 1:
        m = ZoneMarker.__table__.c
        rows += session.execute(
            select(m.track, m.depth, literal("").label("name"), m.start_ns, m.end_ns, literal("").label("op"), m.count, m.busy_ns)
            .where(
                m.run_id == run_id, m.level == level, m.track.in_(tracks), m.start_ns <= t1,
                m.start_ns >= t0 - 2 * lod.width(level), m.end_ns >= t0,
            )
        ).all()
    order = {track: i for i, track in enumerate(tracks)}
    items = [
        WindowItem(t, d, name if op else f"{count} zone{'s' if count != 1 else ''}", s, e, op, count, busy)
        for t, d, name, s, e, op, count, busy in rows
    ]
    return sorted(items, key=lambda item: (order[item.track], item.depth, item.start_ns))


def counters(session: Session, run_id: int, name: str | None = None, tracks: Sequence[str] | None = None) -> list[Counter]:
    """A run's counter samples (optionally one counter, some tracks), by track and time."""
    query = select(Counter).where(Counter.run_id == run_id)
    if name is not None:
        query = query.where(Counter.name == name)
    if tracks is not None:
        query = query.where(Counter.track.in_(list(tracks)))
    return list(session.scalars(query.order_by(Counter.track, Counter.t_ns)))


def counter_names(session: Session, run_id: int) -> list[str]:
    """The names of the counters a run recorded."""
    c = Counter.__table__.c
    return list(session.scalars(select(c.name).where(c.run_id == run_id).distinct().order_by(c.name)))


def counter_envelope(session: Session, run_id: int, name: str) -> list[tuple[float, float]]:
    """(t, the largest value of counter `name` over all its tracks at t), by time: the fullest
    core's L1 over a run without reading every core's samples into Python."""
    c = Counter.__table__.c
    rows = session.execute(
        select(c.t_ns, func.max(c.value)).where(c.run_id == run_id, c.name == name).group_by(c.t_ns).order_by(c.t_ns)
    )
    return [(t, value) for t, value in rows]


TOP = 5  # names in top_regressions and top_improvements


def diff_runs(session: Session, a_id: int, b_id: int) -> dict:
    """Run `b` against run `a`, op by op, matched by stable op name.

    Returns {a, b, total_delta_ns, ops, unmatched, top_regressions, top_improvements}: `ops` are the
    ops of both runs, [{name, a_ns, b_ns, delta_ns, ratio (b/a, None when a took no time),
    changes ("memory dram->l1", "grid 8x8->2x2")}], by |delta_ns| descending; `unmatched` the names
    only in a or only in b, in execution order. Durations are summed per name (should a name occur
    twice); the ratio is taken of the sums, never summed or averaged itself."""
    runs = {run_id: get_run(session, run_id) for run_id in (a_id, b_id)}
    a, b = _ops_by_name(session, a_id), _ops_by_name(session, b_id)
    ops = []
    for name in a.keys() & b.keys():
        (a_ns, a_memory, a_grid), (b_ns, b_memory, b_grid) = a[name], b[name]
        pairs = (("memory", a_memory, b_memory), ("grid", a_grid, b_grid))
        changes = [f"{what} {x}->{y}" for what, x, y in pairs if x != y]
        ops.append({
            "name": name, "a_ns": a_ns, "b_ns": b_ns, "delta_ns": b_ns - a_ns,
            "ratio": b_ns / a_ns if a_ns else None, "changes": changes,
        })
    ops.sort(key=lambda op: (-abs(op["delta_ns"]), op["name"]))
    slower = sorted((op for op in ops if op["delta_ns"] > 0), key=lambda op: (-op["delta_ns"], op["name"]))
    faster = sorted((op for op in ops if op["delta_ns"] < 0), key=lambda op: (op["delta_ns"], op["name"]))
    return {
        "a": a_id,
        "b": b_id,
        "total_delta_ns": runs[b_id].total_ns - runs[a_id].total_ns,
        "ops": ops,
        "unmatched": {"a": [n for n in a if n not in b], "b": [n for n in b if n not in a]},
        "top_regressions": [op["name"] for op in slower[:TOP]],
        "top_improvements": [op["name"] for op in faster[:TOP]],
    }


def _ops_by_name(session: Session, run_id: int) -> dict[str, tuple[float, str, str]]:
    """name -> (duration summed over its records, memory, grid of its first record), in execution order."""
    rows = session.execute(
        select(OpRecord.name, OpRecord.duration_ns, OpRecord.memory, OpRecord.grid)
        .where(OpRecord.run_id == run_id)
        .order_by(OpRecord.start_ns, OpRecord.id)
    )
    ops: dict[str, tuple[float, str, str]] = {}
    for name, duration, memory, grid in rows:
        total, memory, grid = ops.get(name, (0.0, memory, grid))
        ops[name] = (total + duration, memory, grid)
    return ops


STAT_KEYS = ("name", "kind")


def op_statistics(session: Session, run_id: int, by: str = "name") -> list[dict]:
    """Per op name (or per op kind, by="kind"): count, total, self, mean, min, max, median and p90
    of device durations in ns, and the share of the run's device time in %; by total descending.
    Ops do not nest inside each other, so an op's self time is its total."""
    if by not in STAT_KEYS:
        raise ValueError(f"statistics by {by!r}; one of {', '.join(STAT_KEYS)}")
    get_run(session, run_id)
    groups: dict[str, list[float]] = {}
    for record in op_records(session, run_id):
        groups.setdefault(getattr(record, by), []).append(record.duration_ns)
    device = sum(sum(d) for d in groups.values()) or 1.0
    rows = []
    for key, durations in groups.items():
        values = np.asarray(durations)
        total = float(values.sum())
        rows.append({
            by: key, "count": len(durations), "total_ns": total, "self_ns": total, "mean_ns": float(values.mean()),
            "min_ns": float(values.min()), "max_ns": float(values.max()), "median_ns": float(np.median(values)),
            "p90_ns": float(np.percentile(values, 90)), "pct_of_run": total / device * 100,
        })
    return sorted(rows, key=lambda row: (-row["total_ns"], row[by]))
