"""`tilescope stats RUN`: where a run's device time goes, per op name, kind, code or line of source, and under it
the work done once per model load, which the per-step shares leave out."""

from __future__ import annotations

import json

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import get_run, load_ops, op_records
from tilescope.perfdb.statistics import op_statistics

from tilescope.app.workbench.device_split import split_each_device
from tilescope.app.workbench.load_time import kinds_text, load_line

MAX_GROUP_CHARS = 72
IDLE = "host/idle"  # the step's time with no op running: the shares of the run add up to 100% with it


def main(run_id: int, by: str, db: str | None, as_json: bool) -> int:
    with session_factory(open_db(db))() as session:
        rows = op_statistics(session, run_id, by)
        run = get_run(session, run_id)
        load, load_ns = load_ops(run), run.load_ns
        idle_ns = split_each_device(op_records(session, run_id), run.tracks, run.total_ns)[0].idle_ns
    if as_json:
        print(json.dumps([row.to_json(by) for row in rows], indent=1))
        return 0
    for row in rows:  # a line of source is its file, line and code: long code is cut to fit a terminal
        if by == "source" and len(row.group) > MAX_GROUP_CHARS:
            row.group = row.group[: MAX_GROUP_CHARS - 1] + "…"
    width = max([len(str(row.group)) for row in rows] + [len(by), len(IDLE)])
    print(
        f"{by:<{width}}  {'count':>6} {'total us':>10} {'mean us':>9} {'min us':>9} {'median us':>10} "
        f"{'p90 us':>9} {'max us':>9} {'% run':>6}"
    )
    for row in rows:
        print(
            f"{row.group:<{width}}  {row.count:>6} {row.total_ns / 1e3:>10.2f} {row.mean_ns / 1e3:>9.2f} "
            f"{row.min_ns / 1e3:>9.2f} {row.median_ns / 1e3:>10.2f} {row.p90_ns / 1e3:>9.2f} "
            f"{row.max_ns / 1e3:>9.2f} {row.pct_of_run:>6.1f}"
        )
    idle_pct = idle_ns / run.total_ns * 100 if run.total_ns else 0.0
    print(f"{IDLE:<{width}}  {'':>6} {idle_ns / 1e3:>10.2f} {'':>9} {'':>9} {'':>10} {'':>9} {'':>9} {idle_pct:>6.1f}")
    if load:
        print(f"{load_line(len(load), load_ns)}, not in % run: {kinds_text(load)}")
    return 0
