"""The paced gunicorn worker's sockets: a request that stops arriving, or trickles, reads as the
client hanging up, so no client holds a worker thread for long."""

from __future__ import annotations

import socket
import time

import pytest

from app.web import slow_clients
from app.web.slow_clients import _PacedSocket


@pytest.fixture
def paced(monkeypatch):
    monkeypatch.setattr(slow_clients, "READ_SECONDS", 0.2)
    monkeypatch.setattr(slow_clients, "GRACE_SECONDS", 0.5)
    monkeypatch.setattr(slow_clients, "MIN_BYTES_PER_S", 1000)
    server_end, client = socket.socketpair()
    sock = _PacedSocket(fileno=server_end.detach())
    sock.setblocking(True)
    sock.pace_from_now()
    yield sock, client
    sock.close()
    client.close()


def test_a_request_arriving_at_pace_is_read(paced):
    sock, client = paced
    client.sendall(b"GET / HTTP/1.1\r\n")
    assert sock.recv(100) == b"GET / HTTP/1.1\r\n"
    assert sock.received == 16


def test_a_client_that_sends_nothing_more_reads_as_gone(paced, capsys):
    sock, client = paced
    client.sendall(b"POST / HTTP/1.1\r\n")
    assert sock.recv(100)
    assert sock.recv(100) == b""  # after a read's wait, not for ever
    assert capsys.readouterr().err == "tilescope: dropped a client that sent its request too slowly (17 bytes)\n"


def test_a_trickling_client_falls_behind_its_pace(paced):
    """A byte every 50 ms, each read well within READ_SECONDS: only the pace stops it (at
    MIN_BYTES_PER_S 1000 and 0.5 s of grace, after ~11 bytes)."""
    sock, client = paced
    reads = 0
    while True:
        time.sleep(0.05)  # the client's trickle, not a wait for the server
        client.sendall(b"x")
        if not sock.recv(100):
            break
        reads += 1
        assert reads < 100
    assert 5 <= reads <= 20


def test_a_new_request_starts_its_pace_again(paced):
    sock, client = paced
    sock.received = 10**9  # as after a large upload on this connection
    sock.pace_from_now()
    client.sendall(b"GET / HTTP/1.1\r\n")
    assert sock.recv(100) == b"GET / HTTP/1.1\r\n" and sock.received == 16


def test_a_poll_does_not_wait(paced):
    sock, _ = paced
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):
        sock.recv(100)
