"""A measured report's journey in real headless Chromium: dropped on the run bar, its timeline and
its statistics by op code shown, replayed with the Replay button, and the prediction compared with
the measurement op by op; a report measured on another chip compared with it. Bad files (malformed,
cut short, hostile, too large, too many rows) are one line on the page, store nothing, and the
server answers on."""

from __future__ import annotations

import sqlite3
import time
import urllib.request

import pytest
from selenium.webdriver.common.by import By

from tests.compiler.profiles.reports import add, matmul, report_text
from tests.conftest import PERF_REPORTS

from . import serving
from .test_browser import _prop, _settled, _shot, _tab, _text, _timeline_zones, _wait, browser  # noqa: F401

pytestmark = pytest.mark.browser

CLIP = PERF_REPORTS / "wh_clip_encoder_2.csv"  # a CLIP encoder measured on a Wormhole: 1,872 ops
BLACKHOLE_CLIP = PERF_REPORTS / "bh_64_clip_encoder_1.csv"  # and one measured on a Blackhole
ROWS = "var gd = document.querySelector('#timeline-view .js-plotly-plot'); return gd ? gd.layout.meta.rows : null;"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replay")
    url, proc = serving.start("zoo:mlp?layers=1", f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url, tmp / "ui.db"
    proc.stop()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The CLIP report when the shared profiles are there, else a small report of the tests' own."""
    if CLIP.is_file() and BLACKHOLE_CLIP.is_file():
        return CLIP
    path = tmp_path_factory.mktemp("report") / "small_report.csv"
    path.write_text(report_text(*[row for _ in range(8) for row in (matmul(), add(), add())]))
    return path


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    """A report of the same model measured on a Blackhole."""
    if CLIP.is_file() and BLACKHOLE_CLIP.is_file():
        return BLACKHOLE_CLIP
    path = tmp_path_factory.mktemp("report") / "blackhole_report.csv"
    arch = {"DEVICE ARCH": "blackhole"}
    path.write_text(report_text(*[row for _ in range(8) for row in (matmul(**arch), add(**arch), add(**arch))]))
    return path


def _drop(driver, path) -> None:
    driver.find_element(By.CSS_SELECTOR, "#report-upload input[type=file]").send_keys(str(path))


def _stored(db) -> list[tuple[int, str, int | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, kind, parent_id FROM runs ORDER BY id").fetchall()


def _opened(driver, url: str) -> None:
    driver.get(url)
    _wait(driver, lambda d: "run #1" in _text(d, "run-summary") and _settled(d), timeout=60)


def test_a_report_is_shown_replayed_and_compared_with_its_prediction(served, browser, report, other):  # noqa: F811
    url, db = served
    d = browser
    _opened(d, url)
    _drop(d, report)
    _wait(d, lambda d: "device time:" in _text(d, "page-message"), 60)
    _wait(d, lambda d: "measured on hardware" in _text(d, "run-summary") and _settled(d), 30)
    measured = _prop(d, "run-select", "value")
    assert _prop(d, "model-select", "value") == f"report:{report.name}"
    assert _text(d, "replay-button") == "Replay on wormhole_n150"
    _shot(d, "70-report-uploaded")

    _tab(d, "Timeline")
    _wait(d, lambda d: "device 0" in (d.execute_script(ROWS) or []) and _timeline_zones(d) > 0 and _settled(d))
    _shot(d, "71-report-timeline")

    _tab(d, "Statistics")
    d.find_element(By.XPATH, "//div[@id='stats-by']//label[normalize-space()='per op code']").click()
    _wait(d, lambda d: "BinaryNgDeviceOperation" in _text(d, "stats-table") and _settled(d))
    _shot(d, "72-report-statistics-by-op-code")

    d.execute_script("window.scrollTo(0, 0)")
    d.find_element(By.ID, "replay-button").click()
    _wait(d, lambda d: f"replay of {report.name} on wormhole_n150" in _text(d, "page-message"), 60)
    replayed = _prop(d, "run-select", "value")
    assert replayed != measured and _prop(d, "analysis-tabs", "value") == "runs"
    assert (replayed, "simulated", measured) in _stored(db)  # the replay's parent is the measured run
    _wait(d, lambda d: f"#{replayed} predicted" in _text(d, "diff-summary") and _settled(d), 30)
    head = _text(d, "diff-summary")
    assert f"#{measured} measured" in head and "predicted against measured" in head
    assert not d.find_element(By.ID, "replay-button").is_displayed()  # a replay is no measured run
    _shot(d, "73-replayed-message")
    d.execute_script("document.getElementById('diff-summary').scrollIntoView()")
    _shot(d, "74-predicted-vs-measured-diff")
    assert "matmul" in _text(d, "diff-ops")  # the kinds table, and the ops of largest delta

    # a report of the model measured on another chip: its measured run and the first, side by side
    _drop(d, other)
    _wait(d, lambda d: f"from {other.name} on blackhole_p150" in _text(d, "page-message"), 60)
    _wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#runs-table .ag-center-cols-container .ag-row")) == 2)
    second = _prop(d, "run-select", "value")
    for run_id in (measured, second):  # the other report's measured run is listed after this one's
        d.find_element(By.CSS_SELECTOR, f"#runs-table .ag-row[row-id='{run_id}'] .ag-selection-checkbox input").click()
    chips = f"measured on different chips: run {measured} on wormhole_n150, run {second} on blackhole_p150"
    _wait(d, lambda d: chips in _text(d, "diff-summary") and _settled(d), 30)
    d.execute_script("document.getElementById('runs-table').scrollIntoView()")
    _shot(d, "75-two-measured-reports")


BAD = [
    ("malformed.csv", "OP CODE;DEVICE KERNEL DURATION [ns]\nx;1\n", "malformed.csv: no 'OP CODE' column"),
    ("cut.csv", report_text(add(), add()).rstrip("\n")[:-3], "cut.csv:3: the file ends inside this row"),
    ("cut.json", '{"traceEvents": [{"ph": "X", "name": "mm", "ts": 1', "cut.json: not JSON"),
    ("deep.json", "[" * 100_000, "deep.json: nested more than 32 deep"),
    ("nul.csv", report_text(add()).replace("Binary", "Bin\0ary"), "nul.csv:2: a NUL character; a profile is text"),
    ("rows.csv", "OP CODE,DEVICE KERNEL DURATION [ns]\n" + "x,1\n" * 100_001, "rows.csv: more than 100,000 rows"),
]


def test_bad_profiles_are_one_line_store_nothing_and_the_server_answers(served, browser, tmp_path):  # noqa: F811
    url, db = served
    d = browser
    _opened(d, url)
    before = _stored(db)
    for name, text, said in BAD:
        path = tmp_path / name
        path.write_text(text)
        _drop(d, path)
        _wait(d, lambda d, said=said: _text(d, "page-message").startswith(said), 30)
        line = _text(d, "page-message")
        assert "\n" not in line.strip() and "Traceback" not in line
    _shot(d, "76-bad-profile-one-line")
    huge = tmp_path / "huge.csv"  # over the upload limit: the browser sends nothing, and says so
    with huge.open("wb") as file:
        file.truncate(65 * 2**20)
    _drop(d, huge)
    _wait(d, lambda d: _text(d, "page-message") == "huge.csv: 65.0 MiB is over the 64 MiB upload limit", 10)
    _shot(d, "77-profile-over-the-limit")
    assert _stored(db) == before
    started = time.monotonic()
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.status == 200
    assert time.monotonic() - started < 5
    assert "run #" in _text(d, "run-summary")  # the run shown stays
