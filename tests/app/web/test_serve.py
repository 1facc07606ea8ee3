"""`tilescope serve [--workers N]`: gunicorn's workers (one by default) share one database, and the
opening model's run is stored once however many workers start at the same time."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
import urllib.request

import psutil
import pytest

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import list_runs

from . import serving

MODEL = "zoo:mlp?layers=1"


@pytest.fixture(params=[1, 2], ids=["one worker", "two workers"])
def workers(request, db_url, tmp_path):
    count = request.param
    args = ["--workers", str(count)] if count > 1 else []  # one is the default
    url, proc = serving.start(MODEL, db_url, *args, logs=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
    # gunicorn forks its workers one after another, the next after a pause of up to 0.1 s; the
    # first can answer before the last is forked
    deadline = time.monotonic() + serving.START_S
    while len(psutil.Process(proc.pid).children()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    yield url, proc, count
    proc.stop()


def test_workers_serve_the_page_from_one_database(workers, db_url):
    url, proc, count = workers
    children = psutil.Process(proc.pid).children()
    assert len(children) == count and all(c.is_running() for c in children), proc.output()[-3000:]
    for _ in range(6):  # requests spread over the workers; each answers with the whole page
        layout = json.loads(urllib.request.urlopen(url + "_dash-layout", timeout=10).read())
        assert "run-select" in json.dumps(layout)
    # the page's scripts come from whichever worker, whether or not it rendered the page itself
    scripts = re.findall(
        r'src="/(_dash-component-suites/[^"]+)"', urllib.request.urlopen(url, timeout=10).read().decode()
    )
    assert scripts
    for _ in range(6):
        for script in scripts[:3]:
            assert urllib.request.urlopen(url + script, timeout=10).status == 200
    with session_factory(open_db(db_url))() as session:
        assert [r.label for r in list_runs(session, MODEL)] == ["baseline"]  # stored once, not per worker
    output = proc.output()
    assert "development server" not in output and "Traceback" not in output
    assert "server worker" not in output  # none ended while it served
    assert f"serving {MODEL} on {url.rstrip('/')}" in output  # the address, once it answers


def test_a_port_in_use_is_one_line_and_nothing_is_stored(capsys, tmp_path):
    from tilescope.app.cli import main

    db = tmp_path / "perf.db"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port), "--db", f"sqlite:///{db}", "--model", MODEL]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"127.0.0.1:{port} is in use" in err
    assert not db.exists()  # said before the opening model compiles


def test_a_port_out_of_range_is_refused_as_an_option(capsys):
    from tilescope.app.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", "80000"])
    assert exited.value.code == 2
    assert "argument --port: '80000' is not a port number (1-65535)" in capsys.readouterr().err


def test_a_host_that_cannot_be_listened_on_is_one_line(capsys, tmp_path):
    from tilescope.app.cli import main

    db = tmp_path / "perf.db"
    assert main(["serve", "--host", "host.invalid", "--db", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cannot listen on host.invalid:" in err and "no such host" in err
    assert not db.exists()


def test_a_negative_worker_count_is_one_line(capsys):
    from tilescope.app.cli import main

    assert main(["serve", "--workers", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--workers -1" in err


def test_a_worker_without_a_broker_is_one_line(capsys, monkeypatch):
    from tilescope.app.cli import main

    monkeypatch.delenv("TILESCOPE_CELERY_BROKER", raising=False)
    assert main(["worker"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "TILESCOPE_CELERY_BROKER" in err


@pytest.mark.parametrize("command", ["worker", "serve"])
@pytest.mark.parametrize(
    "broker, cause",
    [
        ("redis://127.0.0.1:1/0", "Connection refused"),  # nothing listens on port 1
        ("amqq://127.0.0.1/0", "unknown transport"),
    ],
)
def test_an_unreachable_broker_is_one_line_and_nothing_starts(capsys, monkeypatch, tmp_path, command, broker, cause):
    from tilescope.app.cli import main

    monkeypatch.setenv("TILESCOPE_CELERY_BROKER", broker)
    db = f"sqlite:///{tmp_path / 'team.db'}"
    assert main([command, "--db", db, "--model", MODEL, *(["--port", "1"] if command == "serve" else [])]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and broker in err and cause in err
    assert not (tmp_path / "team.db").exists()  # checked before anything else


def test_a_celery_worker_stores_no_run_of_its_own(db_url, tmp_path, redis_broker):
    """The server stores the opening model's run; a worker starting beside it would race it to."""
    env = {**os.environ, "HOME": str(tmp_path), "TILESCOPE_CELERY_BROKER": redis_broker}
    worker = serving.start_worker(MODEL, db_url, tmp_path, env)
    try:
        with session_factory(open_db(db_url))() as session:
            assert list_runs(session) == []
    finally:
        worker.stop()


def test_a_request_larger_than_the_largest_upload_is_refused_unread(workers):
    """Its body is never read: the server answers as soon as it has the headers."""
    url, _, _ = workers
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(
            b"POST /_dash-update-component HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 209715200\r\n\r\n{}"
        )
        assert connection.recv(64).startswith(b"HTTP/1.1 413")


def _peak_resident(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def test_requests_of_many_small_json_values_cost_the_server_little_memory(tmp_path):
    """80 MB of `{},` parses to ~1 GB of dicts; four such requests at once held 4 GB of the
    worker's memory for good before bodies were counted and taken in two at a time."""
    url, proc = serving.start(
        MODEL, f"sqlite:///{tmp_path}/one.db", logs=tmp_path, env={**os.environ, "HOME": str(tmp_path)}
    )
    try:
        (worker,) = psutil.Process(proc.pid).children()
        before = _peak_resident(worker.pid)
        host, port = url.split("//")[1].rstrip("/").split(":")
        body = b"[" + b"{}," * (80 * 2**20 // 3) + b"{}]"
        connections = [socket.create_connection((host, int(port)), timeout=60) for _ in range(4)]
        for connection in connections:
            connection.sendall(
                b"POST /_dash-update-component HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body)
            )
        statuses = []
        for connection in connections:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a refused body is left unread
                connection.sendall(body)
            statuses.append(connection.recv(64).split(b" ")[1])
            connection.close()
        assert set(statuses) <= {b"413", b"503"} and b"413" in statuses
        assert _peak_resident(worker.pid) - before < 2**30
        assert urllib.request.urlopen(url + "_dash-layout", timeout=10).status == 200  # and it answers
        assert "Traceback" not in proc.output()
    finally:
        proc.stop()


def test_clients_that_stop_sending_are_dropped_and_free_the_worker_threads(tmp_path):
    """Eight clients (the worker's threads) announce a body and send a few bytes of it, or stop
    inside their headers: each is dropped within a read's wait and the request's grace, and the
    page answers again. gunicorn's own worker would have waited on them for ever."""
    from tilescope.app.web.slow_clients import GRACE_SECONDS, READ_SECONDS
    from tilescope.app.web.server import THREADS_PER_WORKER

    url, proc = serving.start(
        MODEL, f"sqlite:///{tmp_path}/one.db", logs=tmp_path, env={**os.environ, "HOME": str(tmp_path)}
    )
    try:
        host, port = url.split("//")[1].rstrip("/").split(":")
        stalled = []
        for i in range(THREADS_PER_WORKER):
            connection = socket.create_connection((host, int(port)), timeout=GRACE_SECONDS + READ_SECONDS + 20)
            connection.sendall(
                b"POST /_dash-update-component HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n0123456789"
                if i % 2
                else b"GET / HTTP/1.1\r\nHost: x\r\n"
            )
            stalled.append(connection)
        for connection in stalled:
            answer = connection.recv(64)  # closed (b""), or an error answered on a body cut short
            assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer
            connection.close()
        assert urllib.request.urlopen(url + "_dash-layout", timeout=10).status == 200
        output = proc.output()
        assert "dropped a client that sent its request too slowly" in output and "Traceback" not in output
    finally:
        proc.stop()
