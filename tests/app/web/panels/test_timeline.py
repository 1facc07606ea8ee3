"""The timeline tab: rows by core with engine sub-rows, counter plots on the same time axis, zoom
at a level of detail, and a click that selects an op."""

from __future__ import annotations

import plotly.graph_objects as go
from dash import no_update

import numpy as np
import pytest

from app.web.panels.timeline import LANES, row_key, row_label, timeline_figure
from app.workbench import timeline_view
from perfdb import queries
from perfdb.queries import WindowItem

from .conftest import CONSUMER, FC1, shown_run, zones


def zones_drawn(figure: go.Figure) -> int:
    """How many zones (or merged markers) a timeline figure draws: four vertices each."""
    return sum(len(trace.x) // 4 for trace in figure.data if isinstance(trace, go.Scattergl))


def _zone(track, depth, name, start, end, op):
    return WindowItem(track, depth, name, start, end, op, 1, 0.0)


ZONES = [
    _zone("core 1,0", 0, "mm", 0.0, 4000.0, "mm"),
    _zone("core 0,1/writer", 1, "write", 3000.0, 4000.0, "mm"),
    _zone("core 0,1", 0, "mm", 0.0, 4000.0, "mm"),
    _zone("core 0,1/reader", 1, "read", 0.0, 2000.0, "mm"),
    _zone("device", 0, "mm", 0.0, 4000.0, "mm"),
    _zone("core 0,1/compute", 1, "compute", 500.0, 3500.0, "mm"),
]


def test_a_core_s_engines_are_lanes_of_its_row_in_the_order_a_tile_moves():
    tracks = sorted({z.track for z in ZONES}, key=row_key)
    assert tracks == ["device", "core 0,1", "core 0,1/reader", "core 0,1/compute", "core 0,1/writer", "core 1,0"]
    assert [row_label(t) for t in tracks][1:3] == ["core 0,1", "↳ reader"]
    figure = timeline_figure(ZONES, {"mm": "ttir.matmul"}, "mm")
    # one row per core: its engines do not add rows, so showing them does not make the figure taller
    assert list(figure.layout.yaxis.ticktext) == ["device", "core 0,1", "core 1,0"]
    assert figure.layout.meta["rows"] == ["device", "core 0,1", "core 1,0"]
    assert zones_drawn(figure) == len(ZONES)
    lanes = next(t for t in figure.data if t.meta and t.meta["half"] < 0.4)
    # reader above, compute in the middle, writer below, in core 0,1's row (row 1)
    assert sorted(set(lanes.y[~np.isnan(lanes.y)])) == [1 + LANES["reader"], 1.0, 1 + LANES["writer"]]
    assert lanes.line.width < next(t for t in figure.data if t.meta and t.meta["half"] > 0.4).line.width
    # an engine's zone says which phase of which op it is
    assert "mm · read" in lanes.text
    # the selected op is outlined on every row and lane it has a zone on
    outlines = [s for s in figure.layout.shapes if s.name == "selected"]
    assert len(outlines) == len(ZONES) and sum(s.y1 - s.y0 < 0.5 for s in outlines) == 3


def test_counter_plots_share_the_time_axis_under_the_zones():
    counters = {"l1_bytes": [(0.0, 2048.0), (4000.0, 0.0)], "dram_bytes_per_s": [(0.0, 5e10), (4000.0, 0.0)]}
    figure = timeline_figure(ZONES, {}, None, window=(1.0, 3.0), counters=counters)
    plots = [t for t in figure.data if isinstance(t, go.Scatter)]
    assert [p.name for p in plots] == ["L1 in use, fullest core", "DRAM bandwidth"]
    assert list(plots[0].y) == [2.0, 0.0] and list(plots[1].y) == [50.0, 0.0]  # KiB and GB/s
    assert plots[0].xaxis == "x2" and plots[1].xaxis == "x3"
    assert figure.layout.xaxis.matches == figure.layout.xaxis2.matches == "x3"  # one time axis
    # a zoomed window holds on every axis
    assert [list(a.range) for a in (figure.layout.xaxis, figure.layout.xaxis2, figure.layout.xaxis3)] == [
        [1.0, 3.0]
    ] * 3
    assert zones_drawn(figure) == len(ZONES)  # counter plots are not zones
    assert len([t for t in timeline_figure(ZONES, {}, None, counters={}).data if isinstance(t, go.Scatter)]) == 0


def test_a_click_on_a_zone_selects_its_op_and_a_click_on_anything_else_nothing(cb):
    assert cb["select_in_timeline"]({"points": [{"customdata": CONSUMER}]}) == CONSUMER
    assert cb["select_in_timeline"]({"points": [{"x": 1, "y": 2}]}) is no_update
    assert cb["select_in_timeline"](None) is no_update


def test_the_timeline_shows_the_zoomed_window_with_short_zones_merged(app, cb):
    run_id = shown_run(cb)
    run = app.explorer.view(run_id)
    everything = cb["show_timeline"](run_id, None, [], None)
    assert "merged" not in [t.name for t in everything.data]  # ops are microseconds long: all drawn
    # zoom into the first op: only the zones in that window, and the axis stays there
    first = min(zones(app, run_id, depth=0), key=lambda z: z.start_ns)
    window = [first.start_ns / 1e3, (first.start_ns + first.end_ns) / 2e3]
    zoomed = cb["show_timeline"](run_id, {"xaxis.range[0]": window[0], "xaxis.range[1]": window[1]}, [], None)
    assert list(zoomed.layout.xaxis.range) == window
    assert 0 < zones_drawn(zoomed) < zones_drawn(everything)
    # a view a few pixels wide merges whole ops into grey "N zones" bars, one per core
    coarse = app.explorer.timeline(run, (0.0, run.total_ns), pixels=2).items
    merged = [z for z in coarse if z.count > 1]
    assert merged and all(z.name == f"{z.count} zones" and z.op == "" for z in merged)
    figure = timeline_figure(coarse, {}, None)
    markers = next(t for t in figure.data if t.name == "merged")
    # a marker shows its count on hover but selects no op when clicked
    assert set(markers.customdata) == {None} and any(n and n.endswith(" zones") for n in markers.text)
    assert cb["select_in_timeline"]({"points": [{"customdata": None}]}) is no_update
    # the device row draws every op while a figure can (a 100k-op run's would be 40 MB)
    assert sum(z.count for z in coarse if z.track == "device") == len([z for z in coarse if z.track == "device"])


def test_the_device_row_merges_short_ops_when_a_run_has_more_than_a_figure_draws(app, cb, monkeypatch):
    run = app.explorer.view(shown_run(cb))
    monkeypatch.setattr(timeline_view, "CORE_ZONE_BUDGET", 1)  # fewer than the model's two ops
    device = [z for z in app.explorer.timeline(run, (0.0, run.total_ns), pixels=2).items if z.track == "device"]
    ops = len(app.explorer.op_records(run.id))
    assert len(device) < ops and sum(z.count for z in device) == ops
    assert any(z.count > 1 and z.name == f"{z.count} zones" for z in device)


def test_core_rows_wait_for_a_zoom_when_a_window_holds_too_many_zones(app, cb, monkeypatch):
    run_id = shown_run(cb)
    ops = len(app.explorer.durations(run_id))
    monkeypatch.setattr(timeline_view, "CORE_ZONE_BUDGET", 10)
    view = app.explorer.timeline(app.explorer.view(run_id))
    assert view.hidden_cores == 64 and view.core_zones > 10
    assert [i.track for i in view.items] == ["device"] * ops
    figure = cb["show_timeline"](run_id, None, [], None)
    assert zones_drawn(figure) == ops and "64 core rows hidden" in figure.layout.annotations[0].text


def test_the_timeline_adds_engine_rows_and_counter_plots_and_keeps_a_counter_zoom(app, cb):
    run_id = shown_run(cb)
    plain = cb["show_timeline"](run_id, None, [], None)
    engines = cb["show_timeline"](run_id, None, ["engines"], None)
    rows = engines.layout.meta["rows"]
    assert len(rows) == 1 + 64 and rows[1:3] == ["core 0,0", "core 0,1"] and rows == plain.layout.meta["rows"]
    assert engines.layout.height == plain.layout.height  # the panel does not jump
    # the engines' zones in place of the cores' own
    ops = len(app.explorer.durations(run_id))
    assert zones_drawn(engines) == ops + len(zones(app, run_id, depth=1))

    with_counters = cb["show_timeline"](run_id, None, ["counters"], None)
    plots = {t.name: t for t in with_counters.data if t.type == "scatter"}
    assert set(plots) == {"L1 in use, fullest core", "DRAM bandwidth"}
    memory = app.explorer.memory(app.explorer.view(run_id))
    assert max(plots["L1 in use, fullest core"].y) == max(v for _, v in memory.envelope) / 1024
    # while an op that reads DRAM runs, the plot shows its bytes over its time
    with app.explorer.sessions() as session:
        record = next(r for r in queries.op_records(session, run_id) if r.bytes.get("dram"))
    at = list(plots["DRAM bandwidth"].x).index(record.start_ns / 1e3)
    expected = record.bytes["dram"] / (record.duration_ns / 1e9) / 1e9
    assert abs(plots["DRAM bandwidth"].y[at] - expected) < 1e-6 * expected
    # a zoom on a counter plot's axis is a zoom of the timeline
    zoomed = cb["show_timeline"](run_id, {"xaxis2.range[0]": 1.0, "xaxis2.range[1]": 2.0}, ["counters"], None)
    assert list(zoomed.layout.xaxis.range) == [1.0, 2.0]
    assert FC1 in {z.op for z in zones(app, run_id, depth=0)}


def test_a_kind_keeps_its_colour_whatever_else_is_drawn():
    """Tracy's rule: a zone's colour follows its name, not the other zones on screen, so zooming
    into a window with fewer kinds, or opening another run, repaints nothing."""
    both = [_zone("device", 0, "mm", 0.0, 1000.0, "mm"), _zone("device", 0, "ln", 1000.0, 2000.0, "ln")]
    kinds = {"mm": "matmul", "ln": "layernorm", "a": "add", "z": "zeta_op"}

    def colours(zones):
        drawn = timeline_figure(zones, kinds, None).data
        return {t.name: t.line.color for t in drawn if isinstance(t, go.Scattergl)}

    whole = colours(both)
    zoomed = colours(both[:1])  # the window holds the matmul only: first of one, where it was second
    other = colours([_zone("device", 0, "a", 0.0, 10.0, "a"), *both])  # a kind sorted before both
    assert zoomed["matmul"] == whole["matmul"] == other["matmul"]
    assert other["layernorm"] == whole["layernorm"] and len(set(other.values())) == 3
    # a kind tilescope does not name gets a colour none of those it names has
    assert colours([_zone("device", 0, "z", 0.0, 10.0, "z")])["zeta_op"] not in other.values()


def test_a_zoomed_figure_holds_a_view_s_width_either_side_so_a_pan_is_drawn_in_the_browser(app, cb, monkeypatch):
    run_id = shown_run(cb)
    total = app.explorer.view(run_id).total_ns / 1e3
    whole = cb["show_timeline"](run_id, None, [], None).layout.meta
    assert whole["loaded"] == [0.0, total] and whole["span"] == total and whole["complete"]
    records = {r.name: r for r in app.explorer.op_records(run_id)}
    # each drawn op's kind, time, bound and why, once, for the hover and zone cards
    assert whole["ops"][FC1] == [records[FC1].kind, round(records[FC1].duration_ns / 1e3, 3)] + [
        records[FC1].bound,
        records[FC1].why,
    ]
    view = [0.4 * total, 0.5 * total]
    meta = cb["show_timeline"](run_id, {"xaxis.range[0]": view[0], "xaxis.range[1]": view[1]}, [], None).layout.meta
    assert meta["loaded"] == [pytest.approx(0.3 * total), pytest.approx(0.6 * total)]
    assert meta["span"] == pytest.approx(0.1 * total)
    # when the wider window's core zones are more than a figure draws and the view's are not: the view
    first, second = sorted(records.values(), key=lambda r: r.start_ns)[:2]
    reach = second.start_ns - (first.start_ns + first.duration_ns) + 1.0  # the wider window reaches the second op
    assert reach < first.duration_ns / 2
    view_ns = (first.start_ns + first.duration_ns - reach, first.start_ns + first.duration_ns)
    monkeypatch.setattr(timeline_view, "CORE_ZONE_BUDGET", first.cores)
    fallback = app.explorer.timeline(app.explorer.view(run_id), view_ns)
    assert fallback.window == view_ns and fallback.hidden_cores == 0 and fallback.core_zones == first.cores
