"""Chrome Trace Event export, checked field by field as Perfetto and tracy-import-chrome read it."""

from __future__ import annotations

import json

import pytest

from tilescope.app.cli import main
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.exports import chrome_trace


def test_chrome_trace_of_a_stored_run(capsys, db_url, tiny_path):
    assert main(["run", tiny_path, "--db", db_url, "--json", "--override", "matmul_0=1x4:l1:block_sharded"]) == 0
    run = json.loads(capsys.readouterr().out)
    with session_factory(open_db(db_url))() as session:
        trace = chrome_trace(session, run["run_id"])
    events = trace["traceEvents"]
    assert set(trace) >= {"traceEvents"}
    for event in events:
        assert event["ph"] in ("M", "X", "C")
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)  # Tracy requires integers
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[1] == "core 0,0" and names[2] == "core 0,0/reader"  # a core's row, then its engines
    assert len(set(names.values())) == len(names)
    complete = [e for e in events if e["ph"] == "X"]
    ops = {o["name"]: o for o in run["ops"]}
    first = next(e for e in complete if e["name"] == "matmul_0" and e["cat"] == "op")
    assert first["ts"] == ops["matmul_0"]["start_ns"] / 1e3  # microseconds
    assert 0 < first["dur"] <= ops["matmul_0"]["duration_ns"] / 1e3 + 1e-9
    assert names[first["tid"]].startswith("core ")
    assert {e["cat"] for e in complete} == {"op", "phase"}
    assert all(e["args"]["op"] in ops for e in complete)
    counters = [e for e in events if e["ph"] == "C"]
    assert any(e["name"].startswith("L1 core") and "l1_bytes" in e["args"] for e in counters)
    dram = [e for e in counters if e["name"] == "dram bandwidth"]
    assert dram and all(set(e["args"]) == {"dram_bytes_per_s"} for e in dram)


def test_export_command_writes_the_trace(capsys, db_url, tiny_path, tmp_path):
    assert main(["run", tiny_path, "--db", db_url, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    out = tmp_path / "trace.json"
    assert main(["export", str(run_id), "--db", db_url, "--format", "chrome", "-o", str(out)]) == 0
    trace = json.loads(out.read_text())
    assert sum(1 for e in trace["traceEvents"] if e["ph"] == "X") > 0


def test_load_time_work_is_a_process_of_its_own(capsys, db_url):
    ref = "zoo:llama-3.2-1b?mode=decode&layers=1"  # weights transposed and cast once, at load
    assert main(["run", ref, "--db", db_url, "--json", "--dispatch", "trace"]) == 0
    run = json.loads(capsys.readouterr().out)
    with session_factory(open_db(db_url))() as session:
        events = chrome_trace(session, run["run_id"])["traceEvents"]
    load = [e for e in events if e["ph"] == "X" and e["cat"] == "load"]
    assert [e["name"] for e in load] == [o["name"] for o in run["load_ops"]] and load
    assert {e["pid"] for e in load} == {1} and not any(
        e["pid"] == 1 and e["cat"] != "load" for e in events if e["ph"] == "X"
    )
    assert load[0]["ts"] == 0 and all(a["ts"] + a["dur"] == pytest.approx(b["ts"]) for a, b in zip(load, load[1:]))
    assert sum(e["dur"] for e in load) == pytest.approx(run["load_ns"] / 1e3)
    step = {e["args"]["op"] for e in events if e["ph"] == "X" and e["pid"] == 0}
    assert step.isdisjoint(e["name"] for e in load)  # not in the step
    process = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert "once per load" in process[1]
