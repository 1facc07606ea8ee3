"""The timeline tab: rows by core with engine lanes, counter plots on the same time axis, every row
at the level of detail of the view, and what the browser draws the zones from."""

from __future__ import annotations

import base64
from collections import Counter

import numpy as np
import plotly.graph_objects as go
import pytest
from dash import no_update

from tilescope.app.web.panels.timeline import stored_range
from tilescope.app.web.style import kind_colour
from tilescope.app.web.timeline_figure import LANE_PX, MERGED_COLOUR, ROW_PX, row_key, row_label, timeline_figure
from tilescope.perfdb.runs import op_records
from tilescope.perfdb.timeline import WindowItem

from .conftest import FC1, shown_run, zones


def columns(figure: go.Figure) -> dict:
    """The zones a figure sends the browser, decoded as timeline_draw.js decodes them."""
    packed = figure.layout.meta["zones"]
    types = {"f8": "<f8", "i4": "<i4", "i2": "<i2", "i1": "<i1"}
    out = {
        name: np.frombuffer(base64.b64decode(spec["bdata"]), types[spec["dtype"]])
        for name, spec in packed.items()
        if isinstance(spec, dict) and "bdata" in spec
    }
    return {**out, "names": packed["names"], "kinds": packed["kinds"], "colours": packed["colours"]}


def zones_drawn(figure: go.Figure) -> int:
    """How many zones (or merged markers) a timeline figure holds."""
    return len(columns(figure)["start"])


def outlined(figure: go.Figure) -> int:
    """How many zones the browser outlines in a timeline figure: those of its selected op."""
    drawn, selected = columns(figure), figure.layout.meta["selected"]
    return sum(1 for i in drawn["op"] if i >= 0 and drawn["names"][i] == selected)


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
    meta = figure.layout.meta
    # one row per core: its engines are lanes of it, named beside it, the row tall enough for three names
    assert meta["rows"] == meta["labels"] == ["device", "core 0,1", "core 1,0"]
    assert meta["lanes"] == ["reader", "compute", "writer"] and meta["laned"] == [False, True, True]
    assert meta["heights"] == [ROW_PX, 3 * LANE_PX, 3 * LANE_PX]
    drawn = columns(figure)
    assert len(drawn["start"]) == len(ZONES)
    at = {(int(r), int(lane)) for r, lane in zip(drawn["row"], drawn["lane"])}
    # reader, compute, writer (lanes 0, 1, 2) in core 0,1's row (row 1); the rows' own zones in no lane
    assert at == {(0, -1), (1, -1), (1, 0), (1, 1), (1, 2), (2, -1)}
    # an engine's zone says which phase of which op it is, and selects that op
    labels = [drawn["names"][i] for i in drawn["label"]]
    assert "mm · read" in labels and {drawn["names"][i] for i in drawn["op"]} == {"mm"}
    assert meta["selected"] == "mm" and outlined(figure) == len(ZONES)  # timeline_draw.js outlines its zones


def test_the_zones_go_to_the_browser_as_columns_with_their_kinds_and_colours():
    """What timeline_draw.js reads: times in us, kinds with their colours and the colour of names
    on them, merged markers with their count and no op."""
    items = [
        _zone("device", 0, "mm", 1000.0, 3000.0, "mm"),
        WindowItem("core 0,0", 0, "5 zones", 3000.0, 3100.0, "", 5, 80.0),
        _zone("core 0,0", 0, "ln", 3100.0, 4000.0, "ln"),
    ]
    figure = timeline_figure(items, {"mm": "matmul", "ln": "layernorm"}, None)
    drawn = columns(figure)
    assert list(drawn["start"]) == [1.0, 3.0, 3.1] and list(drawn["end"]) == [3.0, 3.1, 4.0]
    assert list(drawn["count"]) == [1, 5, 1] and drawn["op"][1] == -1 and drawn["kind"][1] == -1
    assert [drawn["kinds"][k] for k in drawn["kind"] if k >= 0] == ["matmul", "layernorm"]
    assert drawn["colours"] == [kind_colour("matmul"), kind_colour("layernorm")]
    # the legend names each kind in its colour, and the merged markers last, in grey
    legend = [(t.name, t.marker.color) for t in figure.data if t.showlegend]
    assert legend == [
        ("layernorm", kind_colour("layernorm")),
        ("matmul", kind_colour("matmul")),
        ("merged", MERGED_COLOUR),
    ]
    # the same data is known by the same key, other data by another
    assert (
        figure.layout.meta["zones"]["key"]
        == timeline_figure(items, {"mm": "matmul", "ln": "layernorm"}, None).layout.meta["zones"]["key"]
    )
    assert (
        figure.layout.meta["zones"]["key"]
        != timeline_figure(items[:2], {"mm": "matmul"}, None).layout.meta["zones"]["key"]
    )


def test_counter_plots_share_the_time_axis_under_the_zones():
    counters = {"l1_bytes": [(0.0, 2048.0), (4000.0, 0.0)], "dram_bytes_per_s": [(0.0, 5e10), (4000.0, 0.0)]}
    figure = timeline_figure(ZONES, {}, None, counters=counters, view=(1.0, 3.0))
    plots = [t for t in figure.data if t.mode == "lines"]
    assert [p.name for p in plots] == ["L1 in use, fullest core", "DRAM bandwidth"]
    assert list(plots[0].y) == [2.0, 0.0] and list(plots[1].y) == [50.0, 0.0]  # KiB and GB/s
    assert plots[0].xaxis == "x2" and plots[1].xaxis == "x3"
    assert figure.layout.xaxis.matches == figure.layout.xaxis2.matches == "x3"  # one time axis
    # a zoomed view holds on every axis
    assert [list(a.range) for a in (figure.layout.xaxis, figure.layout.xaxis2, figure.layout.xaxis3)] == [
        [1.0, 3.0]
    ] * 3
    assert zones_drawn(figure) == len(ZONES)  # counter plots are not zones
    assert not [t for t in timeline_figure(ZONES, {}, None, counters={}).data if t.mode == "lines"]


def test_the_l1_counter_runs_to_the_end_of_the_run(app, cb):
    """A counter is sampled as each op starts: its last value holds while the last op runs, to the
    run's end, not to the last op's start."""
    run_id = shown_run(cb)
    total_us = app.explorer.view(run_id).total_ns / 1e3
    figure = cb["show_timeline"](run_id, None, ["counters"], None)
    plots = {t.name: t for t in figure.data if t.mode == "lines"}
    for plot in plots.values():
        assert plot.x[-1] == pytest.approx(total_us)
    last_start = max(r.start_ns for r in app.explorer.op_records(run_id)) / 1e3
    l1 = plots["L1 in use, fullest core"]
    assert l1.x[-2] == pytest.approx(last_start) and l1.y[-1] == l1.y[-2]  # the last op's L1, held


def test_the_timeline_shows_the_zoomed_window_with_short_zones_merged(app, cb):
    run_id = shown_run(cb)
    run = app.explorer.view(run_id)
    everything = cb["show_timeline"](run_id, None, [], None)
    assert all(count == 1 for count in columns(everything)["count"])  # ops are microseconds long: all drawn
    # zoom into the first op: only the zones in that window, and the axis stays there
    first = min(zones(app, run_id, depth=0), key=lambda z: z.start_ns)
    window = [first.start_ns / 1e3, (first.start_ns + first.end_ns) / 2e3]
    zoomed = cb["show_timeline"](run_id, {"run": run_id, "range": window}, [], None)
    assert list(zoomed.layout.xaxis.range) == window
    assert 0 < zones_drawn(zoomed) < zones_drawn(everything)
    # a view a few pixels wide merges whole ops into grey "N zones" markers, one per core
    coarse = app.explorer.timeline(run, (0.0, run.total_ns), pixels=2).items
    merged = [z for z in coarse if z.count > 1]
    assert merged and all(z.name == f"{z.count} zones" and z.op == "" for z in merged)
    drawn = columns(timeline_figure(coarse, {}, None))
    markers = np.flatnonzero(drawn["count"] > 1)
    # a marker names its count, is drawn grey and selects no op
    assert all(drawn["names"][drawn["label"][i]].endswith(" zones") for i in markers)
    assert all(drawn["kind"][markers] == -1) and all(drawn["op"][markers] == -1)


def test_the_device_row_merges_ops_shorter_than_a_pixel_as_the_core_rows_do(app, cb):
    run = app.explorer.view(shown_run(cb))
    device = [z for z in app.explorer.timeline(run, (0.0, run.total_ns), pixels=2).items if z.track == "device"]
    ops = len(app.explorer.op_records(run.id))
    assert len(device) < ops and sum(z.count for z in device) == ops
    assert any(z.count > 1 and z.name == f"{z.count} zones" for z in device)


def test_every_core_row_is_drawn_at_every_zoom_with_what_is_drawn_bounded_by_rows_and_pixels(app, cb):
    """Tracy never hides a row: on a run whose cores hold more zones than a figure once drew
    (12,000: 150 layers of two ops on up to 64 cores), every core row is drawn at the whole run, its
    short zones merged, so a row holds a few items per pixel, however many zones it has."""
    run_id = shown_run(cb, "zoo:mlp?layers=150")
    run = app.explorer.view(run_id)
    core_zones = len(zones(app, run_id, depth=0)) - len(app.explorer.op_records(run_id))
    assert core_zones > 12_000
    for pixels in (50, 400):
        view = app.explorer.timeline(run, pixels=pixels)
        per_row = Counter(z.track for z in view.items)
        assert set(per_row) == set(view.rows) and len(view.rows) == 1 + 64
        # at most two items a pixel per row (a zone a pixel long, or a marker of those shorter)
        assert max(per_row.values()) <= 2 * pixels + 2
    # zoomed to one op, its zones come one by one
    first = min(app.explorer.op_records(run_id), key=lambda r: r.start_ns)
    op = app.explorer.timeline(run, (first.start_ns, first.start_ns + first.duration_ns), pixels=400)
    assert op.complete and {z.op for z in op.items if z.track.startswith("core")} >= {first.name}
    figure = cb["show_timeline"](run_id, None, [], None)
    assert len(set(columns(figure)["row"])) == 1 + 64 and "hidden" not in figure.layout.meta


def test_the_timeline_adds_engine_lanes_and_counter_plots_and_keeps_a_counter_zoom(app, cb):
    run_id = shown_run(cb)
    plain = cb["show_timeline"](run_id, None, [], None)
    engines = cb["show_timeline"](run_id, None, ["engines"], None)
    rows = engines.layout.meta["rows"]
    assert len(rows) == 1 + 64 and rows[1:3] == ["core 0,0", "core 0,1"] and rows == plain.layout.meta["rows"]
    # each core's row has room for its three lanes' names
    assert engines.layout.meta["heights"][1] == 3 * LANE_PX and engines.layout.height > plain.layout.height
    # the engines' zones in place of the cores' own
    ops = len(app.explorer.durations(run_id))
    assert zones_drawn(engines) == ops + len(zones(app, run_id, depth=1))

    with_counters = cb["show_timeline"](run_id, None, ["counters"], None)
    plots = {t.name: t for t in with_counters.data if t.mode == "lines"}
    assert set(plots) == {"L1 in use, fullest core", "DRAM bandwidth"}
    memory = app.explorer.memory(app.explorer.view(run_id))
    assert max(plots["L1 in use, fullest core"].y) == max(v for _, v in memory.envelope) / 1024
    # while an op that reads DRAM runs, the plot shows its bytes over its time
    with app.explorer.sessions() as session:
        record = next(r for r in op_records(session, run_id) if r.bytes.get("dram"))
    at = list(plots["DRAM bandwidth"].x).index(record.start_ns / 1e3)
    expected = record.bytes["dram"] / (record.duration_ns / 1e9) / 1e9
    assert abs(plots["DRAM bandwidth"].y[at] - expected) < 1e-6 * expected
    # a zoom with the counters shown draws them over the range asked for
    zoomed = cb["show_timeline"](run_id, {"run": run_id, "range": [1.0, 2.0]}, ["counters"], None)
    assert [list(zoomed.layout[axis].range) for axis in ("xaxis", "xaxis2")] == [[1.0, 2.0]] * 2
    assert FC1 in {z.op for z in zones(app, run_id, depth=0)}


def test_a_kind_keeps_its_colour_whatever_else_is_drawn():
    """Tracy's rule: a zone's colour follows its name, not the other zones on screen, so zooming
    into a window with fewer kinds, or opening another run, repaints nothing."""
    both = [_zone("device", 0, "mm", 0.0, 1000.0, "mm"), _zone("device", 0, "ln", 1000.0, 2000.0, "ln")]
    kinds = {"mm": "matmul", "ln": "layernorm", "a": "add", "z": "zeta_op"}

    def colours(zones):
        drawn = columns(timeline_figure(zones, kinds, None))
        return dict(zip(drawn["kinds"], drawn["colours"]))

    whole = colours(both)
    zoomed = colours(both[:1])  # the window holds the matmul only: first of one, where it was second
    other = colours([_zone("device", 0, "a", 0.0, 10.0, "a"), *both])  # a kind sorted before both
    assert zoomed["matmul"] == whole["matmul"] == other["matmul"]
    assert other["layernorm"] == whole["layernorm"] and len(set(other.values())) == 3
    # a kind tilescope does not name gets a colour none of those it names has
    assert colours([_zone("device", 0, "z", 0.0, 10.0, "z")])["zeta_op"] not in other.values()


def test_a_zoomed_figure_holds_a_view_s_width_either_side_so_a_pan_is_drawn_in_the_browser(app, cb):
    run_id = shown_run(cb)
    total = app.explorer.view(run_id).total_ns / 1e3
    whole = cb["show_timeline"](run_id, None, [], None).layout.meta
    assert whole["loaded"] == [0.0, total] and whole["span"] == total and whole["complete"]
    assert whole["total"] == total and whole["run"] == run_id
    records = {r.name: r for r in app.explorer.op_records(run_id)}
    # each drawn op's kind, time, bound, why and the model's error on its time, once, for the hover and zone cards
    fc1 = records[FC1]
    assert whole["ops"][FC1] == [fc1.kind, round(fc1.duration_ns / 1e3, 3), fc1.bound, fc1.why] + [
        round(fc1.error_band * fc1.duration_ns / 1e3, 3)
    ]
    view = [0.4 * total, 0.5 * total]
    meta = cb["show_timeline"](run_id, {"run": run_id, "range": view}, [], None).layout.meta
    assert meta["loaded"] == [pytest.approx(0.3 * total), pytest.approx(0.6 * total)]
    assert meta["span"] == pytest.approx(0.1 * total)


@pytest.mark.parametrize(
    "asked",
    [
        {"range": ["a", None]},
        {"range": [5.0, 1.0]},
        {"range": ["nan", 3.0]},
        {"range": [1.0]},
        {"range": [float("-inf"), 1.0]},
        {"range": {"a": 1}},
        {"range": [1.0, 2.0], "run": "another"},
        ["range", 1, 2],
        {1: 2},
    ],
)
def test_a_forged_zoom_sets_no_window_and_the_callback_draws_the_whole_run(app, cb, asked):
    run_id = shown_run(cb)
    forged = {"run": run_id, **asked} if isinstance(asked, dict) else asked
    assert stored_range(forged, run_id) is None
    figure = cb["show_timeline"](run_id, forged, [], None)
    assert list(figure.layout.xaxis.range) == [0.0, figure.layout.meta["total"]]


def test_a_zoom_past_the_run_shows_the_run_and_its_margin_at_most(app, cb):
    run_id = shown_run(cb)
    total = app.explorer.view(run_id).total_ns / 1e3
    figure = cb["show_timeline"](run_id, {"run": run_id, "range": [-1e300, 1e300]}, [], None)
    assert list(figure.layout.xaxis.range) == [pytest.approx(-0.02 * total), pytest.approx(1.02 * total)]
    assert figure.layout.meta["loaded"] == [0.0, total]
    # the browser keeps its zoom and pan within the same bounds, which the figure gives it
    assert figure.layout.meta["bounds"] == list(figure.layout.xaxis.range)
    # a window wholly past the run's end: the whole run
    past = cb["show_timeline"](run_id, {"run": run_id, "range": [2 * total, 3 * total]}, [], None)
    assert list(past.layout.xaxis.range) == [0.0, total]
    # another run's range: the whole run
    assert cb["show_timeline"](run_id, {"run": run_id + 1, "range": [1.0, 2.0]}, [], None).layout.meta["span"] == total
    assert cb["show_timeline"](None, None, [], None) is no_update
