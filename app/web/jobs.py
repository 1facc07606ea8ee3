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
- a job whose process is killed looks pending for ever to Celery, and the page polls for ever.
Beyond, every job is in the job book (app/web/job_book.py), which bounds how many run, in all and
per client, whichever process starts them; and is watched while it runs (app/web/job_watch.py).
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from dash import Output, html
from dash._callback_context import context_value
from dash.background_callback.managers import BaseBackgroundCallbackManager
from dash.exceptions import PreventUpdate
from flask import has_request_context, request

from tilescope.compiler.errors import TilescopeError

from tilescope.app.web.auth import signed_in
from tilescope.app.web.error_lines import error_line
from tilescope.app.web.job_book import STORE_ERRORS, DiskStore, JobBook
from tilescope.app.web.job_processes import OwnProcesses
from tilescope.app.web.job_watch import JobWatch, done_watching, this_job, watching
from tilescope.app.web.lost_jobs import SaysLostJobs

JOB_POLL_MS = 100  # how often the page asks after a job (Dash's default, 1 s, adds up to 1 s to a re-run)
JOB_KEY = "tilescope_job"  # the job's result key, in the context a job receives
REFUSED = "refused:"  # the start of a job handle that says why no job started
LOST = "this job was lost: the process running it ended before it finished (killed, or its server restarted)"


def reporter(set_progress, what: str) -> Callable[[str], None]:
    """An `on_stage` that shows a job's stage on the page (a background callback's progress), and
    stops the job there if its page is gone."""
    job = this_job()

    def say(stage: str) -> None:
        if job is not None:
            job.check()
        set_progress([html.Span([html.Span(className="spinner"), f"{what}: {stage}..."])])

    return say


def page_job(progress: str, control: str) -> dict:
    """How a page's long callback runs (an upload, a replay): as a background job whose stage shows
    in `progress`, its `control` (the upload area, the button) off until it ends."""
    return dict(
        prevent_initial_call=True,
        background=True,
        interval=JOB_POLL_MS,
        progress=[Output(progress, "children")],
        progress_default=[""],
        running=[(Output(control, "disabled"), True, False)],
    )


def requester() -> str:
    """Who asks for a job: the user who signed in at the server's door, else the address the
    request came from."""
    if not has_request_context():
        return "this process"
    user = signed_in()
    return f"user {user}" if user else f"address {request.remote_addr}"


@dataclass(frozen=True)
class _Poll:
    """What this thread's (or task's) last poll found: Dash asks whether the job runs right after
    reading its result, in the same request."""

    manager: OwnResults
    job: str  # the job's handle
    over: bool  # its result was read, or it was lost or cancelled: it runs no more for its page


_POLLED: ContextVar[_Poll | None] = ContextVar("polled", default=None)


class OwnResults(BaseBackgroundCallbackManager):
    """Mixin for a Dash background callback manager: each job's result has a key of its own, a job
    runs until its result has been read, a job whose result has been read is left to end; every
    job holds a slot of the job book while it runs, and a job that was lost says so to its page."""

    book: JobBook
    in_own_process = True  # its jobs run in processes of their own (not threads of the server's)
    # when the process a job's handle names started (app/web/job_processes.py), None for a job that
    # runs in none of its own (a thread, a Celery task): each manager says for its jobs
    process_start: Callable[[object], float | None]

    def build_cache_key(self, fn, args, cache_args_to_ignore, triggered) -> str:
        return uuid.uuid4().hex  # tilescope caches no job's result for a later job (no cache_by)

    def make_job_fn(self, fn, progress, key=None):
        return super().make_job_fn(_watched(fn, self), progress, key)

    def call_job_fn(self, key, job_fn, args, context):
        """Start the job, or refuse it: then its handle says why, and its page's first poll hears
        it (an error raised here never reaches the page: Dash's renderer drops it)."""
        try:
            self.book.admit(key, requester())
        except TilescopeError as err:
            return REFUSED + str(err)
        except STORE_ERRORS as err:
            return REFUSED + f"the server's job cache cannot take a job: {error_line(err)}"
        try:
            job = super().call_job_fn(key, job_fn, args, {**context, JOB_KEY: key})
        except Exception as err:  # noqa: BLE001  # no process or thread to run it: said to the page
            with contextlib.suppress(*STORE_ERRORS):
                self.book.end(key)
            return REFUSED + error_line(err)
        with contextlib.suppress(*STORE_ERRORS):  # unnamed, it cannot be cancelled, and ends alone
            self.book.named(key, str(job), self.process_start(job))
        return job

    def get_result(self, key, job):
        if _refused(job):
            _POLLED.set(_Poll(self, str(job), over=True))
            return {"background_callback_error": {"msg": str(job).removeprefix(REFUSED), "tb": ""}}
        # the job wrote its result as its last step: it ends by itself
        result = super().get_result(key, None)
        # a cancelled job runs no more for its page, which is told nothing of it, nor of what it
        # stopped with (a thread stops with why; a process may end itself before it is killed)
        cancelled = self.book.cancelled(key)
        if cancelled:
            result = self.UNDEFINED
        elif result is self.UNDEFINED:
            self.book.polled(key)
            if self._lost(key, job):
                self.book.end(key)  # its slot is free, and a worker that takes it late leaves it
                result = {"background_callback_error": {"msg": self.why_lost(key), "tb": ""}}
        _POLLED.set(_Poll(self, str(job), over=cancelled or result is not self.UNDEFINED))
        return result

    def _lost(self, key: str, job) -> bool:
        """Whether the job ended, or stopped beating, without a result: asked in this order, a job
        that ended since its result was looked for is seen with it."""
        ended = job is not None and not super().job_running(job)
        return (self.book.lost(key) or ended) and not self.result_ready(key)

    def why_lost(self, key: str) -> str:
        """What the page of a job that ended without its result is told."""
        return LOST

    def job_running(self, job) -> bool:
        if _refused(job):
            return False
        polled = _POLLED.get()
        if polled is None or polled.manager is not self or polled.job != str(job):
            return super().job_running(job)
        return not polled.over

    def terminate_job(self, job) -> None:
        """A job that stops when asked is asked (Cancel keeps what it found, and its page gets it);
        any other is ended."""
        if _refused(job):
            return
        record = self.book.record(str(job)) if job else None
        key = record.key if record else None
        if key is not None and self.book.cooperative(key):
            self.book.ask_stop(key)
            return
        if key is not None:
            self.book.cancel(key)
            if self.in_own_process:  # its process is killed now; a thread ends at its next stage
                self.book.end(key)
        super().terminate_job(job)


def _refused(job) -> bool:
    return str(job).startswith(REFUSED)


def _watched(fn, manager: OwnResults):
    """`fn` run as a job of `manager`'s, watched while it runs (app/web/job_watch.py)."""

    @functools.wraps(fn)
    def job(*args, **kwargs):
        key = context_value.get().get(JOB_KEY)
        if key is None:  # not started by call_job_fn: nothing to watch it by
            return fn(*args, **kwargs)
        if not manager.book.wanted(key) or manager.book.ended(key):  # it waited for a worker past its page
            raise PreventUpdate
        watch = JobWatch(manager.book, key, manager.in_own_process)
        with watch:
            token = watching(watch)
            try:
                return fn(*args, **kwargs)
            finally:
                done_watching(token)

    return job


class ProcessJobs(SaysLostJobs, OwnResults, OwnProcesses):
    """Jobs in processes of their own, their results and their book in a local cache. A cancel
    ends only a job it started (app.web.job_processes)."""

    def __init__(self, cache, book: JobBook | None = None) -> None:
        self.book = book or JobBook(DiskStore(cache))
        super().__init__(cache)
