"""A real `tilescope serve`'s caches: private to its user, refused in one line when another user
has them or they cannot be written, and never a way for someone who learnt the job-signing secret
to have the server end a process that is not one of its jobs."""

from __future__ import annotations

import hmac
import json
import os
import re
import pickle
import stat
import subprocess
import sys
import urllib.parse
import urllib.request
from hashlib import sha256
from pathlib import Path

import diskcache
import pytest
from dash.background_callback.managers import BaseBackgroundCallbackManager

from app.workbench.compile_store import CompileStore
from compiler.models import read_source
from compiler.policies import DEFAULT_L1_USAGE_CAP
from compiler.target import load_target

from . import cache_disk, serving

MODEL = "zoo:mlp?layers=1"


def _cancel_request(url: str, secret: bytes, pid: int) -> urllib.request.Request:
    """Tune's Cancel as a page sends it, naming `pid`, its handle signed with `secret` for a page
    load of the caller's own (Dash binds a handle to the page load's id, which the page holds)."""
    page = urllib.request.urlopen(url, timeout=30).read().decode()
    config = json.loads(re.search(r'<script id="_dash-config" type="application/json">(.*?)</script>', page).group(1))
    end = config["end_id"]
    mac = hmac.new(secret, f"job:{end.rpartition('~')[0]}\0{pid}".encode(), sha256).hexdigest()
    query = urllib.parse.urlencode({"cancelJob": f"{pid}~{mac}", "endId": end})
    body = {
        "output": "tune-cancel.id",
        "outputs": {"id": "tune-cancel", "property": "id"},
        "inputs": [{"id": "tune-cancel", "property": "n_clicks", "value": 1}],
        "changedPropIds": ["tune-cancel.n_clicks"],
        "state": [],
    }
    return urllib.request.Request(
        f"{url}_dash-update-component?{query}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )


def test_a_forged_cancel_ends_no_process_but_the_servers_jobs(tmp_path):
    """Someone who learnt the secret (it sat in a file all could read) signs a cancel naming a
    process of the server's user that is not a job: the process lives on."""
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path)
    victim = subprocess.Popen(["sleep", "600"])
    try:
        jobs = tmp_path / "cache" / "tilescope" / "jobs"
        with diskcache.Cache(str(jobs)) as cache:
            secret = cache.get(BaseBackgroundCallbackManager.SIGNING_SECRET_KEY)
        assert secret, "the server keeps its signing secret in its jobs' cache"
        # Dash kills, then waits up to 1 s for the process to go, before it answers
        assert urllib.request.urlopen(_cancel_request(url, secret, victim.pid), timeout=30).status in (200, 204)
        assert victim.poll() is None, "the server killed a process that is not one of its jobs"
    finally:
        victim.kill()
        victim.wait()
        output = proc.stop()
    assert f"tilescope: a cancel named process '{victim.pid}', not a job of this server's" in output


class _Planted:
    """A pickle whose loading calls a function of its maker's choice: here, one that makes a marker
    file, so the test shows whether it ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _summary_request(url: str, run_id: int) -> urllib.request.Request:
    """The run summary a page asks for as it shows a run: the run's compilation is read for it."""
    body = {
        "output": "run-summary.children",
        "outputs": {"id": "run-summary", "property": "children"},
        "inputs": [{"id": "run-select", "property": "value", "value": run_id}],
        "changedPropIds": ["run-select.value"],
        "state": [],
    }
    return urllib.request.Request(
        f"{url}_dash-update-component", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )


def test_a_planted_compilation_is_never_run_by_the_server(tmp_path):
    """Another user works the file's name out from public inputs and leaves a pickle there; one
    page asking for the run's summary loaded it. Planted 0600 and the server's user's (as if the
    directory had been open): only the signature is left to tell."""
    db = f"sqlite:///{tmp_path / 'ui.db'}"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cli-cache")}
    stored = [sys.executable, "-m", "app.cli", "run", MODEL, "--policy", "greedy-l1", "--db", db]
    subprocess.run(stored, check=True, env=env, capture_output=True)
    key = CompileStore(tmp_path / "elsewhere").key(
        MODEL, read_source(MODEL), repr(load_target("wormhole_n150")), (), "greedy-l1", DEFAULT_L1_USAGE_CAP
    )
    planted = tmp_path / "cache" / "tilescope" / "compilations" / f"{key}.pickle"
    planted.parent.mkdir(parents=True)
    marker = tmp_path / "the planted code ran"
    planted.write_bytes(pickle.dumps(_Planted(marker)))
    planted.chmod(0o600)
    url, proc = serving.start(MODEL, db, logs=tmp_path)
    try:
        answer = urllib.request.urlopen(_summary_request(url, 1), timeout=60).read().decode()
    finally:
        output = proc.stop()
    assert "run #1" in answer and not marker.exists() and not planted.exists()
    assert "tilescope: a kept compilation was not read back (not signed by this server); compiling" in output


def test_the_servers_caches_are_its_users_alone(tmp_path):
    """The jobs' cache holds pickled results and the signing secret; kept compilations, model source."""
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path)
    proc.stop()
    root = tmp_path / "cache" / "tilescope"
    found = {p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in (root, *root.rglob("*"))}
    assert found["."] == found["jobs"] == found["compilations"] == 0o700
    assert found["jobs/cache.db"] == 0o600
    assert all(mode & 0o077 == 0 for mode in found.values()), found


def test_an_old_open_job_cache_is_narrowed_and_emptied(tmp_path):
    """An older tilescope left it 0755 with 0644 files: others may have read the secret it holds."""
    jobs = tmp_path / "cache" / "tilescope" / "jobs"
    with diskcache.Cache(str(jobs)) as cache:
        cache.set(BaseBackgroundCallbackManager.SIGNING_SECRET_KEY, b"known to all")
    for path in (jobs.parent, jobs, *jobs.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path)
    proc.stop()
    with diskcache.Cache(str(jobs)) as cache:
        assert cache.get(BaseBackgroundCallbackManager.SIGNING_SECRET_KEY) not in (None, b"known to all")
    assert stat.S_IMODE(jobs.stat().st_mode) == stat.S_IMODE(jobs.parent.stat().st_mode) == 0o700


def _served_saying(tmp_path, said: str, under=()) -> list[str]:
    """The lines a server that answered its page logged with `said` in them."""
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", logs=tmp_path, under=under)
    try:
        assert urllib.request.urlopen(url + "_dash-layout", timeout=30).status == 200
    finally:
        output = proc.stop()
    assert "Traceback" not in output
    return [line for line in output.splitlines() if said in line]


def test_a_cache_directory_of_another_users_is_refused_in_one_line_and_the_server_runs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    planted = tmp_path / "cache" / "tilescope"
    planted.mkdir(parents=True)
    os.chown(planted, 65534, 65534)
    said = _served_saying(tmp_path, "owned by uid 65534")
    assert len(said) == 1 and said[0].startswith(f"tilescope: {planted}: owned by uid 65534, not this user")
    assert "for this run only, and compilations are not kept" in said[0]
    assert not list(planted.iterdir())  # nothing written in it


def test_a_read_only_cache_directory_is_one_line_and_the_server_runs(tmp_path):
    cache = tmp_path / "cache"
    said = _served_saying(
        tmp_path, "Read-only file system", under=cache_disk.on_tmpfs(cache, size_kib=1024, read_only=True)
    )
    assert len(said) == 1 and said[0].startswith(f"tilescope: {cache / 'tilescope'}: Read-only file system;")
    this_run = Path(re.search(r"jobs keep their results in (\S+) for this run only", said[0]).group(1))
    assert this_run.name == "jobs" and not this_run.parent.exists()  # removed as the server stopped
