"""Background jobs, whichever manager runs them: each result goes to the page that started its job,
and a job that ends while a poll looks for its result is not taken for cancelled."""

from __future__ import annotations

import threading
import time
import uuid

import diskcache
import pytest

from app.web.jobs import ProcessJobs
from app.web.thread_jobs import ThreadJobManager


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

    from app.web.celery_jobs import CeleryJobs

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

    from app.web.celery_jobs import CeleryJobs

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


@pytest.mark.parametrize("manager_class", [ThreadJobManager, ProcessJobs])
def test_a_job_past_the_limit_is_refused_not_queued(tmp_path, manager_class):
    """A page can start jobs as fast as it sends requests: past JOBS_AT_ONCE, one line, at once."""
    from app.web.jobs import JOBS_AT_ONCE
    from compiler.errors import TilescopeError

    manager = manager_class(diskcache.Cache(str(tmp_path / "cache")))
    release = tmp_path / "release"
    started = [tmp_path / f"job{i}" for i in range(JOBS_AT_ONCE)]
    jobs = []
    for path in started:
        fn = manager.make_job_fn(lambda path=path: _wait_for(path, release), progress=False)
        key = manager.build_cache_key(_token, [], [], None)
        jobs.append((key, manager.call_job_fn(key, fn, [], {})))
    while not all(path.exists() for path in started):
        time.sleep(0.01)
    late = manager.make_job_fn(_token, progress=False)
    with pytest.raises(
        TilescopeError, match=rf"^this server is running {JOBS_AT_ONCE} jobs already; try again in a moment$"
    ):
        manager.call_job_fn("late", late, [], {})
    release.touch()
    assert sorted(_result(manager, key, job) for key, job in jobs) == sorted(p.name for p in started)
    job = manager.call_job_fn("after", late, [], {})  # the ended jobs count no more
    assert len(_result(manager, "after", job)) == 32
