"""`tilescope diff A B`: run B against run A, op by op, as a table or as JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tilescope.perfdb.diff import MovedOp, OnlyOp, OpDelta
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.meshes import CollectiveOp

from tilescope.app.workbench.diff import (
    SHOWN,
    changes_text,
    collective_text,
    compare,
    device_parts,
    device_table,
    load_times_text,
    more,
    moved_sections,
    moved_text,
    settings_text,
    time_split,
)
from tilescope.app.cli.messages import warning


def main(a: int, b: int, db: str | None, as_json: bool) -> int:
    """Print the diff as JSON or as a table; a missing run raises perfdb.errors.RunNotFound."""
    with session_factory(open_db(db))() as session:
        found = compare(session, a, b)
    if as_json:
        print(json.dumps(found.to_json(), indent=1))
        return 0
    d = found.diff
    for text in d.warnings:
        warning(text)
    print(f"run {b} against run {a}")
    _print_op_table(d.ops)
    for title, ops in ((f"removed (only in run {a})", d.removed), (f"inserted (only in run {b})", d.inserted)):
        total = sum(op.ns for op in ops) / 1e3
        _print_ops(title, ops, f"{total:.2f} us", lambda op: f"{op.ns / 1e3:>10.2f} us")
    collectives = d.collectives
    for title, ops in (
        (f"collectives removed (only in run {a})", collectives.removed),
        (f"collectives inserted (only in run {b})", collectives.inserted),
    ):
        total = sum(op.ns for op in ops) / 1e3
        _print_ops(title, ops, f"{total:.2f} us", collective_text)
    for title, ops in moved_sections(d):
        total = sum(op.step_ns for op in ops) / 1e3
        _print_ops(title, ops, f"{total:.2f} us per step", moved_text)
    if d.settings:
        print(f"settings: {settings_text(d.settings)}")
    for run_id, items in ((a, d.overrides.a), (b, d.overrides.b)):
        if items:
            print(f"overrides only in run {run_id}: {', '.join([*items[:SHOWN], *more(len(items) - SHOWN)])}")
    for line in device_table(found):
        print(line)
    load = load_times_text(d)
    if load:
        print(load)
    times = d.times
    print(
        f"total delta {d.total_delta_ns / 1e3:+z,.2f} us "
        f"({times.a.total_ns / 1e3:,.2f} us -> {times.b.total_ns / 1e3:,.2f} us)"
    )
    print(time_split(d))
    print(device_parts(found))
    return 0


def _print_op_table(ops: Sequence[OpDelta]) -> None:
    """The ops of both runs, one line each: their times, delta, ratio and changes."""
    width = max([len(op.name) for op in ops] + [2])
    print(f"{'op':<{width}}  {'a us':>10} {'b us':>10} {'delta us':>10} {'ratio':>7}  changes")
    for op in ops:
        ratio = f"{op.ratio:.2f}x" if op.ratio is not None else "-"
        line = (
            f"{op.name:<{width}}  {op.a_ns / 1e3:>10.2f} {op.b_ns / 1e3:>10.2f} "
            f"{op.delta_ns / 1e3:>+z10.2f} {ratio:>7}  {changes_text(op.changes)}"
        )
        print(line.rstrip())


def _print_ops(title: str, ops: Sequence[OnlyOp | CollectiveOp | MovedOp], total: str, describe) -> None:
    """A heading with the ops' count and total, then the first SHOWN ops, the rest counted."""
    if not ops:
        return
    print(f"{title}: {len(ops)} op{'s' * (len(ops) != 1)}, {total}")
    shown = max(len(op.name) for op in ops[:SHOWN])
    for op in ops[:SHOWN]:
        print(f"  {op.name:<{shown}}  {op.kind:<12} {describe(op)}")
    for line in more(len(ops) - SHOWN):
        print(f"  {line}")
