"""The runs & diff tab: the runs table, two runs compared, their ops aligned, their durations overlaid."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from dash import no_update

from tilescope.app.web.callback_context import diff_pair
from tilescope.app.web.aligned_runs import MAX_OUTLINED, aligned_timelines, back_to_back, timeline_rows
from tilescope.app.web.diff_view import diff_body, duration_histogram
from tilescope.app.web.timeline_figure import timeline_figure
from tilescope.app.workbench.diff import device_parts
from tilescope.perfdb.timeline import WindowItem

from .conftest import CONSUMER, FC1, apply, rerun, shown_run


def _ticks_us(figure) -> list[float]:
    return [10.0**t for t in figure.layout.xaxis.tickvals]


def test_duration_histogram_ticks_durations_within_one_decade():
    # two runs of two ops each, 33 to 44 us: no 1-2-5 tick falls between them
    figure = duration_histogram([40_282.0, 42_205.0], [33_999.0, 36_719.0], ("A", "B"))
    ticks = _ticks_us(figure)
    assert len(ticks) >= 3 and all(30.0 <= t <= 46.0 for t in ticks)
    assert figure.layout.xaxis.ticktext[0].endswith(" us")


def test_duration_histogram_counts_ops_in_whole_numbers():
    few = duration_histogram([40_000.0, 40_100.0], [33_000.0], ("A", "B"))
    assert few.layout.yaxis.dtick == 1  # Plotly's own ticks of a count of 2 are 0.5 apart
    many = duration_histogram([40_000.0] * 50, [33_000.0] * 50, ("A", "B"))
    assert many.layout.yaxis.dtick is None


def test_duration_histogram_ticks_decades_at_one_two_five():
    figure = duration_histogram([1_000.0, 900_000.0], [5_000.0], ("A", "B"))
    mantissas = {round(t / 10 ** math.floor(math.log10(t)), 6) for t in _ticks_us(figure)}
    assert mantissas == {1.0, 2.0, 5.0}
    assert min(_ticks_us(figure)) <= 1.0 and max(_ticks_us(figure)) >= 500.0


def test_two_runs_align_on_one_axis_with_the_changed_op_outlined_in_both():
    a = [
        SimpleNamespace(name="x", start_ns=0.0, duration_ns=1000.0),
        SimpleNamespace(name="y", start_ns=1000.0, duration_ns=3000.0),
    ]
    b = [
        SimpleNamespace(name="x", start_ns=0.0, duration_ns=1000.0),
        SimpleNamespace(name="y", start_ns=1000.0, duration_ns=1000.0),
    ]
    figure = aligned_timelines([("A #1", a), ("B #2", b)], {"x": "ttir.add", "y": "ttir.matmul"}, [{"y"}, {"y"}])
    assert list(figure.layout.yaxis.ticktext) == ["A #1", "B #2"]
    assert {t.name for t in figure.data} == {"ttir.add", "ttir.matmul"}
    boxes = [(s.x0, s.x1, round(s.y0 + 0.4)) for s in figure.layout.shapes]
    assert boxes == [(1.0, 4.0, 0), (1.0, 2.0, 1)]  # y: 3 us in A, 1 us in B
    # each kind in the colour the timeline gives it
    drawn = timeline_figure([WindowItem("device", 0, "y", 0.0, 1.0, "y", 1, 0.0)], {"y": "ttir.matmul"}, None)
    assert (
        next(t.line.color for t in figure.data if t.name == "ttir.matmul") == drawn.layout.meta["zones"]["colours"][0]
    )


def test_ops_laid_back_to_back_leave_out_the_idle_between_them_on_each_device():
    def op(name, start, duration, device=0):
        return SimpleNamespace(name=name, kind="matmul", start_ns=start, duration_ns=duration, device=device)

    # a measured run: seconds of the host's work between ops on the device clock
    laid = back_to_back([op("b", 5e9, 20.0), op("a", 0.0, 10.0), op("c", 9e9, 5.0, device=1)])
    assert [(r.name, r.device, r.start_ns, r.duration_ns) for r in laid] == [
        ("a", 0, 0.0, 10.0),
        ("b", 0, 10.0, 20.0),
        ("c", 1, 0.0, 5.0),
    ]


def test_only_a_few_changed_ops_are_outlined():
    ops = [SimpleNamespace(name=f"op{i}", start_ns=i * 10.0, duration_ns=10.0) for i in range(MAX_OUTLINED + 1)]
    kinds = {o.name: "matmul" for o in ops}
    few = aligned_timelines([("A", ops)], kinds, [{o.name for o in ops[:MAX_OUTLINED]}])
    assert len(few.layout.shapes) == MAX_OUTLINED
    every = aligned_timelines([("A", ops)], kinds, [{o.name for o in ops}])  # a replay's cores, say
    assert len(every.layout.shapes) == 0


def test_a_run_on_several_devices_aligns_a_row_per_device_and_per_link():
    def op(name, kind, start, duration):
        return SimpleNamespace(name=name, kind=kind, start_ns=start, duration_ns=duration)

    one = [op("x", "matmul", 0.0, 8000.0)]
    eight = [op("x", "matmul", 0.0, 1000.0), op("x.all_reduce#1", "all_reduce", 1000.0, 500.0)]
    rows = timeline_rows("A #1", one, ["core 0,0"], {})
    rows += timeline_rows("B #2", eight, ["core 0,0", "device 0", "device 1", "link model"], {})
    assert [(label, [r.name for r in records]) for label, records in rows] == [
        ("A #1", ["x"]),
        ("B #2 device 0", ["x"]),
        ("B #2 device 1", ["x"]),
        ("B #2 link model", ["x.all_reduce#1"]),
    ]
    figure = aligned_timelines(rows, {"x": "matmul", "x.all_reduce#1": "all_reduce"}, [set()] * len(rows))
    assert list(figure.layout.yaxis.ticktext) == [label for label, _ in rows]
    assert figure.layout.height > aligned_timelines(rows[:2], {"x": "matmul"}, [set()] * 2).layout.height


def test_runs_table_and_diff_of_a_rerun_against_its_parent(app, cb):
    base_id = shown_run(cb)
    run_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    listed = cb["list_runs"](None, "zoo:mlp?layers=1")
    rows = listed["rows"]
    assert (
        [r["id"] for r in rows] == [run_id, base_id] and listed["ticked"] == {"ids": []} and listed["ticked_ids"] == []
    )
    assert listed["url_state"] is no_update and listed["style"]["height"] == "109px"  # two rows fitted
    assert rows[0]["overrides"] == 1 and rows[0]["parent"] == str(base_id)
    shown = app.explorer.view(run_id)
    assert diff_pair([], shown) == (base_id, run_id)
    assert diff_pair([run_id, base_id], shown) == (base_id, run_id)
    assert diff_pair([base_id], shown) == (base_id, run_id)
    assert diff_pair([], app.explorer.view(base_id)) is None
    view = str(cb["show_diff"]([], run_id))
    assert f"#{base_id} baseline" in view and f"#{run_id}" in view and FC1 in view
    assert "memory dram->l1" in view  # the layout change of the op
    assert "its model's baseline" in str(cb["show_diff"]([], base_id))


def _operand_in_l1(app, cb):
    """A re-run that reads the consumer's operand 1 from L1 (a to_layout inserted), with its diff."""
    base_id = shown_run(cb)
    operand = f"{CONSUMER}=operand#1:l1:width_sharded:1x8"
    run_id = apply(cb, base_id, None, [operand], memory="dram", memory_layout="interleaved", rows=8, cols=8)["run_id"]
    return base_id, run_id, app.explorer.diff(base_id, run_id), str(cb["show_diff"]([], run_id))


def test_the_diff_shows_the_inserted_op_the_time_split_and_warns_of_other_targets(app, cb):
    base_id, run_id, found, view = _operand_in_l1(app, cb)
    d = found.comparison.diff
    (inserted,) = d.inserted
    rows = {r["name"]: r for r in _delta_table(cb["show_diff"]([], run_id)).rowData}
    assert inserted.name == f"{CONSUMER}.in1.to_layout" and rows[inserted.name]["only"] == "B"
    assert not [r for r in rows.values() if r["only"] == "A"]
    assert (
        "operand 1 memory dram->l1, operand 1 memory_layout interleaved->width_sharded, operand 1 grid 1x1->1x8" in view
    )
    assert f"device {d.device_delta_ns / 1e3:+,.2f} us, host/idle {d.host_delta_ns / 1e3:+,.2f} us" in view
    assert "Warning" not in view
    other_id = shown_run(cb, target="blackhole_p150")
    view = str(cb["show_diff"]([base_id, other_id], other_id))
    assert f"Warning: different targets: run {base_id} ran on wormhole_n150, run {other_id} on blackhole_p150" in view


def test_the_diff_aligns_the_two_runs_timelines_and_outlines_the_changed_op(app, cb):
    base_id = shown_run(cb)
    run_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    view = cb["show_diff"]([], run_id)
    aligned = next(c for c in view["view"] if getattr(c, "id", None) == "diff-timelines").figure
    assert list(aligned.layout.yaxis.ticktext) == [f"A #{base_id}", f"B #{run_id}"]
    a, b = (app.explorer.op_record(i, FC1) for i in (base_id, run_id))
    boxes = {(round(s.x0, 6), round(s.x1, 6)) for s in aligned.layout.shapes}
    assert {(round(r.start_ns / 1e3, 6), round((r.start_ns + r.duration_ns) / 1e3, 6)) for r in (a, b)} <= boxes


def test_the_diff_shows_both_runs_load_time_and_the_ops_moved_to_load_time(app, cb):
    from tilescope.app.workbench.load_time import ops_text
    from tests.perfdb.load_work import store_hoisted

    from .conftest import MODEL

    base_id = shown_run(cb)
    assert "diff-load" not in str(
        cb["show_diff"]([], rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8))
    )  # neither loads anything
    run_id, sim = store_hoisted(app.explorer.sessions, {FC1}, ref=MODEL)
    rows = {r["id"]: r for r in cb["list_runs"](None, MODEL)["rows"]}
    assert rows[run_id]["load_us"] == pytest.approx(sim.load_ns / 1e3, abs=1e-3) and rows[base_id]["load_us"] == 0
    view = cb["show_diff"]([base_id, run_id], run_id)
    (load,) = [part for part in view["view"] if getattr(part, "id", None) == "diff-load"]
    assert f"none -> {ops_text(len(sim.load_ops), sim.load_ns)}" in str(load)
    text = str(view)
    assert f"Moved to load time in B #{run_id} (per step in A #{base_id}): 1 op" in text
    assert f"{FC1}  matmul  " in text and "Removed" not in text
    back = str(cb["show_diff"]([base_id, run_id], base_id))  # the older run stays A
    assert "Moved to load time" in back


def test_the_diff_explains_the_device_delta_by_the_ops_it_lists(app, cb):
    """Slower and faster ops (all of them), inserted ones: their times add up to the device delta,
    so a slowdown whose largest rows are faster ops still shows where the time went."""
    base_id, run_id, found, view = _operand_in_l1(app, cb)
    d = found.comparison.diff
    (inserted,) = d.inserted
    assert f"device {d.device_delta_ns / 1e3:+,.2f} us = " in view
    assert f"1 inserted {inserted.ns / 1e3:+,.2f} us" in view
    slower = [op.delta_ns for op in d.ops if op.delta_ns > 0]
    faster = [op.delta_ns for op in d.ops if op.delta_ns < 0]
    listed = sum(slower) + sum(faster) + inserted.ns
    said = device_parts(found.comparison)
    if slower:
        assert f"{len(slower)} op{'s' * (len(slower) != 1)} slower {sum(slower) / 1e3:+,.2f} us" in said
    if faster:
        assert f"{len(faster)} faster {sum(faster) / 1e3:+,.2f} us" in said
    # what the parts leave is named, never silently dropped
    assert ("overlap on the device" in said) == (abs(d.device_delta_ns - listed) >= 5)


def _find(component, component_id: str):
    """The component of that id in a tree of components (or lists of them), else None."""
    if isinstance(component, list | tuple):
        return next((f for c in component if (f := _find(c, component_id)) is not None), None)
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    return _find(children, component_id) if isinstance(children, list | tuple) else None


def _delta_table(view):
    """The per-op delta table of a diff view."""
    return _find(view["body"], "diff-table")


def test_an_inserted_op_is_a_marked_row_of_the_delta_table_and_unchanged_ops_are_hidden(app, cb):
    base_id, run_id, found, _ = _operand_in_l1(app, cb)
    (inserted,) = found.comparison.diff.inserted
    view = cb["show_diff"]([], run_id)
    rows = {r["name"]: r for r in _delta_table(view).rowData}
    row = rows[inserted.name]
    assert row["a_us"] is None and row["b_us"] == pytest.approx(inserted.ns / 1e3, abs=1e-3)
    assert row["delta_us"] == row["b_us"] and row["only"] == "B" and row["changes"] == f"inserted: only in B #{run_id}"
    # the rows left out: ops no faster, no slower and unchanged; the toggle counts them
    still = [op.name for op in found.comparison.diff.ops if not op.changes and abs(op.delta_ns) < 5]
    assert still and not set(still) & set(rows)
    assert view["unchanged"] == [{"label": f" show the {len(still)} unchanged ops", "value": "show"}]
    shown = {r["name"] for r in _delta_table(cb["show_diff"]([], run_id, "runs", ["show"])).rowData}
    assert set(still) <= shown and inserted.name in shown
    # the changes wrap in a wide column rather than being cut
    changes = next(c for c in _delta_table(view).columnDefs if c["field"] == "changes")
    assert changes["wrapText"] and changes["autoHeight"]


def test_a_removed_op_is_a_row_of_its_own_too(app, cb):
    base_id, run_id, _, _ = _operand_in_l1(app, cb)
    found = app.explorer.diff(run_id, base_id)  # against the run without the to_layout
    (removed,) = found.comparison.diff.removed
    rows = {r["name"]: r for r in _delta_table({"body": diff_body(found)}).rowData}
    row = rows[removed.name]
    assert row["only"] == "A" and row["b_us"] is None and row["delta_us"] == -row["a_us"]
    assert row["changes"] == f"removed: only in A #{run_id}"


def test_near_equal_runs_histograms_stand_side_by_side():
    figure = duration_histogram([40_282.0, 42_205.0], [40_300.0, 42_210.0], ("A", "B"))
    assert figure.layout.barmode == "group"  # overlaid, equal bars blend into one colour
    assert all(t.opacity is None or t.opacity == 1 for t in figure.data)


def test_a_delta_table_of_a_few_rows_grows_to_hold_them_as_they_wrap_and_a_long_one_scrolls():
    """Its height was guessed from the changes' length, and two rows of long changes were cut off."""
    from tilescope.app.web.diff_table import GROWN_ROWS, delta_table

    row = {"id": "op", "name": "op", "a_us": 1.0, "b_us": 2.0, "delta_us": 1.0, "ratio": 2.0, "changes": "x " * 200}
    few = delta_table([row, {**row, "id": "op2", "name": "op2"}])
    assert few.dashGridOptions["domLayout"] == "autoHeight" and "height" not in few.style
    many = delta_table([{**row, "id": f"op{i}", "name": f"op{i}"} for i in range(GROWN_ROWS + 1)])
    assert "domLayout" not in many.dashGridOptions and many.style["height"].endswith("px")


def test_a_run_stored_with_overrides_and_no_parent_is_compared_with_its_models_baseline(app, cb):
    """The command line stores a run with overrides and no parent (a CI job's, say): the diff and
    the graph's delta colouring compare it with the baseline the summary offers."""
    from tilescope.app.workbench.runs import execute
    from tilescope.compiler.pipeline.options import CompileOptions
    from tilescope.overrides import parse_item

    from .conftest import FC1, MODEL, TARGET, shown_run

    base_id = shown_run(cb)
    options = CompileOptions([parse_item(f"{FC1}=8x8:l1:width_sharded")])
    stored = execute(app.explorer.sessions, MODEL, TARGET, options, label="ci")
    assert app.explorer.view(stored.run_id).parent_id is None
    view = str(cb["show_diff"]([], stored.run_id)["view"])
    assert (
        f"#{base_id} baseline" in view
        and f"#{stored.run_id} ci" in view
        and "memory dram->l1" in str(cb["show_diff"]([], stored.run_id)["body"])
    )
