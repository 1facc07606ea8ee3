"""app.workbench.isolation: work on untrusted input in a child process; whatever the child does, the caller
gets its result or one line, and goes on."""

from __future__ import annotations

import ctypes
import json
import os
import time

import pytest

from tilescope.app.workbench.isolation import run_isolated
from tilescope.compiler.errors import TilescopeError

GIB = 2**30


def test_the_result_comes_back_from_the_child():
    assert run_isolated(lambda _say: ("run", os.getpid()), "model", GIB, 30)[0] == "run"
    assert run_isolated(lambda _say: os.getpid(), "model", GIB, 30) != os.getpid()


def test_the_result_comes_back_when_the_server_holds_over_a_thousand_descriptors():
    """A busy server's connections and caches hold descriptors past select()'s 1,024."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert run_isolated(lambda _say: "done", "model", GIB, 30) == "done"
    finally:
        for fd in held:
            os.close(fd)


def test_a_tilescope_error_comes_back_as_itself():
    def refuse(_say):
        raise TilescopeError("model.mlir:3:1: expected ')'")

    with pytest.raises(TilescopeError, match=r"^model.mlir:3:1: expected '\)'$"):
        run_isolated(refuse, "model.mlir", GIB, 30)


def test_a_crash_is_one_line_and_the_caller_goes_on():
    with pytest.raises(TilescopeError) as err:
        run_isolated(lambda _say: ctypes.string_at(0), "model.mlir", GIB, 30)  # reads address 0: SIGSEGV
    assert str(err.value).startswith("model.mlir: the compiler crashed (SIGSEGV)") and "\n" not in str(err.value)
    assert run_isolated(lambda _say: 42, "next", GIB, 30) == 42


def test_running_out_of_the_memory_budget_is_one_line():
    with pytest.raises(TilescopeError, match=r"^big.mlir: needs more than this server's 1 GiB to compile$"):
        run_isolated(lambda _say: bytearray(3 * GIB), "big.mlir", GIB, 30)


def test_work_past_the_time_limit_is_stopped():
    start = time.monotonic()
    with pytest.raises(TilescopeError, match=r"^slow.mlir: took longer than this server's limit of 1 s$"):
        run_isolated(lambda _say: time.sleep(60), "slow.mlir", GIB, 1)
    assert time.monotonic() - start < 30  # killed, not waited for


def test_an_error_that_is_not_tilescopes_is_a_crash_not_a_traceback():
    with pytest.raises(TilescopeError, match=r"^x.mlir: the compiler crashed \(exit code 1\)"):
        run_isolated(lambda _say: [][1], "x.mlir", GIB, 30)


def test_a_compile_past_those_at_once_is_refused_not_queued(tmp_path):
    """Waiting for a child would hold the request's thread; a page is told to try again."""
    import threading

    from tilescope.app.workbench.isolation import CHILDREN_AT_ONCE

    release = tmp_path / "release"

    def work(n):
        (tmp_path / f"started{n}").touch()
        while not release.exists():
            time.sleep(0.01)
        return n

    results = []
    threads = [
        threading.Thread(target=lambda n=n: results.append(run_isolated(lambda _say: work(n), f"{n}.mlir", GIB, 60)))
        for n in range(CHILDREN_AT_ONCE)
    ]
    for thread in threads:
        thread.start()
    while not all((tmp_path / f"started{n}").exists() for n in range(CHILDREN_AT_ONCE)):
        time.sleep(0.01)
    with pytest.raises(
        TilescopeError, match=rf"^late.mlir: this server is compiling {CHILDREN_AT_ONCE} models already"
    ):
        run_isolated(lambda _say: 1, "late.mlir", GIB, 60)
    release.touch()
    for thread in threads:
        thread.join(60)
    assert sorted(results) == list(range(CHILDREN_AT_ONCE))
    assert run_isolated(lambda _say: 1, "next.mlir", GIB, 60) == 1


def test_what_the_child_says_reaches_the_caller_in_order_before_its_result():
    heard = []

    def work(say):
        for stage in ("importing", "compiling", "simulating"):
            say(stage)
        return os.getpid()

    child = run_isolated(work, "model", GIB, 30, on_stage=heard.append)
    assert heard == ["importing", "compiling", "simulating"] and child != os.getpid()


PARENT = """
import os, sys, time
from tilescope.app.workbench.isolation import run_isolated

def work(_say):
    open(sys.argv[1], "w").write(str(os.getpid()))
    time.sleep(600)
run_isolated(work, "model", 2**30, 600)
"""


def test_a_child_dies_with_the_process_that_forked_it(tmp_path):
    """A server process killed mid-compile left the compile running, and it stored a run nobody
    waited for."""
    import subprocess
    import sys

    import psutil

    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pid_file)])
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline and parent.poll() is None
            time.sleep(0.05)
        child = psutil.Process(int(pid_file.read_text()))
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 30
        while child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        parent.kill()


def test_a_process_forked_while_children_run_has_children_of_its_own(tmp_path):
    """A background job's process, forked while its server compiled two models, was refused every
    compile: it had inherited the server's count."""
    import threading

    from tilescope.app.workbench.isolation import CHILDREN_AT_ONCE

    release = tmp_path / "release"

    def hold(_say, n):
        (tmp_path / f"held{n}").touch()
        while not release.exists():
            time.sleep(0.01)

    threads = [
        threading.Thread(target=run_isolated, args=(lambda say, n=n: hold(say, n), f"{n}", GIB, 60))
        for n in range(CHILDREN_AT_ONCE)
    ]
    for thread in threads:
        thread.start()
    try:
        while not all((tmp_path / f"held{n}").exists() for n in range(CHILDREN_AT_ONCE)):
            time.sleep(0.01)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the job's process
            try:
                os.write(write_end, str(run_isolated(lambda _say: 7, "job", GIB, 60)).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        assert os.read(read_end, 64) == b"7"
        os.waitpid(pid, 0)
    finally:
        release.touch()
        for thread in threads:
            thread.join(60)


def _stored_elsewhere(db_url: str, ref: str) -> int:
    """The id of a run of `ref` that `tilescope run` stored (another process: this one compiled nothing)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tilescope.app.cli", "run", ref, "--db", db_url, "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["run_id"]


def _explorer_on(db_url: str, max_ops: int):
    from tilescope.app.workbench.explorer import Explorer
    from tilescope.app.workbench.model_access import ModelAccess
    from tilescope.perfdb.engine import open_db, session_factory

    sessions = session_factory(open_db(db_url))
    return sessions, Explorer(sessions, access=ModelAccess(max_ops=max_ops))


def test_viewing_a_stored_run_past_max_ops_is_one_line_and_compiles_nothing(sqlite_url):
    """A stored run of 22,815 ops, viewed on a server of --max-ops 1000, was compiled in the server
    process (2.3 s, 127 -> 518 MiB)."""
    from tilescope.app.workbench import runs

    _, explorer = _explorer_on(sqlite_url, max_ops=5)
    stored = _stored_elsewhere(sqlite_url, "zoo:mlp?layers=3&width=64&hidden=128")  # the CLI has no limit
    made = runs._compile.cache_info().misses
    with pytest.raises(TilescopeError, match=r"^zoo:mlp\?layers=3&width=64&hidden=128: 15 ops is over this server's"):
        explorer.view(stored)
    assert runs._compile.cache_info().misses == made


def test_a_model_new_to_the_server_is_compiled_for_its_view_in_a_child_then_built_on_here(sqlite_url):
    from tilescope.app.workbench import runs
    from tilescope.app.workbench.explorer import _compile_inputs

    _, explorer = _explorer_on(sqlite_url, max_ops=1000)
    stored = _stored_elsewhere(sqlite_url, "zoo:mlp?layers=2&width=64&hidden=96")
    inputs = _compile_inputs(explorer.run(stored), ())
    assert not runs.builds_on(inputs)
    made = runs._compile.cache_info().misses
    view = explorer.view(stored)
    assert runs._compile.cache_info().misses == made and view.compilation.kernel.ops  # compiled in the child
    assert runs.builds_on(inputs)  # kept here: the model's next compile (a re-run) builds on it
