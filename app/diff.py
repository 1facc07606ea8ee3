"""`tilescope diff A B`: run B against run A, op by op."""

from __future__ import annotations

import json

from perfdb.engine import open_db, session_factory
from perfdb.queries import diff_runs


def main(a: int, b: int, db: str | None, as_json: bool) -> int:
    """Print the diff as JSON or as a table; a missing run raises perfdb.queries.RunNotFound."""
    with session_factory(open_db(db))() as session:
        diff = diff_runs(session, a, b)
    if as_json:
        print(json.dumps(diff, indent=1))
        return 0
    print(f"run {b} against run {a}")
    width = max([len(op["name"]) for op in diff["ops"]] + [2])
    print(f"{'op':<{width}}  {'a us':>10} {'b us':>10} {'delta us':>10} {'ratio':>7}  changes")
    for op in diff["ops"]:
        ratio = f"{op['ratio']:.2f}x" if op["ratio"] is not None else "-"
        line = (
            f"{op['name']:<{width}}  {op['a_ns'] / 1e3:>10.2f} {op['b_ns'] / 1e3:>10.2f} "
            f"{op['delta_ns'] / 1e3:>+10.2f} {ratio:>7}  {', '.join(op['changes'])}"
        )
        print(line.rstrip())
    print(f"total delta {diff['total_delta_ns'] / 1e3:+.2f} us")
    for side in ("a", "b"):
        if diff["unmatched"][side]:
            print(f"only in {side} (run {diff[side]}): {', '.join(diff['unmatched'][side])}")
    return 0

