"""The timeline figures: rows by core with engine sub-rows, counter plots on the same time axis,
and two runs' ops aligned for a diff."""

from __future__ import annotations

from types import SimpleNamespace

import plotly.graph_objects as go

from app.web.timelines import aligned_timelines, row_key, row_label, timeline_figure
from perfdb.queries import WindowItem


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


def test_each_core_row_is_followed_by_its_engines_in_the_order_a_tile_moves():
    tracks = sorted({z.track for z in ZONES}, key=row_key)
    assert tracks == ["device", "core 0,1", "core 0,1/reader", "core 0,1/compute", "core 0,1/writer", "core 1,0"]
    assert [row_label(t) for t in tracks][1:3] == ["core 0,1", "↳ reader"]
    figure = timeline_figure(ZONES, {"mm": "ttir.matmul"}, "mm")
    assert list(figure.layout.yaxis.ticktext) == [row_label(t) for t in tracks]
    assert zones_drawn(figure) == len(ZONES)
    # an engine's zone says which phase of which op it is
    assert "mm · read" in figure.data[0].text
    # the selected op is outlined on every row it has a zone on
    assert len([s for s in figure.layout.shapes if s.name == "selected"]) == len(ZONES)


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


def test_two_runs_align_on_one_axis_with_the_changed_op_outlined_in_both():
    a = [
        SimpleNamespace(name="x", start_ns=0.0, duration_ns=1000.0),
        SimpleNamespace(name="y", start_ns=1000.0, duration_ns=3000.0),
    ]
    b = [
        SimpleNamespace(name="x", start_ns=0.0, duration_ns=1000.0),
        SimpleNamespace(name="y", start_ns=1000.0, duration_ns=1000.0),
    ]
    figure = aligned_timelines(a, b, ("A #1", "B #2"), {"x": "ttir.add", "y": "ttir.matmul"}, {"y"})
    assert list(figure.layout.yaxis.ticktext) == ["A #1", "B #2"]
    assert {t.name for t in figure.data} == {"ttir.add", "ttir.matmul"}
    boxes = [(s.x0, s.x1, round(s.y0 + 0.4)) for s in figure.layout.shapes]
    assert boxes == [(1.0, 4.0, 0), (1.0, 2.0, 1)]  # y: 3 us in A, 1 us in B
