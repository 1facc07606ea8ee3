"""A measured run on its own: a profile measured on hardware (tt-metal's ops perf report, or a
Chrome / Perfetto trace) stored with no model file and no simulated run beside it.

Its model is the report: named by the file, referenced as `report:<file name>`, the report's text
kept as the model's source (so a replay can be made of a stored run later). Its target is the chip
the report names. One op record per device op (compiler/profiles/measured_ops.py), its timeline by
app/workbench/measured_timeline.py, and the record of the import (rows read, ops stored, each row
left out with why) are stored in one transaction: a bad report stores nothing.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy.orm import Session

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.chips import report_target
from tilescope.compiler.profiles.measured_ops import MEASURED, measured_ops
from tilescope.compiler.profiles.report import Report
from tilescope.compiler.targets.catalog import load_target, target_text
from tilescope.perfdb.records import NewRun
from tilescope.perfdb.schema import MeasuredImport
from tilescope.perfdb.store import add_run

from tilescope.app.workbench.measured_timeline import measured_timeline

REPORT_REF = "report:"  # a measured run's model reference: the report it was read from
MESH_AXIS = "devices"  # the one axis of a measured run's devices (the report says no more of them)


class StoreError(TilescopeError):
    """A report that holds nothing to store."""


def source_hash(text: str) -> str:
    """A report's hash as its model row keeps it: the replay of a stored report finds its measured run by it."""
    return hashlib.sha256(text.encode()).hexdigest()


def report_ref(source: str) -> str:
    return REPORT_REF + source


def is_report(model_ref: str) -> bool:
    """Whether a run's model is a measured report (no model to compile)."""
    return model_ref.startswith(REPORT_REF)


def report_name(model_ref: str) -> str:
    return model_ref.removeprefix(REPORT_REF)


class DeviceTime(NamedTuple):
    device: int
    ops: int
    ns: float  # its ops' device kernel time summed


@dataclass(frozen=True)
class StoredReport:
    """What store_measured stored: the run, its target (and why, when the report did not name its
    chip), the rows left out with why, and each device's ops and time."""

    run_id: int
    target: str
    note: str
    skipped: tuple[str, ...]
    devices: tuple[DeviceTime, ...]

    @property
    def ops(self) -> int:
        return sum(d.ops for d in self.devices)

    @property
    def device_ns(self) -> float:
        return math.fsum(d.ns for d in self.devices)


def store_report(session: Session, report: Report, text: str, label: str = "", target: str | None = None) -> int:
    """Store `report` (read from `text`) as a measured run; returns its id. `target` overrides the
    chip the report names."""
    return store_measured(session, report, text, label, target).run_id


def store_measured(
    session: Session, report: Report, text: str, label: str = "", target: str | None = None
) -> StoredReport:
    """As store_report, with what was said of the rows."""
    if "\0" in text:  # kept as the model's source, which no database keeps with a NUL
        line = text.count("\n", 0, text.index("\0")) + 1
        raise StoreError(f"{report.source}:{line}: a NUL character; a profile is text")
    chosen, note = (target, "") if target else report_target(report.arch)
    chip = load_target(chosen)
    found = measured_ops(report, chip)
    if not found.ops:
        reasons = [*report.skipped, *found.skipped]
        raise StoreError(
            f"{report.source}: no device op to store" + (f" ({reasons[0]})" if reasons else " (the report lists none)")
        )
    timeline = measured_timeline(report, found.ops, found.measured, chip)
    devices = sorted({m.device for m in found.measured})
    new = NewRun(
        model_ref=report_ref(report.source),
        model_name=report.source,
        source_hash=source_hash(text),
        source_text=text,
        target=chip.name,
        target_ref=chosen,
        target_text=target_text(chosen)[0],
        total_ns=timeline.total_ns,
        device_ns=math.fsum(op.duration_ns for op in found.ops),
        ops=found.ops,
        zones=timeline.zones,
        counters=timeline.counters,
        label=label or f"measured: {report.source}",
        kind=MEASURED,
        mesh=[(MESH_AXIS, len(devices))] if len(devices) > 1 else (),
    )
    skipped = (*report.skipped, *found.skipped)
    if session.in_transaction():
        session.commit()  # end the caller's reads: the run and its import record are written in one
    with session.begin():
        run_id = add_run(session, new)
        session.add(
            MeasuredImport(
                run_id=run_id, source=report.source, rows=report.rows, matched=len(found.ops), problems=list(skipped)
            )
        )
    return StoredReport(run_id, chip.name, note, skipped, _device_times(found.ops))


def _device_times(ops) -> tuple[DeviceTime, ...]:
    found: dict[int, list[float]] = {}
    for op in ops:
        found.setdefault(op.device, []).append(op.duration_ns)
    return tuple(DeviceTime(d, len(found[d]), math.fsum(found[d])) for d in sorted(found))


def no_model_lines(model_ref: str, kind: str = MEASURED) -> tuple[str, str]:
    """What a view of the model of a run made from a report says: there is none, and how to get a
    simulation of the report (a replay, itself of no whole model: each op is built alone)."""
    name = report_name(model_ref)
    if kind != MEASURED:
        return (
            f"A replay of {name} has no graph: each op of the report was built and simulated alone.",
            "Compare it with the measured run op by op: Runs & diff, or tilescope diff on the command line",
        )
    return (
        f"A measured run has no graph: it was read from {name}, not compiled from a model.",
        f"Replay it to simulate the report op by op and compare the two: tilescope replay {name}",
    )


def no_model_line(model_ref: str, kind: str = MEASURED) -> str:
    return " ".join(no_model_lines(model_ref, kind))
