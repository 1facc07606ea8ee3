"""Tune in real headless Chromium: a search the page follows and can cancel, keeping what it found,
then one that ends and shows the tuned run against the run it started from; and a search whose
process is killed (a server worker's, a Celery worker's), which its page says it lost."""

from __future__ import annotations

import psutil
import pytest
from selenium.webdriver.common.by import By

from tilescope.app.web.job_book import LOST_AFTER_S
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import list_runs

from . import serving
from .test_browser import _prop, _settled, _shot, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

MODEL = "zoo:bert-base?layers=2&seq=128"  # host-bound on host dispatch: the device waits for the host


@pytest.fixture(scope="module")
def bert_server(tmp_path_factory):
    """The server's URL and its process (whose threads' stacks a stalled poll is shown with)."""
    tmp = tmp_path_factory.mktemp("tune")
    url, proc = serving.start(MODEL, f"sqlite:///{tmp / 'ui.db'}", logs=tmp)
    yield url, proc
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


# the page's callback requests and their answers, kept on the page: what a failure shows of how
# the page followed the search (when each poll went out, what came back)
RECORD_POLLS = """
window.tilescopePolls = [];
window.tilescopePending = {};
var fetched = window.fetch;
var asked = 0;
window.fetch = function (url) {
  var sent = Math.round(performance.now());
  var id = asked++;
  window.tilescopePending[id] = sent;
  return fetched.apply(this, arguments).then(function (res) {
    delete window.tilescopePending[id];
    res.clone().text().then(function (body) {
      var answered = Math.round(performance.now());
      window.tilescopePolls.push([sent, answered, res.status, String(url).slice(-60), body.slice(0, 160)]);
    });
    return res;
  });
};
"""


OLDEST_PENDING = """
var sent = Object.values(window.tilescopePending || {});
return sent.length ? performance.now() - Math.min.apply(null, sent) : 0;
"""
STALLED_MS = 3000  # a request the server has not answered for this long: what is it doing?


def _polls(driver) -> str:
    return "\n".join(map(str, driver.execute_script("return (window.tilescopePolls || []).slice(-40);")))


def _connections(process: psutil.Process) -> list:
    try:
        return process.net_connections("inet")
    except psutil.NoSuchProcess:  # ended meanwhile: it holds none
        return []


def _searching(driver, server) -> None:
    """Open the server's page and start a search of 300 s; return once it has said where it is."""
    url, proc = server
    driver.get(url)
    _wait(driver, lambda d: _settled(d) and "baseline" in _text(d, "run-select"), 120)
    _budget(driver, 300)
    driver.execute_script(RECORD_POLLS)
    driver.find_element(By.ID, "tune-start").click()
    stalled: list[str] = []

    def said(d) -> bool:
        # a request the server sits on: its threads' stacks, taken while it does (once)
        if not stalled and d.execute_script(OLDEST_PENDING) > STALLED_MS:
            stalled.append(proc.stacks(jobs=False)[-12000:])
        return "trials" in _text(d, "tune-progress") or bool(_text(d, "tune-status"))

    # the search says where it is; should it end first (an error line), what it said is the failure
    _wait(driver, said, 90)
    progress = _text(driver, "tune-progress")
    assert "trials" in progress, (
        f"the search ended: {_text(driver, 'tune-status')!r}; progress {progress!r}; the page's last requests "
        f"(sent ms, answered ms, status, url, answer):\n{_polls(driver)}\nthe server while a request waited "
        f"{STALLED_MS} ms:\n{stalled[0] if stalled else '(none waited so long)'}"
    )


def test_a_search_shows_progress_cancels_keeping_its_best_and_then_shows_the_tuned_run(bert_server, browser):  # noqa: F811
    d = browser
    _searching(d, bert_server)
    # the search's process, forked from the server's worker, holds none of the server's sockets:
    # a connection the server closed stayed open in it, and the page's next poll waited on it
    url, proc = bert_server
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    jobs = [job for worker in psutil.Process(proc.pid).children() for job in worker.children(recursive=True)]
    assert jobs
    assert not [c for job in jobs for c in _connections(job) if c.laddr.port == port]
    assert _run_options(d) == 1
    assert _enabled(d, "tune-cancel") and not _enabled(d, "tune-start")
    _shot(d, "40-tune-running")
    d.find_element(By.ID, "tune-cancel").click()
    # the best set found by then is kept, stored and shown, and the page says so
    _wait(d, lambda d: "Tuned #2 from #1" in _text(d, "tune-status") and _settled(d), 120)
    status = _text(d, "tune-status")
    assert "cancelled; the best set so far is kept" in status, status
    assert _run_options(d) == 2 and "tuned:" in _text(d, "run-select")
    assert _enabled(d, "tune-start") and not _enabled(d, "tune-cancel")
    # each device change is worth nothing while the host sets the step: the page says why
    assert "Host-bound: the device waits" in status and "device changes do not shorten the step" in status
    _wait(d, lambda d: "#1 baseline" in _text(d, "diff-view") and "#2 tuned" in _text(d, "diff-view"), 60)
    _shot(d, "41-tune-cancelled")

    _budget(d, 3)
    d.find_element(By.ID, "tune-start").click()
    _wait(d, lambda d: "Tuned #3 from #2" in _text(d, "tune-status") and _settled(d), 120)
    assert _run_options(d) == 3
    _wait(d, lambda d: "#2 tuned" in _text(d, "diff-view") and "#3 tuned" in _text(d, "diff-view"), 60)
    _shot(d, "42-tune-done")
    # why candidates were illegal, by family, folded under one line: unfolded, the reasons in full
    assert "candidates were illegal: " in _text(d, "tune-status")
    d.find_element(By.CSS_SELECTOR, ".tune-illegal summary").click()
    _wait(d, lambda d: "needs a shard on each core" in _text(d, "tune-status"))
    _shot(d, "43-tune-illegal")


def _stored(db_url: str) -> int:
    with session_factory(open_db(db_url))() as session:
        return len(list_runs(session, MODEL))


def _lost_said(driver, within: float) -> None:
    """The page says the job was lost, in one line, within `within` seconds, and Tune works again."""
    _wait(driver, lambda d: "this job was lost" in _text(d, "page-message"), within)
    assert "\n" not in _text(driver, "page-message").strip()
    _wait(driver, lambda d: _enabled(d, "tune-start") and not _enabled(d, "tune-cancel"), 30)


def test_a_search_dies_with_its_server_worker_stores_nothing_and_its_page_says_so(tmp_path, browser):  # noqa: F811
    """kill -9 of a gunicorn worker mid-tune left its search running outside the server's count,
    and it stored a run nobody asked for."""
    db_url = f"sqlite:///{tmp_path / 'ui.db'}"
    url, proc = serving.start(MODEL, db_url, logs=tmp_path)
    try:
        _searching(browser, (url, proc))
        (worker,) = psutil.Process(proc.pid).children()  # gunicorn's one worker
        searching = worker.children(recursive=True)  # the search's process and its isolated child
        assert searching
        worker.kill()
        _lost_said(browser, 60)
        gone = psutil.wait_procs(searching, timeout=30)[1]
        assert not gone, f"outlived their server worker: {gone}"
        assert _stored(db_url) == 1  # and none of them can store anything now
    finally:
        proc.stop()


@pytest.fixture
def celery_env(redis_broker):
    import os

    return {**os.environ, "TILESCOPE_CELERY_BROKER": redis_broker}


def test_a_search_whose_celery_worker_is_killed_is_said_lost_to_its_page(tmp_path, browser, celery_env):  # noqa: F811
    """kill -9 of a Celery worker mid-tune left the page spinning for ever, saying nothing."""
    db_url = f"sqlite:///{tmp_path / 'ui.db'}"
    url, proc = serving.start(MODEL, db_url, logs=tmp_path, env=celery_env)
    worker = serving.start_worker(MODEL, db_url, tmp_path, celery_env)
    try:
        _searching(browser, (url, proc))
        running = psutil.Process(worker.pid).children(recursive=True)
        worker.kill()  # the worker's main process: its pool and the search die with it
        psutil.wait_procs(running, timeout=30)
        _lost_said(browser, LOST_AFTER_S + 30)
        assert _stored(db_url) == 1
    finally:
        worker.kill()
        proc.stop()
