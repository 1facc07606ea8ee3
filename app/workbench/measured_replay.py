"""A stored measured run replayed from the page (app/workbench/replay_runs.py stores it, a simulated
run whose parent is the measured run), and what the page says of it: the ops built and their share
of the device time measured, the op codes not built, the time predicted against the time measured."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy.orm import Session, sessionmaker

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.measured_ops import MEASURED
from tilescope.compiler.profiles.profile_file import is_trace
from tilescope.compiler.targets.catalog import builtin_names
from tilescope.perfdb.runs import get_run, op_records

from tilescope.app.workbench.measured_runs import is_report, report_name
from tilescope.app.workbench.replay_runs import replay_measured

UNBUILT_SHOWN = 3  # op codes not built, named by their share of the time; the rest counted


class UnbuiltCode(NamedTuple):
    """An op code the replay built no op of: its ops and their measured time."""

    code: str
    ops: int
    ns: float


@dataclass(frozen=True)
class ReplayDone:
    """A replay stored from the page: its run, the measured run it is compared with (its parent),
    how much of the measured run it built, and the two times."""

    run_id: int
    measured_id: int
    source: str  # the report's file name
    target: str
    ops: int  # of the measured run
    built: int
    measured_ns: float  # device time summed, every op measured
    built_ns: float  # the measured time of the ops built
    predicted_ns: float
    unbuilt: tuple[UnbuiltCode, ...]  # by time, most first

    def line(self) -> str:
        """One line for the page."""
        share = self.built_ns / self.measured_ns if self.measured_ns else 1.0
        said = (
            f"run {self.run_id}: replay of {self.source} on {self.target}, compared with measured run "
            f"{self.measured_id}: {self.built:,} of {self.ops:,} ops built ({share:.1%} of the device time measured); "
            f"{self.predicted_ns / 1e3:,.1f} us predicted, {self.built_ns / 1e3:,.1f} us measured"
        )
        if not self.unbuilt:
            return said
        named = ", ".join(
            f"{u.code} ({u.ops:,} ops, {u.ns / self.measured_ns:.1%})" for u in self.unbuilt[:UNBUILT_SHOWN]
        )
        rest = len(self.unbuilt) - UNBUILT_SHOWN
        return f"{said}; not built: {named}" + (f" and {rest} more op codes" if rest > 0 else "")


def replay_stored(
    sessions: sessionmaker[Session], run_id: int, target: str | None = None, on_stage=lambda stage: None
) -> ReplayDone:
    """Replay the stored measured run `run_id` on `target` (a built-in target; None or its own: the
    chip it was measured on) and store the replay. Bad requests raise TilescopeError with one line
    naming the cause, and store nothing."""
    with sessions() as session:
        run = get_run(session, run_id)
        if run.kind != MEASURED or not is_report(run.model_ref):
            raise TilescopeError(f"run {run_id} is not a measured report: only a measured run can be replayed")
        name = report_name(run.model_ref)
        if is_trace(run.model.source_text):
            raise TilescopeError(f"{name} is a trace: only an ops perf report says enough of its ops to replay them")
        if target == run.target_ref:
            target = None
        if target is not None and target not in builtin_names():
            raise TilescopeError(f"a replay runs on a built-in target ({', '.join(builtin_names())}), not {target}")
        on_stage(f"replaying {name} on {target or run.target.name}")
        stored = replay_measured(session, run_id, target)
        # the parent is the newest measured run of the report's text: this one, or an upload of it since
        measured_id = stored.measured_id or run_id
        on_stage("comparing the replay with the measurement")
        return _done(session, stored.run_id, measured_id, name)


def _done(session: Session, run_id: int, measured_id: int, source: str) -> ReplayDone:
    replayed = op_records(session, run_id, moved=False)
    measured = op_records(session, measured_id, moved=False)
    built = {(r.device, r.name) for r in replayed}
    kept = [r for r in measured if (r.device, r.name) in built]
    return ReplayDone(
        run_id=run_id,
        measured_id=measured_id,
        source=source,
        target=get_run(session, run_id).target.name,
        ops=len(measured),
        built=len(kept),
        measured_ns=math.fsum(r.duration_ns for r in measured),
        built_ns=math.fsum(r.duration_ns for r in kept),
        predicted_ns=math.fsum(r.duration_ns for r in replayed),
        unbuilt=_unbuilt([r for r in measured if (r.device, r.name) not in built]),
    )


def _unbuilt(records: Sequence) -> tuple[UnbuiltCode, ...]:
    found: dict[str, list[float]] = defaultdict(list)
    for r in records:
        found[r.op_code or r.kind].append(r.duration_ns)
    codes = (UnbuiltCode(code, len(times), math.fsum(times)) for code, times in found.items())
    return tuple(sorted(codes, key=lambda u: (-u.ns, u.code)))
