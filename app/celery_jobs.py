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

BROKER_ENV = "TILESCOPE_CELERY_BROKER"


def broker_url() -> str | None:
    return os.environ.get(BROKER_ENV) or None


@cache
def celery_app(url: str) -> Celery:
    """One Celery app per broker: Redis carries the jobs and keeps their results and progress."""
    return Celery("tilescope", broker=url, backend=url)


def work(url: str, concurrency: int) -> None:
    """Run a Celery worker for the tasks the app's callbacks (already registered) define."""
    celery_app(url).worker_main(["worker", "--loglevel=INFO", f"--concurrency={concurrency}", "--pool=prefork"])
