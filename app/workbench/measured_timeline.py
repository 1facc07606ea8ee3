"""The timeline of a measured run: its zones and counters, as a simulated run's are stored.

Rows: each device's ops on its own clock ("device N"; a trace's ops on their process's thread
instead), the traced regions a device replayed ("traces": one zone per run of ops of one METAL
TRACE ID), the regions between the model's signposts ("signposts"), and the ops that ran in torch
on the host ("host": on the host's clock, set against the device's at the first op both clocks
timed; not device time, and no op record). Counters: what the ops' tensors take of one core's L1
while they run, per device, where the report says what lives in L1.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.profiles.op_work import l1_bytes_per_core
from tilescope.compiler.profiles.report import Report, ReportOp
from tilescope.compiler.sim.records import OpTiming
from tilescope.compiler.sim.tracks import device_track
from tilescope.compiler.targets.chip import Target
from tilescope.perfdb.records import CounterColumns, ZoneColumns

TRACES, SIGNPOSTS, HOST = "traces", "signposts", "host"
L1 = "l1_bytes"  # the counter the memory view and the timeline's L1 plot read


@dataclass(frozen=True, eq=False)
class MeasuredTimeline:
    zones: ZoneColumns
    counters: CounterColumns
    total_ns: float  # the latest end of anything on it


def op_track(op: ReportOp) -> str:
    """The row a measured op is drawn in: its device's, or its trace thread's."""
    return op.track or device_track(op.device)


def measured_timeline(
    report: Report, ops: Sequence[OpTiming], measured: Sequence[ReportOp], target: Target
) -> MeasuredTimeline:
    """The zones and counters of `ops` (the records of `measured`, the report's device ops)."""
    device_rows = sorted({op_track(m) for m in measured}, key=_row_order)
    rows = {row: [] for row in device_rows}
    for op, m in zip(ops, measured):
        rows[op_track(m)].append((op_track(m), 0, op.name, op.start_ns, op.end_ns, op.name))
    zones = [zone for row in device_rows for zone in rows[row]]
    zones += _traces(ops, measured)
    zones += _regions(report, ops, measured)
    zones += _host(report, ops, measured)
    total = max((end for _, _, _, _, end, _ in zones), default=0.0)
    return MeasuredTimeline(ZoneColumns.from_rows(zones), CounterColumns.from_rows(_l1(ops, measured, target)), total)


def _row_order(row: str) -> tuple:
    """Devices by number, then a trace's threads by name."""
    number = row.removeprefix("device ")
    return (0, int(number), "") if number.isascii() and number.isdigit() and row != number else (1, 0, row)


def _traces(ops: Sequence[OpTiming], measured: Sequence[ReportOp]) -> list[tuple]:
    """One zone per run of a device's ops replayed from one captured trace."""
    devices = len({m.device for m in measured})
    found: list[tuple] = []
    open_: dict[int, list] = {}  # device -> [trace id, start, end] of the run of ops being read
    for op, m in zip(ops, measured):
        run = open_.get(m.device)
        if run is not None and run[0] == m.trace_id:
            run[2] = max(run[2], op.end_ns)
            continue
        if run is not None and run[0]:
            found.append(_trace_zone(run, m.device, devices))
        open_[m.device] = [m.trace_id, op.start_ns, op.end_ns]
    found += [_trace_zone(run, device, devices) for device, run in open_.items() if run[0]]
    return sorted(found, key=lambda zone: zone[3])


def _trace_zone(run: list, device: int, devices: int) -> tuple:
    name = f"trace {run[0]}" + (f" (device {device})" if devices > 1 else "")
    return (TRACES, 0, name, run[1], run[2], "")


def _regions(report: Report, ops: Sequence[OpTiming], measured: Sequence[ReportOp]) -> list[tuple]:
    """One zone per region between signposts: from its first op's start to its last op's end."""
    if not report.signposts:
        return []
    lines = [s.line for s in report.signposts]
    spans: dict[int, list[float]] = {}
    for op, m in zip(ops, measured):
        at = bisect.bisect_left(lines, m.line) - 1  # the signpost before the op
        if at >= 0:
            span = spans.setdefault(at, [op.start_ns, op.end_ns])
            span[0], span[1] = min(span[0], op.start_ns), max(span[1], op.end_ns)
    return [(SIGNPOSTS, 0, report.signposts[at].name or "signpost", *spans[at], "") for at in sorted(spans)]


def _host(report: Report, ops: Sequence[OpTiming], measured: Sequence[ReportOp]) -> list[tuple]:
    """The host-only ops, on the device's clock from the first device op timed on both clocks."""
    both = next(((op, m) for op, m in zip(ops, measured) if m.host_start_ns is not None), None)
    if both is None:
        return []
    offset = both[1].host_start_ns - both[0].start_ns
    found = []
    for op in report.host_ops:
        if op.host_start_ns is None:
            continue  # counted, but nowhere to draw it
        start = op.host_start_ns - offset
        end = op.host_end_ns - offset if op.host_end_ns is not None else start + (op.kernel_ns or 0.0)
        found.append((HOST, 0, f"{op.op_code} (host)", start, max(start, end), ""))
    return found


def _l1(ops: Sequence[OpTiming], measured: Sequence[ReportOp], target: Target) -> list[tuple]:
    """L1 bytes per core in use on each device over time: at every op's start and end, the sum of
    what the ops running then take (a device's ops may overlap)."""
    events: dict[str, list[tuple[float, float]]] = {}
    for op, m in zip(ops, measured):
        held = l1_bytes_per_core(m, target)
        if held > 0:
            events.setdefault(op_track(m), []).extend(((op.start_ns, held), (op.end_ns, -held)))
    samples = []
    for row, changes in events.items():
        level = 0.0
        for t, change in sorted(changes):
            level = max(0.0, level + change)
            if samples and samples[-1][0] == row and samples[-1][2] == t:
                samples[-1] = (row, L1, t, level)  # several changes at one time: the last level holds
            else:
                samples.append((row, L1, t, level))
    return samples
