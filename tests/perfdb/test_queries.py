"""diff_runs: two stored runs compared op by op, matched by stable name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfdb.engine import open_db, session_factory
from perfdb.queries import RunNotFound, diff_runs
from perfdb.store import NewRun, save_run

KEYS = {"a", "b", "total_delta_ns", "ops", "unmatched", "top_regressions", "top_improvements"}


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


def store(sessions, *ops, total_ns=None) -> int:
    """A run of ops given as (name, duration_ns, memory, grid), one after the other."""
    rows, start = [], 0.0
    for name, duration, memory, grid in ops:
        rows.append({
            "name": name, "kind": "matmul", "start_ns": start, "duration_ns": duration, "flops": 10**9,
            "bytes": {"dram": 100.0}, "bound": "dram", "memory": memory, "grid": grid, "cores": 64,
            "roofline_ns": duration / 2,
        })
        start += duration
    new = NewRun(
        model_ref="zoo:mlp", model_name="mlp", source_hash="h", source_text="t", target="wormhole_n150",
        total_ns=start if total_ns is None else total_ns, device_ns=start, ops=rows, zones=[],
    )
    with sessions() as s:
        return save_run(s, new)


def diff(sessions, a, b) -> dict:
    with sessions() as s:
        return diff_runs(s, a, b)


def test_matched_ops_their_deltas_ratios_changes_and_order(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"), ("fc2", 200.0, "dram", "8x8"), ("act", 50.0, "dram", "8x8"),
              ("gone", 7.0, "dram", "8x8"), ("free", 0.0, "dram", "8x8"))
    b = store(sessions, ("new", 3.0, "l1", "1x1"), ("fc1", 40.0, "l1", "2x2"), ("fc2", 260.0, "dram", "4x8"),
              ("act", 50.0, "dram", "8x8"), ("free", 5.0, "l1", "8x8"))
    d = diff(sessions, a, b)
    assert set(d) == KEYS
    assert (d["a"], d["b"]) == (a, b)
    assert d["total_delta_ns"] == pytest.approx((40 + 260 + 50 + 5 + 3) - (100 + 200 + 50 + 7))
    ops = {op["name"]: op for op in d["ops"]}
    assert [op["name"] for op in d["ops"]] == ["fc1", "fc2", "free", "act"]  # by |delta| descending
    assert ops["fc1"] == {
        "name": "fc1", "a_ns": 100.0, "b_ns": 40.0, "delta_ns": -60.0, "ratio": pytest.approx(0.4),
        "changes": ["memory dram->l1", "grid 8x8->2x2"],
    }
    assert (ops["fc2"]["delta_ns"], ops["fc2"]["changes"]) == (60.0, ["grid 8x8->4x8"])
    assert ops["fc2"]["ratio"] == pytest.approx(1.3)
    assert (ops["act"]["delta_ns"], ops["act"]["ratio"], ops["act"]["changes"]) == (0.0, 1.0, [])
    assert (ops["free"]["ratio"], ops["free"]["changes"]) == (None, ["memory dram->l1"])  # took no time in a
    assert d["unmatched"] == {"a": ["gone"], "b": ["new"]}
    assert d["top_regressions"] == ["fc2", "free"]
    assert d["top_improvements"] == ["fc1"]


def test_a_run_against_itself_changes_nothing(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"), ("fc2", 200.0, "l1", "2x2"))
    d = diff(sessions, a, a)
    assert d["total_delta_ns"] == 0
    assert [(op["delta_ns"], op["ratio"], op["changes"]) for op in d["ops"]] == [(0.0, 1.0, [])] * 2
    assert d["unmatched"] == {"a": [], "b": []} and d["top_regressions"] == d["top_improvements"] == []


def test_top_lists_keep_the_five_largest(sessions):
    names = [f"op_{i}" for i in range(8)]
    a = store(sessions, *[(n, 100.0, "dram", "8x8") for n in names])
    b = store(sessions, *[(n, 100.0 + 10 * i, "dram", "8x8") for i, n in enumerate(names)])
    c = store(sessions, *[(n, 100.0 - 10 * i, "dram", "8x8") for i, n in enumerate(names)])
    assert diff(sessions, a, b)["top_regressions"] == ["op_7", "op_6", "op_5", "op_4", "op_3"]
    assert diff(sessions, a, b)["top_improvements"] == []
    assert diff(sessions, a, c)["top_improvements"] == ["op_7", "op_6", "op_5", "op_4", "op_3"]
    assert diff(sessions, c, b)["top_regressions"] == ["op_7", "op_6", "op_5", "op_4", "op_3"]  # 0 delta: op_0


def test_a_name_recorded_twice_sums_its_durations(sessions):
    a = store(sessions, ("loop", 10.0, "dram", "8x8"), ("loop", 30.0, "dram", "8x8"))
    b = store(sessions, ("loop", 10.0, "dram", "8x8"))
    (op,) = diff(sessions, a, b)["ops"]
    assert (op["a_ns"], op["b_ns"], op["delta_ns"], op["ratio"]) == (40.0, 10.0, -30.0, 0.25)


def test_the_total_delta_is_the_runs_totals_not_the_ops(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"), total_ns=1000.0)  # e.g. host dispatch between ops
    b = store(sessions, ("fc1", 100.0, "dram", "8x8"), total_ns=400.0)
    assert diff(sessions, a, b)["total_delta_ns"] == -600.0


def test_a_missing_run(sessions):
    a = store(sessions, ("fc1", 100.0, "dram", "8x8"))
    with pytest.raises(RunNotFound, match=f"no run with id {a + 1}"):
        diff(sessions, a, a + 1)
    with pytest.raises(RunNotFound):
        diff(sessions, a + 1, a)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1e9), min_size=1, max_size=30), st.sampled_from([0, 10, 50, 90, 100]))
def test_statistics_percentiles_are_numpys(values, q):
    import numpy as np

    from perfdb.queries import _percentile

    assert _percentile(sorted(values), q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)


def test_zones_made_on_the_fly_merge_as_stored_ones_do():
    from perfdb import lod
    from perfdb.queries import merged

    # 1,000 ops of 1 us back to back, then one of 1 ms
    names = [f"op_{i}" for i in range(1001)]
    start = [1e3 * i for i in range(1001)]
    end = [s + 1e3 for s in start[:-1]] + [start[-1] + 1e6]
    exact = merged("device", names, start, end, 0.0)
    assert [i.name for i in exact] == names and all(i.count == 1 for i in exact)
    coarse = merged("device", names, start, end, lod.width(4))  # 25.6 us buckets
    assert len(coarse) < 100 and coarse[-1].name == "op_1000" and coarse[-1].count == 1
    assert sum(i.count for i in coarse) == 1001 and all(i.track == "device" for i in coarse)
    assert [i.start_ns for i in coarse] == sorted(i.start_ns for i in coarse)
    assert merged("device", [], [], [], lod.width(4)) == []
