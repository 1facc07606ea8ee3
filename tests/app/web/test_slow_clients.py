"""The paced gunicorn worker's sockets: a request that stops arriving, or trickles, reads as the
client hanging up, so no client holds a worker thread for long."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tilescope.app.web import slow_clients
from tilescope.app.web.slow_clients import _PacedSocket


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
    assert sock.recv(100) == b""  # gunicorn reads again as it closes: said once
    assert capsys.readouterr().err == "tilescope: dropped a client that sent its request too slowly (17 bytes)\n"


def test_a_trickling_client_falls_behind_its_pace(paced):
    """A byte every 50 ms, each wait well within READ_SECONDS: only the pace stops it (at
    MIN_BYTES_PER_S 1000 and 0.5 s of waiting, after about 10 bytes; fewer, the slower they come)."""
    sock, client = paced
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.05):  # the client's trickle, not a wait for the server
            try:
                client.sendall(b"x")
            except OSError:  # the server hung up on it
                return

    sender = threading.Thread(target=trickle)
    sender.start()
    try:
        reads = 0
        while sock.recv(100):
            reads += 1
            assert reads < 1000, "never dropped"
    finally:
        stop.set()
        sender.join()
    assert sock.waited >= 0.5


def test_a_whole_request_is_read_however_long_the_server_took_to_get_to_it(paced):
    """Under load a request waits for a thread, and its body waits for the checks before it is
    read: longer than its client's whole grace. What the client has sent is never the client's lag."""
    sock, client = paced
    headers = b"POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"
    client.sendall(headers + b"b" * 5000)
    time.sleep(slow_clients.GRACE_SECONDS + 0.1)  # the server busy: queued, then signing in
    assert sock.recv(len(headers)) == headers
    time.sleep(slow_clients.GRACE_SECONDS + 0.1)
    body = b""
    while len(body) < 5000:
        body += sock.recv(5000)
    assert body == b"b" * 5000 and sock.waited == 0


def test_a_wait_the_caller_bounds_times_out_as_it_asked(paced):
    """gunicorn drains a socket before closing it, bounding each wait itself."""
    sock, _ = paced
    sock.settimeout(0.05)
    with pytest.raises(TimeoutError):
        sock.recv(100)
    assert sock.gettimeout() == 0.05


def test_a_new_request_starts_its_pace_again(paced):
    sock, client = paced
    sock.received, sock.waited = 10**9, 10**9  # as after a large upload on this connection
    sock.pace_from_now()
    client.sendall(b"GET / HTTP/1.1\r\n")
    assert sock.recv(100) == b"GET / HTTP/1.1\r\n" and sock.received == 16


def test_a_poll_does_not_wait(paced):
    sock, _ = paced
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):
        sock.recv(100)


UPLOAD, CHUNK = 900_000, 8_000  # sent a chunk per 0.1 s: 80 KB/s, within the pace (10 s + 3.4 s for 900 KB)


def _upload(port: int, answers: list) -> None:
    body = b'{"x": "' + b"a" * (UPLOAD - 10) + b'"}'
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(
            b"POST /_dash-update-component HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        for start in range(0, len(body), CHUNK):
            client.sendall(body[start : start + CHUNK])
            time.sleep(0.1)  # the client's pace
        answers.append(client.recv(100)[:12])


def _whole_request(port: int, answers: list) -> None:
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"GET /_dash-layout HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        client.settimeout(120)
        answers.append(client.recv(100)[:12])  # b"" if the server hung up without an answer


def test_a_whole_request_is_answered_while_uploads_hold_every_thread(tmp_path):
    """Uploads within the pace hold every thread of the server for over 11 s; requests sent whole
    meanwhile waited that long for a thread, more than their grace, and were dropped unanswered
    (the pace counted from when they were queued). The server never waited on their clients."""
    from tilescope.app.web.server import THREADS_PER_WORKER

    from . import serving

    url, proc = serving.start("zoo:mlp?layers=1", f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path)
    port = int(url.rsplit(":", 1)[1].strip("/"))
    uploads, answers = [], []
    clients = [threading.Thread(target=_upload, args=(port, uploads)) for _ in range(THREADS_PER_WORKER)]
    for client in clients:
        client.start()
    time.sleep(0.5)  # the uploads have the threads
    clients += [threading.Thread(target=_whole_request, args=(port, answers)) for _ in range(4)]
    for client in clients[THREADS_PER_WORKER:]:
        client.start()
    for client in clients:
        client.join()
    output = proc.stop()
    assert answers == [b"HTTP/1.1 200"] * 4, output[-2000:]
