"""Re-run jobs as threads: the job runs in the server's own process, reports progress, and leaves
its result (or its error) where Dash looks for it."""

from __future__ import annotations

import os
import threading
import time

import diskcache

from app.web.thread_jobs import ThreadJobManager


def _wait_for(manager, key, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not manager.result_ready(key):
        assert time.monotonic() < deadline, "the job left no result"
        time.sleep(0.01)


def test_a_job_runs_in_a_thread_of_this_process_and_leaves_its_result(tmp_path):
    manager = ThreadJobManager(diskcache.Cache(str(tmp_path)))
    release = threading.Event()
    seen = {}

    def callback(set_progress, x):
        set_progress("compiling")
        seen["pid"], seen["thread"] = os.getpid(), threading.current_thread()
        release.wait(5)
        return x * 2

    job = manager.call_job_fn("run", manager.make_job_fn(callback, progress=True), [21], {})
    deadline = time.monotonic() + 5
    while "pid" not in seen:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert manager.job_running(str(job)) and not manager.result_ready("run")
    assert manager.get_progress("run") == ["compiling"]
    release.set()
    _wait_for(manager, "run")
    assert manager.get_result("run", job) == 42
    assert seen["pid"] == os.getpid() and seen["thread"] is not threading.main_thread()
    assert not manager.job_running(job)


def test_a_failing_job_leaves_its_error_for_the_page(tmp_path):
    manager = ThreadJobManager(diskcache.Cache(str(tmp_path)))

    def callback():
        raise ValueError("no such op")

    job = manager.call_job_fn("bad", manager.make_job_fn(callback, progress=False), [], {})
    _wait_for(manager, "bad")
    assert manager.get_result("bad", job)["background_callback_error"]["msg"] == "no such op"
    assert not manager.terminate_unhealthy_job(job)


def test_reading_a_finished_job_leaves_a_job_that_runs_alone(tmp_path):
    """A thread's ident goes to the next thread: a job known by it would be forgotten when the
    finished job of the same ident had its result read, and its page would stop polling."""
    manager = ThreadJobManager(diskcache.Cache(str(tmp_path)))
    done = manager.call_job_fn("done", manager.make_job_fn(lambda: 1, progress=False), [], {})
    _wait_for(manager, "done")
    release = threading.Event()
    running = manager.call_job_fn("running", manager.make_job_fn(lambda: release.wait(5), progress=False), [], {})
    assert manager.get_result("done", done) == 1
    assert manager.job_running(running)
    release.set()
    _wait_for(manager, "running")
