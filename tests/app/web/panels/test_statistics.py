"""The statistics tab and find zone."""

from __future__ import annotations

import pytest
from dash import no_update

from .conftest import FC1, shown_run


def test_statistics_per_op_and_type_and_a_row_click_selects_the_op(app, cb):
    run_id = shown_run(cb)
    per_op = cb["show_statistics"](run_id, "name")
    rows, durations = per_op["data"], app.explorer.durations(run_id)
    assert {r["name"] for r in rows} == set(durations) and per_op["columns"][0]["id"] == "name"
    fc1 = next(r for r in rows if r["name"] == FC1)
    assert fc1["count"] == 1 and fc1["total_ns"] == pytest.approx(durations[FC1] / 1e3, abs=1e-3)  # shown in us
    assert sum(r["pct_of_run"] for r in rows) == pytest.approx(100, abs=0.1)
    per_kind = cb["show_statistics"](run_id, "kind")
    assert per_kind["columns"][0]["id"] == "kind" and sum(r["count"] for r in per_kind["data"]) == len(rows)
    assert cb["select_in_statistics"]({"row": 0, "column": 0, "row_id": FC1}, "name") == FC1
    assert cb["select_in_statistics"]({"row": 0, "column": 0, "row_id": None}, "kind") is no_update


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
    assert "nothing selected" in cb["find_zone"](run_id, None, None, "statistics", "name").layout.title.text
