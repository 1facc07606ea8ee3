"""`tilescope serve --workers N`: gunicorn's workers share one database, and the opening model's run
is stored once however many workers start at the same time."""

from __future__ import annotations

import json
import os
import re
import urllib.request

import psutil
import pytest

from perfdb.engine import open_db, session_factory
from perfdb.queries import list_runs

from . import serving

MODEL = "zoo:mlp?layers=1"


@pytest.fixture
def workers(db_url, tmp_path):
    url, proc = serving.start(MODEL, db_url, "--workers", "2", logs=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
    yield url, proc
    proc.stop()


def test_two_workers_serve_the_page_from_one_database(workers, db_url):
    url, proc = workers
    children = psutil.Process(proc.pid).children()
    assert len(children) == 2 and all(c.is_running() for c in children)
    for _ in range(6):  # requests spread over the workers; each answers with the whole page
        layout = json.loads(urllib.request.urlopen(url + "_dash-layout", timeout=10).read())
        assert "run-select" in json.dumps(layout)
    # the page's scripts come from whichever worker, whether or not it rendered the page itself
    scripts = re.findall(r'src="/(_dash-component-suites/[^"]+)"', urllib.request.urlopen(url, timeout=10).read().decode())
    assert scripts
    for _ in range(6):
        for script in scripts[:3]:
            assert urllib.request.urlopen(url + script, timeout=10).status == 200
    with session_factory(open_db(db_url))() as session:
        assert [r.label for r in list_runs(session, MODEL)] == ["baseline"]  # stored once, not per worker


def test_a_negative_worker_count_is_one_line(capsys):
    from app.cli import main

    assert main(["serve", "--workers", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--workers -1" in err


def test_a_worker_without_a_broker_is_one_line(capsys, monkeypatch):
    from app.cli import main

    monkeypatch.delenv("TILESCOPE_CELERY_BROKER", raising=False)
    assert main(["worker"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "TILESCOPE_CELERY_BROKER" in err


@pytest.mark.parametrize("command", ["worker", "serve"])
@pytest.mark.parametrize("broker, cause", [
    ("redis://127.0.0.1:1/0", "Connection refused"),  # nothing listens on port 1
    ("amqq://127.0.0.1/0", "unknown transport"),
])
def test_an_unreachable_broker_is_one_line_and_nothing_starts(capsys, monkeypatch, tmp_path, command, broker, cause):
    from app.cli import main

    monkeypatch.setenv("TILESCOPE_CELERY_BROKER", broker)
    db = f"sqlite:///{tmp_path / 'team.db'}"
    assert main([command, "--db", db, "--model", MODEL, *(["--port", "1"] if command == "serve" else [])]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and broker in err and cause in err
    assert not (tmp_path / "team.db").exists()  # checked before anything else
