"""perfdb.meshes and diff_runs across device counts: a small llama on one Wormhole against the same
model tensor parallel over a T3K's eight, compiled and simulated for real."""

from __future__ import annotations

import json
import math

import pytest
from sqlalchemy import update

from tilescope.app.workbench.runs import execute
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.meshes import RunMesh, devices_warning, mesh_text, run_mesh
from tilescope.perfdb.diff import Sides, diff_runs
from tilescope.perfdb.runs import get_run, op_records
from tilescope.perfdb.schema import Run

LLAMA = "zoo:llama-3.2-1b?layers=1&seq=64"
DOWN = "model.layers.0.mlp.down_proj.matmul"


@pytest.fixture
def one_vs_eight(db_url):
    """(sessions, the run on wormhole_n150, the run on t3k)."""
    sessions = session_factory(open_db(db_url))
    one = execute(sessions, LLAMA, "wormhole_n150").run_id
    eight = execute(sessions, LLAMA, "t3k").run_id
    return sessions, one, eight


def test_a_run_keeps_its_mesh_and_the_diff_warns_of_the_other_device_count(one_vs_eight):
    sessions, one, eight = one_vs_eight
    with sessions() as session:
        meshes = [run_mesh(get_run(session, i)) for i in (one, eight)]
        d = diff_runs(session, one, eight)
    assert meshes == [RunMesh(1, (), "wormhole_n150"), RunMesh(8, (("model", 8),), "t3k")]
    assert d.meshes == Sides(*meshes)
    assert json.loads(json.dumps(d.to_json()))["meshes"] == {
        "a": {"devices": 1, "mesh": [], "target": "wormhole_n150"},
        "b": {"devices": 8, "mesh": [["model", 8]], "target": "t3k"},
    }
    assert d.warnings[-1] == "devices: 1 vs 8 (mesh model=8 on t3k)"
    # the other way round, and two runs on one mesh say nothing of devices
    with sessions() as session:
        assert diff_runs(session, eight, one).warnings[-1] == "devices: 8 vs 1 (mesh model=8 on t3k)"
        assert not any(w.startswith("devices") for w in diff_runs(session, eight, eight).warnings)


def test_compute_ops_match_by_name_and_the_collectives_are_listed_apart(one_vs_eight):
    sessions, one, eight = one_vs_eight
    with sessions() as session:
        d = diff_runs(session, one, eight)
        records = {r.name: r for r in op_records(session, eight, tensors=True)}
    ops = {op.name: op for op in d.ops}
    # one device's time: an eighth of the weights each, so the matmul is faster on each device
    assert ops[DOWN].kind == "matmul" and ops[DOWN].b_ns < ops[DOWN].a_ns
    assert ops[DOWN].b_ns == records[DOWN].duration_ns
    assert not any(op.kind in COLLECTIVES for op in d.ops + d.inserted + d.removed)
    inserted = d.collectives.inserted
    assert d.collectives.removed == ()
    assert [op.name for op in inserted] == [
        r.name for r in sorted(records.values(), key=lambda r: r.start_ns) if r.kind in COLLECTIVES
    ]
    kinds = {op.name: op.kind for op in inserted}
    assert kinds[f"{DOWN}.all_reduce"] == "all_reduce" and "all_gather" in kinds.values()
    for op in inserted:
        record = records[op.name]
        assert (op.group, op.axes) == (8, "model")
        assert op.bytes_per_device == record.bytes["link"] > 0
        assert op.ns == record.duration_ns
    # a ring all_reduce over 8 devices sends 2 * 7/8 of its (bf16) operand from each device
    reduce = next(op for op in inserted if op.kind == "all_reduce")
    operand = next(t for t in records[reduce.name].tensors if t["role"] == "in0")
    assert operand["dtype"] == "bf16"
    assert reduce.bytes_per_device == pytest.approx(2 * 7 / 8 * math.prod(operand["shape"]) * 2)


def test_a_run_stored_before_meshes_were_kept_has_them_from_its_rows(one_vs_eight):
    sessions, one, eight = one_vs_eight
    with sessions() as session:
        session.execute(update(Run).where(Run.id == eight).values(mesh=[]))
        session.commit()
    with sessions() as session:
        assert run_mesh(get_run(session, eight)) == RunMesh(8, (("model", 8),), "t3k")
        d = diff_runs(session, one, eight)
    assert {op.group for op in d.collectives.inserted} == {8}


def test_mesh_text_and_the_warning_of_two_meshes():
    assert mesh_text((("batch", 2), ("model", 4))) == "batch=2,model=4" and mesh_text(()) == "-"
    two, eight = RunMesh(2, (("model", 2),), "wormhole_n300"), RunMesh(8, (("batch", 2), ("model", 4)), "t3k")
    assert (
        devices_warning(two, eight) == "devices: 2 vs 8 (mesh model=2 on wormhole_n300 vs mesh batch=2,model=4 on t3k)"
    )
    assert devices_warning(eight, eight) is None
