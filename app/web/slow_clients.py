"""A gunicorn worker that does not wait on a slow client for ever.

gunicorn's threaded worker reads a request with a blocking socket and no timeout once the first
bytes arrive: a client that announces a body and sends none, or trickles its headers a byte at a
time, holds one of the worker's threads for as long as it likes, and eight such clients stall the
server. Here the server waits on a request's client at most READ_SECONDS at a time, and
GRACE_SECONDS plus one second per MIN_BYTES_PER_S received in all. A client that falls behind is
treated as gone (the read returns end-of-file), so gunicorn closes the connection as it does for any
client that hangs up, and the thread is free. A server facing the internet should still sit behind
a reverse proxy that buffers requests (gunicorn's own advice).

Only the server's waiting counts, never its own delays: what a client has sent is read whenever
the server gets to it. A pace counted from when a request was queued dropped, under load, clients
that had sent their whole request while it waited for a thread (or for a slow sign-in check
before its body was read).
"""

from __future__ import annotations

import socket
import sys
import time

from gunicorn.workers.gthread import ThreadWorker

READ_SECONDS = 10.0  # one wait for a request's next bytes
GRACE_SECONDS = 10.0  # waiting for a request's first bytes: headers, a small body
MIN_BYTES_PER_S = 256 * 1024  # the slowest link a large upload may come over (64 MiB in ~4 min)


class _PacedSocket(socket.socket):
    """A client's socket whose blocking reads give up when the server has waited on the request
    longer than its pace allows."""

    waited = 0.0  # seconds the server spent waiting on this request's client
    received = 0
    dropped = False

    def pace_from_now(self) -> None:
        """A new request begins: its waiting and bytes count from here."""
        self.waited, self.received, self.dropped = 0.0, 0, False

    def setblocking(self, flag: bool) -> None:
        # gunicorn makes the socket blocking to read a request; blocking here means bounded
        self.settimeout(READ_SECONDS if flag else 0.0)

    def recv(self, size: int, flags: int = 0) -> bytes:
        asked = self.gettimeout()
        if asked == 0.0:  # non-blocking: a poll, not a wait
            return super().recv(size, flags)
        try:
            data = self._arrived(size, flags)
            if data is None:
                data = self._wait(size, flags, READ_SECONDS if asked is None else asked)
        finally:
            self.settimeout(asked)
        if data is None:
            return self._behind()
        self.received += len(data)
        return data

    def _arrived(self, size: int, flags: int) -> bytes | None:
        """What the client has sent already (whatever time it is now), or None if nothing."""
        self.settimeout(0.0)
        try:
            return super().recv(size, flags)
        except BlockingIOError:
            return None

    def _wait(self, size: int, flags: int, asked: float) -> bytes | None:
        """The client's next bytes, once they come; None if the request's pace runs out first.
        A wait the caller bounded itself (a drain before closing) times out as the caller expects."""
        left = GRACE_SECONDS + self.received / MIN_BYTES_PER_S - self.waited
        if left <= 0:
            return None
        self.settimeout(min(asked, left))
        began = time.monotonic()
        try:
            return super().recv(size, flags)
        except TimeoutError:
            if asked < left and asked != READ_SECONDS:
                raise
            return None
        finally:
            self.waited += time.monotonic() - began

    def _behind(self) -> bytes:
        if not self.dropped:  # said once: gunicorn reads again as it closes the connection
            self.dropped = True
            said = f"dropped a client that sent its request too slowly ({self.received:,} bytes)"
            sys.stderr.write(f"tilescope: {said}\n")
        return b""  # end-of-file: gunicorn closes the connection as a client's hang-up


class PacedThreadWorker(ThreadWorker):
    """gunicorn's gthread worker, its clients' sockets paced."""

    def enqueue_req(self, conn) -> None:
        # a connection comes here when it is accepted, and again for each request it sends after
        if not isinstance(conn.sock, _PacedSocket):
            conn.sock = _PacedSocket(fileno=conn.sock.detach())
            conn.sock.setblocking(False)  # as it was: the fd's own flag is not read back
        conn.sock.pace_from_now()
        super().enqueue_req(conn)
