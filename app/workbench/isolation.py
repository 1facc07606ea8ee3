"""Work on untrusted input in a child process with memory and time limits, so that a parser crash,
a blow-up or an endless compile costs the child, never the server.

The child is forked (it starts at once with everything imported), caps its own address space,
runs the work and sends back its result or its one-line error through a pipe; the parent waits at
most `seconds`, then kills it. Anything the work stores (a run) is committed by the child.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import select
import signal
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from compiler.errors import TilescopeError

T = TypeVar("T")

CHILDREN_AT_ONCE = 2  # per server process: each child may take its whole memory budget
_children = threading.BoundedSemaphore(CHILDREN_AT_ONCE)


def run_isolated(work: Callable[[], T], what: str, memory_bytes: int, seconds: float) -> T:
    """`work()` in a child process; its TilescopeError comes back as one, and so, in one line
    naming `what`, does running out of memory or time, or a crash."""
    if not _children.acquire(blocking=False):  # waiting would hold the request's thread
        raise TilescopeError(
            f"{what}: this server is compiling {CHILDREN_AT_ONCE} models already; try again in a moment"
        )
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(work, write_end, memory_bytes)
        os.close(write_end)
        try:
            message, late = _read(read_end, pid, seconds)
        finally:
            os.close(read_end)
            _, status = os.waitpid(pid, 0)
    finally:
        _children.release()
    if late:
        raise TilescopeError(f"{what}: took longer than this server's limit of {seconds:.0f} s")
    if message is None:
        raise TilescopeError(
            f"{what}: the compiler crashed ({_ended(status)}); "
            f"it may have needed more than this server's {memory_bytes / 2**30:.0f} GiB"
        )
    kind, value = message
    if kind == "ok":
        return value
    if kind == "memory":
        raise TilescopeError(f"{what}: needs more than this server's {memory_bytes / 2**30:.0f} GiB to compile")
    raise TilescopeError(value)


def _child(work: Callable[[], object], write_end: int, memory_bytes: int) -> None:
    code = 0
    faulthandler.disable()  # a crash is the parent's one line, not a dump of the child's stack
    try:
        # the budget comes on top of what the forked image already maps (libraries, the heap)
        limit = _address_space() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            message = ("ok", work())
        except TilescopeError as err:
            message = ("error", str(err))
        except MemoryError:
            message = ("memory", None)
        with os.fdopen(write_end, "wb") as out:
            pickle.dump(message, out)
    except BaseException:  # noqa: BLE001  # nothing may unwind into the server's code in the child
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffers


def _address_space() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _read(fd: int, pid: int, seconds: float) -> tuple[tuple[str, object] | None, bool]:
    """(the child's message, or None if it ended without one; whether it was killed at the deadline)."""
    chunks, deadline = [], time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            return None, True
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    try:
        return pickle.loads(b"".join(chunks)), False
    except (pickle.UnpicklingError, EOFError):
        return None, False


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit code {os.WEXITSTATUS(status)}"
