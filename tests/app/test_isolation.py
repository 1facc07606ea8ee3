"""app.isolation: work on untrusted input in a child process; whatever the child does, the caller
gets its result or one line, and goes on."""

from __future__ import annotations

import ctypes
import os
import time

import pytest

from app.isolation import run_isolated
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
