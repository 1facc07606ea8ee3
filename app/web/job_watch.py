"""What runs beside a background job, in the process or thread that runs it: its beat in the job book
(app/web/job_book.py), its end when no page waits for it any more, and its end with the server
process that started it. A job that nobody will read must neither hold a slot nor store a run.

A job in a process of its own (a local server's job process, a Celery worker's) is killed outright
when its page is gone or when the process that started it dies (gunicorn's worker killed, say):
what it would store, nobody asked for, and its own isolated compiles die with it. A job in a thread
of the server cannot be killed: it is told (its page gone, or a cancel), and stops at its next stage
(app/web/jobs.py, reporter), holding its slot until it has stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar

from tilescope.compiler.errors import TilescopeError

from tilescope.app.web.error_lines import error_line
from tilescope.app.web.job_book import BEAT_S, STORE_ERRORS, JobBook


class JobWatch:
    """Watches one job from its start to its end (a context manager around the job's work)."""

    def __init__(self, book: JobBook, key: str, own_process: bool) -> None:
        self.book = book
        self.key = key
        self.own_process = own_process
        self._parent = os.getppid()
        self._done = threading.Event()
        self.abandoned = threading.Event()

    def __enter__(self) -> JobWatch:
        self.book.start(self.key)
        threading.Thread(target=self._watch, name=f"watch {self.key[:8]}", daemon=True).start()
        return self

    def __exit__(self, *_exc) -> None:
        self._done.set()
        with contextlib.suppress(*STORE_ERRORS):  # its result stands; unended, its beat expires, freeing its slot
            self.book.end(self.key)

    def _watch(self) -> None:
        failing = False
        while not self._done.wait(BEAT_S):
            if self.own_process and os.getppid() != self._parent:  # the server process that started it died
                os.kill(os.getpid(), signal.SIGKILL)
            try:
                self._turn()
                failing = False
            except STORE_ERRORS as err:  # a lock held, a Redis blip: the next turn tries again
                if not failing:  # said once for a run of failures, not every second
                    sys.stderr.write(
                        f"tilescope: a job could not reach the job book, trying again: {error_line(err)}\n"
                    )
                failing = True

    def _turn(self) -> None:
        """Beat, and end the job if no page waits for it any more (a thread: at its next stage)."""
        self.book.beat(self.key)
        if not self.book.wanted(self.key):
            self.abandoned.set()
            if self.own_process:
                with contextlib.suppress(*STORE_ERRORS):  # unended, its beat expires, freeing its slot
                    self.book.end(self.key)
                os.kill(os.getpid(), signal.SIGKILL)

    def stop_asked(self) -> bool:
        """Whether its page asked it to stop (Cancel)."""
        return self.book.stop_asked(self.key)

    def stops_when_asked(self) -> Callable[[], bool]:
        """`stop_asked`, for a job that winds down by itself when asked, keeping what it has: a stop
        then asks it rather than kills it (app/web/jobs.py, terminate_job), as it does any other."""
        self.book.stops_itself(self.key)
        return self.stop_asked

    def check(self) -> None:
        """Raise if no page waits for the job any more (gone, or it cancelled the job): what it would
        do next, nobody will see. Its slot stays taken until it has stopped."""
        if self.abandoned.is_set():
            raise TilescopeError("the page that asked for this job is gone; it stopped")
        cancelled = False
        with contextlib.suppress(*STORE_ERRORS):  # a book that cannot be read tells of no cancel
            cancelled = self.book.cancelled(self.key)
        if cancelled:
            raise TilescopeError("this job was cancelled; it stopped")


_CURRENT: ContextVar[JobWatch | None] = ContextVar("job", default=None)


def this_job() -> JobWatch | None:
    """The watch of the job this code runs in (None: not in a background job, as in a test)."""
    return _CURRENT.get()


def watching(watch: JobWatch):
    """Make `watch` this context's job (returns the token to reset it with)."""
    return _CURRENT.set(watch)


def done_watching(token) -> None:
    _CURRENT.reset(token)
