"""Background jobs, whichever manager runs them: each result goes to the page that started its job,
and a job that ends while a poll looks for its result is not taken for cancelled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import diskcache
import flask
import psutil
import pytest
import redis

from tilescope.app.web.job_book import JOBS_AT_ONCE, JOBS_PER_CLIENT, PREFIX, DiskStore, JobBook
from tilescope.app.web.job_watch import this_job
from tilescope.app.web.jobs import LOST, ProcessJobs, reporter
from tilescope.app.web.thread_jobs import ThreadJobManager


def _result(manager, key, job, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not manager.result_ready(key):
        assert time.monotonic() < deadline, "the job left no result"
        time.sleep(0.01)
    return manager.get_result(key, job)


def _token():
    return uuid.uuid4().hex


@pytest.mark.parametrize("manager_class", [ThreadJobManager, ProcessJobs])
def test_two_jobs_on_the_same_inputs_each_keep_their_own_result(tmp_path, manager_class):
    """Two users pressing Apply on the same form: Dash would file both results under one key, and
    the first poll would take the result the other page waits for."""
    manager = manager_class(diskcache.Cache(str(tmp_path)))
    args = [1, 1, "mlp.layer.0.fc1.matmul", [], "l1"]
    keys = [manager.build_cache_key(_token, args, [], None) for _ in range(2)]
    assert keys[0] != keys[1]
    jobs = [manager.call_job_fn(key, manager.make_job_fn(_token, progress=False), [], {}) for key in keys]
    results = [_result(manager, key, job) for key, job in zip(keys, jobs, strict=True)]
    assert len(set(results)) == 2


def test_a_job_that_ends_while_a_poll_looks_for_its_result_still_runs(tmp_path):
    """Dash reads a job's result, then asks whether the job runs: a job ending in between must not
    look cancelled, or its page never gets the result."""
    manager = ThreadJobManager(diskcache.Cache(str(tmp_path)))
    release = threading.Event()
    job = manager.call_job_fn("rerun", manager.make_job_fn(lambda: release.wait(5) and 42, progress=False), [], {})
    assert manager.get_result("rerun", job) is manager.UNDEFINED  # the poll finds nothing yet
    release.set()
    for thread in list(manager._threads.values()):
        thread.join(5)  # the job has ended before the poll asks
    assert manager.job_running(job)  # so the page polls again
    assert manager.get_result("rerun", job) == 42
    assert not manager.job_running(job)


def test_app_processes_starting_at_once_sign_job_handles_with_one_secret(redis_broker):
    """A page's polls reach any of the app's processes; each must accept the job handles another
    signed, however the processes' starts fall."""
    import redis
    from celery import Celery

    from tilescope.app.web.celery_jobs import CeleryJobs

    store = redis.Redis.from_url(redis_broker)
    for _ in range(20):
        store.delete(CeleryJobs.SIGNING_SECRET_KEY)
        managers = [CeleryJobs(Celery("tilescope", broker=redis_broker, backend=redis_broker)) for _ in range(2)]
        at_once = threading.Barrier(len(managers))
        secrets = []

        def start(manager, at_once=at_once, secrets=secrets):
            manager.handle.backend.client.ping()  # connected before the race
            at_once.wait()
            secrets.append(manager.get_or_create_signing_secret(lambda: uuid.uuid4().hex.encode()))

        threads = [threading.Thread(target=start, args=(m,)) for m in managers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(secrets) == 2 and secrets[0] == secrets[1]
    assert store.ttl(CeleryJobs.SIGNING_SECRET_KEY) == -1  # a process started a day later signs alike


def test_a_job_whose_result_is_read_is_left_to_end(redis_broker, monkeypatch):
    """The result is a job's last step: stopping the job then (Dash's CeleryManager revokes it) lands
    as it ends, or on the next job its worker process has taken."""
    import json

    from celery import Celery

    from tilescope.app.web.celery_jobs import CeleryJobs

    manager = CeleryJobs(Celery("tilescope", broker=redis_broker, backend=redis_broker))
    stopped = []
    monkeypatch.setattr(manager.handle.control, "terminate", lambda job, **_: stopped.append(job))
    manager.handle.backend.client.set("rerun", json.dumps(42))
    assert manager.get_result("rerun", "task-1") == 42
    assert not manager.job_running("task-1")  # else Dash stops it
    assert stopped == []


def _wait_for(path, release):
    """A job that runs until `release` exists, having said so in `path`."""
    path.touch()
    while not release.exists():
        time.sleep(0.01)
    return path.name


def _from(address: str):
    """A request from `address`: jobs are counted per client (an address when nobody signs in)."""
    return flask.Flask(__name__).test_request_context(environ_base={"REMOTE_ADDR": address})


def _start_waiting(manager, tmp_path, name: str, address: str):
    """(result key, job) of a job started from `address` that waits for tmp_path/release."""
    fn = manager.make_job_fn(lambda: _wait_for(tmp_path / name, tmp_path / "release"), progress=False)
    key = manager.build_cache_key(_token, [], [], None)
    with _from(address):
        return key, manager.call_job_fn(key, fn, [], {})


def _until(condition, timeout: float = 30.0, what: str = "it did not happen"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _refusal(manager, key: str, job_fn) -> str:
    """The line a page hears of a job refused as it starts: its first poll's error, and the job
    then runs no more."""
    job = manager.call_job_fn(key, job_fn, [], {})
    said = manager.get_result(key, job)
    assert not manager.job_running(job)
    return said["background_callback_error"]["msg"]


@pytest.mark.parametrize("manager_class", [ThreadJobManager, ProcessJobs])
def test_a_job_past_the_limit_is_refused_not_queued(tmp_path, manager_class):
    """A page can start jobs as fast as it sends requests: past JOBS_AT_ONCE, one line, at once;
    and the limit is the server's, not each of its processes' (two managers on one job cache)."""
    cache = diskcache.Cache(str(tmp_path / "cache"))
    processes = [manager_class(cache), manager_class(cache)]
    try:
        jobs = [_start_waiting(processes[i % 2], tmp_path, f"job{i}", f"10.0.0.{i}") for i in range(JOBS_AT_ONCE)]
        _until(lambda: all((tmp_path / f"job{i}").exists() for i in range(JOBS_AT_ONCE)))
        late = processes[0].make_job_fn(_token, progress=False)
        for manager in processes:
            with _from("10.0.0.99"):
                said = _refusal(manager, "late", late)
            assert said == f"this server is running {JOBS_AT_ONCE} jobs already; try again in a moment"
    finally:
        (tmp_path / "release").touch()
    results = [_result(processes[i % 2], key, job) for i, (key, job) in enumerate(jobs)]
    assert sorted(results) == sorted(f"job{i}" for i in range(JOBS_AT_ONCE))
    with _from("10.0.0.99"):
        job = processes[1].call_job_fn("after", late, [], {})  # the ended jobs count no more
    assert len(_result(processes[1], "after", job)) == 32


@pytest.mark.parametrize("manager_class", [ThreadJobManager, ProcessJobs])
def test_one_client_holds_at_most_its_share_of_the_jobs(tmp_path, manager_class):
    """Uploads, re-runs and searches share the server's jobs: one client may hold JOBS_PER_CLIENT of
    them, and another still gets one."""
    manager = manager_class(diskcache.Cache(str(tmp_path / "cache")))
    try:
        jobs = [_start_waiting(manager, tmp_path, f"job{i}", "10.0.0.1") for i in range(JOBS_PER_CLIENT)]
        with _from("10.0.0.1"):
            said = _refusal(manager, "third", manager.make_job_fn(_token, progress=False))
        assert said.startswith(f"you are running {JOBS_PER_CLIENT} jobs on this server already")
        jobs.append(_start_waiting(manager, tmp_path, "other", "10.0.0.2"))
    finally:
        (tmp_path / "release").touch()
    assert sorted(_result(manager, key, job) for key, job in jobs) == ["job0", "job1", "other"]


def test_celery_jobs_are_bounded_across_app_processes(redis_broker):
    """Celery jobs too: the bound is kept in Redis, so two app processes count each other's jobs
    (no worker takes them here: a job waiting for one holds its slot while its page waits)."""
    from celery import Celery

    from tilescope.app.web.celery_jobs import CeleryJobs, WorkerRoll

    processes = [CeleryJobs(Celery("tilescope", broker=redis_broker, backend=redis_broker)) for _ in range(2)]
    tasks = [manager.make_job_fn(_token, progress=False) for manager in processes]
    with _from("10.0.0.1"):
        assert _refusal(processes[0], "early", tasks[0]).startswith("no job worker is running (tilescope worker)")
    WorkerRoll(redis.Redis.from_url(redis_broker)).say("a worker of eight processes", 8)
    for i in range(JOBS_AT_ONCE):
        with _from(f"10.0.0.{i}"):
            processes[i % 2].call_job_fn(f"job{i}", tasks[i % 2], [], {})
    for manager, task in zip(processes, tasks, strict=True):
        with _from("10.0.0.99"):
            assert f"running {JOBS_AT_ONCE} jobs already" in _refusal(manager, "late", task)


def test_celery_jobs_are_no_more_than_the_workers_run_at_once(redis_broker):
    """A job past what the workers run at once waited in the queue, and its page with it: another
    user's Apply went unanswered behind long searches. It is refused in one line instead."""
    from celery import Celery

    from tilescope.app.web.celery_jobs import CeleryJobs, WorkerRoll

    manager = CeleryJobs(Celery("tilescope", broker=redis_broker, backend=redis_broker))
    task = manager.make_job_fn(_token, progress=False)
    WorkerRoll(redis.Redis.from_url(redis_broker)).say("a worker of one process", 1)
    with _from("10.0.0.1"):
        manager.call_job_fn("search", task, [], {})
    with _from("10.0.0.2"):
        assert _refusal(manager, "apply", task).startswith("this server is running 1 job already")


def _abandoned(tmp_path, manager_class):
    """A manager whose jobs end once their page has not polled for a second."""
    cache = diskcache.Cache(str(tmp_path / "cache"))
    return manager_class(cache, JobBook(DiskStore(cache), abandoned_after=1.0))


def test_a_job_in_a_process_that_no_page_polls_ends_and_frees_its_slot(tmp_path):
    """A page closed mid-search held its slot until the search's budget ended."""
    manager = _abandoned(tmp_path, ProcessJobs)
    key, job = _start_waiting(manager, tmp_path, "job", "10.0.0.1")
    try:
        _until(lambda: (tmp_path / "job").exists())
        _until(lambda: not manager.job_running(job), what="the job nobody polls still runs")
    finally:
        (tmp_path / "release").touch()
    assert not manager.result_ready(key) and not manager.book.holds_slot(key)


def gone_before_storing(manager, stored) -> bool:
    """Whether a re-run in a thread of `manager`'s, saying a stage every 50 ms for 30 s before it
    stores its run (touches `stored`), stops as one whose page is gone, having stored nothing."""

    def rerun(set_progress):
        say = reporter(set_progress, "re-run")
        for _ in range(600):
            say("compiling")
            time.sleep(0.05)
        stored.touch()

    key = manager.build_cache_key(_token, [], [], None)
    job = manager.call_job_fn(key, manager.make_job_fn(rerun, progress=True), [], {})
    error = _result(manager, key, job)["background_callback_error"]["msg"]
    return error == "the page that asked for this job is gone; it stopped" and not stored.exists()


def test_a_job_in_a_thread_that_no_page_polls_stops_at_its_next_stage_and_stores_nothing(tmp_path):
    assert gone_before_storing(_abandoned(tmp_path, ThreadJobManager), tmp_path / "stored")


def test_a_pages_polls_renew_its_job_now_and_then_not_at_each_poll(tmp_path):
    """A page polls every 100 ms, and each poll wrote its job's renewal to the store every server
    process shares (the job cache, or Redis): ten writes a second per page, for nothing."""
    cache = diskcache.Cache(str(tmp_path / "cache"))
    manager = ThreadJobManager(cache)
    key, job = _start_waiting(manager, tmp_path, "job", "10.0.0.1")
    try:
        renewed = cache.get(f"{PREFIX}polled:{key}", expire_time=True)[1]
        for _ in range(20):
            assert manager.get_result(key, job) is manager.UNDEFINED and manager.job_running(job)
        assert cache.get(f"{PREFIX}polled:{key}", expire_time=True)[1] == renewed
    finally:
        (tmp_path / "release").touch()
    assert _result(manager, key, job) == "job"


def test_a_job_polled_through_any_process_stays_wanted(tmp_path):
    """Each process renews a job as its own polls last did: a page whose polls reach two processes
    keeps its job past `abandoned_after` (a job process nobody wants is killed)."""
    processes = [_abandoned(tmp_path, ProcessJobs), _abandoned(tmp_path, ProcessJobs)]
    key, job = _start_waiting(processes[0], tmp_path, "job", "10.0.0.1")
    try:
        _until(lambda: (tmp_path / "job").exists())
        deadline = time.monotonic() + 3 * processes[0].book.abandoned_after
        while time.monotonic() < deadline:
            for manager in processes:
                assert manager.get_result(key, job) is manager.UNDEFINED and manager.job_running(job)
                time.sleep(0.05)
    finally:
        (tmp_path / "release").touch()
    assert _result(processes[1], key, job) == "job"


def test_a_job_whose_process_is_killed_says_so_to_its_page_in_one_line(tmp_path):
    """Its page polled, then stopped without a word (or, on Celery, polled for ever)."""
    manager = ProcessJobs(diskcache.Cache(str(tmp_path / "cache")))
    key, job = _start_waiting(manager, tmp_path, "job", "10.0.0.1")
    _until(lambda: (tmp_path / "job").exists())
    os.kill(job, signal.SIGKILL)
    results = []
    _until(lambda: results.append(manager.get_result(key, job)) or results[-1] is not manager.UNDEFINED)
    assert results[-1]["background_callback_error"]["msg"] == LOST and "\n" not in LOST
    assert not manager.job_running(job) and not manager.book.holds_slot(key)


def test_cancel_asks_a_job_that_stops_by_itself_and_it_keeps_what_it_found(tmp_path):
    """Cancel of a search killed it and its best set with it: a job that looks for a stop request
    winds down, and its page gets what it returns."""
    manager = ProcessJobs(diskcache.Cache(str(tmp_path / "cache")))
    started = tmp_path / "started"

    def search():
        stop = this_job().stops_when_asked()
        started.touch()
        best = 0
        while not stop():
            best += 1
            time.sleep(0.01)
        return f"kept {best > 0}"

    key = manager.build_cache_key(_token, [], [], None)
    with _from("10.0.0.1"):
        job = manager.call_job_fn(key, manager.make_job_fn(search, progress=False), [], {})
    _until(started.exists)
    manager.terminate_job(str(job))  # what Dash does on Cancel
    assert _result(manager, key, job) == "kept True"


PARENT = """
import os, sys, time
import diskcache
from tilescope.app.web.jobs import ProcessJobs

manager = ProcessJobs(diskcache.Cache(sys.argv[1]))
def job():
    open(sys.argv[2], "w").write(str(os.getpid()))
    time.sleep(600)
manager.call_job_fn("job", manager.make_job_fn(job, progress=False), [], {})
time.sleep(600)
"""


def test_a_job_process_dies_with_the_server_process_that_started_it(tmp_path):
    """kill -9 of a server worker left its jobs running, outside any count, storing runs nobody
    asked for."""
    pid_file = tmp_path / "job.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "cache"), str(pid_file)])
    try:
        _until(lambda: pid_file.exists() and pid_file.read_text())
        job = psutil.Process(int(pid_file.read_text()))
        parent.kill()
        parent.wait(10)
        _until(lambda: not _alive(job), what="the job outlived its server process")
    finally:
        parent.kill()


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
