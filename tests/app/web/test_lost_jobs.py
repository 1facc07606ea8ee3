"""A job that ends without leaving its result tells its page why, in one line, instead of the page
taking it for cancelled and stopping without a word."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import time

import diskcache

from tilescope.app.web.jobs import LOST, ProcessJobs
from tilescope.app.web.thread_jobs import ThreadJobManager


def _polled(manager, key, job, timeout=20.0):
    """What the page's polls get once the job has ended (Dash asks for the result, then whether the
    job runs)."""
    deadline = time.monotonic() + timeout
    while True:
        result = manager.get_result(key, job)
        if result is not manager.UNDEFINED or not manager.job_running(job):
            return result
        assert time.monotonic() < deadline, "the job never ended"
        time.sleep(0.02)


def _said(line: str) -> dict:
    return {"background_callback_error": {"msg": line, "tb": ""}}


def _no_file_may_grow(set_progress):
    """A job in a process whose files may not grow (RLIMIT_FSIZE): its progress and result cannot
    be written, and sqlite says so."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    set_progress(["compiling"])
    return "done"


def test_a_job_process_that_cannot_write_its_result_tells_the_page_why(tmp_path, capfd):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    job = manager.call_job_fn("k", manager.make_job_fn(_no_file_may_grow, progress=True), [], {})
    said = _polled(manager, "k", job)
    assert said == _said("the job's result could not be kept: OperationalError: disk I/O error")
    assert "Traceback" not in capfd.readouterr().err


def test_a_job_thread_whose_cache_went_tells_the_page_why(tmp_path, capfd):
    """The cache's directory removed under the server (a cleaner of temporary files): a thread's
    job opens its own connection to the cache, which fails."""
    manager = ThreadJobManager(diskcache.Cache(str(tmp_path / "jobs")))
    manager.get_result("warm", None)  # the polling thread's connection, opened before
    shutil.rmtree(tmp_path / "jobs")
    job = manager.call_job_fn("k", manager.make_job_fn(lambda: "done", progress=False), [], {})
    assert _polled(manager, "k", job) == _said(
        "the job's result could not be kept: OperationalError: unable to open database file"
    )
    err = capfd.readouterr().err
    assert err == "tilescope: the job's result could not be kept: OperationalError: unable to open database file\n"


def _killed():
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer does


def test_a_killed_job_says_so(tmp_path):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    job = manager.call_job_fn("k", manager.make_job_fn(_killed, progress=False), [], {})
    assert _polled(manager, "k", job) == _said(LOST)


def _sleep():
    time.sleep(60)


def test_a_cancelled_job_is_said_nothing_of(tmp_path):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    job = manager.call_job_fn("k", manager.make_job_fn(_sleep, progress=False), [], {})
    manager.terminate_job(job)
    assert _polled(manager, "k", job) is manager.UNDEFINED


def test_a_job_that_ends_well_gives_its_result(tmp_path):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    job = manager.call_job_fn("k", manager.make_job_fn(lambda: 42, progress=False), [], {})
    assert _polled(manager, "k", job) == 42
