"""A job that ended without leaving its result: the page is told so in one line.

Dash takes a job that no longer runs and left no result for a cancelled one: the page stops
waiting without a word (an answer 204). A job ends so when its cache cannot take what it writes
(a full or read-only disk: its progress fails, then its result and the error that replaces it),
or when it is killed (out of memory). Its job function then says why in one line in the server's
log, and on a pipe the server process reads as pages poll (a job runs in a thread of that process
or in a process it forked, which inherits the pipe): the page gets that line, or, polled through a
worker other than the job's, the line any lost job gets (app/web/jobs.py, LOST).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import weakref
from collections import OrderedDict

from dash import DiskcacheManager

from tilescope.app.web.error_lines import error_line

LINE_BYTES = select.PIPE_BUF  # a write this long to a pipe is never interleaved with another's
KEPT = 64  # lines kept for pages that have not polled yet (one that stopped polling never takes its own)


class SaysLostJobs(DiskcacheManager):
    """A DiskcacheManager whose pages hear why a job ended without a result (a mixin, before
    OwnResults, which finds such a job as its page polls and asks `why_lost`)."""

    _pipe: tuple[int, int] | None = None  # (read, write) ends, made for the first job
    _making = threading.Lock()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lines: OrderedDict[str, str] = OrderedDict()  # result key -> why its job left none
        self._unread = b""
        self._reading = threading.Lock()

    def call_job_fn(self, key, job_fn, args, context):
        with self._making:  # before the job starts: a process inherits the pipe as it forks
            if self._pipe is None:
                self._pipe = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
                weakref.finalize(self, _close, *self._pipe)
        return super().call_job_fn(key, job_fn, args, context)

    def make_job_fn(self, fn, progress, key=None):
        job_fn = super().make_job_fn(fn, progress, key)

        def job(result_key, progress_key, args, context):
            try:
                job_fn(result_key, progress_key, args, context)
            except Exception as err:  # noqa: BLE001  # Dash's job writes any error as its result: that write failed
                line = f"the job's result could not be kept: {error_line(err)}"
                with contextlib.suppress(OSError):  # the pipe full: the page gets the pointer to the log
                    os.write(self._pipe[1], f"{result_key}\t{line}\n".encode()[:LINE_BYTES])
                with contextlib.suppress(OSError):  # the log on the full disk too
                    sys.stderr.write(f"tilescope: {line}\n")

        return job

    def why_lost(self, key: str) -> str:
        return self._why(key) or super().why_lost(key)

    def _why(self, key: str) -> str | None:
        """The line the job of `key` said as it ended, if it said one."""
        if self._pipe is None:
            return None
        with self._reading:
            with contextlib.suppress(BlockingIOError):
                while chunk := os.read(self._pipe[0], 1 << 16):
                    self._unread += chunk
            *lines, self._unread = self._unread.split(b"\n")
            for line in lines:
                said_key, _, why = line.decode(errors="replace").partition("\t")
                self._lines[said_key] = why
                while len(self._lines) > KEPT:
                    self._lines.popitem(last=False)
            return self._lines.pop(key, None)


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
