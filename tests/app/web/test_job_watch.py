"""What runs beside a job: its beat, and its end when no page waits for it, through a job book that
may fail for a moment (sqlite's "database is locked", a full disk, Redis gone for a second)."""

from __future__ import annotations

import sqlite3
import threading

import diskcache

from tilescope.app.web.job_book import PREFIX, DiskStore, JobBook
from tilescope.app.web.thread_jobs import ThreadJobManager

from .test_jobs import _result, gone_before_storing


class _LockedOnce(DiskStore):
    """A job cache in which the second beat of a job (the watch's first: the job's start beats once)
    fails, as sqlite's writes do when another process holds its lock past the timeout; every other
    write is kept."""

    def __init__(self, cache: diskcache.Cache) -> None:
        super().__init__(cache)
        self.beats = 0

    def put(self, name: str, value: str, seconds: float) -> None:
        if name.startswith(f"{PREFIX}beat:"):
            self.beats += 1
            if self.beats == 2:
                raise sqlite3.OperationalError("database is locked")
        super().put(name, value, seconds)


def test_a_job_whose_book_fails_once_goes_on_being_watched(tmp_path, capfd):
    """One failed write ended the job's watch for good: it beat no more (its page was told it was
    lost while it ran on) and was never ended once its page had gone, so it stored its run."""
    cache = diskcache.Cache(str(tmp_path / "cache"))
    manager = ThreadJobManager(cache, JobBook(_LockedOnce(cache), abandoned_after=1.0))
    assert gone_before_storing(manager, tmp_path / "stored")
    assert manager.book.store.beats > 2  # it beat on
    err = capfd.readouterr().err
    assert err.count("tilescope: ") == 1 and "database is locked" in err and "Traceback" not in err


class _Paused(DiskStore):
    """A job cache whose writer stops after the first of a job's two start writes (that it started,
    that it beats) until `go` is set, so a poll can come between them as it may in a server."""

    def __init__(self, cache: diskcache.Cache) -> None:
        super().__init__(cache)
        self.between, self.go = threading.Event(), threading.Event()

    def put(self, name: str, value: str, seconds: float) -> None:
        super().put(name, value, seconds)
        if name.startswith((f"{PREFIX}started:", f"{PREFIX}beat:")) and not self.between.is_set():
            self.between.set()
            self.go.wait(30)


def test_a_job_polled_as_it_starts_is_not_lost(tmp_path):
    """A poll between the job's start and its first beat found it started and not beating: said
    lost to its page, its slot free for another, as it began."""
    cache = diskcache.Cache(str(tmp_path / "cache"))
    manager = ThreadJobManager(cache, JobBook(_Paused(cache)))
    job = manager.call_job_fn("k", manager.make_job_fn(lambda: "done", progress=False), [], {})
    try:
        assert manager.book.store.between.wait(30)
        assert manager.get_result("k", job) is manager.UNDEFINED and manager.job_running(job)
        assert manager.book.holds_slot("k")
    finally:
        manager.book.store.go.set()
    assert _result(manager, "k", job) == "done"
