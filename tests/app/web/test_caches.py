"""A real `tilescope serve`'s caches: private to its user, refused in one line when another user
has them or they cannot be written, and never a way for someone who learnt the job-signing secret
to have the server end a process that is not one of its jobs."""

from __future__ import annotations

import base64
import hmac
import json
import multiprocessing
import os
import re
import pickle
import stat
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from hashlib import sha256
from pathlib import Path

import diskcache
import psutil
import pytest
from dash.background_callback.managers import BaseBackgroundCallbackManager

from tilescope.app.web.caches import DATABASE_FILES, cache_dirs, open_job_cache
from tilescope.app.workbench.compile_store import CompileStore
from tilescope.compiler.frontend.model_refs import read_source
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.targets.catalog import load_target

from . import cache_disk, serving

MODEL = "zoo:mlp?layers=1"


def _page_end_id(url: str) -> str:
    """The signed id of a page load, which a page sends with each callback (Dash binds job handles to it)."""
    page = urllib.request.urlopen(url, timeout=30).read().decode()
    config = json.loads(re.search(r'<script id="_dash-config" type="application/json">(.*?)</script>', page).group(1))
    return config["end_id"]


def _cancel_request(url: str, secret: bytes, pid: int) -> urllib.request.Request:
    """Tune's Cancel as a page sends it, naming `pid`, its handle signed with `secret` for a page
    load of the caller's own (Dash binds a handle to the page load's id, which the page holds)."""
    end = _page_end_id(url)
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
    stored = [sys.executable, "-m", "tilescope.app.cli", "run", MODEL, "--policy", "greedy-l1", "--db", db]
    subprocess.run(stored, check=True, env=env, capture_output=True)
    key = CompileStore(tmp_path / "elsewhere").key(
        MODEL, read_source(MODEL), repr(load_target("wormhole_n150")), CompileOptions(policy="greedy-l1")
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


def _modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in (root, *root.rglob("*"))}


SECRET_KEY = BaseBackgroundCallbackManager.SIGNING_SECRET_KEY
LARGE = b"x" * 2**16  # diskcache keeps a value of 32 KiB or more in a file of its own, in directories it makes


def test_a_large_result_leaves_the_job_cache_private_and_whole_across_restarts(tmp_path):
    """diskcache made its value directories 0755 (the umask's): the next start took the cache for
    an older tilescope's left open and emptied it, the signing secret, results and job book."""
    jobs = tmp_path / "cache" / "tilescope" / "jobs"
    assert cache_dirs(jobs).jobs == jobs
    with open_job_cache(jobs) as cache:
        cache.set(SECRET_KEY, b"the server's")
        cache.set("result", LARGE)
    modes = _modes(jobs)
    assert len(modes) > len(DATABASE_FILES) + 1  # the value's file and its directories
    assert all(mode == (0o700 if (jobs / name).is_dir() else 0o600) for name, mode in modes.items()), modes
    assert cache_dirs(jobs).jobs == jobs  # a restart
    with open_job_cache(jobs) as cache:
        assert cache.get(SECRET_KEY) == b"the server's" and cache.get("result") == LARGE


class _Upload:
    """A file dropped on a page: a job of the server's, started, then polled as the page polls it."""

    def __init__(self, url: str, name: str) -> None:
        self.url = url
        callbacks = json.loads(urllib.request.urlopen(url + "_dash-dependencies", timeout=30).read())
        upload = next(c for c in callbacks if "model-upload.contents" in c["output"])
        text = (Path(__file__).parents[2] / "data" / "tiny_mlp.mlir").read_bytes()
        values = {
            "model-upload.contents": "data:application/octet-stream;base64," + base64.b64encode(text).decode(),
            "model-upload.filename": name,
            "target-select.value": "wormhole_n150",
            "policy-select.value": "greedy-l1",
            "dispatch-select.value": "host",
            "data-tiling.value": [],
        }
        self.body = {
            "output": upload["output"],
            "outputs": [
                dict(zip(("id", "property"), o.rsplit(".", 1))) for o in upload["output"].strip(".").split("...")
            ],
            "inputs": [{**i, "value": values[f"{i['id']}.{i['property']}"]} for i in upload["inputs"]],
            "state": [{**s, "value": values[f"{s['id']}.{s['property']}"]} for s in upload["state"]],
            "changedPropIds": ["model-upload.contents"],
        }
        self.query = {"endId": _page_end_id(url)}
        started = self._ask()
        self.query.update(cacheKey=started["cacheKey"], job=started["job"])
        self.key = started["cacheKey"].rpartition("~")[0]  # where the job leaves its result

    def _ask(self) -> dict:
        request = urllib.request.Request(
            f"{self.url}_dash-update-component?{urllib.parse.urlencode(self.query)}",
            json.dumps(self.body).encode(),
            {"Content-Type": "application/json"},
        )
        return json.loads(urllib.request.urlopen(request, timeout=60).read() or b"{}")

    def said(self) -> str:
        """The line the page shows once the job has answered."""
        deadline = time.monotonic() + 60
        while "response" not in (answer := self._ask()):
            assert time.monotonic() < deadline, f"the upload was not answered: {answer}"
            time.sleep(0.1)
        if "page-message" not in answer["response"]:  # a job's failure, shown where any failure is
            return answer["sideUpdate"]["page-message"]["children"]["props"]["children"]
        return answer["response"]["page-message"]["children"]["props"]["children"]


def test_two_servers_of_one_user_on_one_job_cache_both_keep_working(tmp_path):
    """A second `tilescope serve` of the same user (or a restart) once a large result had been
    kept took the cache for one left open, and emptied it under the first server: its signing
    secret, its job book, and the result a page had yet to read."""
    db = f"sqlite:///{tmp_path / 'ui.db'}"
    first_url, first = serving.start(MODEL, db, logs=tmp_path)
    second = None
    try:
        jobs = tmp_path / "cache" / "tilescope" / "jobs"
        with open_job_cache(jobs) as cache:  # as the server keeps a large result
            secret = cache.get(SECRET_KEY)
            cache.set("result", LARGE)
        unread = _Upload(first_url, "first.mlir")
        with open_job_cache(jobs) as cache:
            deadline = time.monotonic() + 60
            while cache.get(unread.key) is None:  # its job has ended; its page has not polled since
                assert time.monotonic() < deadline, "the job left no result"
                time.sleep(0.1)
        second_url, second = serving.start(MODEL, db, logs=tmp_path)  # the same user's, so the same cache
        assert unread.said() == "Loaded first.mlir."
        assert _Upload(second_url, "second.mlir").said() == "Loaded second.mlir."
        assert _Upload(first_url, "third.mlir").said() == "Loaded third.mlir."
        with open_job_cache(jobs) as cache:
            assert cache.get(SECRET_KEY) == secret and cache.get("result") == LARGE
    finally:
        outputs = [server.stop() for server in (first, second) if server]
    assert not any("Traceback" in output or "for this run only" in output for output in outputs)


def _keep_results(jobs: Path, stop) -> None:
    """A server at work in the cache: large results kept, and read (so removed)."""
    with open_job_cache(jobs) as cache:
        i = 0
        while not stop.is_set():
            cache.set(i % 50, LARGE)
            cache.delete((i - 25) % 50)
            i += 1


def test_a_server_starting_while_another_works_in_the_cache_shares_it(tmp_path):
    """Starting, a server narrows what the cache holds; a value another server removes meanwhile
    made the start take the cache for one it could not keep private (a missing file), and go on
    with a cache of its own for the run: one line, and jobs counted apart."""
    jobs = tmp_path / "cache" / "tilescope" / "jobs"
    assert cache_dirs(jobs).jobs == jobs
    stop = multiprocessing.Event()
    other = multiprocessing.get_context("fork").Process(target=_keep_results, args=(jobs, stop))
    other.start()
    try:
        with open_job_cache(jobs) as cache:
            deadline = time.monotonic() + 30
            while len(cache) < 25:  # at work
                assert other.is_alive() and time.monotonic() < deadline, "the other server did not start"
                time.sleep(0.01)
        for _ in range(100):
            assert cache_dirs(jobs).jobs == jobs
    finally:
        stop.set()
        other.join(30)


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


def test_a_worker_that_ends_alone_leaves_the_runs_job_cache_to_the_others(tmp_path):
    """The directory a server's jobs keep their results in for one run is removed as the server
    stops, by the process that made it; its gunicorn workers, forked after, removed it too as
    any one of them ended (a worker restarted), under the others still serving."""
    cache = tmp_path / "cache"
    under = cache_disk.on_tmpfs(cache, size_kib=1024, read_only=True)
    url, proc = serving.start(MODEL, f"sqlite:///{tmp_path / 'ui.db'}", "--workers", "2", logs=tmp_path, under=under)
    try:
        said = re.search(r"jobs keep their results in (\S+) for this run only", proc.output())
        this_run = Path(said.group(1))
        workers = psutil.Process(proc.pid).children()
        with open_job_cache(this_run) as cache:
            secret = cache.get(SECRET_KEY)
        assert len(workers) == 2 and secret
        workers[0].terminate()  # gunicorn's worker ends as it does when restarted: exit handlers run
        workers[0].wait(30)
        deadline = time.monotonic() + 60
        while len(psutil.Process(proc.pid).children()) < 2:  # its replacement
            assert time.monotonic() < deadline, "no worker took the ended one's place"
            time.sleep(0.1)
        with open_job_cache(this_run) as cache:  # not one made anew by the worker that took its place
            assert cache.get(SECRET_KEY) == secret, "a worker removed the run's job cache as it ended"
        assert _Upload(url, "after.mlir").said() == "Loaded after.mlir."  # its jobs still run
    finally:
        output = proc.stop()
    assert f"server worker {workers[0].pid} ended" in output and "Traceback" not in output
    assert not this_run.parent.exists()  # removed as the server stopped
