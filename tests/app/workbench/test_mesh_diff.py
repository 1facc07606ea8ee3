"""app.workbench.diff.compare of a run on one device against one on eight: each device's step side
by side, and the device delta split exactly, the collectives' part named."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from tilescope.app.workbench.device_split import DevicePair, DeviceSplit
from tilescope.app.workbench.diff import Comparison, compare, device_parts, device_table
from tilescope.perfdb.diff import OnlyIn, OpDelta, RunDiff, RunTimes, Sides
from tilescope.perfdb.meshes import RunMesh
from tests.perfdb.test_meshes import one_vs_eight  # noqa: F401  # the fixture

PARTS = ("compute", "collectives", "overlap", "idle")


@pytest.fixture
def found(one_vs_eight):  # noqa: F811
    sessions, one, eight = one_vs_eight
    with sessions() as session:
        return compare(session, one, eight)


def test_each_device_side_by_side_with_a_dash_for_the_devices_one_run_lacks(found):
    rows = found.devices
    assert [row.device for row in rows] == [f"device {d}" for d in range(8)]
    assert rows[0].a is not None and all(row.a is None for row in rows[1:])
    # one program on every device
    assert all(
        (row.b.compute_ns, row.b.collectives_ns) == (rows[0].b.compute_ns, rows[0].b.collectives_ns) for row in rows
    )
    times = found.diff.times
    for split, step in ((rows[0].a, times.a), (rows[0].b, times.b)):
        # compute + collectives - overlap + idle is the step
        busy = split.compute_ns + split.collectives_ns - split.overlap_ns
        assert busy + split.idle_ns == pytest.approx(step.total_ns)
    assert rows[0].a.collectives_ns == rows[0].a.overlap_ns == 0.0
    assert rows[0].b.collectives_ns == pytest.approx(sum(op.ns for op in found.diff.collectives.inserted))
    # in JSON each side's split without its device, which the row names
    assert found.to_json()["devices"][7] == {
        "device": "device 7",
        "a": None,
        "b": {f"{p}_ns": getattr(rows[7].b, f"{p}_ns") for p in PARTS},
    }
    lines = device_table(found)
    assert lines[1].split() == ["device", *(w for p in PARTS for w in (p, "a", p, "b"))]
    assert lines[2].startswith("device 0") and "-" not in lines[2].split()
    assert lines[3].split()[2::2] == ["-"] * 4  # device 1: nothing of a


def test_the_device_delta_is_the_sum_of_its_parts_and_names_the_collectives(found):
    said = device_parts(found)
    head, _, parts = said.partition(" = ")
    terms, _, overlap = parts.partition("; ")
    values = [float(v.replace(",", "")) for v in re.findall(r"([-+][\d,]+\.\d\d) us", terms)]
    d = found.diff
    assert head == f"device {d.device_delta_ns / 1e3:+,.2f} us"
    assert sum(values) == pytest.approx(d.device_delta_ns / 1e3, abs=0.005 * len(values))
    inserted = d.collectives.inserted
    assert f"collectives ({len(inserted)} inserted) {sum(op.ns for op in inserted) / 1e3:+,.2f} us" in terms
    assert "overlap on the device" not in terms  # nothing left over
    shared = found.devices[0].b.overlap_ns
    # here every collective feeds the next op, so none hides under compute, and the line says nothing of it
    assert shared == 0 and overlap == ""
    # the compute ops of both runs: each device's own time, all of them counted
    faster = [op.delta_ns for op in d.ops if op.delta_ns < 0]
    assert f"{len(faster)} faster {sum(faster) / 1e3:+,.2f} us" in terms


def _diff(**fields) -> RunDiff:
    """A diff of two runs on one T3K that changed nothing but `fields`."""
    times, mesh = RunTimes(0.0, 0.0, 0.0, 0.0, 0), RunMesh(8, (("model", 8),), "t3k")
    unchanged = RunDiff(
        a=1,
        b=2,
        kinds=Sides("simulated", "simulated"),
        alignment="name",
        warnings=(),
        settings=(),
        total_delta_ns=0.0,
        device_delta_ns=0.0,
        host_delta_ns=0.0,
        load_delta_ns=0.0,
        times=Sides(times, times),
        ops=(),
        meshes=Sides(mesh, mesh),
        removed=(),
        inserted=(),
        collectives=OnlyIn((), ()),
        moved_to_load=(),
        moved_into_step=(),
        overrides=Sides((), ()),
        top_regressions=(),
        top_improvements=(),
    )
    return replace(unchanged, **fields)


def test_collective_time_hidden_under_compute_is_named_apart():
    """Two runs on 8 devices whose one all_reduce takes 40 us; in b it overlaps 30 us of compute."""
    split = dict(compute_ns=100_000.0, collectives_ns=40_000.0, idle_ns=0.0)
    ops = (OpDelta("mm", "matmul", 20_000.0, 10_000.0, -10_000.0, 0.5, ()),)
    ops += (OpDelta("mm.all_reduce#1", "all_reduce", 40_000.0, 40_000.0, 0.0, 1.0, ()),)
    devices = (
        DevicePair(
            "device 0",
            DeviceSplit("device 0", **split, overlap_ns=0.0),
            DeviceSplit("device 0", **split, overlap_ns=30_000.0),
        ),
    )
    assert device_parts(Comparison(_diff(ops=ops, device_delta_ns=-10_000.0), devices)) == (
        "device -10.00 us = 1 faster -10.00 us; of the collectives, +30.00 us overlapped by compute"
    )
