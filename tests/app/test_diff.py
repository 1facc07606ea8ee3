"""app.diff.main (`tilescope diff A B`) on runs compiled and simulated for real; app.db.upgrade_main."""

from __future__ import annotations

import json
import re

import pytest

from app.db import upgrade_main
from app.diff import main
from app.runs import execute
from perfdb.engine import open_db, session_factory
from perfdb.migrate import head
from perfdb.queries import RunNotFound

KEYS = {"a", "b", "total_delta_ns", "ops", "unmatched", "top_regressions", "top_improvements"}
OP_KEYS = {"name", "a_ns", "b_ns", "delta_ns", "ratio", "changes"}


@pytest.fixture
def runs(db_url, tiny_path):
    """(plain, tuned): the tiny MLP, then with matmul_1 sharded in L1 on 1x2 cores."""
    sessions = session_factory(open_db(db_url))
    plain = execute(sessions, tiny_path).run_id
    tuned = execute(sessions, tiny_path, override_items=["matmul_1=1x2:l1:block_sharded"]).run_id
    return plain, tuned


def diff_json(capsys, a, b, db_url) -> dict:
    assert main(a, b, db_url, True) == 0
    return json.loads(capsys.readouterr().out)


def test_json_of_a_tuned_run_against_the_plain_one(capsys, db_url, runs):
    plain, tuned = runs
    d = diff_json(capsys, plain, tuned, db_url)
    assert set(d) == KEYS and (d["a"], d["b"]) == (plain, tuned)
    assert all(set(op) == OP_KEYS for op in d["ops"])
    ops = {op["name"]: op for op in d["ops"]}
    assert set(ops) == {"matmul_0", "matmul_1"} and d["unmatched"] == {"a": [], "b": []}
    assert ops["matmul_1"]["changes"] == ["memory dram->l1", "grid 8x8->1x2"]
    assert ops["matmul_1"]["delta_ns"] == pytest.approx(ops["matmul_1"]["b_ns"] - ops["matmul_1"]["a_ns"])
    assert ops["matmul_1"]["delta_ns"] != 0 and ops["matmul_0"]["changes"] == []
    assert abs(d["ops"][0]["delta_ns"]) >= abs(d["ops"][-1]["delta_ns"])
    moved = d["top_regressions"] + d["top_improvements"]
    assert "matmul_1" in moved


def test_a_run_against_itself_has_zero_deltas(capsys, db_url, runs):
    d = diff_json(capsys, runs[1], runs[1], db_url)
    assert d["total_delta_ns"] == 0
    assert [(op["delta_ns"], op["ratio"], op["changes"]) for op in d["ops"]] == [(0.0, 1.0, [])] * 2
    assert d["top_regressions"] == d["top_improvements"] == []


def test_table(capsys, db_url, runs):
    plain, tuned = runs
    assert main(plain, tuned, db_url, False) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"run {tuned} against run {plain}"
    assert re.match(r"op\s+a us\s+b us\s+delta us\s+ratio\s+changes$", lines[1])
    assert re.search(r"^matmul_1\s+[\d.]+\s+[\d.]+\s+[-+][\d.]+\s+[\d.]+x\s+memory dram->l1, grid 8x8->1x2$", out, re.M)
    assert re.search(r"^matmul_0\s+", out, re.M)
    assert re.match(r"total delta [-+][\d.]+ us$", lines[-1])


def test_a_missing_run_raises(capsys, db_url, runs):
    with pytest.raises(RunNotFound, match="no run with id 999"):
        main(runs[0], 999, db_url, True)
    assert capsys.readouterr().out == ""


def test_db_upgrade(capsys, db_url):
    assert upgrade_main(db_url) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("database ") and out.endswith(f"schema at revision {head()}, the newest")


def test_table_lists_the_unmatched_ops(capsys, db_url):
    from tests.perfdb.test_queries import store

    sessions = session_factory(open_db(db_url))
    a = store(sessions, ("fc1", 1000.0, "dram", "8x8"), ("gone", 500.0, "dram", "8x8"))
    b = store(sessions, ("fc1", 3000.0, "dram", "8x8"), ("new", 250.0, "l1", "1x1"))
    assert main(a, b, db_url, False) == 0
    out = capsys.readouterr().out
    assert re.search(r"^fc1\s+1\.00\s+3\.00\s+\+2\.00\s+3\.00x$", out, re.M)
    assert out.splitlines()[-3:] == [
        "total delta +1.75 us", f"only in a (run {a}): gone", f"only in b (run {b}): new",
    ]
