"""The explorer's interaction latency in headless Chromium, against a running `tilescope serve`:

    .venv/bin/python -m tests.app.web.browser_bench http://127.0.0.1:8050/ [--only page,statistics,kernel]

Each figure is from the action to the page idle with the view updated (Dash's callback queue empty,
no component loading), as test_browser's latency test measures it. The timeline's wheel and drag
are real input (WebDriver's wheel and pointer), each event timed from its time stamp to the end of
the frame that draws it, over the zones of every core row (median and 90th percentile), and to
Plotly's axis and counters following it. Prints one JSON object of milliseconds.
docs/benchmarks.md records what it measured.
"""

from __future__ import annotations

import argparse
import json
import time

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
from selenium.webdriver.common.by import By

from .test_browser import CLICK_NODE, GRAPH, SETTLED, TIMELINE, _chrome, _pick, _tab, _timed, _wait

IDLE = "return (function () {" + SETTLED + "})()"
# the first op node the graph draws (not a group)
FIRST_OP = GRAPH + (
    "for (var c = 0; c < gd.data.length; c++) { var t = gd.data[c];"
    " if (!t.meta || !t.meta.labels) { continue; }"
    " var op = (t.customdata || []).find(function (n) { return n.indexOf('group:') !== 0; });"
    " if (op) { return op; } } return null;"
)
# each wheel and mouse event: from its time stamp to the end of the frame that draws it (a task
# queued from that frame runs once it is painted), and to Plotly's time axis where the zones are
RECORD = """
window._frames = [];
['wheel', 'mousemove'].forEach(function (type) {
  window.addEventListener(type, function (e) {
    var t = e.timeStamp;
    requestAnimationFrame(function () { setTimeout(function () {
      var frame = performance.now() - t, gd = document.querySelector('#timeline-view .js-plotly-plot');
      (function follows() {
        var r = gd._ts.range, a = gd._fullLayout.xaxis.range;
        if (!gd._ts.axisBusy && Math.abs(r[0] - a[0]) + Math.abs(r[1] - a[1]) < 1e-6 * (r[1] - r[0])) {
          window._frames.push([type, frame, performance.now() - t]);
        } else { setTimeout(follows, 1); }
      })();
    }, 0); });
  }, {capture: true, passive: true});
});
"""
FRAMES = "var type = arguments[0]; return window._frames.filter(function (f) { return f[0] === type; });"
OVER_ZONES = TIMELINE + (
    "gd.scrollIntoView({block: 'start'}); var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis,"
    " box = gd.getBoundingClientRect();"
    "return [Math.round(box.left + xa._offset + arguments[0] * xa._length), Math.round(box.top + ya._offset + 200)];"
)


def _spread(values: list[float]) -> tuple[float, float]:
    """(median, 90th percentile)."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def timeline_frames(d, notches: int = 12, moves: int = 30) -> dict[str, float]:
    """The timeline's wheel and drag, as a user's: `notches` wheel notches in (to about a layer of
    BERT) and back out, then a drag of `moves` steps across the zones."""
    found: dict[str, float] = {}
    d.execute_script(RECORD)
    at = d.execute_script(OVER_ZONES, 0.4)
    for delta in [-100] * notches + [100] * notches:
        ActionChains(d).scroll_from_origin(ScrollOrigin.from_viewport(*at), 0, delta).perform()
    _wait(d, lambda d: len(d.execute_script(FRAMES, "wheel")) >= 2 * notches, timeout=120)
    wheel = d.execute_script(FRAMES, "wheel")
    found["wheel_frame_ms"], found["wheel_frame_p90_ms"] = _spread([f[1] for f in wheel])
    found["wheel_axis_ms"], found["wheel_axis_p90_ms"] = _spread([f[2] for f in wheel])
    for _ in range(notches // 2):
        ActionChains(d).scroll_from_origin(ScrollOrigin.from_viewport(*at), 0, -100).perform()
    _wait(d, lambda d: d.execute_script(IDLE), timeout=120)
    d.execute_script("window._frames = [];")
    drag = ActionBuilder(d)
    drag.pointer_action.move_to_location(*at).pointer_down()
    for step in range(1, moves + 1):
        drag.pointer_action.move_to_location(at[0] - 10 * step, at[1])
    drag.pointer_action.pointer_up()
    drag.perform()
    _wait(d, lambda d: len(d.execute_script(FRAMES, "mousemove")) >= moves, timeout=120)
    pan = d.execute_script(FRAMES, "mousemove")
    found["pan_frame_ms"], found["pan_frame_p90_ms"] = _spread([f[1] for f in pan])
    found["pan_axis_ms"], found["pan_axis_p90_ms"] = _spread([f[2] for f in pan])
    found["zones_drawn"] = d.execute_script("return window.dash_clientside.timeline.drawn().zones;")
    found["rows_drawn"] = d.execute_script("return window.dash_clientside.timeline.drawn().rows;")
    return found


def measure(url: str, only: set[str] | None) -> dict[str, float]:
    d = _chrome()
    wanted = lambda name: only is None or name in only  # noqa: E731
    found: dict[str, float] = {}
    try:
        d.set_script_timeout(300)
        t0 = time.monotonic()
        d.get(url)
        _wait(d, lambda d: "run #" in d.find_element(By.ID, "run-summary").text, timeout=300)
        _wait(d, lambda d: d.execute_script(FIRST_OP) and d.execute_script(IDLE), timeout=300)
        found["page_to_settled_ms"] = (time.monotonic() - t0) * 1000
        op = d.execute_script(FIRST_OP)
        if wanted("select"):
            found["select_ms"] = _timed(
                d, CLICK_NODE % op, f"return document.getElementById('op-inspector').innerText.indexOf({op!r}) >= 0"
            )
        if wanted("kernel"):
            found["level_to_kernel_ms"] = _timed(
                d,
                "document.evaluate(\"//div[@id='level-select']//label[normalize-space()='kernel']\", document, null,"
                " 9, null).singleNodeValue.click()",
                "return document.getElementById('mlir-view').innerText.indexOf('ts.cores') >= 0",
            )
        if wanted("statistics"):
            found["statistics_tab_ms"] = _timed(
                d,
                "document.evaluate(\"//div[@id='analysis-tabs']//div[normalize-space()='Statistics']\", document,"
                " null, 9, null).singleNodeValue.click()",
                "return document.querySelectorAll('#stats-table .ag-center-cols-container .ag-row').length > 0",
            )
        if wanted("timeline"):
            _tab(d, "Timeline")
            _wait(
                d, lambda d: d.execute_script("return window.dash_clientside.timeline.drawn() !== null;"), timeout=120
            )
            _wait(d, lambda d: d.execute_script(IDLE), timeout=120)
            found.update(timeline_frames(d))
            _wait(d, lambda d: d.execute_script(IDLE), timeout=120)
        if wanted("apply"):
            d.execute_script(CLICK_NODE % op)
            _wait(d, lambda d: op in d.find_element(By.ID, "op-inspector").text and d.execute_script(IDLE))
            _pick(d, "override-memory", "l1")
            runs = d.find_element(By.ID, "run-summary").text.split()[1]  # "#N"
            found["apply_to_all_views_ms"] = _timed(
                d,
                "document.getElementById('apply-overrides').click()",
                f"return document.getElementById('run-summary').innerText.indexOf('run {runs}') < 0"
                " && document.getElementById('override-status').innerText.indexOf('applied') >= 0 && " + IDLE[7:],
            )
    finally:
        d.quit()
    return {k: round(v) for k, v in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--only", help="comma-separated: select, kernel, statistics, timeline, apply")
    args = parser.parse_args()
    print(json.dumps(measure(args.url, set(args.only.split(",")) if args.only else None), indent=2))


if __name__ == "__main__":
    main()
