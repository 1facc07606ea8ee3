"""The server's caches in real headless Chromium: a job cache on a full disk costs each job one line
on the page, never a silent end, and the server goes on once there is room again."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from . import cache_disk, serving
from .test_browser import CLICK_NODE, _op_nodes, _pick, _settled, _text, _wait, browser  # noqa: F401  # browser: the fixture

pytestmark = pytest.mark.browser

MODEL = "zoo:mlp?layers=1"
OP = "mlp.layer.0.fc1.matmul"


def test_a_full_job_cache_ends_apply_and_tune_with_one_line_each(tmp_path, browser):  # noqa: F811
    """Apply runs in a thread of the server, Tune in a process of its own: neither can be entered in
    the job cache, and each page hears why, once, where it would have heard of any failure."""
    cache = tmp_path / "cache"  # the server's $XDG_CACHE_HOME
    url, proc = serving.start(
        MODEL, f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path, under=cache_disk.on_tmpfs(cache, size_kib=2048)
    )
    try:
        d = browser
        d.get(url)
        _wait(d, lambda d: "run #1" in _text(d, "run-summary") and len(_op_nodes(d)) == 2, 60)
        filled = cache_disk.fill(proc.pid, cache / "tilescope")
        d.execute_script(CLICK_NODE % OP)
        _wait(d, lambda d: OP in _text(d, "op-inspector"))
        _pick(d, "override-memory", "l1")
        d.find_element(By.ID, "apply-overrides").click()
        _wait(d, lambda d: _failed(proc) == 1 and _settled(d), 60)
        assert _text(d, "page-message") == f"That failed: {FULL}"
        assert d.find_element(By.ID, "apply-overrides").is_enabled()

        d.find_element(By.ID, "tune-budget").clear()
        d.find_element(By.ID, "tune-budget").send_keys("2")
        d.find_element(By.ID, "tune-start").click()
        _wait(d, lambda d: _failed(proc) == 2 and _settled(d), 60)
        assert _text(d, "page-message") == f"That failed: {FULL}"
        assert d.find_element(By.ID, "tune-start").is_enabled()

        (Path(f"/proc/{proc.pid}/root") / cache.relative_to("/") / "tilescope" / "filler").unlink()
        d.find_element(By.ID, "apply-overrides").click()  # room again: the server goes on
        _wait(d, lambda d: "run #2" in _text(d, "run-summary"), 60)
    finally:
        output = proc.stop()
    assert filled > 0 and "Traceback" not in output, output[-3000:]
    assert output.count(f"tilescope: a request failed: {FULL}") == 2  # each job's own line, in the log too


FULL = "the server's job cache cannot take a job: OperationalError: database or disk is full"


def _failed(proc) -> int:
    """The failures the server has told a page of."""
    return proc.output().count("tilescope: a request failed:")


def test_a_server_on_a_read_only_cache_says_so_once_and_its_jobs_run(tmp_path, browser):  # noqa: F811
    """The jobs keep their results in a private directory of this run's instead."""
    cache = tmp_path / "cache"
    under = cache_disk.on_tmpfs(cache, size_kib=1024, read_only=True)
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path, under=under)
    try:
        d = browser
        d.get(url)
        _wait(d, lambda d: "run #1" in _text(d, "run-summary") and len(_op_nodes(d)) == 2, 60)
        d.execute_script(CLICK_NODE % OP)
        _wait(d, lambda d: OP in _text(d, "op-inspector"))
        _pick(d, "override-memory", "l1")
        d.find_element(By.ID, "apply-overrides").click()
        _wait(d, lambda d: "run #2" in _text(d, "run-summary"), 60)
        assert _text(d, "page-message") == ""
    finally:
        output = proc.stop()
    assert "Traceback" not in output
    assert output.count("Read-only file system") == 1 and "for this run only" in output
