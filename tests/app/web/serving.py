"""Start `tilescope serve` and `tilescope worker` in processes of their own for a test, and wait
until they answer."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from tilescope.app.web.server import STACKS_SIGNAL

START_S = 90  # a server compiles and stores the opening model before it listens


class Process(subprocess.Popen):
    """A server or worker whose output goes to a file: a pipe that nobody reads fills up (64 KiB, a
    few hundred request log lines) and the process then blocks on its next log line."""

    def __init__(self, args: list[str], log: Path, env: dict | None) -> None:
        self.log = log
        # the app's job cache in the test's directory, not the user's
        env = {**(os.environ if env is None else env), "XDG_CACHE_HOME": str(log.parent / "cache")}
        with log.open("w") as out:
            super().__init__(args, stdout=out, stderr=subprocess.STDOUT, env=env)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stacks(self, jobs: bool = True) -> str:
        """Every thread's stack of the server and its workers (they dump them on STACKS_SIGNAL), then its
        output: what it was doing when a test gave up on it. Without `jobs`, the processes the workers
        started are left alone (one that does not take the signal ends on it)."""

        try:
            tree = [psutil.Process(self.pid), *psutil.Process(self.pid).children(recursive=jobs)]
        except psutil.NoSuchProcess:
            return self.output()
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(STACKS_SIGNAL)
        time.sleep(1)  # the dumps are written by the processes themselves
        return self.output()

    def stop(self, timeout: float = 30) -> str:
        """Terminate it, wait for it to exit, and return its output."""
        self.terminate()
        self.wait(timeout=timeout)
        return self.output()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listens(proc: Process, port: int) -> bool:
    """Whether `proc` (or a process of its own) listens on `port`: the page at the port is then ours."""
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        return any(
            c.status == psutil.CONN_LISTEN and c.laddr.port == port for p in tree for c in p.net_connections("tcp")
        )
    except psutil.NoSuchProcess:
        return False


CHECKOUT_CLI = (sys.executable, "-m", "tilescope.app.cli")  # the tilescope of the checkout under test


def start(
    model: str,
    db_url: str,
    *extra: str,
    logs: Path,
    env: dict | None = None,
    program: Sequence[str] = CHECKOUT_CLI,
    under: Sequence[str] = (),
) -> tuple[str, Process]:
    """(the page's URL, the server process); the caller stops it. Its output goes to `logs`;
    `program` is the tilescope that serves (an installed one, say); `under` is a command the server
    runs under (it ends by running its arguments in its own process)."""
    # the port is free when picked, but another process may bind it before the server does (the
    # server listens only once it has compiled the model): then the server does not start, and
    # what answers at the port is someone else's, so the server starts again on another port
    for _ in range(3):
        port = free_port()
        proc = Process(
            [*under, *program, "serve", "--port", str(port), "--db", db_url, "--model", model, *extra],
            logs / f"serve-{port}.log",
            env,
        )
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + START_S
        while proc.poll() is None and not _listens(proc, port) and time.monotonic() < deadline:
            time.sleep(0.2)
        if proc.poll() is not None and "in use" in proc.output():
            continue
        if proc.poll() is not None or not _listens(proc, port):
            proc.kill()
            pytest.fail(f"tilescope serve did not start: {proc.output()[-3000:]}")
        # gunicorn listens before its workers have loaded the app; the first request waits for one
        try:
            urllib.request.urlopen(url, timeout=max(1.0, deadline - time.monotonic()))
        except urllib.error.HTTPError as err:
            if err.code != 401:  # a server with users asks the anonymous request to sign in: it answers
                raise
        return url, proc
    pytest.fail(f"tilescope serve found each port it tried taken: {proc.output()[-3000:]}")


def start_worker(model: str, db_url: str, logs: Path, env: dict) -> Process:
    """`tilescope worker`, once Celery says it is ready; its output goes to `logs`."""
    proc = Process(
        [sys.executable, "-m", "tilescope.app.cli", "worker", "--db", db_url, "--model", model, "--concurrency", "2"],
        logs / "worker.log",
        env,
    )
    deadline = time.monotonic() + START_S
    while " ready." not in proc.output():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("tilescope worker did not start: " + proc.output()[-3000:])
        time.sleep(0.2)
    return proc
