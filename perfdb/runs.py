"""Stored runs and their op records, read back. Each function takes a Session; the caller owns its
lifecycle."""

from __future__ import annotations

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session, selectinload, undefer

from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.records import LoadOp
from tilescope.perfdb.schema import Model, OpRecord, Run

MAX_ID = 2**63 - 1  # ids are 64-bit integers in both databases; a larger one names no run


def list_runs(
    session: Session, model_ref: str | None = None, kind: str | None = None, limit: int | None = None
) -> list[Run]:
    """Newest first: of one model, of one kind (simulated or measured), the newest `limit`."""
    query = select(Run).order_by(Run.id.desc()).limit(limit)
    if model_ref is not None:
        query = query.where(Run.model_ref == model_ref)
    if kind is not None:
        query = query.where(Run.kind == kind)
    return list(session.scalars(query))


def newest_run_id(session: Session, model_ref: str, target_ref: str) -> int | None:
    """The id of the newest run of a model on a target (as they were asked for), without loading runs."""
    return session.scalar(select(func.max(Run.id)).where(Run.model_ref == model_ref, Run.target_ref == target_ref))


def run_id_back(session: Session, back: int = 0) -> int:
    """The id of the newest run (`back` 0), or of the run `back` runs before it, in the order stored."""
    back = min(back, MAX_ID)  # an offset is a 64-bit integer too
    run_id = session.scalar(select(Run.id).order_by(Run.id.desc()).offset(back).limit(1))
    if run_id is None:
        stored = session.scalar(select(func.count(Run.id)))
        if not stored:
            raise LookupError("the database holds no runs yet")
        raise LookupError(f"no run {back} before the newest: the database holds {stored} run(s)")
    return run_id


def check_run_id(run_id: int) -> None:
    """Raise RunNotFound for an id no run can have, before asking the database (which would fail on
    an integer wider than its column)."""
    if not 0 < run_id <= MAX_ID:
        raise RunNotFound(run_id)


def get_run(session: Session, run_id: int) -> Run:
    """The run with its model's source text, enough to re-compile it once the session is closed."""
    check_run_id(run_id)
    run = session.get(Run, run_id, options=[selectinload(Run.model).undefer(Model.source_text), undefer(Run.load_ops)])
    if run is None:
        raise RunNotFound(run_id)
    run.load_ops  # noqa: B018  # read now, should the run have been in the session without them
    return run


def load_ops(run: Run) -> list[LoadOp]:
    """The ops a run (as get_run reads it) evaluated once when its model was loaded, in the order
    they ran; none for runs stored before load-time work was kept."""
    return [LoadOp.of(op) for op in run.load_ops]


def target_description(session: Session, target_ref: str) -> str | None:
    """The target description the newest run asked for as `target_ref` kept (a target file's, as
    it was then), or None."""
    run = session.scalar(select(Run).where(Run.target_ref == target_ref).order_by(Run.id.desc()).limit(1))
    return (run.target.description or None) if run is not None else None


def op_records(session: Session, run_id: int, tensors: bool = False, moved: bool = True) -> list[Row]:
    """A run's op records by start, as read-only rows with OpRecord's attributes: with `tensors`
    only if asked, and without `bytes` (by path) unless `moved`. Rows, not ORM objects, and the
    JSON columns only when needed: a 100k-op run's records load in a third of the time."""
    skipped = {"tensors"} if not tensors else set()
    if not moved:
        skipped.add("bytes")
    columns = [c for c in OpRecord.__table__.c if c.name not in skipped]
    return list(session.execute(select(*columns).where(OpRecord.run_id == run_id).order_by(OpRecord.start_ns)))


def op_records_between(session: Session, run_id: int, t0: float, t1: float) -> list[OpRecord]:
    """The ops running at some time in [t0, t1], by start."""
    return list(
        session.scalars(
            select(OpRecord)
            .where(OpRecord.run_id == run_id, OpRecord.start_ns <= t1, OpRecord.start_ns + OpRecord.duration_ns >= t0)
            .order_by(OpRecord.start_ns)
        )
    )


def op_record(session: Session, run_id: int, name: str) -> OpRecord | None:
    """The first record of op `name` (by id), with its tensors and config: one record is cheap to read whole."""
    return session.scalars(
        select(OpRecord)
        .options(undefer(OpRecord.tensors), undefer(OpRecord.config))
        .where(OpRecord.run_id == run_id, OpRecord.name == name)
        .order_by(OpRecord.id)
    ).first()
