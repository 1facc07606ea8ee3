"""A job that ended without leaving its result: the page is told so in one line.

Dash takes a job that no longer runs and left no result for a cancelled one: the page stops
waiting without a word (an answer 204). A job ends so when its cache cannot take what it writes
(a full or read-only disk: its progress fails, then its result and the error that replaces it),
or when it is killed (out of memory). Its job function then says why in one line in the server's
log, and on a pipe the server process reads as pages poll (a job runs in a thread of that process
or in a process it forked, which inherits the pipe): the page gets that line, or, from a worker
other than the job's, a line that points to the log.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import weakref
from collections import OrderedDict, deque

from dash import DiskcacheManager

LINE_BYTES = select.PIPE_BUF  # a write this long to a pipe is never interleaved with another's
KEPT = 64  # lines kept for pages that have not polled yet (one that stopped polling never takes its own)
UNKNOWN = "the job ended without leaving its result (the server's log says why)"


class SaysLostJobs(DiskcacheManager):
    """A DiskcacheManager whose pages hear of a job that ended without a result (a mixin, before
    OwnResults: it needs the job that Dash's poll names)."""

    _pipe: tuple[int, int] | None = None  # (read, write) ends, made for the first job
    _making = threading.Lock()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lines: OrderedDict[str, str] = OrderedDict()  # result key -> why its job left none
        self._unread = b""
        self._reading = threading.Lock()
        self._ended: deque[str] = deque(maxlen=KEPT)  # jobs ended on purpose: no line for them

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
                line = f"the job's result could not be kept: {_cause(err)}"
                with contextlib.suppress(OSError):  # the pipe full: the page gets the pointer to the log
                    os.write(self._pipe[1], f"{result_key}\t{line}\n".encode()[:LINE_BYTES])
                with contextlib.suppress(OSError):  # the log on the full disk too
                    sys.stderr.write(f"tilescope: {line}\n")

        return job

    def get_result(self, key, job):
        result = super().get_result(key, job)
        if result is not self.UNDEFINED or job is None or str(job) in self._ended or self.job_running(job):
            return result
        result = super().get_result(key, job)  # written as the job ended, after the first look
        if result is not self.UNDEFINED:
            return result
        return {"background_callback_error": {"msg": self._why(key), "tb": ""}}

    def terminate_job(self, job) -> None:
        if job is not None:
            self._ended.append(str(job))
        super().terminate_job(job)

    def _why(self, key: str) -> str:
        if self._pipe is None:
            return UNKNOWN
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
            return self._lines.pop(key, UNKNOWN)


def _cause(err: Exception) -> str:
    if isinstance(err, OSError) and err.errno:
        return os.strerror(err.errno)  # without the path: the page's reader has no use for it
    return (str(err).splitlines() or [type(err).__name__])[0][:200]


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
