"""Work on untrusted input in a child process with memory and time limits, so that a parser crash,
a blow-up or an endless compile costs the child, never the server.

The child is forked (it starts at once with everything imported), caps its own address space,
runs the work and sends back what it says on the way, then its result or its one-line error,
through a pipe; the parent waits at most `seconds`, then kills it. Anything the work stores (a
run) is committed by the child. A child dies with the process that forked it: a server process
killed mid-compile leaves no compile behind to store a run nobody waits for.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import pickle
import resource
import select
import signal
import struct
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from tilescope.compiler.errors import TilescopeError

from tilescope.app.workbench.server_sockets import drop_server_sockets

T = TypeVar("T")
Say = Callable[[str], None]

CHILDREN_AT_ONCE = 2  # per server process: each child may take its whole memory budget
_children = threading.BoundedSemaphore(CHILDREN_AT_ONCE)
PR_SET_PDEATHSIG = 1  # linux/prctl.h
_FRAME = struct.Struct("!Q")  # a stage's length, before it
_LAST = 0  # in place of a length: the result follows, to the end
MAX_STAGE_CHARS = 1000  # a stage is a progress line
MAX_STAGE_BYTES = 1 << 16


def _fresh_count() -> None:
    """A process forked while this one had children (a background job's process) has none of its own."""
    global _children
    _children = threading.BoundedSemaphore(CHILDREN_AT_ONCE)


os.register_at_fork(after_in_child=_fresh_count)


def run_isolated(
    work: Callable[[Say], T], what: str, memory_bytes: int, seconds: float, on_stage: Say | None = None
) -> T:
    """`work(say)` in a child process; what it says reaches `on_stage` here, its TilescopeError comes
    back as one, and so, in one line naming `what`, does running out of memory or time, or a crash."""
    if not _children.acquire(blocking=False):  # waiting would hold the request's thread
        raise TilescopeError(
            f"{what}: this server is compiling {CHILDREN_AT_ONCE} models already; try again in a moment"
        )
    try:
        read_end, write_end = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(work, write_end, memory_bytes, parent)
        os.close(write_end)
        try:
            message, late = _read(read_end, pid, seconds, on_stage or (lambda _line: None))
        except BaseException:  # what the child said could not be heard (its page is gone): it ends
            os.kill(pid, signal.SIGKILL)
            raise
        finally:
            os.close(read_end)
            _, status = os.waitpid(pid, 0)
    finally:
        _children.release()
    if not (isinstance(message, tuple) and len(message) == 2):
        message = None  # ended without its last message, or with one it never sends
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


def _child(work: Callable[[Say], object], write_end: int, memory_bytes: int, parent: int) -> None:
    code = 0
    faulthandler.disable()  # a crash is the parent's one line, not a dump of the child's stack
    try:
        _die_with(parent)
        drop_server_sockets()  # a server's connections stay the server's to close
        # the budget comes on top of what the forked image already maps (libraries, the heap)
        limit = _address_space() + memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        with os.fdopen(write_end, "wb") as out:

            def say(line: str) -> None:
                data = pickle.dumps(str(line)[:MAX_STAGE_CHARS])
                out.write(_FRAME.pack(len(data)))
                out.write(data)
                out.flush()

            try:
                message = ("ok", work(say))
            except TilescopeError as err:
                message = ("error", str(err))
            except MemoryError:
                message = ("memory", None)
            out.write(_FRAME.pack(_LAST))
            pickle.dump(message, out)  # streamed: a compilation is not pickled whole in memory first
    except BaseException:  # noqa: BLE001  # nothing may unwind into the server's code in the child
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffers


def _die_with(parent: int) -> None:
    """SIGKILL when the forking thread's process ends. The thread that forks waits for the child,
    so it outlives it unless its process dies; a parent gone before this call is seen at once."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _address_space() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _read(fd: int, pid: int, seconds: float, on_stage: Say) -> tuple[tuple[str, object] | None, bool]:
    """(the child's last message, or None if it ended without one; whether it was killed at the
    deadline). The stages it says on the way go to `on_stage`."""
    deadline = time.monotonic() + seconds
    try:
        while True:
            head = _read_upto(fd, _FRAME.size, deadline)
            if len(head) < _FRAME.size:
                return None, False
            size = _FRAME.unpack(head)[0]
            if size == _LAST:
                return _message(_read_upto(fd, None, deadline)), False
            if size > MAX_STAGE_BYTES:  # not what the child sends: it broke
                return None, False
            on_stage(str(_message(_read_upto(fd, size, deadline))))
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        return None, True


def _read_upto(fd: int, size: int | None, deadline: float) -> bytearray:
    """`size` bytes from `fd`, fewer if it ends first (None: all until it ends). A compilation sent
    back is hundreds of MB: it is read into one buffer that grows in place."""
    buffer = bytearray()
    ready = select.poll()  # not select(): a busy server's descriptors run past select's 1,024
    ready.register(fd, select.POLLIN)
    while size is None or len(buffer) < size:
        left = deadline - time.monotonic()
        if left <= 0 or not ready.poll(left * 1000):
            raise TimeoutError
        chunk = os.read(fd, 1 << 20 if size is None else size - len(buffer))
        if not chunk:
            break
        buffer += chunk
    return buffer


def _message(data: bytearray):
    try:
        return pickle.loads(data)  # noqa: S301  # from the child this process forked
    except (pickle.UnpicklingError, EOFError, ValueError):
        return None


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit code {os.WEXITSTATUS(status)}"
