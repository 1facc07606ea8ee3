"""Which processes are this server's jobs: the only ones a cancel may end.

Dash ends the process a page's job handle names, the handle signed with a secret the server keeps
in its jobs' cache. Whoever knows that secret can name any process, and the server, perhaps root,
would kill it. So each job process is recorded as it starts, by pid and start time, in the jobs'
cache (private, and shared by a server's workers: a cancel may reach a worker other than the one
that started the job), and a process is ended only if it is one of them, whatever the handle's
signature says. The start time tells a job from a process that took its pid after it ended.
"""

from __future__ import annotations

import sqlite3
import sys

import psutil
from dash import DiskcacheManager

RECORD_S = 24 * 3600  # a job's record outlives any job (the longest is a 600 s search)


class OwnProcesses(DiskcacheManager):
    """A DiskcacheManager that ends only processes it started (a mixin, before the manager)."""

    def call_job_fn(self, key, job_fn, args, context) -> int:
        pid = super().call_job_fn(key, job_fn, args, context)
        try:
            self.handle.set(_record(pid), psutil.Process(pid).create_time(), expire=RECORD_S)
        except (psutil.NoSuchProcess, OSError, sqlite3.Error):
            pass  # ended already, or the cache cannot be written: the job cannot be cancelled, and ends alone
        return pid

    def is_own_job(self, job) -> bool:
        """Whether `job` names a process this server started as a job, still running."""
        try:
            pid = int(job)
            started = self.handle.get(_record(pid))
            return started is not None and psutil.Process(pid).create_time() == started
        except (ValueError, TypeError, OverflowError, psutil.Error, OSError, sqlite3.Error):
            return False

    def terminate_job(self, job) -> None:
        if job is None:
            return
        if self.is_own_job(job):
            super().terminate_job(job)
        elif _lives(job):  # a forged handle (a job that ended is gone, or its pid went to another)
            sys.stderr.write(f"tilescope: a cancel named process {str(job)[:20]!r}, not a job of this server's\n")


def _record(pid: int) -> str:
    return f"tilescope-job-process-{pid}"


def _lives(job) -> bool:
    try:
        pid = int(job)
        return pid > 0 and psutil.pid_exists(pid)
    except (ValueError, TypeError, OverflowError):
        return False
