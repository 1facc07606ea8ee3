"""Dash background callbacks run in a thread of the server process, not in a process of their own.

Dash's DiskcacheManager forks a process per job. For a re-run that is the wrong trade: the new
run's views, drawn next in the server process, would compile the model again because the job's
compilation stayed in the job's process, and the fork itself copies a large process's page
tables. A thread shares the compile cache and starts at once; the page still gets the job's
progress and stays live (the thread yields the interpreter between bytecodes). Long, rare jobs
(an upload of a new model) keep the process manager, which a thread cannot stop.
"""

from __future__ import annotations

import os
from itertools import count
from threading import Lock, Thread

from dash import DiskcacheManager

from tilescope.app.web.job_book import DiskStore, JobBook
from tilescope.app.web.jobs import OwnResults
from tilescope.app.web.lost_jobs import SaysLostJobs


# a job's number: not the thread's ident (the next thread reuses it, and two jobs would share one
# entry), one count for every manager of the process, and the process's own id above it, as the
# job book names jobs for every process sharing it
_NUMBERS = count(1)


class _Threads(DiskcacheManager):
    """A DiskcacheManager (results and progress in the same cache) whose jobs are threads."""

    def __init__(self, cache) -> None:
        super().__init__(cache)
        self._threads: dict[int, Thread] = {}
        self._starting = Lock()

    def call_job_fn(self, key, job_fn, args, context) -> int:
        with self._starting:
            job = (os.getpid() << 32) + next(_NUMBERS)
            thread = Thread(target=job_fn, args=(key, self._make_progress_key(key), args, context), daemon=True)
            for other, other_thread in list(self._threads.items()):  # a copy: other requests start jobs too
                if not other_thread.is_alive():
                    self._threads.pop(other, None)  # ended: it runs no more, whether or not its result was read
            self._threads[job] = thread
            thread.start()
        return job

    def job_running(self, job) -> bool:
        thread = self._threads.get(int(job)) if job else None
        return thread is not None and thread.is_alive()

    def terminate_job(self, job) -> None:
        # a thread cannot be stopped from outside: it stops at its next stage, told by the job book
        # (app/web/job_watch.py), and nobody asks for its result
        if job:
            self._threads.pop(int(job), None)

    def process_start(self, job) -> None:
        return None  # a thread runs in the server's own process, which no cancel ends

    def terminate_unhealthy_job(self, job) -> bool:
        return False  # a thread that died left its result (or its error) in the cache


class ThreadJobManager(SaysLostJobs, OwnResults, _Threads):
    """Jobs in threads of this process; each result goes to the page that started its job."""

    in_own_process = False

    def __init__(self, cache, book: JobBook | None = None) -> None:
        self.book = book or JobBook(DiskStore(cache))
        super().__init__(cache)
