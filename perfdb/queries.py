"""Read functions the CLI and the UI share. Each takes a Session; the caller owns its lifecycle."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from .schema import Counter, OpRecord, Run, Zone


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
    run = session.get(Run, run_id)
    if run is None:
        raise RunNotFound(run_id)
    return run


def op_records(session: Session, run_id: int) -> list[OpRecord]:
    return list(session.scalars(select(OpRecord).where(OpRecord.run_id == run_id).order_by(OpRecord.start_ns)))


def zones(
    session: Session,
    run_id: int,
    t0: float | None = None,
    t1: float | None = None,
    tracks: Sequence[str] | None = None,
    depth: int | None = None,
) -> list[Zone]:
    """Zones overlapping [t0, t1] on the given tracks (all when None) at one nesting depth (all when
    None), by start time."""
    query = select(Zone).where(Zone.run_id == run_id)
    if depth is not None:
        query = query.where(Zone.depth == depth)
    if t1 is not None:
        query = query.where(Zone.start_ns <= t1)
    if t0 is not None:
        query = query.where(Zone.end_ns >= t0)
    if tracks is not None:
        query = query.where(Zone.track.in_(list(tracks)))
    return list(session.scalars(query.order_by(Zone.start_ns)))


def counters(session: Session, run_id: int, name: str | None = None, tracks: Sequence[str] | None = None) -> list[Counter]:
    """A run's counter samples (optionally one counter, some tracks), by track and time."""
    query = select(Counter).where(Counter.run_id == run_id)
    if name is not None:
        query = query.where(Counter.name == name)
    if tracks is not None:
        query = query.where(Counter.track.in_(list(tracks)))
    return list(session.scalars(query.order_by(Counter.track, Counter.t_ns)))
