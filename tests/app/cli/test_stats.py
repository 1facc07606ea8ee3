"""Per-op statistics of a stored run, through the query and the command."""

from __future__ import annotations

import json

import pytest

from tilescope.app.cli import main
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.statistics import op_statistics


def _run(capsys, db_url, ref="zoo:bert-base?layers=1&seq=128&batch=1"):
    assert main(["run", ref, "--db", db_url, "--json", "--dispatch", "trace"]) == 0
    return json.loads(capsys.readouterr().out)


def test_statistics_per_kind_add_up_to_the_run(capsys, db_url):
    run = _run(capsys, db_url)
    with session_factory(open_db(db_url))() as session:
        rows = op_statistics(session, run["run_id"], "kind")
    durations = {}
    for op in run["ops"]:
        durations.setdefault(op["type"], []).append(op["duration_ns"])
    assert {row.group: row.count for row in rows} == {k: len(v) for k, v in durations.items()}
    assert sum(row.total_ns for row in rows) == pytest.approx(sum(op["duration_ns"] for op in run["ops"]))
    assert sum(row.pct_of_run for row in rows) == pytest.approx(100)
    assert [row.total_ns for row in rows] == sorted((row.total_ns for row in rows), reverse=True)
    matmul = next(row for row in rows if row.group == "matmul")
    values = sorted(durations["matmul"])
    assert matmul.min_ns == values[0] and matmul.max_ns == values[-1]
    assert matmul.min_ns <= matmul.median_ns <= matmul.p90_ns <= matmul.max_ns
    assert matmul.mean_ns == pytest.approx(sum(values) / len(values)) and matmul.self_ns == matmul.total_ns


def test_stats_command_per_name(capsys, db_url):
    run = _run(capsys, db_url, "zoo:mlp?layers=1")
    assert main(["stats", str(run["run_id"]), "--by", "name", "--db", db_url, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["name"] for row in rows} == {op["name"] for op in run["ops"]}
    assert all(row["count"] == 1 and row["p90_ns"] == row["total_ns"] for row in rows)
    assert main(["stats", str(run["run_id"]), "--db", db_url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["kind", "count", "total"] and table[1].startswith("matmul")
    assert main(["stats", "999", "--db", db_url]) == 2


def test_stats_ends_with_the_load_time_apart_from_the_shares_per_step(capsys, db_url):
    from tilescope.app.workbench.load_time import kinds_text, load_line
    from tilescope.perfdb.records import LoadOp
    from tests.perfdb.load_work import store_hoisted

    sessions = session_factory(open_db(db_url))
    moved = {"mlp.layer.0.fc1.matmul", "mlp.layer.1.fc1.matmul"}
    run_id, sim = store_hoisted(sessions, moved)
    assert main(["stats", str(run_id), "--by", "name", "--db", db_url]) == 0
    table = capsys.readouterr().out.splitlines()
    load = [LoadOp.of(op) for op in sim.load_ops]
    assert table[-1] == f"{load_line(len(load), sim.load_ns)}, not in % run: {kinds_text(load)}"
    assert table[-1].startswith(f"load time (const-eval, once per model load): {len(load)} ops, ")
    rows, idle = table[1:-2], table[-2]
    assert {row.split()[0] for row in rows} == {op.name for op in sim.ops}  # the step's ops alone
    # with the time no op runs (the host issuing the next), the shares are of the whole step
    assert idle.split()[0] == "host/idle" and float(idle.split()[1]) == pytest.approx(
        (sim.total_ns - sum(op.duration_ns for op in sim.ops)) / 1e3, abs=0.01
    )
    assert sum(float(row.split()[-1]) for row in [*rows, idle]) == pytest.approx(100, abs=0.2)
    assert main(["stats", str(run_id), "--db", db_url, "--json"]) == 0
    per_kind = json.loads(capsys.readouterr().out)
    assert sum(row["total_ns"] for row in per_kind) == pytest.approx(sim.device_ns)  # load time left out


def test_stats_of_a_run_without_load_work_has_no_footer(capsys, db_url):
    run = _run(capsys, db_url, "zoo:mlp?layers=1")
    assert main(["stats", str(run["run_id"]), "--db", db_url]) == 0
    assert "load time" not in capsys.readouterr().out
