"""A never-compiled model's page, timed in headless Chromium as a user meets it: a `tilescope serve`
of its own (a fresh database and cache directory, so nothing of the model is stored or kept), the
page asked for with the model in its address, timed from the request until the page shows the
model's run with every view settled. The stages the page said while it waited are kept: "with
progress" is part of the goal.

Needs selenium and Chromium with its driver (the `test` extra; Debian's chromium and
chromium-driver); without them, `missing` says what is not there."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

PAGE_REF = "zoo:bert-base?layers=1040"  # 99,867 ops
MAX_OPS = 200_000  # the server's --max-ops: the page may compile the model
START_S = 120  # the server compiles and stores its own opening model before it listens
PAGE_S = 300
POLL_S = 0.1
# headless, software GL, the window tests and screenshots use, nothing in the background
CHROME_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--window-size=1600,1300",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)

# Dash's queue of callbacks, as dash.testing reads it: empty once every callback an action set
# off has run and its outputs are on the page
SETTLED_JS = """
var store = (window.dash_stores || [])[0];
if (!store) { return false; }
var queues = store.getState().callbacks;
return Object.keys(queues).every(function (k) { return k === 'stored' || k === 'completed' || !queues[k].length; });
"""
# what the page shows: the run summary's text, the opening line while it is shown, and whether
# the graph has drawn
PAGE_JS = """
var summary = document.getElementById('run-summary'), opening = document.getElementById('compile-progress');
var graph = document.querySelector('#graph-view .js-plotly-plot');
return [summary ? summary.innerText : '',
        opening && getComputedStyle(opening).display !== 'none' ? opening.innerText : '',
        !!(graph && graph.data && graph.data.length)];
"""


@dataclass(frozen=True)
class PageTiming:
    seconds: float  # from asking for the page to the model's run shown, every view settled
    stages: tuple[str, ...]  # each stage the page said on the way, in order


def browser_paths() -> tuple[str | None, str | None]:
    return shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")


def missing() -> str:
    """What timing a page needs and this machine lacks ('' if nothing)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'tilescope[test]')"
    chromium, driver = browser_paths()
    if not (chromium and driver):
        return "no chromium and chromedriver on PATH (Debian: apt install chromium chromium-driver)"
    return ""


def time_page(workdir: Path, ref: str = PAGE_REF) -> PageTiming:
    """`ref`'s page on a server of its own, its database and caches in `workdir`."""
    port = _free_port()
    env = {**os.environ, "XDG_CACHE_HOME": str(workdir / "cache")}  # caches of its own: nothing kept
    command = [sys.executable, "-c", "from tilescope.app.cli import entry; entry()", "serve", "--port", str(port)]
    command += ["--db", f"sqlite:///{workdir / 'page.db'}", "--max-ops", str(MAX_OPS)]
    with (workdir / "serve.log").open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_until_served(url, server, workdir / "serve.log")
        driver = chrome()
        try:
            return _opened(driver, f"{url}?{urlencode({'model': ref})}", ref)
        finally:
            driver.quit()
    finally:
        _stop(server)


def _stop(server: subprocess.Popen) -> None:
    """Stop gunicorn, its workers and their children; killed if they do not end in time."""
    with contextlib.suppress(ProcessLookupError):  # it may have exited already
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:  # mid-compile, say
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _opened(driver, url: str, ref: str) -> PageTiming:
    """Ask for `url` and wait until it shows a run of `ref` with every view settled."""
    stages: list[str] = []
    start = time.monotonic()
    driver.get(url)
    while time.monotonic() - start < PAGE_S:
        summary, opening, drawn = driver.execute_script(PAGE_JS)
        stage = opening.rpartition(" Now ")[2].rstrip("\u2026") if " Now " in opening else ""
        if stage and (not stages or stages[-1] != stage):
            stages.append(stage)
        if f"{ref} on " in summary and "run #" in summary and not opening and drawn:
            if driver.execute_script(SETTLED_JS):
                return PageTiming(time.monotonic() - start, tuple(stages))
        time.sleep(POLL_S)
    raise RuntimeError(f"{ref}: its page did not show its run within {PAGE_S} s")


def chrome():
    """Headless Chromium driven through its driver, as the browser tests drive it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = browser_paths()
    options = Options()
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.binary_location = chromium
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_served(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"tilescope serve exited: {log.read_text(errors='replace')[-300:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"tilescope serve did not answer within {START_S} s")
