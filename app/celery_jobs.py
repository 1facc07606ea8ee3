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
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url

from compiler.errors import TilescopeError

BROKER_ENV = "TILESCOPE_CELERY_BROKER"
CONNECT_TIMEOUT_S = 5


def broker_url() -> str | None:
    return os.environ.get(BROKER_ENV) or None


@cache
def celery_app(url: str) -> Celery:
    """One Celery app per broker: Redis carries the jobs and keeps their results and progress."""
    return Celery("tilescope", broker=url, backend=url)


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
