"""`tilescope import REPORT`: a profile measured on hardware (an ops perf report, or a Chrome /
Perfetto trace) stored as a measured run on its own, and what was read of it: rows imported, rows
skipped with why (the first few, then how many more), host-only rows, each device's ops and time,
and the device time summed."""

from __future__ import annotations

from pathlib import Path

from tilescope.app.cli.input_files import read_bytes
from tilescope.app.cli.messages import note, warning

MAX_BYTES = 256 * 2**20  # a profile file read whole (a report's rows and a trace's events are bounded too)
SHOWN_SKIPPED = 5  # rows skipped that are named one by one; the rest are counted


def import_report(name: str, label: str, target: str | None, db: str | None) -> int:
    from tilescope.compiler.profiles.profile_file import profile_text, read_profile
    from tilescope.perfdb.engine import open_db, session_factory

    from tilescope.app.workbench.measured_runs import store_measured
    from tilescope.app.workbench.measured_summary import summarize

    source = Path(name).name or name
    text = profile_text(read_bytes(name, MAX_BYTES), name)
    report = read_profile(text, source)
    with session_factory(open_db(db))() as session:
        stored = store_measured(session, report, text, label, target)
    if stored.note:
        note(stored.note)
    for line in stored.skipped[:SHOWN_SKIPPED]:
        warning(f"skipped {line}")
    if len(stored.skipped) > SHOWN_SKIPPED:
        warning(f"... and {len(stored.skipped) - SHOWN_SKIPPED:,} more rows skipped")
    for line in report.notes:
        note(f"{source}: {line}")
    print("\n".join(summarize(report, stored).lines()))
    return 0
