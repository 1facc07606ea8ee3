"""`tilescope diff A B`: run B against run A, op by op, as a table or as JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tilescope.perfdb.diff import MovedOp, OnlyOp, OpDelta
from tilescope.perfdb.diff_ops import BY_SEQUENCE
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.meshes import CollectiveOp

from tilescope.app.workbench.diff import (
    SHOWN,
    change_note,
    collective_text,
    compare,
    device_parts,
    device_table,
    load_times_text,
    more,
    moved_sections,
    moved_text,
    runs_text,
    settings_text,
    time_split,
    unchanged,
)
from tilescope.app.workbench.kind_deltas import kind_lines
from tilescope.app.cli.messages import warning

SHOWN_KINDS = 12  # kinds in the table by kind; the JSON keeps every op
BY_KIND_FROM = 20  # ops: a diff of more has its table by kind too


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
    print(runs_text(d))
    _print_op_table(d.ops, d.alignment == BY_SEQUENCE)
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
    if len(d.ops) + len(d.removed) + len(d.inserted) > BY_KIND_FROM:
        for line in kind_lines(d, SHOWN_KINDS):
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


def _print_op_table(ops: Sequence[OpDelta], aligned: bool) -> None:
    """The ops of both runs that changed, one line each: their times, delta, ratio and changes; with
    run b's name of each op when the runs' ops were `aligned` as sequences (names are then each
    run's own). Those that kept their time and parameters are counted."""
    shown = [op for op in ops if not unchanged(op)]
    width = max([len(op.name) for op in shown] + [2])
    b_width = max([len(op.b_name) for op in shown] + [4]) if aligned else 0
    b_head = f"{'b op':<{b_width}}  " if aligned else ""
    banded = any(op.error_ns is not None for op in shown)  # a column of the model's error: predictions only
    if shown:
        error_head = f" {'+- us':>8}" if banded else ""
        print(f"{'op':<{width}}  {b_head}{'a us':>10} {'b us':>10} {'delta us':>10}{error_head} {'ratio':>7}  changes")
    for op in shown:
        ratio = f"{op.ratio:.2f}x" if op.ratio is not None else "-"
        b_name = f"{op.b_name:<{b_width}}  " if aligned else ""
        error = (f" {op.error_ns / 1e3:>8.2f}" if op.error_ns is not None else f" {'-':>8}") if banded else ""
        said = change_note(op)
        line = (
            f"{op.name:<{width}}  {b_name}{op.a_ns / 1e3:>10.2f} {op.b_ns / 1e3:>10.2f} "
            f"{op.delta_ns / 1e3:>+z10.2f}{error} {ratio:>7}  {said}"
        )
        print(line.rstrip())
    same = len(ops) - len(shown)
    if same:
        print(f"{same:,} op{'s' * (same != 1)} of both runs unchanged (time and parameters); --json lists every op")


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
