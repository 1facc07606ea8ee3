"""Re-run jobs as threads: the job runs in the server's own process, reports progress, and leaves
its result (or its error) where Dash looks for it."""

from __future__ import annotations

import os
import threading
import time

import diskcache

from tilescope.app.web.job_book import JOBS_PER_CLIENT
from tilescope.app.web.jobs import reporter
from tilescope.app.web.thread_jobs import ThreadJobManager

from .test_jobs import _from, _until


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


def _held_rerun(tmp_path, name: str, release: threading.Event):
    """A re-run that says its stages, held in its compile (which says none) until `release`, then
    stores its run, as app.workbench.runs does."""

    def rerun(set_progress):
        say = reporter(set_progress, "re-run")
        say("compiling")
        (tmp_path / f"{name}.compiling").touch()
        release.wait(30)
        say("storing the run")
        (tmp_path / f"{name}.stored").touch()
        return name

    return rerun


def test_a_cancelled_job_holds_its_slot_until_it_stops_and_stores_nothing(tmp_path):
    """A thread cannot be killed: a cancel that freed its slot at once left the re-run going on to
    store its run outside the bounds, and a page re-posting Apply, cancelling its last one each time
    (Dash's oldJob), ran any number of re-runs at once."""
    manager = ThreadJobManager(diskcache.Cache(str(tmp_path / "cache")))
    release, threads, keys = threading.Event(), [], []
    try:
        for i in range(JOBS_PER_CLIENT):
            keys.append(manager.build_cache_key(None, [], [], None))
            with _from("10.0.0.1"):
                job = manager.call_job_fn(
                    keys[i], manager.make_job_fn(_held_rerun(tmp_path, f"job{i}", release), True), [], {}
                )
            threads.append(manager._threads[job])
            _until(lambda i=i: (tmp_path / f"job{i}.compiling").exists())
            manager.terminate_job(str(job))  # what Dash does on Cancel, or on Apply again with oldJob
            assert manager.get_result(keys[i], job) is manager.UNDEFINED and not manager.job_running(job)
        with _from("10.0.0.1"):
            another = manager.call_job_fn("another", manager.make_job_fn(lambda: "ran", False), [], {})
        assert all(manager.book.holds_slot(key) for key in keys)
    finally:
        release.set()
    for thread in threads:
        thread.join(30)
    assert not list(tmp_path.glob("*.stored")), "a cancelled re-run stored its run"
    assert all(manager.get_result(key, None) is manager.UNDEFINED for key in keys)  # nor is why it stopped said
    assert not any(manager.book.holds_slot(key) for key in keys)
    refused = manager.get_result("another", another)
    assert refused != "ran", "a client ran more jobs at once than its share"
    assert refused["background_callback_error"]["msg"].startswith(f"you are running {JOBS_PER_CLIENT} jobs")
