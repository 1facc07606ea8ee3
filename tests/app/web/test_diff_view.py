"""The diff view of measured runs: a prediction against its measurement, op by op and by kind, with
columns saying which is which; two measured runs aligned as sequences, each run's names; each
device's row of a measured run of eight."""

from __future__ import annotations

import pytest

from tilescope.app.web.diff_table import KINDS_FROM, SHOWN_OPS
from tilescope.app.web.aligned_runs import changed_ops, outlined, timeline_rows
from tilescope.app.web.diff_view import diff_body, diff_children
from tilescope.app.workbench.diff import DiffView, compare
from tilescope.perfdb.diff import Sides
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import get_run, op_records
from tests.app.web.panels.test_runs import _find as find
from tests.perfdb.measured_runs import csv_text, store_report
from tests.perfdb.test_diff_measured import HEADER, LAYER, encoder, row


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


def view(sessions, a: int, b: int) -> DiffView:
    """What Explorer.diff gives the view, without a model to compile."""
    with sessions() as session:
        comparison = compare(session, a, b)
        runs = Sides(get_run(session, a), get_run(session, b))
        durations = Sides(*([r.duration_ns for r in op_records(session, i)] for i in (a, b)))
    return DiffView(comparison, runs, Sides({}, {}), durations)


def headers(table) -> dict[str, str]:
    return {c["field"]: c["headerName"] for c in table.columnDefs}


def test_a_prediction_against_its_measurement_op_by_op_and_by_kind(sessions):
    rows = encoder(layers=4)
    text = csv_text(HEADER, rows)
    measured = store_report(sessions, text, "encoder.csv")
    # every op predicted 1.5 times as long as it was measured
    replay = store_report(sessions, text, "encoder.csv", kind="simulated", parent_id=measured, scale=1.5)
    found = view(sessions, measured, replay)
    assert found.comparison.diff.alignment == "name"
    body = diff_body(found)
    table = find(body, "diff-table")
    assert headers(table)["a_us"] == "A (measured) us" and headers(table)["b_us"] == "B (predicted) us"
    assert "b_name" not in headers(table)
    assert len(table.rowData) == len(rows) and all(r["ratio"] == 1.5 for r in table.rowData)
    kinds = find(body, "diff-kinds")
    assert headers(kinds)["a_us"] == "A (measured) us" and len(rows) > KINDS_FROM
    by_kind = {r["kind"]: r for r in kinds.rowData}
    assert by_kind["transpose"]["a_ops"] == by_kind["transpose"]["b_ops"] == 16
    assert by_kind["transpose"]["ratio"] == 1.5
    deltas = [abs(r["delta_us"]) for r in kinds.rowData]
    assert deltas == sorted(deltas, reverse=True)  # the largest delta first
    head = str(diff_children(found))
    assert f"#{measured} measured" in head and f"#{replay} predicted" in head
    assert "overrides only in A" not in head  # no compiler ran a measured run


def test_two_measured_runs_aligned_as_sequences_show_each_runs_names(sessions):
    rows = encoder(layers=2)
    n = len(LAYER)
    edited = [r for i, r in enumerate(rows) if i != n + 6]
    edited.insert(3, row("TypecastDeviceOperation", (1, 1, 64, 768), 777))
    edited.insert(5, row("TransposeDeviceOperation", (1, 12, 64, 64), 555))  # a transpose more, early on
    a = store_report(sessions, csv_text(HEADER, rows), "encoder.csv")
    b = store_report(sessions, csv_text(HEADER, edited), "encoder_v2.csv")
    found = view(sessions, a, b)
    body = diff_body(found, show_unchanged=True)
    table = find(body, "diff-table")
    assert headers(table)["name"] == "op in A" and headers(table)["b_name"] == "op in B"
    ids = [r["id"] for r in table.rowData]
    assert len(ids) == len(set(ids)) == len(rows) + 2  # all of both runs' ops: one removed, two inserted
    inserted = {r["b_name"]: r for r in table.rowData if r["only"] == "B"}
    # B's first transpose is the one it has alone: its name is A's first transpose's too
    assert inserted["TransposeDeviceOperation#1"]["id"] == "B:TransposeDeviceOperation#1"
    assert inserted["TransposeDeviceOperation#1"]["name"] == "" and "TypecastDeviceOperation#1" in inserted
    paired = {r["name"]: r["b_name"] for r in table.rowData if r["only"] is None}
    assert paired["TransposeDeviceOperation#1"] == "TransposeDeviceOperation#2"
    assert "Ops aligned by op code in execution order" in str(diff_children(found))


def test_a_measured_run_of_eight_devices_draws_each_devices_ops_on_its_row(sessions):
    a = store_report(sessions, csv_text(HEADER, encoder(layers=1, devices=8)), "eight.csv")
    with sessions() as session:
        run = get_run(session, a)
        records = op_records(session, a)
    rows = timeline_rows("A #1", records, run.tracks, {})
    assert [label for label, _ in rows] == [f"A #1 device {d}" for d in range(8)]
    assert all({r.device for r in on} == {d} and len(on) == len(LAYER) for d, (_, on) in enumerate(rows))


def test_the_per_op_table_holds_every_op_of_a_clip_report():
    assert SHOWN_OPS >= 1872


def test_a_changed_op_is_outlined_under_each_runs_name_of_it(sessions):
    rows = encoder(layers=1, devices=2)
    edited = [list(r) for i, r in enumerate(rows) if i != len(LAYER) + 1]  # device 1's first matmul
    edited[len(LAYER) + 1][HEADER.index("MATH FIDELITY")] = "LoFi"  # and its second ran in LoFi
    a = store_report(sessions, csv_text(HEADER, rows), "two.csv")
    b = store_report(sessions, csv_text(HEADER, edited), "two_v2.csv")
    changed = changed_ops(view(sessions, a, b).comparison.diff)
    assert changed == Sides({(1, "MinimalMatmulOp#2")}, {(1, "MinimalMatmulOp#1")})
    with sessions() as session:
        records = op_records(session, b)
    rows_b = timeline_rows("B #2", records, get_run_tracks(sessions, b), {})
    assert [outlined(on, changed.b) for _, on in rows_b] == [set(), {"MinimalMatmulOp#1"}]


def get_run_tracks(sessions, run_id: int) -> list[str]:
    with sessions() as session:
        return get_run(session, run_id).tracks
