"""The record of a server's background jobs, shared by every process that starts, runs or polls them:
how many run and for whom (past the server's share, or past one client's, a job is refused), whether
a page still asks after each, whether each still runs, and whether its page asked it to stop.

A local server keeps it in its job cache (diskcache, which its worker processes share); with Celery,
in Redis, which every app process and worker shares, so the bound holds across them. What is alive
is kept as keys that expire rather than as times, so no two machines' clocks are compared: a running
job renews its beat every BEAT_S and is lost once the beat has expired; each poll of its page renews
its `polled` (now and then: see `polled`), and a job no page has asked after for `abandoned_after`
is not wanted any more.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import diskcache
import redis

from tilescope.compiler.errors import TilescopeError

STORE_ERRORS = (OSError, sqlite3.Error, redis.RedisError)  # a book that cannot be read or written

JOBS_AT_ONCE = 4  # jobs a server runs at once: each is a compile, or a search of many
JOBS_PER_CLIENT = 2  # of them, one client's (a signed-in user, else an address): the rest are others'
BEAT_S = 1.0  # how often a running job says it runs
# a job not heard from for this long is gone (its process was killed): longer than a compile may hold
# the interpreter's lock, which the beat needs
LOST_AFTER_S = 20.0
# a job whose page has not polled for this long is ended: a page polls every JOB_POLL_MS, but a
# browser wakes a page hidden for 5 minutes once a minute (Chrome's intensive throttling)
ABANDONED_AFTER_S = 90.0
# a poll renews its job once this share of abandoned_after has passed since this process last did:
# a page polls every 100 ms, and each renewal is a write to the store every process shares
RENEW_SHARE = 0.1
RENEWALS_KEPT = 1024  # jobs a process remembers renewing (one forgotten is renewed at its next poll)
_KEPT_S = 24 * 3600.0  # what is said of a job (its name, that it started or ended) lasts this long
PREFIX = "tilescope-job:"
_JOBS = PREFIX + "running"  # the jobs that hold a slot: result key -> the client's name


@dataclass(frozen=True)
class JobRecord:
    """What a job handle names: the job's result key, and when the process of its own it runs in
    started (a pid is reused: the time tells the job's process from a later one), else None."""

    key: str
    started: float | None


class Store(Protocol):
    """Where a book is kept: names to strings, some expiring, and one value changed atomically."""

    def get(self, name: str) -> str | None: ...

    def put(self, name: str, value: str, seconds: float) -> None: ...

    def update(self, name: str, change: Callable[[dict], dict]) -> dict:
        """The JSON object under `name` replaced by `change` of it, with no other change in between;
        an error `change` raises leaves it as it was."""
        ...


class DiskStore:
    """A book in a diskcache (a local server's job cache), whose transactions span processes."""

    def __init__(self, cache: diskcache.Cache) -> None:
        self.cache = cache

    def get(self, name: str) -> str | None:
        return self.cache.get(name)

    def put(self, name: str, value: str, seconds: float) -> None:
        self.cache.set(name, value, expire=seconds)

    def update(self, name: str, change: Callable[[dict], dict]) -> dict:
        with self.cache.transact():
            value = change(json.loads(self.cache.get(name) or "{}"))
            self.cache.set(name, json.dumps(value))
        return value


class RedisStore:
    """A book in Redis (the Celery broker's), changed under WATCH so two app processes that admit a
    job at the same moment count each other's."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def get(self, name: str) -> str | None:
        value = self.client.get(name)
        return value.decode() if isinstance(value, bytes) else value

    def put(self, name: str, value: str, seconds: float) -> None:
        self.client.set(name, value, px=max(1, int(seconds * 1000)))

    def update(self, name: str, change: Callable[[dict], dict]) -> dict:
        with self.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(name)
                    value = change(json.loads(pipe.get(name) or "{}"))
                    pipe.multi()
                    pipe.set(name, json.dumps(value))
                    pipe.execute()
                    return value
                except redis.WatchError:  # another process changed it meanwhile: count again
                    continue


class JobBook:
    """A server's jobs, by result key (Dash's handle for a job's result, which tilescope makes unique)."""

    def __init__(
        self,
        store: Store,
        abandoned_after: float = ABANDONED_AFTER_S,
        at_once: int = JOBS_AT_ONCE,
        per_client: int = JOBS_PER_CLIENT,
        workers: Callable[[], int] | None = None,
    ) -> None:
        self.store = store
        self.abandoned_after = abandoned_after
        self.at_once = at_once
        self.per_client = per_client
        # how many jobs the processes that run them run at once (None: as many as it admits)
        self.workers = workers
        self._renewed: OrderedDict[str, float] = OrderedDict()  # key -> when this process renewed it
        self._renewing = threading.Lock()

    # --- the app's side: admitting a job, and its page's polls ------------------------------------

    def admit(self, key: str, client: str) -> None:
        """Give the job `key` a slot, or refuse it in one line (the server's slots are taken, or as
        many as one client may hold are this client's). Jobs that ended, were lost or that no page
        waits for any more hold none."""
        slots = self.at_once if self.workers is None else min(self.at_once, self.workers())
        if not slots:
            raise TilescopeError("no job worker is running (tilescope worker); try again once one is")

        def take(jobs: dict) -> dict:
            holding = {k: who for k, who in jobs.items() if self.holds_slot(k)}
            if len(holding) >= slots:
                raise TilescopeError(f"this server is running {_jobs(len(holding))} already; try again in a moment")
            mine = sum(who == client for who in holding.values())
            if mine >= self.per_client:
                raise TilescopeError(
                    f"you are running {_jobs(mine)} on this server already, the most one user may; "
                    "try again when one has ended"
                )
            return {**holding, key: client}

        self.polled(key)  # wanted from the start: its page polls once it has its handle
        self.store.update(_JOBS, take)

    def named(self, key: str, job: str, started: float | None) -> None:
        """The job's handle (a process id, a thread number or a task id) names `key` from now on;
        `started`: when the process of its own it runs in started, None if it has none."""
        self.store.put(f"{PREFIX}job:{job}", json.dumps({"key": key, "started": started}), _KEPT_S)

    def record(self, job: str) -> JobRecord | None:
        """What the job handle `job` names, if it names a job."""
        try:
            said = json.loads(self.store.get(f"{PREFIX}job:{job}") or "null")
            if said is None:
                return None
            started = said["started"]
            return JobRecord(str(said["key"]), None if started is None else float(started))
        except (ValueError, TypeError, KeyError):  # a record of an older tilescope's: a plain key
            return None

    def polled(self, key: str) -> None:
        """A page asked after the job: it is wanted for `abandoned_after` more. Written only once
        RENEW_SHARE of that has passed since this process last wrote it; any process's write moves
        the lapse later, so a job polled through any of them lapses no sooner than
        (1 - RENEW_SHARE) * abandoned_after after its last poll."""
        now = time.monotonic()
        with self._renewing:
            last = self._renewed.get(key)
        if last is not None and now - last < RENEW_SHARE * self.abandoned_after:
            return
        self.store.put(f"{PREFIX}polled:{key}", "1", self.abandoned_after)
        with self._renewing:
            self._renewed[key] = now
            self._renewed.move_to_end(key)
            while len(self._renewed) > RENEWALS_KEPT:
                self._renewed.popitem(last=False)

    def ask_stop(self, key: str) -> None:
        self.store.put(f"{PREFIX}stop:{key}", "1", _KEPT_S)

    def ended(self, key: str) -> bool:
        return self._said(key, "ended")

    def cancel(self, key: str) -> None:
        """Its page cancelled the job, which is to end without a result: nothing is said of it. It
        holds its slot until it has ended (`end`), which a thread does at its next stage."""
        self.store.put(f"{PREFIX}cancelled:{key}", "1", _KEPT_S)

    def cancelled(self, key: str) -> bool:
        return self._said(key, "cancelled")

    def lost(self, key: str) -> bool:
        """Whether the job started and then stopped beating without ending (its process was killed),
        or waits for a worker when none is left."""
        if self.ended(key):
            return False
        if not self._said(key, "started"):
            return self.workers is not None and not self.workers()
        return not self._said(key, "beat")

    def holds_slot(self, key: str) -> bool:
        """Whether the job still runs or may yet (waiting for a worker while its page waits for it)."""
        if self.ended(key):
            return False
        if self._said(key, "started"):
            return self._said(key, "beat")
        return self.wanted(key)

    # --- the job's side -----------------------------------------------------------------------------

    def start(self, key: str) -> None:
        self.beat(key)  # first: a job started and not beating is lost, and holds no slot
        self.store.put(f"{PREFIX}started:{key}", "1", _KEPT_S)

    def beat(self, key: str) -> None:
        self.store.put(f"{PREFIX}beat:{key}", "1", LOST_AFTER_S)

    def wanted(self, key: str) -> bool:
        """Whether a page asked after the job within `abandoned_after`."""
        return self._said(key, "polled")

    def stops_itself(self, key: str) -> None:
        """The job stops when asked (keeping what it has), so a stop ends it without killing it."""
        self.store.put(f"{PREFIX}cooperative:{key}", "1", _KEPT_S)

    def cooperative(self, key: str) -> bool:
        return self._said(key, "cooperative")

    def stop_asked(self, key: str) -> bool:
        return self._said(key, "stop")

    def end(self, key: str) -> None:
        """The job ended (its result follows): its slot is free."""
        self.store.put(f"{PREFIX}ended:{key}", "1", _KEPT_S)
        self.store.update(_JOBS, lambda jobs: {k: who for k, who in jobs.items() if k != key})

    def _said(self, key: str, what: str) -> bool:
        return self.store.get(f"{PREFIX}{what}:{key}") is not None


def _jobs(count: int) -> str:
    return f"{count} job{'' if count == 1 else 's'}"
