"""app.workbench.diff.compare of a run on one device against one on eight: each device's step side
by side, and the device delta split exactly, the collectives' part named."""

from __future__ import annotations

import re

import pytest

from tilescope.app.workbench.diff import compare, device_parts, device_table
from tests.perfdb.test_meshes import one_vs_eight  # noqa: F401  # the fixture

PARTS = ("compute", "collectives", "overlap", "idle")


@pytest.fixture
def found(one_vs_eight):  # noqa: F811
    sessions, one, eight = one_vs_eight
    with sessions() as session:
        return compare(session, one, eight)


def test_each_device_side_by_side_with_a_dash_for_the_devices_one_run_lacks(found):
    rows = found["devices"]
    assert [row["device"] for row in rows] == [f"device {d}" for d in range(8)]
    assert rows[0]["a"] is not None and all(row["a"] is None for row in rows[1:])
    assert all(row["b"] == rows[0]["b"] for row in rows)  # one program on every device
    times = found["times"]
    for side in ("a", "b"):
        split = rows[0][side]
        # compute + collectives - overlap + idle is the step
        busy = split["compute_ns"] + split["collectives_ns"] - split["overlap_ns"]
        assert busy + split["idle_ns"] == pytest.approx(times[side]["total_ns"])
    assert rows[0]["a"]["collectives_ns"] == rows[0]["a"]["overlap_ns"] == 0.0
    assert rows[0]["b"]["collectives_ns"] == pytest.approx(sum(op["ns"] for op in found["collectives"]["inserted"]))
    lines = device_table(found)
    assert lines[1].split() == ["device", *(w for p in PARTS for w in (p, "a", p, "b"))]
    assert lines[2].startswith("device 0") and "-" not in lines[2].split()
    assert lines[3].split()[2::2] == ["-"] * 4  # device 1: nothing of a


def test_the_device_delta_is_the_sum_of_its_parts_and_names_the_collectives(found):
    said = device_parts(found)
    head, _, parts = said.partition(" = ")
    terms, _, overlap = parts.partition("; ")
    values = [float(v.replace(",", "")) for v in re.findall(r"([-+][\d,]+\.\d\d) us", terms)]
    assert head == f"device {found['device_delta_ns'] / 1e3:+,.2f} us"
    assert sum(values) == pytest.approx(found["device_delta_ns"] / 1e3, abs=0.005 * len(values))
    inserted = found["collectives"]["inserted"]
    assert f"collectives ({len(inserted)} inserted) {sum(op['ns'] for op in inserted) / 1e3:+,.2f} us" in terms
    assert "overlap on the device" not in terms  # nothing left over
    shared = found["devices"][0]["b"]["overlap_ns"]
    # here every collective feeds the next op, so none hides under compute, and the line says nothing of it
    assert shared == 0 and overlap == ""
    # the compute ops of both runs: each device's own time, all of them counted
    faster = [op["delta_ns"] for op in found["ops"] if op["delta_ns"] < 0]
    assert f"{len(faster)} faster {sum(faster) / 1e3:+,.2f} us" in terms


def test_collective_time_hidden_under_compute_is_named_apart():
    """Two runs on 8 devices whose one all_reduce takes 40 us; in b it overlaps 30 us of compute."""
    split = dict(compute_ns=100_000.0, collectives_ns=40_000.0, idle_ns=0.0)
    found = dict(
        ops=[
            dict(name="mm", kind="matmul", delta_ns=-10_000.0),
            dict(name="mm.all_reduce#1", kind="all_reduce", delta_ns=0.0),
        ],
        inserted=[],
        removed=[],
        moved_to_load=[],
        moved_into_step=[],
        collectives={"inserted": [], "removed": []},
        device_delta_ns=-10_000.0,
        devices=[dict(device="device 0", a={**split, "overlap_ns": 0.0}, b={**split, "overlap_ns": 30_000.0})],
    )
    assert device_parts(found) == (
        "device -10.00 us = 1 faster -10.00 us; of the collectives, +30.00 us overlapped by compute"
    )
