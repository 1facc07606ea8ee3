"""A process forked from a server's worker leaves the server's sockets to the server.

A fork copies the worker's sockets: its listening socket and the connections of the pages it
serves. A connection the worker closes (an idle keep-alive one, after two seconds) stays open while
a forked process holds its copy, so a page's next request sent on it waits, unread, until that
process ends: a 300 s search froze its page. So a background job's process and an isolated compile
close them first, keeping the connections they make themselves (a database's, Redis's).
"""

from __future__ import annotations

import contextlib
import os

import psutil


def drop_server_sockets() -> None:
    """Close this process's copies of the server's sockets: those listening, and the connections
    accepted on their ports. Connections to other ports (the process's own) stay."""
    try:
        connections = psutil.Process().net_connections(kind="inet")
    except psutil.Error:  # nothing to read them by: the process runs as before
        return
    ports = {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}
    for c in connections:
        if c.fd >= 0 and c.laddr and c.laddr.port in ports:
            with contextlib.suppress(OSError):
                os.close(c.fd)
