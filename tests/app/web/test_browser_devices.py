"""A model split over a T3K's eight chips, in real headless Chromium: the timeline's device and
link rows, a sharding override re-run, and the diff against the same model on one chip."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from . import serving
from .test_browser import (  # noqa: F401  # browser: the fixture
    TIMELINE,
    _pick,
    browser,
    _settled,
    _shot,
    _tab,
    _text,
    _wait,
)

pytestmark = pytest.mark.browser

MODEL = "zoo:llama-3.2-1b?layers=1&seq=64&devices=8"
DOWN = "model.layers.0.mlp.down_proj.matmul"


@pytest.fixture(scope="module")
def t3k_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("devices")
    url, proc = serving.start(MODEL, f"sqlite:///{tmp / 'ui.db'}", "--target", "t3k", logs=tmp)
    yield url
    proc.stop()


def _rows(driver) -> list[str]:
    return driver.execute_script(TIMELINE + "return gd && gd.layout.meta ? gd.layout.meta.rows || [] : [];")


def test_eight_devices_show_their_rows_rerun_with_a_sharding_and_diff_against_one(t3k_server, browser):  # noqa: F811
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

    # a sharding override: down_proj's result split over the model axis, so its partial sums are
    # reduce-scattered rather than all-reduced
    d.get(f"{t3k_server}?op={DOWN}")
    _wait(d, lambda d: DOWN in _text(d, "op-inspector") and _settled(d), timeout=60)
    field = d.find_element(By.ID, "override-sharding")
    field.send_keys("{},{model}", Keys.TAB)
    _wait(d, lambda d: d.find_element(By.ID, "apply-overrides").is_enabled())
    d.find_element(By.ID, "apply-overrides").click()
    _wait(d, lambda d: "run #2" in _text(d, "run-summary"), timeout=60)
    assert "applied" in _text(d, "override-status")
    assert f"{DOWN}=" in _text(d, "run-summary") and "sharding#{},{model}" in _text(d, "run-summary")
    _tab(d, "Runs & diff")
    _wait(d, lambda d: "reduce_scatter" in _text(d, "diff-view"), timeout=60)
    assert "collectives (" in _text(d, "diff-view")
    _shot(d, "32-sharding-override")

    # the same model on one chip: the run bar's target; its diff against the eight-chip run
    _pick(d, "target-select", "wormhole_n150")
    _wait(d, lambda d: "run #3" in _text(d, "run-summary") and _settled(d), timeout=60)
    d.get(t3k_server + "?diff=1,3")
    # a new page: Dash draws the layout after the document loads, so wait for what it draws
    _wait(d, lambda d: "run #" in _text(d, "run-summary") and _settled(d), timeout=60)
    _tab(d, "Runs & diff")
    _wait(d, lambda d: "devices: 8 vs 1" in _text(d, "diff-view"), timeout=60)
    diff = _text(d, "diff-view")
    assert "collectives (3 removed)" in diff and "all_reduce" in diff  # two a layer, the logits' gather
    _wait(d, lambda d: "device 7" in _text(d, "diff-devices"))
    timelines = _text(d, "diff-timelines")
    assert "A #1 device 7" in timelines and "A #1 link model" in timelines and "B #3" in timelines
    d.execute_script("document.getElementById('diff-view').scrollIntoView()")
    _shot(d, "33-diff-eight-vs-one")
