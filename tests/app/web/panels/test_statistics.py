"""The statistics tab and find zone."""

from __future__ import annotations

import pytest
from dash import no_update

from .conftest import FC1, shown_run


def test_statistics_per_op_and_type_and_a_row_click_selects_the_op(app, cb):
    run_id = shown_run(cb)
    per_op = cb["show_statistics"](run_id, "name")
    rows, durations = per_op["data"], app.explorer.durations(run_id)
    assert {r["name"] for r in rows} == set(durations) and per_op["columns"][0]["field"] == "name"
    fc1 = next(r for r in rows if r["name"] == FC1)
    assert fc1["count"] == 1 and fc1["total_ns"] == pytest.approx(durations[FC1] / 1e3, abs=1e-3)  # shown in us
    assert sum(r["pct_of_run"] for r in rows) == pytest.approx(100, abs=0.1)
    # one op has no spread: no mean, min, max, median or p90 repeating its time
    assert all(fc1[k] is None for k in ("mean_ns", "min_ns", "max_ns", "median_ns", "p90_ns"))
    per_kind = cb["show_statistics"](run_id, "kind")
    assert per_kind["columns"][0]["field"] == "kind" and sum(r["count"] for r in per_kind["data"]) == len(rows)
    several = [r for r in per_kind["data"] if r["count"] > 1]
    assert several and all(r["min_ns"] <= r["mean_ns"] <= r["max_ns"] for r in several)
    assert cb["select_in_statistics"]({"rowIndex": 0, "colId": "name", "rowId": FC1}, "name") == FC1
    assert cb["select_in_statistics"]({"rowIndex": 0, "colId": "kind", "rowId": "matmul"}, "kind") is no_update


def test_find_zone_shows_the_spread_of_an_op_over_its_cores_and_of_an_op_type(app, cb):
    run_id = shown_run(cb)
    record = app.explorer.op_record(run_id, FC1)
    assert cb["find_zone"](run_id, FC1, None, "timeline", "name") is no_update  # its tab is closed
    figure = cb["find_zone"](run_id, FC1, None, "statistics", "name")
    assert len(figure.data[0].x) == record.cores == 64
    assert f"{FC1}: 64 zones" in figure.layout.title.text
    kind = record.kind
    assert kind in [r["id"] for r in cb["show_statistics"](run_id, "kind")["data"]]
    by_kind = app.explorer.find_zone(run_id, kind=kind)
    assert len(by_kind) == sum(1 for r in app.explorer.op_records(run_id) if r.kind == kind)
    nothing = cb["find_zone"](run_id, None, None, "statistics", "name")
    assert "Nothing selected" in nothing.layout.annotations[0].text and nothing.layout.xaxis.visible is False


def test_the_statistics_list_the_load_time_ops_apart_from_the_shares_per_step(app, cb):
    from app.workbench.load_time import ops_text
    from tests.perfdb.load_work import store_hoisted

    from .conftest import MODEL

    assert cb["show_statistics"](shown_run(cb), "name")["load"] == []  # no load-time work: nothing shown
    run_id, sim = store_hoisted(app.explorer.sessions, {FC1}, ref=MODEL)
    shown = cb["show_statistics"](run_id, "name")
    assert FC1 not in {r["name"] for r in shown["data"]}
    assert sum(r["pct_of_run"] for r in shown["data"]) == pytest.approx(100, abs=0.1)  # of the step alone
    heading, hint, table = shown["load"]
    assert heading.children == f"Once per model load: {ops_text(len(sim.load_ops), sim.load_ns)}"
    assert "const-eval" in hint.children and "not in the time per step" in hint.children
    assert [(r["name"], r["kind"], r["us"]) for r in table.rowData] == [
        (op.name, op.kind, pytest.approx(op.duration_ns / 1e3, abs=1e-3)) for op in sim.load_ops
    ]
    assert FC1 in [r["name"] for r in table.rowData]
