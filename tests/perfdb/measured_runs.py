"""Measured runs for the diff's tests, stored the way a measured report is: one op record per device op,
named by its LOC, else by its op code and its count among that code's ops on its device; its kind
the op code's in tilescope's vocabulary (else the op code); device, program config, fidelity, cores
and tensors as the report says; each device's ops back to back on a track of its own. Only what a
diff reads is filled in (no FLOPs or bytes)."""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

from tilescope.compiler.profiles.chips import report_target
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.op_codes import kind_of
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.report import Report, ReportOp, ReportTensor
from tilescope.compiler.sim.records import OpTiming, TensorUse
from tilescope.compiler.sim.tracks import device_track
from tilescope.perfdb.records import NewRun, ZoneColumns
from tilescope.perfdb.store import save_run

from tests.conftest import PERF_REPORTS

REPORTS = PERF_REPORTS  # re-exported: the diff's tests take it from here


def _uses(op: ReportOp) -> tuple[TensorUse, ...]:
    def use(role: str, tensor: ReportTensor) -> TensorUse:
        tile = "32x32" if tensor.layout == "tile" else ""
        return TensorUse(
            role, "", tensor.shape, tensor.dtype, tensor.memory, tensor.memory_layout, tensor.layout, tile, ""
        )

    return (
        *(use(f"in{i}", t) for i, t in enumerate(op.inputs)),
        *(use(f"out{i}", t) for i, t in enumerate(op.outputs)),
    )


def measured_run(
    report: Report, text: str, kind: str = "measured", target: str | None = None, scale: float = 1.0, **fields
) -> NewRun:
    """The run of a report: `kind` simulated stands for a replay of it (named and laid out alike),
    each op's time the report's times `scale`."""
    ops, zones, clocks = [], [], {}
    for name, op in zip(op_names(report), report.ops):
        start = clocks.get(op.device, 0.0)
        duration = (op.kernel_ns or 0.0) * scale
        clocks[op.device] = start + duration
        output = op.outputs[0].memory if op.outputs else ""
        ops.append(
            OpTiming(
                name=name,
                kind=kind_of(op.op_code, op.attributes) or op.op_code,
                start_ns=start,
                duration_ns=duration,
                flops=0,
                bytes={},
                bound="measured" if kind == "measured" else "dram",
                memory=output,
                grid="",
                cores=op.cores or 0,
                roofline_ns=0.0,
                level="measured" if kind == "measured" else "kernel",
                fidelity=op.fidelity,
                tensors=_uses(op),
                device=op.device,
                config=op.program_config,
            )
        )
        zones.append((device_track(op.device), 0, name, start, start + duration, name))
    total = max(clocks.values(), default=0.0)
    source = Path(report.source).name
    return NewRun(
        model_ref=f"report:{source}",
        model_name=source,
        source_hash=hashlib.sha256(text.encode()).hexdigest(),
        source_text=text,
        target=target or report_target(report.arch).name,
        total_ns=total,
        device_ns=sum(op.duration_ns for op in ops),
        ops=ops,
        zones=ZoneColumns.from_rows(zones),
        kind=kind,
        **fields,
    )


def store_report(sessions, text: str, source: str, **options) -> int:
    """The id of the measured run (or, with kind="simulated", the replay) of a report's text."""
    with sessions() as session:
        return save_run(session, measured_run(read_ops_report(text, source), text, **options))


def csv_rows(text: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    return out.getvalue()
