"""perfdb.timeline: zones made on the fly merge as stored ones do (the stored ones: test_lod, test_blocks)."""

from __future__ import annotations

from tilescope.perfdb import lod
from tilescope.perfdb.timeline import merged


def test_zones_made_on_the_fly_merge_as_stored_ones_do():
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
