"""Background jobs on Celery workers, with Redis as broker, for a team's server.

With TILESCOPE_CELERY_BROKER set (redis://host:6379/0) on the app and on `tilescope worker`,
compiles and re-runs go to the workers instead of processes beside the app: any number of app
processes share them, and a long compile occupies a worker, not the machine serving the page.
Dash names each background callback's task after the callback, so a worker that builds the same
app (create_app) runs the tasks the app sends.
"""

from __future__ import annotations

import os
from functools import cache

from celery import Celery
from dash import CeleryManager
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url

from compiler.errors import TilescopeError

from .job_book import JobBook, RedisStore
from .jobs import OwnResults

BROKER_ENV = "TILESCOPE_CELERY_BROKER"
CONNECT_TIMEOUT_S = 5


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
    """Jobs on Celery workers, their results and their book in Redis."""

    def __init__(self, celery_app: Celery, book: JobBook | None = None) -> None:
        self.book = book or JobBook(RedisStore(celery_app.backend.client))
        super().__init__(celery_app)

    def get_or_create_signing_secret(self, generate) -> bytes:
        """The secret that signs the job handles a page polls with, the same in every app process,
        or a poll reaching another process than the one that started the job is refused and the
        page waits forever. Dash's CeleryManager reads, then writes: of two processes asking at
        once, each wrote its own in 2 of 50 tries; and what it writes expires with the backend's
        results (after a day), so a process started later makes another."""
        client = self.handle.backend.client
        client.set(self.SIGNING_SECRET_KEY, generate(), nx=True)
        return client.get(self.SIGNING_SECRET_KEY)


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
    celery_app(url).worker_main(["worker", "--loglevel=INFO", f"--concurrency={concurrency}", "--pool=prefork"])
