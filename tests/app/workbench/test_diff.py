"""The note a re-run shows at once: its delta against the run it came from, from what the page holds."""

from __future__ import annotations

from types import SimpleNamespace

from tilescope.app.workbench.diff import OpMove, rerun_delta, time_split
from tilescope.perfdb.diff import Sides


def _view(run_id, total_ns, device_ns, load=()):
    return SimpleNamespace(
        id=run_id, total_ns=total_ns, device_ns=device_ns, load_ops=tuple(SimpleNamespace(name=n) for n in load)
    )


def test_a_reruns_delta_names_what_moved_and_splits_the_total():
    a = _view(1, 10_000.0, 6_000.0)
    b = _view(2, 9_500.0, 4_000.0, load=["w.transpose"])
    a_ops = {"fc1": 3_000.0, "fc2": 2_000.0, "w.transpose": 1_000.0}
    b_ops = {"fc1": 1_500.0, "fc2": 2_000.0, "fc1.in0.to_layout": 500.0}
    found = rerun_delta(a, b, a_ops, b_ops)
    assert (found.a, found.b, found.total_ns) == (1, 2, Sides(10_000.0, 9_500.0))
    assert found.total_delta_ns == -500.0
    assert (found.device_delta_ns, found.host_delta_ns) == (-2_000.0, 1_500.0)
    # by size, an unchanged op left out; the weight transpose went to load time, not away
    assert found.moves == (
        OpMove("fc1", -1_500.0, ""),
        OpMove("w.transpose", -1_000.0, "moved to load time"),
        OpMove("fc1.in0.to_layout", 500.0, "inserted"),
    )
    assert found.removed == () and found.inserted == ("fc1.in0.to_layout",) and found.ops_added == 0
    # the device got 2 us faster, the total only 0.5: the note says the host holds it back
    assert "host dispatch bound" in time_split(found)


def test_an_op_back_in_the_step_is_neither_inserted_nor_counted_twice():
    a = _view(1, 1_000.0, 800.0, load=["w.transpose"])
    b = _view(2, 1_300.0, 1_100.0)
    found = rerun_delta(a, b, {"fc1": 800.0}, {"fc1": 800.0, "w.transpose": 300.0})
    assert found.inserted == () and found.moved_into_step == ("w.transpose",)
    assert found.moves == (OpMove("w.transpose", 300.0, "moved into the step"),)
    assert "1 more op to issue" in time_split(found)
