"""A replay stored as a simulated run: the report's ops as tilescope predicts them, named as the
measured run names them, so `tilescope diff MEASURED REPLAYED` compares prediction and measurement
op by op.

Its model is the report, as a measured run's is (`report:<file name>`, the report's text as its
source), and its parent the measured run of the same report when one is stored (the same source
text). Its timeline has a zone per op on its device's track ("device N"); a run of several
devices lists them as one mesh axis, as a measured run does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import Replay, replay
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.sim.tracks import device_track
from tilescope.compiler.targets.catalog import target_text
from tilescope.perfdb.records import NewRun, ZoneColumns
from tilescope.perfdb.runs import get_run
from tilescope.perfdb.schema import Model, Run
from tilescope.perfdb.store import save_run

from tilescope.app.workbench.measured_runs import MESH_AXIS, is_report, report_ref, source_hash
from tilescope.compiler.profiles.measured_ops import MEASURED

NOTES_SHOWN = 3  # an op's replay notes kept in its why, the first few


@dataclass(frozen=True)
class StoredReplay:
    run_id: int
    measured_id: int | None  # the measured run of the same report, its parent; None when not stored


def measured_run_of(session: Session, text: str) -> int | None:
    """The newest measured run whose model is the report `text`."""
    found = session.execute(
        select(Run.id)
        .join(Model, Run.model_id == Model.id)
        .where(Model.source_hash == source_hash(text), Run.kind == MEASURED)
        .order_by(Run.id.desc())
        .limit(1)
    ).scalar()
    return int(found) if found is not None else None


def store_replay(session: Session, replay: Replay, text: str, label: str = "", target_ref: str = "") -> StoredReplay:
    """Store `replay` of the report read from `text` as a simulated run (nothing when it fails, or
    when no op of it was built)."""
    if not replay.timings:
        first = replay.coverage.unbuilt[0] if replay.coverage.unbuilt else None
        why = f" ({first.op_code}: {first.reason})" if first else ""
        raise TilescopeError(f"{replay.report.source}: no op could be built{why}; nothing stored")
    parent = measured_run_of(session, text)
    if session.in_transaction():
        session.commit()  # end the read: the run is written in a transaction of its own
    ops = [_with_notes(r.timing, r.notes) for r in replay.ops if r.timing is not None]
    devices = sorted({op.device for op in ops})
    target = replay.target.name
    new = NewRun(
        model_ref=report_ref(replay.report.source),
        model_name=replay.report.source,
        source_hash=source_hash(text),
        source_text=text,
        target=target,
        target_ref=target_ref or target,
        target_text=target_text(target_ref or target)[0],
        total_ns=max((op.end_ns for op in ops), default=0.0),
        device_ns=math.fsum(op.duration_ns for op in ops),
        ops=ops,
        zones=ZoneColumns.from_rows(
            (device_track(op.device), 0, op.name, op.start_ns, op.end_ns, op.name) for op in ops
        ),
        dispatch="trace",
        label=label or f"replay: {replay.report.source} on {target}",
        parent_id=parent,
        mesh=[(MESH_AXIS, len(devices))] if len(devices) > 1 else (),
    )
    return StoredReplay(save_run(session, new), parent)


def replay_measured(session: Session, run_id: int, target: str | None = None, label: str = "") -> StoredReplay:
    """Replay the stored measured run `run_id` (its model is the report, kept as its source) and
    store the replay as a simulated run whose parent it is: what a Replay action on a measured run
    does. One line naming the cause when the run is not a stored report."""
    run = get_run(session, run_id)
    if run.kind != MEASURED or not is_report(run.model_ref):
        raise TilescopeError(f"run {run_id} is not a measured report ({run.kind} run of {run.model_ref[:80]})")
    text = run.model.source_text
    return store_replay(session, replay(read_ops_report(text, run.model.name), target), text, label, target or "")


def _with_notes(timing: OpTiming, notes: tuple[str, ...]) -> OpTiming:
    """`timing` whose why says what the replay could not build as the report did."""
    if not notes:
        return timing
    said = "; ".join(notes[:NOTES_SHOWN]) + (
        f"; and {len(notes) - NOTES_SHOWN} more" if len(notes) > NOTES_SHOWN else ""
    )
    return timing.replace(why=f"{timing.why} (replay: {said})")
