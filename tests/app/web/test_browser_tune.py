"""Tune in real headless Chromium: a search the page follows and can cancel, then one that ends
and shows the tuned run against the run it started from."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from . import serving
from .test_browser import _prop, _settled, _shot, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

MODEL = "zoo:bert-base?layers=2&seq=128"


@pytest.fixture(scope="module")
def bert_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tune")
    url, proc = serving.start(MODEL, f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url
    proc.stop()


def _enabled(driver, element_id: str) -> bool:
    return driver.find_element(By.ID, element_id).is_enabled()


def _run_options(driver) -> int:
    return len(_prop(driver, "run-select", "options") or [])


def _budget(driver, seconds: int) -> None:
    field = driver.find_element(By.ID, "tune-budget")
    field.clear()
    field.send_keys(str(seconds))
    _wait(driver, lambda d: d.find_element(By.ID, "tune-budget").get_attribute("value") == str(seconds))


def test_a_search_shows_progress_cancels_and_then_shows_the_tuned_run_against_its_start(bert_server, browser):  # noqa: F811
    d = browser
    d.get(bert_server)
    _wait(d, lambda d: _settled(d) and "baseline" in _text(d, "run-select"), 120)
    assert _run_options(d) == 1
    assert not _enabled(d, "tune-cancel")

    _budget(d, 300)
    d.find_element(By.ID, "tune-start").click()
    _wait(d, lambda d: "trials" in _text(d, "tune-progress"), 60)  # the search says where it is
    assert _enabled(d, "tune-cancel") and not _enabled(d, "tune-start")
    _shot(d, "40-tune-running")
    d.find_element(By.ID, "tune-cancel").click()
    _wait(d, lambda d: _enabled(d, "tune-start") and not _enabled(d, "tune-cancel"), 30)
    assert _text(d, "tune-progress") == "" and _run_options(d) == 1  # dropped: nothing stored

    _budget(d, 3)
    d.find_element(By.ID, "tune-start").click()
    _wait(d, lambda d: "Tuned #2 from #1" in _text(d, "tune-status") and _settled(d), 120)
    assert _run_options(d) == 2 and "tuned:" in _text(d, "run-select")
    _wait(d, lambda d: "#1 baseline" in _text(d, "diff-view") and "#2 tuned" in _text(d, "diff-view"), 60)
    _shot(d, "41-tune-done")
