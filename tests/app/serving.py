"""Start `tilescope serve` in a process of its own for a test, and wait until it answers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(model: str, db_url: str, *extra: str, env: dict | None = None) -> tuple[str, subprocess.Popen]:
    """(the page's URL, the server process); the caller terminates it."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--db", db_url, "--model", model, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return url, proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"tilescope serve did not start: {proc.stdout.read() if proc.stdout else ''}")
            time.sleep(0.3)


def start_worker(model: str, db_url: str, env: dict) -> subprocess.Popen:
    """`tilescope worker`, once Celery says it is ready (its output goes to the returned process's stdout)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker", "--db", db_url, "--model", model, "--concurrency", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    seen = []
    deadline = time.monotonic() + 90
    for line in proc.stdout:  # type: ignore[union-attr]
        seen.append(line)
        if " ready." in line:
            return proc
        if time.monotonic() > deadline:
            break
    proc.kill()
    pytest.fail("tilescope worker did not start: " + "".join(seen[-20:]))
