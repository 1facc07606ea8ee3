"""Profiles measured on hardware in real headless Chromium: a report dropped on the run bar is read
(a progress line while it is), stored and shown at once; its timeline has a row per device, its
statistics sum by op code, the graph says a measured run has none; a bad file is one line."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.conftest import PERF_REPORTS

from . import serving
from .test_browser import _prop, _settled, _shot, _tab, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

DEEPSEEK = PERF_REPORTS / "bh_8xp150_deepseek_v3_d_p.csv"
ROWS = "var gd = document.querySelector('#timeline-view .js-plotly-plot'); return gd ? gd.layout.meta.rows : null;"


@pytest.fixture
def server(tmp_path):
    url, proc = serving.start("zoo:mlp?layers=1", f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path)
    yield url
    proc.stop()


def _drop(driver, path) -> None:
    driver.find_element(By.CSS_SELECTOR, "#report-upload input[type=file]").send_keys(str(path))


@pytest.mark.skipif(not DEEPSEEK.is_file(), reason=f"{DEEPSEEK} not found")
def test_a_report_dropped_on_the_run_bar_is_shown_with_a_row_per_device(server, browser):  # noqa: F811
    d = browser
    d.get(server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=60)
    _drop(d, DEEPSEEK)
    _wait(d, lambda d: "device time: 79,468.7 us summed over 8 devices" in _text(d, "page-message"), 120)
    _wait(d, lambda d: "measured on hardware" in _text(d, "run-summary") and _settled(d), 60)
    assert _prop(d, "model-select", "value") == f"report:{DEEPSEEK.name}"
    assert _prop(d, "target-select", "value") == "blackhole_p150"
    _shot(d, "60-measured-report-uploaded")

    _tab(d, "Timeline")
    _wait(d, lambda d: (d.execute_script(ROWS) or [])[-1:] == ["device 7"] and _settled(d))
    assert d.execute_script(ROWS) == ["device", *(f"device {i}" for i in range(8))]
    _shot(d, "61-measured-timeline-per-device")

    _tab(d, "Statistics")
    d.find_element(By.XPATH, "//div[@id='stats-by']//label[normalize-space()='per op code']").click()
    _wait(d, lambda d: "MatmulDeviceOperation" in _text(d, "stats-table") and _settled(d))
    assert "AllGatherAsyncDeviceOperation" in _text(d, "stats-table")
    assert "device 7" in _text(d, "load-ops-view")  # each device's split under the table
    _shot(d, "62-measured-statistics-by-op-code")

    graph_note = _text(d, "graph-note")
    assert "A measured run has no graph" in graph_note and "tilescope replay" in graph_note


def test_a_bad_profile_is_one_line_on_the_page(server, browser, tmp_path):  # noqa: F811
    d = browser
    d.get(server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=60)
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [')
    _drop(d, bad)
    _wait(d, lambda d: "broken.json: not JSON" in _text(d, "page-message"), 60)
    assert "run #1" in _text(d, "run-summary")  # the run shown stays
    _shot(d, "63-measured-bad-profile")
