"""What tilescope needs of Dash's background callback managers, whichever runs the jobs.

A page starts a job, then polls: Dash reads the job's result; if there is none, it asks whether the
job still runs, and if not takes the job for cancelled and the page stops polling; if there is one,
it stops the job should it still run. As Dash's managers come, a user could lose a re-run that way:
- Dash files a job's result under a hash of the callback and its inputs, so two users pressing
  Apply on the same form share one result (so do two servers sharing the job cache): the first poll
  takes it, and the other page waits forever.
- a job that ends between the poll's read of its result and the question whether it runs looks
  cancelled, and its result is never read.
- a job stopped once its result is read is stopped as it ends: Celery's revoke then lands on the job
  or on the next one its worker process took.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from functools import partial
from contextvars import ContextVar

import psutil
from dash import html
from dash.background_callback.managers import BaseBackgroundCallbackManager

from compiler.errors import TilescopeError

from .job_processes import OwnProcesses
from .lost_jobs import SaysLostJobs

# Background jobs one server process runs at once: each is a compile, and a page can start them
# as fast as it sends requests. Beyond, a job is refused (one line on the page), not queued: a
# queue of compiles would hold the request threads that poll for them.
JOBS_AT_ONCE = 4
JOB_POLL_MS = 100  # how often the page asks after a job (Dash's default, 1 s, adds up to 1 s to a re-run)


def reporter(set_progress, what: str) -> Callable[[str], None]:
    """An `on_stage` that shows a job's stage on the page (a background callback's progress)."""
    return lambda stage: set_progress([html.Span([html.Span(className="spinner"), f"{what}: {stage}..."])])


def refuse_past_limit(running: int) -> None:
    if running >= JOBS_AT_ONCE:
        raise TilescopeError(f"this server is running {running} jobs already; try again in a moment")


# what this thread's (or task's) last poll found: (manager, job, result key, whether it had a result);
# Dash asks whether the job runs right after reading its result, in the same request
_POLLED: ContextVar[tuple | None] = ContextVar("polled", default=None)


class OwnResults(BaseBackgroundCallbackManager):
    """Mixin for a Dash background callback manager: each job's result has a key of its own, a job
    runs until its result has been read, and a job whose result has been read is left to end."""

    # results read of the jobs a local manager counts (see counted_jobs): a job lingers a moment
    # after writing its result, and a page may read it in that moment
    _read_keys: set[str] | None = None

    def build_cache_key(self, fn, args, cache_args_to_ignore, triggered) -> str:
        return uuid.uuid4().hex  # tilescope caches no job's result for a later job (no cache_by)

    def get_result(self, key, job):
        # the job wrote its result as its last step: it ends by itself
        result = super().get_result(key, None)
        _POLLED.set((self, str(job), key, result is not self.UNDEFINED))
        if result is not self.UNDEFINED and self._read_keys is not None:
            self._read_keys.add(key)
        return result

    def counted_jobs(self, jobs: dict[str, Callable[[], bool]]) -> dict[str, Callable[[], bool]]:
        """Of `jobs` (result key -> whether its process or thread lives), those still computing:
        alive, and their result neither written nor read. The read keys of the others are let go."""
        if self._read_keys is None:
            self._read_keys = set()
        computing = {
            key: alive
            for key, alive in jobs.items()
            if key not in self._read_keys and not self.result_ready(key) and alive()
        }
        self._read_keys &= computing.keys()
        return computing

    def job_running(self, job) -> bool:
        polled = _POLLED.get()
        if polled is None or polled[0] is not self or polled[1] != str(job):
            return super().job_running(job)
        _, _, key, read = polled
        if read:
            return False
        # asked in this order, a job that ended since its result was looked for is seen with it
        return super().job_running(job) or self.result_ready(key)


class ProcessJobs(SaysLostJobs, OwnResults, OwnProcesses):
    """Jobs in processes of their own, their results in a local cache; at most JOBS_AT_ONCE. A
    cancel ends only a job it started (app.web.job_processes)."""

    def __init__(self, cache) -> None:
        super().__init__(cache)
        self._running: dict[str, Callable[[], bool]] = {}  # result key -> whether its process lives
        self._starting = threading.Lock()

    def call_job_fn(self, key, job_fn, args, context) -> int:
        with self._starting:
            self._running = self.counted_jobs(self._running)
            refuse_past_limit(len(self._running))
            pid = super().call_job_fn(key, job_fn, args, context)
            self._running[key] = partial(_alive, pid)
        return pid


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
