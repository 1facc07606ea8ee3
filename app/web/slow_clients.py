"""A gunicorn worker that does not wait on a slow client for ever.

gunicorn's threaded worker reads a request with a blocking socket and no timeout once the first
bytes arrive: a client that announces a body and sends none, or trickles its headers a byte at a
time, holds one of the worker's threads for as long as it likes, and eight such clients stall the
server. Here a request must keep arriving: each read waits at most READ_SECONDS, and the request
as a whole may take GRACE_SECONDS plus one second per MIN_BYTES_PER_S received. A client that
falls behind is treated as gone (the read returns end-of-file), so gunicorn closes the connection
as it does for any client that hangs up, and the thread is free. A server facing the internet
should still sit behind a reverse proxy that buffers requests (gunicorn's own advice).
"""

from __future__ import annotations

import socket
import sys
import time

from gunicorn.workers.gthread import ThreadWorker

READ_SECONDS = 10.0  # one read of a request's headers or body
GRACE_SECONDS = 10.0  # a request's first bytes: headers, a small body
MIN_BYTES_PER_S = 256 * 1024  # the slowest link a large upload may come over (64 MiB in ~4 min)


class _PacedSocket(socket.socket):
    """A client's socket whose blocking reads give up when the request falls behind its pace."""

    started = 0.0
    received = 0

    def pace_from_now(self) -> None:
        """A new request begins: its time and bytes count from here."""
        self.started, self.received = time.monotonic(), 0

    def setblocking(self, flag: bool) -> None:
        # gunicorn makes the socket blocking to read a request; blocking here means bounded
        self.settimeout(READ_SECONDS if flag else 0.0)

    def recv(self, size: int, flags: int = 0) -> bytes:
        if self.gettimeout() == 0.0:  # non-blocking: a poll, not a wait
            return super().recv(size, flags)
        left = self.started + GRACE_SECONDS + self.received / MIN_BYTES_PER_S - time.monotonic()
        if left <= 0:
            return self._behind()
        self.settimeout(min(READ_SECONDS, left))
        try:
            data = super().recv(size, flags)
        except TimeoutError:
            return self._behind()
        self.received += len(data)
        return data

    def _behind(self) -> bytes:
        sys.stderr.write(f"tilescope: dropped a client that sent its request too slowly ({self.received:,} bytes)\n")
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
