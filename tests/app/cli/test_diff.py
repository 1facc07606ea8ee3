"""app.workbench.diff (`tilescope diff A B`, and the comparison the app shows) on runs compiled and simulated
for real; app.db.upgrade_main."""

from __future__ import annotations

from tilescope.overrides import parse_item

import json
from dataclasses import asdict
import re

import pytest

from tilescope.app.cli.db import upgrade_main
from tilescope.app.cli.diff import main
from tilescope.app.workbench.diff import SHOWN, SHOWN_CHANGES, compare, device_parts
from tilescope.app.workbench.runs import execute
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.migrate import head
from tilescope.perfdb.errors import RunNotFound
from tests.perfdb.test_meshes import one_vs_eight  # noqa: F401  # the fixture
from tests.perfdb.test_diff import FC1, FC2, MLP, KEYS, change, output, stored_run

OP_KEYS = {
    "name",
    "kind",
    "a_ns",
    "b_ns",
    "delta_ns",
    "ratio",
    "changes",
    "b_name",
    "device",
    "error_ns",
    "within_error",
}


@pytest.fixture
def runs(db_url, tiny_path):
    """(plain, tuned): the tiny MLP, then with matmul_1 sharded in L1 on 1x2 cores."""
    sessions = session_factory(open_db(db_url))
    plain = execute(sessions, tiny_path).run_id
    tuned = execute(sessions, tiny_path, options=CompileOptions([parse_item("matmul_1=1x2:l1:block_sharded")])).run_id
    return plain, tuned


def as_json(*changes) -> list[dict]:
    """Changes as `--json` prints them."""
    return [asdict(c) for c in changes]


def diff_json(capsys, a, b, db_url) -> dict:
    assert main(a, b, db_url, True) == 0
    return json.loads(capsys.readouterr().out)


def test_json_of_a_tuned_run_against_the_plain_one(capsys, db_url, runs):
    plain, tuned = runs
    d = diff_json(capsys, plain, tuned, db_url)
    assert list(d) == [*KEYS, "devices"] and (d["a"], d["b"]) == (plain, tuned)
    assert all(set(op) == OP_KEYS for op in d["ops"])
    ops = {op["name"]: op for op in d["ops"]}
    assert set(ops) == {"matmul_0", "matmul_1"} and d["removed"] == d["inserted"] == []
    assert ops["matmul_1"]["changes"] == as_json(
        output("memory", "dram", "l1"),
        output("memory_layout", "interleaved", "block_sharded"),
        change("grid", "8x8", "1x2"),
    )
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
    assert re.match(r"op\s+a us\s+b us\s+delta us\s+\+- us\s+ratio\s+changes$", lines[1])
    assert re.search(
        r"^matmul_1\s+[\d.]+\s+[\d.]+\s+[-+][\d.]+\s+[\d.]+\s+[\d.]+x\s+(within the model's error; )?"
        r"memory dram->l1, memory_layout interleaved->block_sharded, grid 8x8->1x2$",
        out,
        re.M,
    )
    assert not re.search(r"^matmul_0\s+", out, re.M)  # it kept its time and layout: counted
    assert "1 op of both runs unchanged (time and parameters); --json lists every op" in lines
    assert lines[-4] == f"overrides only in run {tuned}: matmul_1=1x2:l1:block_sharded"
    assert re.match(r"total delta [-+][\d.]+ us \([\d.]+ us -> [\d.]+ us\)$", lines[-3])
    assert re.match(r"device [-+][\d.,]+ us, host/idle [-+][\d.,]+ us", lines[-2])
    assert re.match(r"device [-+][\d.]+ us = 1 (op slower|faster) ", lines[-1])
    assert not any(line.startswith(("collectives", "per device")) for line in lines)  # one device each


def test_a_missing_run_raises(capsys, db_url, runs):
    with pytest.raises(RunNotFound, match="no run with id 999"):
        main(runs[0], 999, db_url, True)
    assert capsys.readouterr().out == ""


def test_db_upgrade(capsys, db_url):
    assert upgrade_main(db_url) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("database ") and out.endswith(f"schema at revision {head()}, the newest")


def test_table_lists_the_ops_in_one_run_only_with_their_time(capsys, db_url):
    from tests.perfdb.test_diff import store

    sessions = session_factory(open_db(db_url))
    a = store(sessions, ("fc1", 1000.0, "dram", "8x8"), ("gone", 500.0, "dram", "8x8"))
    b = store(sessions, ("fc1", 3000.0, "dram", "8x8"), ("new", 250.0, "l1", "1x1"))
    assert main(a, b, db_url, False) == 0
    out = capsys.readouterr().out
    assert re.search(r"^fc1\s+1\.00\s+3\.00\s+\+2\.00\s+3\.00x$", out, re.M)
    assert out.splitlines()[-7:] == [
        f"removed (only in run {a}): 1 op, 0.50 us",
        "  gone  matmul             0.50 us",
        f"inserted (only in run {b}): 1 op, 0.25 us",
        "  new  matmul             0.25 us",
        "total delta +1.75 us (1.50 us -> 3.25 us)",
        "device +1.75 us, host/idle +0.00 us",
        "device +1.75 us = 1 op slower +2.00 us, 1 inserted +0.25 us, 1 removed -0.50 us",
    ]


@pytest.fixture
def mlp(db_url):
    """run(*override_items, **options) -> the id of a stored run of MLP (stored_run's options)."""
    sessions = session_factory(open_db(db_url))
    return lambda *items, **options: stored_run(sessions, MLP, items, **options)


def test_json_lists_the_kernel_parameters_override_items_set(capsys, db_url, mlp):
    plain = mlp()
    blocked = mlp(f"{FC1}=block#1x2x4:subblock#1x2:double_buffer#false")
    d = diff_json(capsys, plain, blocked, db_url)
    ops = {op["name"]: op for op in d["ops"]}
    assert ops[FC1]["changes"] == as_json(
        change("block", "default", "1x2x4"),
        change("subblock", "default", "1x2"),
        change("double_buffer", "default", "false"),
    )
    assert ops[FC2]["changes"] == [] and ops[FC1]["delta_ns"] > 0  # one step at a time, the engines take turns
    back = {op["name"]: op for op in diff_json(capsys, blocked, plain, db_url)["ops"]}
    assert back[FC1]["changes"][:1] == as_json(change("block", "1x2x4", "default"))
    # after the op's own parameters, before its inputs'
    both = mlp(f"{FC2}=fidelity#lofi:double_buffer#false", f"{FC2}=operand#1:l1:width_sharded:1x8")
    ops = {op["name"]: op for op in diff_json(capsys, plain, both, db_url)["ops"]}
    assert [(c["param"], c["operand"]) for c in ops[FC2]["changes"]] == [
        ("fidelity", None),
        ("double_buffer", None),
        ("memory", 1),
        ("memory_layout", 1),
        ("grid", 1),
    ]


def test_a_rejected_override_changed_nothing(capsys, db_url, mlp):
    plain = mlp()
    kept = mlp(f"{FC1}=block#3x3x3", keep_going=True)  # does not divide the work: rejected, stored anyway
    d = diff_json(capsys, plain, kept, db_url)
    assert d["overrides"] == {"a": [], "b": [f"{FC1}=block#3x3x3"]}
    assert [op["changes"] for op in d["ops"]] == [[], []]


def test_text_of_a_host_dispatch_bound_pair_says_where_the_time_went(capsys, db_url, mlp):
    plain, tuned = mlp(), mlp(f"{FC1}=1x8:l1:width_sharded:bfp8:fidelity#lofi")
    d = diff_json(capsys, plain, tuned, db_url)
    assert main(plain, tuned, db_url, False) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert re.search(
        rf"^{re.escape(FC1)}\s+.*  (within the model's error; )?memory dram->l1, "
        r"memory_layout interleaved->width_sharded, dtype bf16->bfp8, grid 8x8->1x8, fidelity hifi2->lofi$",
        captured.out,
        re.M,
    )
    assert re.search(
        rf"^{re.escape(FC2)}\s+.*  (within the model's error; )?fidelity hifi2->lofi, operand 0 memory dram->l1, ",
        captured.out,
        re.M,
    )
    # the device got slower by both ops' deltas, the total only by the last op's
    assert captured.out.splitlines()[-2] == (
        f"host dispatch bound: device {d['device_delta_ns'] / 1e3:+z,.2f} us, "
        f"host/idle {d['host_delta_ns'] / 1e3:+z,.2f} us "
        "(the device waits on the host to issue ops, so op time turns into idle time)"
    )


def test_text_of_two_models_warns_and_keeps_its_lines_short(capsys, db_url, tiny_path):
    sessions = session_factory(open_db(db_url))
    tiny = execute(sessions, tiny_path).run_id
    big = execute(sessions, "zoo:mlp?layers=4").run_id  # eight ops, none named as the tiny model's
    d = diff_json(capsys, tiny, big, db_url)
    assert (
        d["ops"] == [] and len(d["inserted"]) == 8 and [op["name"] for op in d["removed"]] == ["matmul_0", "matmul_1"]
    )
    assert d["warnings"] and d["warnings"][0].startswith("different models")
    assert main(tiny, big, db_url, False) == 0
    captured = capsys.readouterr()
    assert captured.err == f"tilescope: warning: {d['warnings'][0]}\n"
    lines = captured.out.splitlines()
    at = lines.index(f"inserted (only in run {big}): 8 ops, {sum(op['ns'] for op in d['inserted']) / 1e3:.2f} us")
    assert [line.split()[0] for line in lines[at + 1 : at + 1 + SHOWN]] == [op["name"] for op in d["inserted"][:SHOWN]]
    assert lines[at + 1 + SHOWN] == f"  ... and {8 - SHOWN} more"
    assert max(len(line) for line in lines) < 120
    assert "device " in lines[-2] and "(6 more ops to issue)" in lines[-2]


def test_an_op_line_lists_the_first_changes_and_counts_the_rest(capsys, db_url, mlp):
    plain = mlp()
    tuned = mlp(
        f"{FC1}=1x8:l1:width_sharded:bfp8:fidelity#lofi:double_buffer#false:block#4x2x2",
        f"{FC1}=operand#1:l1:width_sharded:1x8",
    )
    changes = {op["name"]: op["changes"] for op in diff_json(capsys, plain, tuned, db_url)["ops"]}[FC1]
    assert len(changes) == SHOWN_CHANGES + 2
    assert changes[-1:] == as_json(change("grid", "1x1", "1x8", operand=1))
    assert main(plain, tuned, db_url, False) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{FC1} ")]
    assert line.endswith(
        ", block default->4x2x2, double_buffer default->false, operand 1 memory dram->l1, ... and 2 more"
    )


def test_text_names_the_settings_that_differ(capsys, db_url, mlp):
    """A trace-dispatched run against a host-dispatched one: the total moves with no op's time."""
    plain, traced = mlp(), mlp(dispatch="trace")
    d = diff_json(capsys, plain, traced, db_url)
    assert d["settings"] == [{"setting": "dispatch", "a": "host", "b": "trace"}]
    assert d["device_delta_ns"] == pytest.approx(0) and d["host_delta_ns"] < 0
    assert main(plain, traced, db_url, False) == 0
    assert "settings: dispatch host->trace" in capsys.readouterr().out.splitlines()


def test_table_lists_the_ops_moved_between_the_step_and_load_time(capsys, db_url):
    from tests.perfdb.test_diff import store

    sessions = session_factory(open_db(db_url))
    a = store(sessions, ("bias.broadcast", 300.0, "dram", "8x8"), ("fc1", 1000.0, "dram", "8x8"))
    b = store(sessions, ("fc1", 1000.0, "dram", "8x8"), load=[("weight.transpose", 4000.0), ("bias.broadcast", 200.0)])
    assert main(a, b, db_url, False) == 0
    assert capsys.readouterr().out.splitlines()[-6:] == [
        f"moved to load time in run {b} (per step in run {a}): 1 op, 0.30 us per step",
        "  bias.broadcast  matmul       0.30 us per step, 200 ns at load",
        "load time (const-eval, once per model load): none -> 2 ops, 4.20 us (+4.20 us)",
        "total delta -0.30 us (1.30 us -> 1.00 us)",
        "device -0.30 us, host/idle +0.00 us (1 fewer op to issue)",
        "device -0.30 us = 1 moved to load time -0.30 us",
    ]
    assert main(b, a, db_url, False) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-6:-3] == [
        f"moved into the step in run {a} (load time in run {b}): 1 op, 0.30 us per step",
        "  bias.broadcast  matmul       0.30 us per step, 200 ns at load",
        "load time (const-eval, once per model load): 2 ops, 4.20 us -> none (-4.20 us)",
    ]
    assert not any(line.startswith(("removed", "inserted")) for line in lines)
    d = diff_json(capsys, a, b, db_url)
    assert [op["name"] for op in d["moved_to_load"]] == ["bias.broadcast"] and d["load_delta_ns"] == 4200.0


def test_the_diff_of_runs_without_load_work_says_nothing_of_it(capsys, db_url, runs):
    assert main(*runs, db_url, False) == 0
    out = capsys.readouterr().out
    assert "load time" not in out and "moved" not in out


def test_text_and_json_of_one_device_against_eight(capsys, db_url, one_vs_eight):  # noqa: F811
    sessions, one, eight = one_vs_eight
    d = diff_json(capsys, one, eight, db_url)
    assert d["meshes"]["b"] == {"devices": 8, "mesh": [["model", 8]], "target": "t3k"}
    assert len(d["devices"]) == 8 and d["devices"][7]["a"] is None and d["devices"][7]["b"]["collectives_ns"] > 0
    assert main(one, eight, db_url, False) == 0
    captured = capsys.readouterr()
    assert "tilescope: warning: devices: 1 vs 8 (mesh model=8 on t3k)\n" in captured.err
    lines = captured.out.splitlines()
    inserted = d["collectives"]["inserted"]
    at = lines.index(
        f"collectives inserted (only in run {eight}): {len(inserted)} ops, "
        f"{sum(op['ns'] for op in inserted) / 1e3:.2f} us"
    )
    first = inserted[0]
    assert re.fullmatch(
        rf"  {re.escape(first['name'])}\s+all_reduce\s+over 8 devices \(model\), "
        rf"{first['bytes_per_device'] / 1e3:,.1f} KB sent per device, {first['ns'] / 1e3:,.2f} us",
        lines[at + 1],
    )
    assert not any(line.startswith(("inserted", "removed")) and "all_" in line for line in lines)
    table = lines.index(f"per device (us): run {one} (a) and run {eight} (b)")
    assert [line.split()[:2] for line in lines[table + 2 : table + 10]] == [["device", str(i)] for i in range(8)]
    assert lines[table + 9].split()[2::2] == ["-"] * 4  # device 7: only in b
    with sessions() as session:
        assert lines[-1] == device_parts(compare(session, one, eight)) and "collectives (" in lines[-1]
