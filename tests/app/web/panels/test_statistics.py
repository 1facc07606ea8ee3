"""The statistics tab and find zone."""

from __future__ import annotations

import pytest
from dash import no_update

from tilescope.app.web.grids import grid_style
from tilescope.app.web.panels.statistics import IDLE_ROW, LIST_PX, PICK_HINT, found_list
from tilescope.app.workbench.find_zone import MAX_BUCKETS, pick
from tilescope.perfdb import timeline

from .conftest import CONSUMER, FC1, shown_run


def test_statistics_per_op_and_type_and_a_row_click_selects_the_op(app, cb):
    run_id = shown_run(cb)
    per_op = cb["show_statistics"](run_id, "name")
    rows, durations = per_op["data"], app.explorer.durations(run_id)
    assert {r["name"] for r in rows} == set(durations) and per_op["columns"][0]["field"] == "name"
    fc1 = next(r for r in rows if r["name"] == FC1)
    assert fc1["count"] == 1 and fc1["total_ns"] == pytest.approx(durations[FC1] / 1e3, abs=1e-3)  # shown in us
    assert sum(r["pct_of_run"] for r in rows) + _pinned(per_op)[0]["pct_of_run"] == pytest.approx(100, abs=0.1)
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
    found = cb["find_zone"](run_id, FC1, None, "statistics", "name")
    figure = found["figure"]
    # bars, not the zones one by one: the browser gets as many whatever the count
    assert sum(figure.data[0].y) == record.cores == 64 and len(figure.data[0].y) <= MAX_BUCKETS
    assert f"{FC1}: 64 zones" in figure.layout.title.text
    assert figure.layout.clickmode == "event+select" and figure.layout.dragmode == "select"
    # nothing picked yet: how to pick, and no list
    assert found["shown"] == {"run": run_id, "op": FC1, "kind": None, "picked": None, "by": "kind"}
    assert found["note"] == PICK_HINT and found["rows"] == [] and found["style"] == {"display": "none"}
    kind = record.kind
    assert kind in [r["id"] for r in cb["show_statistics"](run_id, "kind")["data"]]
    by_kind = app.explorer.find_zone(run_id, kind=kind)
    assert len(by_kind) == sum(1 for r in app.explorer.op_records(run_id) if r.kind == kind)
    nothing = cb["find_zone"](run_id, None, None, "statistics", "name")["figure"]
    assert "Nothing selected" in nothing.layout.annotations[0].text and nothing.layout.xaxis.visible is False


def _bars(*numbers: int) -> dict:
    """A pick of the histogram's bars, as plotly's selectedData gives it to the page."""
    return {"points": [{"curveNumber": 0, "pointNumber": n} for n in numbers]}


def test_a_bar_picked_lists_its_zones_and_a_row_selects_and_pins_its_zone(app, cb):
    run_id = shown_run(cb)
    found = cb["find_zone"](run_id, FC1, None, "statistics", "name")
    counts, shown = list(found["figure"].data[0].y), found["shown"]
    tallest = max(range(len(counts)), key=counts.__getitem__)
    listed = cb["list_zones"](_bars(tallest), shown)
    rows = listed["rows"]
    assert len(rows) == counts[tallest] and listed["style"] == grid_style(len(rows), LIST_PX)
    assert listed["note"].startswith(f"{counts[tallest]} zones of ") and "more" not in listed["note"]
    assert [c["field"] for c in listed["columns"]] == ["track", "start_us", "duration_us"]
    with app.explorer.sessions() as session:
        by_core = {z.track: z for z in timeline.zones(session, run_id, depth=0, op=FC1)}
    lo, hi = found["figure"].data[0].customdata[tallest]
    for row in rows:
        zone = by_core[row["track"]]
        assert row["op"] == FC1 and row["start_us"] == pytest.approx(zone.start_ns / 1e3, abs=1e-3)
        assert row["duration_us"] == pytest.approx((zone.end_ns - zone.start_ns) / 1e3, abs=1e-3)
        assert lo - 1e-3 <= row["duration_us"] <= hi + 1e-3  # in the bar picked
    assert [r["duration_us"] for r in rows] == sorted((r["duration_us"] for r in rows), reverse=True)
    # a drag across every bar: every zone
    assert len(cb["list_zones"](_bars(*range(len(counts))), shown)["rows"]) == 64
    # a row: its op selected, and its zone pinned to the timeline's card
    row = rows[-1]
    picked = cb["pick_zone"]({"rowId": row["id"], "colId": "track"}, rows, shown)
    assert picked["selected"] == FC1 and picked["shown"] == shown | {"picked": FC1}
    record = app.explorer.op_record(run_id, FC1)
    assert picked["pin"] == {
        "name": FC1,
        "op": FC1,
        "start": row["start_us"],
        "end": pytest.approx(row["start_us"] + row["duration_us"], abs=1e-3),
        "row": row["track"],
        "lane": "",
        "info": [
            record.kind,
            pytest.approx(record.duration_ns / 1e3, abs=1e-3),
            record.bound,
            record.why,
            pytest.approx(record.error_band * record.duration_ns / 1e3, abs=1e-3),
        ],
    }


def test_a_bar_of_an_op_type_lists_its_ops_and_a_page_of_them_at_most(app, cb):
    run_id = shown_run(cb, "zoo:mlp?layers=3")
    shown = {"run": run_id, "op": None, "kind": "matmul", "picked": None}
    ops = app.explorer.find_zone(run_id, kind="matmul")
    everything = list(range(MAX_BUCKETS))
    listed = cb["list_zones"](_bars(*everything), shown)
    assert [c["field"] for c in listed["columns"]][0] == "op" and listed["note"].startswith("6 ops of ")
    durations = {r.name: r.duration_ns / 1e3 for r in app.explorer.op_records(run_id) if r.kind == "matmul"}
    assert {r["op"]: r["duration_us"] for r in listed["rows"]} == pytest.approx(durations, abs=1e-3)
    # a row of an op type is an op: selecting it picks it, and the whole op is pinned
    fc2 = next(r for r in listed["rows"] if r["op"] == CONSUMER)
    picked = cb["pick_zone"]({"rowId": fc2["id"]}, listed["rows"], shown)
    assert picked["selected"] == CONSUMER and picked["pin"]["row"] == "device"
    assert picked["pin"]["end"] - picked["pin"]["start"] == pytest.approx(durations[CONSUMER], abs=1e-3)
    # past a page, the longest are listed and the rest counted
    capped = found_list(pick(ops, everything, limit=4), shown)
    assert len(capped["rows"]) == 4 and "(4 listed, and 2 more)" in capped["note"]
    assert capped["rows"][0]["duration_us"] == pytest.approx(max(durations.values()), abs=1e-3)


@pytest.mark.parametrize(
    "chosen, shown",
    [
        ({"points": "all"}, None),
        ({"points": [{"curveNumber": 0, "pointNumber": 10**9}, "x", {"pointNumber": "1"}]}, "ok"),
        (None, "ok"),
        (_bars(0), {"run": "1; drop table runs", "op": FC1}),
        (_bars(0), {"run": 10**6, "op": FC1}),  # no such run
        (_bars(0), {"run": 1, "op": None, "kind": None}),
    ],
)
def test_a_pick_the_page_did_not_send_lists_nothing(cb, chosen, shown):
    run_id = shown_run(cb)
    shown = {"run": run_id, "op": FC1} if shown == "ok" else shown
    listed = cb["list_zones"](chosen, shown)
    assert listed["rows"] == [] and listed["style"] == {"display": "none"}


def test_a_row_the_page_did_not_send_selects_nothing(cb):
    run_id = shown_run(cb)
    shown = {"run": run_id, "op": FC1, "kind": None, "picked": None}
    assert cb["pick_zone"]({"rowId": "x"}, [{"id": "x", "op": 5}], shown) is no_update
    assert cb["pick_zone"]({"rowId": "x"}, [{"id": "x", "op": "no.such.op"}], shown) is no_update
    assert cb["pick_zone"]({"rowId": "x"}, "rows", shown) is no_update
    assert cb["pick_zone"]({"rowId": "x"}, [{"id": "x", "op": FC1}], {"run": "1"}) is no_update
    # numbers it cannot read are 0, not a traceback
    odd = cb["pick_zone"]({"rowId": "x"}, [{"id": "x", "op": FC1, "start_us": "soon", "duration_us": True}], shown)
    assert odd["selected"] == FC1 and (odd["pin"]["start"], odd["pin"]["end"]) == (0.0, 0.0)


def test_the_statistics_list_the_load_time_ops_apart_from_the_shares_per_step(app, cb):
    from tilescope.app.workbench.load_time import ops_text
    from tests.perfdb.load_work import store_hoisted

    from .conftest import MODEL

    assert cb["show_statistics"](shown_run(cb), "name")["load"] == []  # no load-time work: nothing shown
    run_id, sim = store_hoisted(app.explorer.sessions, {FC1}, ref=MODEL)
    shown = cb["show_statistics"](run_id, "name")
    assert FC1 not in {r["name"] for r in shown["data"]}
    shares = sum(r["pct_of_run"] for r in shown["data"]) + _pinned(shown)[0]["pct_of_run"]
    assert shares == pytest.approx(100, abs=0.1)  # of the step alone
    heading, hint, table = shown["load"]
    assert heading.children == f"Once per model load: {ops_text(len(sim.load_ops), sim.load_ns)}"
    assert "const-eval" in hint.children and "not in the time per step" in hint.children
    assert [(r["name"], r["kind"], r["us"]) for r in table.rowData] == [
        (op.name, op.kind, pytest.approx(op.duration_ns / 1e3, abs=1e-3)) for op in sim.load_ops
    ]
    assert FC1 in [r["name"] for r in table.rowData]


def _pinned(shown: dict) -> list[dict]:
    """The rows pinned under the statistics table (a patch of its grid options)."""
    operations = shown["pinned"].to_plotly_json()["operations"]
    return next(o["params"]["value"] for o in operations if o["location"] == ["pinnedBottomRowData"])


@pytest.mark.parametrize("by", ["name", "kind", "source"])
def test_the_shares_are_of_the_whole_run_and_host_and_idle_time_has_a_row(app, cb, by):
    run_id = shown_run(cb)  # host dispatch: the device waits on the host between ops
    run = app.explorer.view(run_id)
    shown = cb["show_statistics"](run_id, by)
    busy = sum(r.duration_ns for r in app.explorer.op_records(run_id))
    assert run.total_ns - busy > 0.1 * run.total_ns  # idle time enough to tell the shares apart
    for row in shown["data"]:
        assert row["pct_of_run"] == pytest.approx(row["total_ns"] * 1e3 / run.total_ns * 100, abs=0.01)
    (idle,) = _pinned(shown)
    assert idle[by] == IDLE_ROW and idle["count"] is None
    assert idle["total_ns"] == pytest.approx((run.total_ns - busy) / 1e3, abs=1e-2)
    assert sum(r["pct_of_run"] for r in shown["data"]) + idle["pct_of_run"] == pytest.approx(100, abs=0.05)
    # it is no op: a click on it selects nothing, and shows no op type's spread
    assert cb["select_in_statistics"]({"rowId": idle["id"], "colId": by}, by) is no_update


def test_rows_of_equal_time_come_in_natural_order_and_the_name_column_sorts_so(cb):
    run_id = shown_run(cb, "zoo:mlp?layers=12")
    names = [r["name"] for r in cb["show_statistics"](run_id, "name")["data"]]
    fc2 = [n for n in names if n.endswith("fc2.matmul")]
    assert fc2 == [f"mlp.layer.{i}.fc2.matmul" for i in range(12)]  # not 0, 1, 10, 11, 2, ...
    first = cb["show_statistics"](run_id, "name")["columns"][0]
    assert first["comparator"] == {"function": "naturalOrder"}  # a click on its header sorts alike
