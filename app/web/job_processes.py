"""Which processes are this server's jobs: the only ones a cancel may end.

Dash ends the process a page's job handle names, the handle signed with a secret the server keeps
in its jobs' cache. Whoever knows that secret can name any process, and the server, perhaps root,
would kill it. So the job book (app/web/job_book.py, in the jobs' cache: private, and shared by a
server's workers, as a cancel may reach a worker other than the one that started the job) records
each job process as it starts, by pid and start time, with its job; and a process is ended only if
it is one of them, whatever the handle's signature says. The start time tells a job from a process
that took its pid after it ended.

A job's process is forked from the server's worker: it closes its copies of the server's sockets
first (app/workbench/server_sockets.py).
"""

from __future__ import annotations

import sys

import psutil
from dash import DiskcacheManager

from tilescope.app.web.job_book import STORE_ERRORS, JobBook
from tilescope.app.workbench.server_sockets import drop_server_sockets


class OwnProcesses(DiskcacheManager):
    """A DiskcacheManager that ends only processes it started (a mixin, before the manager, after
    app.web.jobs.OwnResults, which records each job it starts with `process_start`)."""

    book: JobBook

    def process_start(self, job) -> float | None:
        """When the job's process started; None if it has ended already (then it cannot be cancelled)."""
        try:
            return psutil.Process(int(job)).create_time()
        except (psutil.NoSuchProcess, ValueError, TypeError):
            return None

    def is_own_job(self, job) -> bool:
        """Whether `job` names a process this server started as a job, still running."""
        try:
            pid = int(job)
            record = self.book.record(str(pid))
            started = record.started if record else None
            return started is not None and psutil.Process(pid).create_time() == started
        except (ValueError, TypeError, OverflowError, psutil.Error, *STORE_ERRORS):
            return False

    def make_job_fn(self, fn, progress, key=None):
        job_fn = super().make_job_fn(fn, progress, key)

        def job(*args):  # in the job's process, forked from the server's worker
            drop_server_sockets()
            return job_fn(*args)

        return job

    def terminate_job(self, job) -> None:
        if job is None:
            return
        if self.is_own_job(job):
            super().terminate_job(job)
        elif _lives(job):  # a forged handle (a job that ended is gone, or its pid went to another)
            sys.stderr.write(f"tilescope: a cancel named process {str(job)[:20]!r}, not a job of this server's\n")


def _lives(job) -> bool:
    try:
        pid = int(job)
        return pid > 0 and psutil.pid_exists(pid)
    except (ValueError, TypeError, OverflowError):
        return False
