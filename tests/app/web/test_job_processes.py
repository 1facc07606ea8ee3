"""A cancel ends only a process this server started as a job, whatever the handle's signature says:
the signing secret once sat in a file all could read, and Dash kills the process a handle names."""

from __future__ import annotations

import subprocess
import time

import diskcache
import psutil
import pytest

from tilescope.app.web.job_book import PREFIX, JobRecord
from tilescope.app.web.jobs import ProcessJobs


def _sleep():
    time.sleep(60)


def _gone(pid: int, timeout: float = 10.0) -> bool:
    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        return False
    return True


@pytest.fixture
def other_process():
    """A process of the server's user that is not one of its jobs."""
    process = subprocess.Popen(["sleep", "600"])
    yield process
    process.kill()
    process.wait()


def test_a_cancel_ends_the_job_it_names(tmp_path):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    job = manager.call_job_fn("k", manager.make_job_fn(_sleep, progress=False), [], {})
    assert manager.is_own_job(job)
    manager.terminate_job(str(job))  # as the page's handle has it
    assert _gone(job)


def test_a_job_process_is_recorded_once_with_its_key_and_start_time(tmp_path):
    """One record, in the job book, of what a handle names: it was two, by pid, with two lifetimes."""
    cache = diskcache.Cache(str(tmp_path))
    manager = ProcessJobs(cache)
    job = manager.call_job_fn("k", manager.make_job_fn(_sleep, progress=False), [], {})
    assert manager.book.record(str(job)) == JobRecord("k", psutil.Process(job).create_time())
    assert [name for name in cache.iterkeys() if str(name).endswith(f"{job}")] == [f"{PREFIX}job:{job}"]
    manager.terminate_job(str(job))
    assert _gone(job)


def test_a_job_may_be_cancelled_from_another_worker(tmp_path):
    """A page's polls and its cancel reach any of the server's workers, which share the jobs' cache."""
    started, other = (ProcessJobs(diskcache.Cache(str(tmp_path))) for _ in range(2))
    job = started.call_job_fn("k", started.make_job_fn(_sleep, progress=False), [], {})
    other.terminate_job(str(job))
    assert _gone(job)


def test_a_cancel_naming_a_process_that_is_no_job_ends_nothing(tmp_path, other_process, capsys):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    manager.terminate_job(str(other_process.pid))  # a kill would be waited for, the process reaped
    assert other_process.poll() is None
    assert capsys.readouterr().err == (
        f"tilescope: a cancel named process '{other_process.pid}', not a job of this server's\n"
    )


def test_a_process_that_took_an_ended_jobs_pid_is_not_ended(tmp_path, other_process):
    """Pids are reused: a job's record holds its start time too."""
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    started = psutil.Process(other_process.pid).create_time()
    manager.book.named("k", str(other_process.pid), started - 5)  # a job that had this pid, 5 s before
    assert not manager.is_own_job(other_process.pid)
    manager.terminate_job(other_process.pid)
    assert other_process.poll() is None
    manager.book.named("k", str(other_process.pid), started)
    assert manager.is_own_job(other_process.pid)  # the record is what tells
    manager.book.named("k", str(other_process.pid), None)  # a job named by the pid, not in a process of its own
    assert not manager.is_own_job(other_process.pid)


@pytest.mark.parametrize("job", ["", "not a pid", "-1", "1" * 400, None])
def test_a_handle_that_names_no_process_ends_nothing(tmp_path, job, capsys):
    manager = ProcessJobs(diskcache.Cache(str(tmp_path)))
    assert not manager.is_own_job(job)
    manager.terminate_job(job)
    assert capsys.readouterr().err == ""  # no process: nothing to say
