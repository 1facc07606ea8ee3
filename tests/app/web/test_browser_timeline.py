"""The timeline of BERT-base in real headless Chromium, as a performance engineer reads it: every core
row drawn from the whole run down to one op, the wheel zooming as far as it turns, the view kept
within the run and across toggles, lanes named, counters to the end, a zone hovered and clicked.
BERT-base holds more core zones (13,616) than a figure once drew, which zoo:mlp never shows."""

from __future__ import annotations

import pytest

from . import serving
from .test_browser import (  # noqa: F401  # browser: the fixture
    SETTLED,
    TIMELINE,
    TIMELINE_OPS,
    _prop,
    _shot,
    _tab,
    _text,
    _wait,
    browser,
)

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402  # after test_browser: it skips without Chromium
from selenium.webdriver.common.actions.action_builder import ActionBuilder  # noqa: E402
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.browser

CORES = 64
DRAWN = "return window.dash_clientside.timeline.drawn();"
# merged markers the canvas draws in the view
MERGED_DRAWN = TIMELINE + (
    "var z = window.dash_clientside.timeline.zones(gd.layout.meta), r = gd._ts.range, n = 0;"
    "z.merged.forEach(function (i) { if (z.end[i] >= r[0] && z.start[i] <= r[1]) { n++; } }); return n;"
)
# whether the figure holds what the view shows at its level of detail (else the server is asked)
FINE_ENOUGH = (
    TIMELINE + "return !!(gd && gd._ts && gd._ts.range)"
    " && window.dash_clientside.timeline.drawnAlready(gd.layout.meta, gd._ts.range);"
)
# the point of the viewport over the zones at `arguments[0]` of their width, `arguments[1]` of their height
OVER_ZONES = TIMELINE + (
    "var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();"
    "return [Math.round(box.left + xa._offset + arguments[0] * xa._length),"
    " Math.round(box.top + ya._offset + arguments[1] * ya._length)];"
)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("timeline")
    url, proc = serving.start("zoo:bert-base", f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url
    proc.stop()


def _drawn(d) -> dict:
    return d.execute_script(DRAWN) or {}


def _span(d) -> float:
    lo, hi = _drawn(d)["range"]
    return hi - lo


def _settled(d) -> bool:
    """The page idle, and Plotly's time axis where the canvas is."""
    return d.execute_script(SETTLED) and d.execute_script(
        TIMELINE + "if (!gd || !gd._ts || !gd._ts.range) { return false; }"
        "var r = gd._ts.range, a = gd._fullLayout.xaxis.range;"
        "return !gd._ts.axisBusy && Math.abs(r[0] - a[0]) + Math.abs(r[1] - a[1]) < 1e-6 * (r[1] - r[0]);"
    )


def _wheel(d, notches: int, delta: int, x: float = 0.5) -> None:
    """Turn the wheel over the zones, a notch (`delta` pixels) at a time, as a user's wheel sends it."""
    d.execute_script(TIMELINE + "gd.scrollIntoView({block: 'start'});")
    at = d.execute_script(OVER_ZONES, x, 0.5)
    for _ in range(notches):
        ActionChains(d).scroll_from_origin(ScrollOrigin.from_viewport(*at), 0, delta).perform()
    _wait(d, _settled, timeout=60)


def _meta(d) -> dict:
    return d.execute_script(
        TIMELINE + "var m = gd.layout.meta; return {span: m.span, loaded: m.loaded, total: m.total,"
        " complete: m.complete, rows: m.rows.length, lanes: m.lanes};"
    )


def _show(d, what: str) -> None:
    d.find_element(By.XPATH, f"//div[@id='timeline-show']//label[contains(., '{what}')]").click()


def _open_timeline(d, url: str, shown: str = "run #") -> None:
    """The page at `url`, its timeline tab open and drawn, once the run bar says `shown`."""
    d.get(url)
    _wait(d, lambda d: shown in _text(d, "run-summary"), timeout=120)
    _tab(d, "Timeline")
    _wait(d, lambda d: _drawn(d).get("zones") and _settled(d) and _meta(d)["rows"] == 1 + CORES, timeout=120)


def _zoom_counters(d, shown: list[float]) -> None:
    """Set the first counter plot's time axis to `shown` (us), as its zoom box does: the zones follow."""
    d.execute_script(
        TIMELINE + "Plotly.relayout(gd, {'xaxis2.range[0]': arguments[0], 'xaxis2.range[1]': arguments[1]});", *shown
    )
    _wait(d, lambda d: _drawn(d)["range"] == pytest.approx(shown) and _settled(d), timeout=60)


def _point_at(d, op: str, row: int) -> list[int]:
    """The viewport point in the middle of `op`'s zone on row `row` (0: the device's), in view."""
    where = d.execute_script(
        TIMELINE + "var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();"
        "var meta = gd.layout.meta, z = window.dash_clientside.timeline.zones(meta), r = gd._ts.range;"
        "var geo = window.dash_clientside.timeline.rowGeometry(meta, ya._length), op = z.index[arguments[0]];"
        "for (var i = 0; i < z.op.length; i++) { if (z.op[i] === op && z.row[i] === arguments[1]) {"
        "  var mid = Math.max(z.start[i], r[0]) / 2 + Math.min(z.end[i], r[1]) / 2;"
        "  return [Math.round(box.left + xa._offset + (mid - r[0]) * xa._length / (r[1] - r[0])),"
        "          Math.round(box.top + ya._offset + geo.top[arguments[1]] + geo.height[arguments[1]] / 2)]; } }"
        "return null;",
        op,
        row,
    )
    assert where, f"{op} has no zone on row {row}"
    return where


def test_bert_base_timeline_every_core_row_at_every_zoom_the_wheel_in_proportion_and_the_view_kept(bert, browser):  # noqa: F811
    d = browser
    _open_timeline(d, bert)
    total = _meta(d)["total"]
    # the whole run: the device row and all 64 core rows drawn, filling the figure (no empty rows)
    drawn = _drawn(d)
    assert drawn["rows"] == 1 + CORES and len(drawn["rowNames"]) >= CORES // 2
    d.execute_script(TIMELINE + "gd.scrollIntoView({block: 'start'});")
    _shot(d, "34-bert-timeline-whole-run")

    # the wheel zooms as far as it turns: a notch of 100 px 1.3x, one of 300 px 1.3^3 x, about the pointer
    span = _span(d)
    _wheel(d, 1, -100)
    assert span / _span(d) == pytest.approx(1.3, rel=0.01)
    span = _span(d)
    _wheel(d, 1, -300)
    assert span / _span(d) == pytest.approx(1.3**3, rel=0.01)
    # down to one of the twelve layers: every core row drawn there, zones named (the whole run's
    # figure holds each zone one by one: nothing more is needed from the server)
    while _span(d) > total / 12:
        _wheel(d, 1, -100, x=0.4)
    _wait(d, lambda d: d.execute_script(FINE_ENOUGH) and _settled(d), timeout=60)
    drawn = _drawn(d)
    assert drawn["rows"] == 1 + CORES and drawn["zones"] > CORES * 5 and len(drawn["names"]) > CORES
    d.execute_script(TIMELINE + "gd.scrollIntoView({block: 'start'});")
    _shot(d, "35-bert-timeline-one-layer")

    # lanes on, then counters off and on: the view stays where it was, each lane is named
    view = _drawn(d)["range"]
    _show(d, "engine lanes")
    _wait(d, lambda d: _meta(d)["lanes"] == ["reader", "compute", "writer"] and _settled(d), timeout=60)
    assert _drawn(d)["range"] == pytest.approx(view)
    assert d.execute_script(TIMELINE + "return gd._fullLayout.xaxis.range;") == pytest.approx(view)
    names = _drawn(d)["laneNames"]
    assert names.count("reader") == names.count("compute") == names.count("writer") == CORES
    d.execute_script(TIMELINE + "gd.scrollIntoView({block: 'start'});")
    _shot(d, "37-bert-timeline-engine-lanes")
    _show(d, "counters")
    _wait(d, lambda d: "L1 KiB" not in _text(d, "timeline-view") and _settled(d), timeout=60)
    _show(d, "counters")
    _wait(d, lambda d: "L1 KiB" in _text(d, "timeline-view") and _settled(d), timeout=60)
    assert _drawn(d)["range"] == pytest.approx(view)
    _show(d, "engine lanes")
    _wait(d, lambda d: not _meta(d)["lanes"] and _settled(d), timeout=60)
    # another tab and back: the timeline is drawn anew, where it was
    _tab(d, "Memory")
    _wait(d, lambda d: d.execute_script("return !!document.querySelector('#memory-view .js-plotly-plot');"), timeout=60)
    _tab(d, "Timeline")
    _wait(d, lambda d: (_drawn(d).get("range") or [0, 0])[1] == pytest.approx(view[1]) and _settled(d), timeout=60)
    assert d.execute_script(TIMELINE + "return gd._fullLayout.xaxis.range;") == pytest.approx(view)

    # a zoom on a counter plot's time axis (its zoom box) is a zoom of the zones
    _zoom_counters(d, [view[0] + (view[1] - view[0]) / 4, view[1] - (view[1] - view[0]) / 4])
    # zoomed out as far as the wheel goes: the run and its margin, no further
    _wheel(d, 25, 600)
    lo, hi = _drawn(d)["range"]
    assert lo == pytest.approx(-0.02 * total) and hi == pytest.approx(1.02 * total)
    # the L1 counter runs to the run's end
    l1_end = d.execute_script(
        TIMELINE + "var t = gd.data.find(function (t) { return t.name === 'L1 in use, fullest core'; });"
        "var x = window.dash_clientside.plotly_arrays.values(t.x); return x[x.length - 1];"
    )
    assert l1_end == pytest.approx(total)
    severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe


def test_bert_base_timeline_down_to_one_op_a_zone_hovered_and_clicked(bert, browser):  # noqa: F811
    d = browser
    _open_timeline(d, bert)
    # layer 3's attention, zoomed to with the zoom tool's box as a user drags it (a relayout of its range)
    ops = d.execute_script(TIMELINE_OPS)
    attention = "encoder.layer.3.attention.self.scaled_dot_product_attention"
    assert ops[attention] == 1 + CORES  # the device row and each core
    d.execute_script(
        TIMELINE + "var z = window.dash_clientside.timeline.zones(gd.layout.meta), op = z.index[arguments[0]];"
        "for (var i = 0; i < z.op.length; i++) { if (z.op[i] === op && z.row[i] === 0) {"
        "  var pad = (z.end[i] - z.start[i]) * 0.1;"
        "  Plotly.relayout(gd, {'xaxis.range[0]': z.start[i] - pad, 'xaxis.range[1]': z.end[i] + pad}); } }",
        attention,
    )
    _wait(d, lambda d: d.execute_script(FINE_ENOUGH) and _settled(d), timeout=60)
    # its zone on every core, one by one, named
    assert _meta(d)["complete"] and _drawn(d)["rows"] == 1 + CORES
    assert _drawn(d)["names"].count(attention) == 1 + CORES
    # hover a core's zone: its card; click it: its op selected, outlined on every row, its card pinned
    at = _point_at(d, attention, 5)
    actions = ActionBuilder(d)
    actions.pointer_action.move_to_location(*at)
    actions.perform()
    _wait(d, lambda d: attention in _text(d, "timeline-tip") and "core 0,4" in _text(d, "timeline-tip"))
    d.execute_script(TIMELINE + "gd.scrollIntoView({block: 'start'});")
    at = _point_at(d, attention, 5)
    actions = ActionBuilder(d)
    actions.pointer_action.move_to_location(*at).click()
    actions.perform()
    _wait(d, lambda d: _prop(d, "selected-op", "data") == attention and _drawn(d)["outlines"] == 1 + CORES)
    assert attention in _text(d, "timeline-zone") and "-bound" in _text(d, "timeline-zone")
    _shot(d, "36-bert-timeline-one-op-selected")
    # a drag pans: the view moves with the pointer and keeps its width
    before = _drawn(d)["range"]
    start = d.execute_script(OVER_ZONES, 0.5, 0.5)
    drag = ActionBuilder(d)
    drag.pointer_action.move_to_location(*start).pointer_down()
    for step in range(1, 11):
        drag.pointer_action.move_to_location(start[0] - 20 * step, start[1])
    drag.pointer_action.pointer_up()
    drag.perform()
    _wait(d, _settled, timeout=60)
    after = _drawn(d)["range"]
    width = d.execute_script(TIMELINE + "return gd._fullLayout.xaxis._length;")
    shift = 200 * (before[1] - before[0]) / width
    assert after[0] - before[0] == pytest.approx(shift, rel=0.05) and after[1] - after[0] == pytest.approx(
        before[1] - before[0]
    )
    assert _prop(d, "selected-op", "data") == attention  # a drag is not a click
    severe = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert not severe, severe


def test_a_zoom_past_the_detail_a_figure_holds_asks_the_server_for_the_window_where_the_wheel_stops(bert, browser):  # noqa: F811
    """BERT of 24 layers: at the whole run its short zones come merged; wheeled in past that
    detail, the server is asked once the wheel rests, for where it stopped, and its figure draws
    that window with fewer zones merged."""
    d = browser
    _open_timeline(d, bert + "?model=zoo%3Abert-base%3Flayers%3D24", "layers=24")
    whole = _meta(d)
    assert not whole["complete"] and _prop(d, "timeline-zoom", "data") is None
    merged = d.execute_script(MERGED_DRAWN)
    assert merged > 0
    while _span(d) > whole["total"] / 20:
        _wheel(d, 1, -300)
    _wait(
        d, lambda d: _meta(d)["span"] < whole["total"] / 3 and d.execute_script(FINE_ENOUGH) and _settled(d), timeout=60
    )
    # asked for a zoomed window that holds the view (where the wheel stopped, or where it rested on the way)
    asked, view = _prop(d, "timeline-zoom", "data")["range"], _drawn(d)["range"]
    assert asked[0] <= view[0] < view[1] <= asked[1] and asked[1] - asked[0] < whole["total"] / 3
    assert _drawn(d)["rows"] == 1 + CORES and d.execute_script(MERGED_DRAWN) < merged
    _shot(d, "44-bert-24-layers-zoomed")
