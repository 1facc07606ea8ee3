"""What an import of a measured profile says it read and stored, for the command line and the
page alike: rows read, imported and skipped, host-only rows, each device's ops and time, and the
device time summed."""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.profiles.report import Report

from tilescope.app.workbench.measured_runs import StoredReport


@dataclass(frozen=True)
class ImportSummary:
    source: str
    run_id: int
    target: str
    rows: int  # read, every kind (or a trace's events)
    imported: int  # device ops stored
    skipped: int
    host: int  # host-only rows, kept apart: not device time
    signposts: int
    stored: StoredReport

    def lines(self) -> list[str]:
        head = (
            f"run {self.run_id}: measured, {self.imported:,} op(s) from {self.source} on {self.target}; "
            f"{self.rows:,} rows read, {self.skipped:,} skipped, {self.host:,} host-only"
        )
        if self.signposts:
            head += f", {self.signposts:,} signposts"
        devices = self.stored.devices
        lines = [head]
        if len(devices) > 1:
            lines += [f"  device {d.device}: {d.ops:,} ops, {d.ns / 1e3:,.1f} us" for d in devices]
        many = f" over {len(devices)} devices" if len(devices) > 1 else ""
        lines.append(f"device time: {self.stored.device_ns / 1e3:,.1f} us summed{many}")
        return lines


def summarize(report: Report, stored: StoredReport) -> ImportSummary:
    return ImportSummary(
        source=report.source,
        run_id=stored.run_id,
        target=stored.target,
        rows=report.rows,
        imported=stored.ops,
        skipped=len(stored.skipped),
        host=len(report.host_ops),
        signposts=len(report.signposts),
        stored=stored,
    )
