"""Two processes storing runs in one database at once (a fresh one: they also race to create its
schema, and to store the model both run) lose nothing: every run each reports is there with all its
op records, zones and counters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.timeline import counters, zones
from tilescope.perfdb.schema import Model, OpRecord, Run, Target

RUNS, OPS, ZONES_PER_OP, COUNTERS = 8, 40, 50, 30

WRITER = f"""
import json, sys
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.compiler.sim.records import OpTiming
from tilescope.perfdb.records import CounterColumns, NewRun, ZoneColumns
from tilescope.perfdb.store import save_run

url, label = sys.argv[1], sys.argv[2]
sys.stdin.readline()  # start together
sessions = session_factory(open_db(url))
ids = []
for k in range({RUNS}):
    ops = [OpTiming(name=f"op_{{i}}", kind="matmul", start_ns=float(i), duration_ns=1.0, flops=10**12,
                bytes={{"dram": 1.0}}, bound="dram", memory="dram", grid="8x8", cores=64, roofline_ns=0.5)
           for i in range({OPS})]
    zones = [(f"core {{z}}", 0, f"op_{{i}}", float(i), i + 1.0, f"op_{{i}}")
             for i in range({OPS}) for z in range({ZONES_PER_OP})]
    counters = [("dram", "dram_bw", float(t), 1e9) for t in range({COUNTERS})]
    new = NewRun(model_ref="zoo:mlp", model_name="mlp", source_hash="h", source_text="t", target="wormhole_n150",
                 total_ns={OPS}.0, device_ns={OPS}.0, ops=ops, zones=ZoneColumns.from_rows(zones),
                 counters=CounterColumns.from_rows(counters), label=f"{{label}}-{{k}}")
    with sessions() as s:
        ids.append(save_run(s, new))
print(json.dumps(ids))
"""


def test_two_writers_at_once_lose_nothing(db_url):
    root = Path(__file__).resolve().parents[2]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db_url, f"p{i}"],
            cwd=root,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    for writer in writers:
        writer.stdin.write("go\n")
        writer.stdin.flush()
    reported = {}
    for i, writer in enumerate(writers):
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        reported[f"p{i}"] = json.loads(out)

    every = reported["p0"] + reported["p1"]
    assert len(set(every)) == 2 * RUNS
    with session_factory(open_db(db_url))() as s:
        labels = dict(s.execute(select(Run.id, Run.label)).all())
        assert labels == {run_id: f"{p}-{k}" for p, ids in reported.items() for k, run_id in enumerate(ids)}

        def per_run(table):
            return dict(s.execute(select(table.run_id, func.count()).group_by(table.run_id)).all())

        assert per_run(OpRecord) == {run_id: OPS for run_id in every}
        assert all(len(zones(s, run_id)) == OPS * ZONES_PER_OP for run_id in every)
        assert all(len(counters(s, run_id)) == COUNTERS for run_id in every)
        # both stored the same new model and target first thing: one row each, shared by all runs
        assert (
            s.scalar(select(func.count()).select_from(Model)) == s.scalar(select(func.count()).select_from(Target)) == 1
        )
        assert set(s.scalars(select(Run.model_id))) == set(s.scalars(select(Model.id)))
