"""A real `tilescope serve`'s caches: private to its user, refused in one line when another user
has them or they cannot be written, and never a way for someone who learnt the job-signing secret
to have the server end a process that is not one of its jobs."""

from __future__ import annotations

import hmac
import json
import os
import re
import stat
import subprocess
import time
import urllib.parse
import urllib.request
from hashlib import sha256
from pathlib import Path

import diskcache
import pytest
from dash.background_callback.managers import BaseBackgroundCallbackManager

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
        assert urllib.request.urlopen(_cancel_request(url, secret, victim.pid), timeout=30).status in (200, 204)
        time.sleep(1)  # Dash's kill waits up to 1 s for the process to end
        assert victim.poll() is None, "the server killed a process that is not one of its jobs"
    finally:
        victim.kill()
        victim.wait()
        output = proc.stop()
    assert f"tilescope: a cancel named process '{victim.pid}', not a job of this server's" in output


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
