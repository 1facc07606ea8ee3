"""A process forked from a server's worker keeps none of the server's sockets: a connection the
server closed stayed open in a forked job, and the page's next request on it waited for the job."""

from __future__ import annotations

import os
import socket
import time

import psutil
import pytest

from tilescope.app.workbench.isolation import run_isolated
from tilescope.app.workbench.server_sockets import drop_server_sockets


def _forked(before_ready) -> tuple[int, int]:
    """A child process that calls `before_ready`, says so on a pipe, then waits to be killed."""
    ready, said = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  # the child
        try:
            before_ready()
            os.write(said, b"x")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(said)
    return pid, ready


@pytest.mark.parametrize("drops", [True, False])
def test_a_connection_the_server_closes_closes_though_a_job_process_was_forked(drops):
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    own = socket.create_connection(server.getsockname())  # a connection a job makes itself: kept
    pid, ready = _forked(drop_server_sockets if drops else (lambda: None))
    try:
        assert os.read(ready, 1) == b"x"
        accepted.close()  # the server is done with the page's connection
        client.settimeout(3)
        kept = psutil.Process(pid).net_connections("inet")
        if drops:  # the page sees it closed at once
            assert client.recv(1) == b""
            assert not [c for c in kept if c.laddr.port == server.getsockname()[1]]
        else:  # the child's copy keeps it open: the page waits (what froze a tuning page)
            with pytest.raises(TimeoutError):
                client.recv(1)
        # the job's own connection (from a port no socket listens on) is left to it
        assert [c for c in kept if c.laddr.port == own.getsockname()[1]]
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        for s in (server, client, accepted, own):
            s.close()


def test_an_isolated_compile_keeps_none_of_the_server_s_sockets():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    try:

        def held(_say) -> list[int]:  # in the child: its sockets on the server's port
            return [c.fd for c in psutil.Process().net_connections("inet") if c.laddr.port == port]

        assert run_isolated(held, "a compile", 1 << 30, 30) == []
        assert accepted.fileno() >= 0  # the parent's own stay open
    finally:
        for s in (server, client, accepted):
            s.close()
