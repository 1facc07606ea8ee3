"""app.workbench.isolation: work on untrusted input in a child process; whatever the child does, the caller
gets its result or one line, and goes on."""

from __future__ import annotations

import ctypes
import os
import time

import pytest

from app.workbench.isolation import run_isolated
from compiler.errors import TilescopeError

GIB = 2**30


def test_the_result_comes_back_from_the_child():
    assert run_isolated(lambda: ("run", os.getpid()), "model", GIB, 30)[0] == "run"
    assert run_isolated(lambda: os.getpid(), "model", GIB, 30) != os.getpid()


def test_a_tilescope_error_comes_back_as_itself():
    def refuse():
        raise TilescopeError("model.mlir:3:1: expected ')'")

    with pytest.raises(TilescopeError, match=r"^model.mlir:3:1: expected '\)'$"):
        run_isolated(refuse, "model.mlir", GIB, 30)


def test_a_crash_is_one_line_and_the_caller_goes_on():
    with pytest.raises(TilescopeError) as err:
        run_isolated(lambda: ctypes.string_at(0), "model.mlir", GIB, 30)  # reads address 0: SIGSEGV
    assert str(err.value).startswith("model.mlir: the compiler crashed (SIGSEGV)") and "\n" not in str(err.value)
    assert run_isolated(lambda: 42, "next", GIB, 30) == 42


def test_running_out_of_the_memory_budget_is_one_line():
    with pytest.raises(TilescopeError, match=r"^big.mlir: needs more than this server's 1 GiB to compile$"):
        run_isolated(lambda: bytearray(3 * GIB), "big.mlir", GIB, 30)


def test_work_past_the_time_limit_is_stopped():
    start = time.monotonic()
    with pytest.raises(TilescopeError, match=r"^slow.mlir: took longer than this server's limit of 1 s$"):
        run_isolated(lambda: time.sleep(60), "slow.mlir", GIB, 1)
    assert time.monotonic() - start < 30  # killed, not waited for


def test_an_error_that_is_not_tilescopes_is_a_crash_not_a_traceback():
    with pytest.raises(TilescopeError, match=r"^x.mlir: the compiler crashed \(exit code 1\)"):
        run_isolated(lambda: [][1], "x.mlir", GIB, 30)


def test_a_compile_past_those_at_once_is_refused_not_queued(tmp_path):
    """Waiting for a child would hold the request's thread; a page is told to try again."""
    import threading

    from app.workbench.isolation import CHILDREN_AT_ONCE

    release = tmp_path / "release"

    def work(n):
        (tmp_path / f"started{n}").touch()
        while not release.exists():
            time.sleep(0.01)
        return n

    results = []
    threads = [
        threading.Thread(target=lambda n=n: results.append(run_isolated(lambda: work(n), f"{n}.mlir", GIB, 60)))
        for n in range(CHILDREN_AT_ONCE)
    ]
    for thread in threads:
        thread.start()
    while not all((tmp_path / f"started{n}").exists() for n in range(CHILDREN_AT_ONCE)):
        time.sleep(0.01)
    with pytest.raises(
        TilescopeError, match=rf"^late.mlir: this server is compiling {CHILDREN_AT_ONCE} models already"
    ):
        run_isolated(lambda: 1, "late.mlir", GIB, 60)
    release.touch()
    for thread in threads:
        thread.join(60)
    assert sorted(results) == list(range(CHILDREN_AT_ONCE))
    assert run_isolated(lambda: 1, "next.mlir", GIB, 60) == 1
