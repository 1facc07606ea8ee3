"""`tilescope stats RUN`: where a run's device time goes, per op name or per op kind."""

from __future__ import annotations

import json

from perfdb.engine import open_db, session_factory
from perfdb.queries import op_statistics


def main(run_id: int, by: str, db: str | None, as_json: bool) -> int:
    with session_factory(open_db(db))() as session:
        rows = op_statistics(session, run_id, by)
    if as_json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max([len(str(row[by])) for row in rows] + [len(by)])
    print(
        f"{by:<{width}}  {'count':>6} {'total us':>10} {'mean us':>9} {'min us':>9} {'median us':>10} "
        f"{'p90 us':>9} {'max us':>9} {'% run':>6}"
    )
    for row in rows:
        print(
            f"{row[by]:<{width}}  {row['count']:>6} {row['total_ns'] / 1e3:>10.2f} {row['mean_ns'] / 1e3:>9.2f} "
            f"{row['min_ns'] / 1e3:>9.2f} {row['median_ns'] / 1e3:>10.2f} {row['p90_ns'] / 1e3:>9.2f} "
            f"{row['max_ns'] / 1e3:>9.2f} {row['pct_of_run']:>6.1f}"
        )
    return 0
