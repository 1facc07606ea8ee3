"""Background jobs on Celery workers, with Redis as broker, for a team's server.

With TILESCOPE_CELERY_BROKER set (redis://host:6379/0) on the app and on `tilescope worker`,
compiles and re-runs go to the workers instead of processes beside the app: any number of app
processes share them, and a long compile occupies a worker, not the machine serving the page.
Dash names each background callback's task after the callback, so a worker that builds the same
app (create_app) runs the tasks the app sends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from functools import cache

import redis

from celery import Celery
from dash import CeleryManager
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url

from tilescope.compiler.errors import TilescopeError

from tilescope.app.web.job_book import BEAT_S, LOST_AFTER_S, PREFIX, JobBook, RedisStore
from tilescope.app.web.jobs import OwnResults

BROKER_ENV = "TILESCOPE_CELERY_BROKER"
CONNECT_TIMEOUT_S = 5
WORKERS = PREFIX + "workers"  # worker name -> the jobs it runs at once


def broker_url() -> str | None:
    return os.environ.get(BROKER_ENV) or None


@cache
def celery_app(url: str) -> Celery:
    """One Celery app per broker: Redis carries the jobs and keeps their results and progress."""
    app = Celery("tilescope", broker=url, backend=url)
    # a worker takes only the jobs it starts at once: one it held unstarted when it was killed
    # would come back an hour later (Redis's visibility timeout), long after its page gave up
    app.conf.worker_prefetch_multiplier = 1
    return app


class CeleryJobs(OwnResults, CeleryManager):
    """Jobs on Celery workers, their results and their book in Redis. The book admits no more jobs
    than the workers alive run at once: one past them would wait in the queue, its page with it."""

    def __init__(self, celery_app: Celery, book: JobBook | None = None) -> None:
        client = celery_app.backend.client
        self.book = book or JobBook(RedisStore(client), workers=WorkerRoll(client).processes)
        super().__init__(celery_app)

    def process_start(self, job) -> None:
        return None  # a task id, not a process: a cancel revokes the task on its worker

    def get_or_create_signing_secret(self, generate) -> bytes:
        """The secret that signs the job handles a page polls with, the same in every app process,
        or a poll reaching another process than the one that started the job is refused and the
        page waits forever. Dash's CeleryManager reads, then writes: of two processes asking at
        once, each wrote its own in 2 of 50 tries; and what it writes expires with the backend's
        results (after a day), so a process started later makes another."""
        client = self.handle.backend.client
        client.set(self.SIGNING_SECRET_KEY, generate(), nx=True)
        return client.get(self.SIGNING_SECRET_KEY)


class WorkerRoll:
    """The job workers alive and how many jobs each runs at once, in Redis: each says so every
    BEAT_S, and one not heard from for LOST_AFTER_S (killed) is gone from it."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def say(self, name: str, processes: int) -> None:
        """Worker `name` runs `processes` jobs at once, for the next LOST_AFTER_S."""
        self.client.hset(WORKERS, name, processes)
        self.client.set(f"{WORKERS}:{name}", 1, px=int(LOST_AFTER_S * 1000))

    def announce(self, name: str, processes: int) -> threading.Thread:
        """`say` it every BEAT_S, until this process ends."""

        def keep_saying() -> None:
            while True:
                with contextlib.suppress(redis.RedisError):  # said again in a moment
                    self.say(name, processes)
                time.sleep(BEAT_S)

        thread = threading.Thread(target=keep_saying, name="worker roll", daemon=True)
        thread.start()
        return thread

    def processes(self) -> int:
        """How many jobs the workers alive run at once."""
        found = 0
        for name, processes in self.client.hgetall(WORKERS).items():
            if self.client.exists(f"{WORKERS}:{name.decode()}"):
                found += int(processes)
            else:
                self.client.hdel(WORKERS, name)
        return found


def check_broker(url: str) -> None:
    """Fail at start, in one line naming the broker, rather than retry forever (a worker) or fail
    each job (the app) when the broker cannot be reached."""
    try:
        with celery_app(url).connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=CONNECT_TIMEOUT_S)
    except OperationalError as err:
        raise TilescopeError(f"broker {maybe_sanitize_url(url)} ({BROKER_ENV}): {err}") from None
    except KeyError as err:  # kombu knows no transport for the URL's scheme
        raise TilescopeError(
            f"broker {maybe_sanitize_url(url)} ({BROKER_ENV}): unknown transport {err}; use redis://host:6379/0"
        ) from None


def work(url: str, concurrency: int) -> None:
    """Run a Celery worker for the tasks the app's callbacks (already registered) define."""
    WorkerRoll(celery_app(url).backend.client).announce(f"{socket.gethostname()}:{os.getpid()}", concurrency)
    celery_app(url).worker_main(["worker", "--loglevel=INFO", f"--concurrency={concurrency}", "--pool=prefork"])
