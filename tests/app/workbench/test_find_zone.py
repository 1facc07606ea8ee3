"""Find zone: an op's zones or a kind's ops, in buckets, and the zones of the buckets picked."""

from __future__ import annotations

import pytest

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.find_zone import LISTED, MAX_BUCKETS, OP_ROW, Buckets, FoundZone, pick
from tilescope.compiler.sim.tracks import parse_track
from tilescope.perfdb import timeline
from tilescope.perfdb.engine import open_db, session_factory

MODEL = "zoo:mlp?layers=2"
FC1 = "mlp.layer.0.fc1.matmul"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """An explorer over a database holding one real run of a zoo model, and the run's id."""
    db = tmp_path_factory.mktemp("find-zone") / "runs.db"
    explorer = Explorer(session_factory(open_db(f"sqlite:///{db}")))
    return explorer, explorer.ensure_run(MODEL, "wormhole_n150")


def test_an_ops_zones_are_one_per_core_it_ran_on(stored):
    explorer, run_id = stored
    record = explorer.op_record(run_id, FC1)
    zones = explorer.find_zone(run_id, op=FC1)
    assert len(zones) == record.cores == len({z.track for z in zones}) > 1
    assert all(parse_track(z.track) is not None and z.op == FC1 for z in zones)
    with explorer.sessions() as session:
        stored_zones = timeline.zones(session, run_id, depth=0, op=FC1)
    assert sorted((z.track, z.duration_ns) for z in zones) == sorted(
        (z.track, z.end_ns - z.start_ns) for z in stored_zones if parse_track(z.track) is not None
    )
    assert explorer.find_zone(run_id, op="no.such.op") == [] and explorer.find_zone(run_id, op=None) == []


def test_each_bucket_picked_lists_the_zones_its_bar_counts(stored):
    explorer, run_id = stored
    zones = explorer.find_zone(run_id, op=FC1)
    buckets = Buckets.of([z.duration_ns for z in zones])
    assert sum(buckets.counts) == len(zones) and len(buckets.counts) <= MAX_BUCKETS
    assert buckets.counts[0] and buckets.counts[-1]  # the shortest in the first, the longest in the last
    seen = []
    for i, count in enumerate(buckets.counts):
        picked = pick(zones, [i])
        assert picked.total == len(picked.listed) == count
        lo, hi = buckets.edges(i)
        assert picked.span_ns == (lo, hi)
        assert all(lo <= z.duration_ns <= hi for z in picked.listed)
        seen += picked.listed
    assert sorted(seen, key=id) == sorted(zones, key=id)  # every zone in one bucket, none twice
    every = pick(zones, range(len(buckets.counts)))
    assert every.total == len(zones) and every.span_ns == (buckets.start_ns, buckets.edges(len(buckets.counts) - 1)[1])
    durations = [z.duration_ns for z in every.listed]
    assert durations == sorted(durations, reverse=True)  # the longest first


def test_a_kinds_ops_are_picked_as_whole_ops(stored):
    explorer, run_id = stored
    ops = explorer.find_zone(run_id, kind="matmul")
    matmuls = [r for r in explorer.op_records(run_id) if r.kind == "matmul"]
    assert len(ops) == len(matmuls) == 4
    assert {(z.op, z.track, z.start_ns, z.duration_ns) for z in ops} == {
        (r.name, OP_ROW, r.start_ns, r.duration_ns) for r in matmuls
    }
    longest = max(matmuls, key=lambda r: r.duration_ns)
    last = len(Buckets.of([z.duration_ns for z in ops]).counts) - 1
    assert longest.name in [z.op for z in pick(ops, [last]).listed]
    assert explorer.find_zone(run_id, kind="no-such-kind") == []


def test_a_pick_lists_a_page_of_the_longest_and_counts_the_rest():
    zones = [FoundZone(f"op{i}", OP_ROW, float(i), float(1000 + i)) for i in range(5 * LISTED)]
    buckets = Buckets.of([z.duration_ns for z in zones])
    assert len(buckets.counts) == MAX_BUCKETS  # however many zones
    picked = pick(zones, range(MAX_BUCKETS))
    assert len(picked.listed) == LISTED and picked.total == 5 * LISTED and picked.more == 4 * LISTED
    assert [z.op for z in picked.listed[:2]] == [f"op{5 * LISTED - 1}", f"op{5 * LISTED - 2}"]
    # numbers no bar has are left out, as a pick of nothing
    assert pick(zones, [-1, MAX_BUCKETS, 10**9]).total == 0


def test_equal_durations_are_one_bucket():
    zones = [FoundZone("op", f"core 0,{i}", 0.0, 500.0) for i in range(8)]
    buckets = Buckets.of([z.duration_ns for z in zones])
    assert buckets.counts == (8,) and buckets.edges(0)[0] < 500.0 < buckets.edges(0)[1]
    assert pick(zones, [0]).total == 8
    assert Buckets.of([]).counts == () and pick([], [0]).total == 0
