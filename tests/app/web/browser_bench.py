"""The explorer's interaction latency in headless Chromium, against a running `tilescope serve`:

    .venv/bin/python -m tests.app.web.browser_bench http://127.0.0.1:8050/ [--only page,statistics,kernel]

Each figure is from the action to the page idle with the view updated (Dash's callback queue empty,
no component loading), as test_browser's latency test measures it; the wheel zoom is to the first
frame drawn with the new axis. Prints one JSON object of milliseconds. docs/benchmarks.md records
what it measured.
"""

from __future__ import annotations

import argparse
import json
import time

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
# a wheel notch over the middle of the timeline, and the time to the first frame with the new axis
WHEEL = """
var done = arguments[arguments.length - 1];
var gd = document.querySelector('#timeline-view .js-plotly-plot');
var drag = gd.querySelector('.nsewdrag'), box = drag.getBoundingClientRect();
var before = gd._fullLayout.xaxis.range.join(), t0 = performance.now();
drag.dispatchEvent(new WheelEvent('wheel', {deltaY: -120, clientX: box.left + box.width / 2,
  clientY: box.top + box.height / 2, bubbles: true, cancelable: true}));
(function frame() {
  if (gd._fullLayout.xaxis.range.join() !== before) { return done(performance.now() - t0); }
  if (performance.now() - t0 > 10000) { return done(-1); }
  requestAnimationFrame(frame);
})();
"""
PAN = """
var done = arguments[arguments.length - 1];
var gd = document.querySelector('#timeline-view .js-plotly-plot'), r = gd._fullLayout.xaxis.range;
var shift = (r[1] - r[0]) / 4, t0 = performance.now();
Plotly.relayout(gd, {'xaxis.range': [r[0] + shift, r[1] + shift]}).then(function () { done(performance.now() - t0); });
"""


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
            _wait(d, lambda d: d.execute_script(TIMELINE + "return gd && gd.data && gd.data.length > 0;"), timeout=120)
            _wait(d, lambda d: d.execute_script(IDLE), timeout=120)
            d.execute_script(TIMELINE + "gd.scrollIntoView();")
            wheels = sorted(d.execute_async_script(WHEEL) for _ in range(3))
            found["wheel_to_frame_ms"] = wheels[1]
            pans = sorted(d.execute_async_script(PAN) for _ in range(3))
            found["pan_relayout_ms"] = pans[1]
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
