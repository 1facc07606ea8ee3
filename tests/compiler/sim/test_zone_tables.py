"""Trace columns: a zone added once for a set of tracks is a row per track, in the order added."""

from __future__ import annotations

from tilescope.compiler.sim.zone_tables import Zone, ZoneTable


def test_zones_added_for_track_sets_spread_over_their_tracks_in_order():
    table = ZoneTable()
    a, b, c = (table.track_id(t) for t in ("core 0,0", "core 0,1", "core 1,0"))
    both, alone = table.track_set([a, b]), table.track_set([c])
    op = table.name_id("matmul_0")
    table.add(both, 0, op, 0.0, 10.0, op)
    table.add(alone, 1, table.name_id("read"), 2.0, 4.0, op)
    table.add(both, 0, table.name_id("add_1"), 10.0, 12.0, table.name_id("add_1"))
    assert list(table) == [
        Zone("core 0,0", 0, "matmul_0", 0.0, 10.0, "matmul_0"),
        Zone("core 0,1", 0, "matmul_0", 0.0, 10.0, "matmul_0"),
        Zone("core 1,0", 1, "read", 2.0, 4.0, "matmul_0"),
        Zone("core 0,0", 0, "add_1", 10.0, 12.0, "add_1"),
        Zone("core 0,1", 0, "add_1", 10.0, 12.0, "add_1"),
    ]
    assert len(table) == 5 and table.track.tolist() == [a, b, c, a, b] and table.start.tolist() == [0, 0, 2, 10, 10]
    table.add(alone, 0, op, 20.0, 30.0, op)  # columns read before are read again after an add
    assert len(table) == 6 and table.end.tolist()[-1] == 30.0


def test_an_empty_table_has_empty_columns():
    table = ZoneTable()
    assert len(table) == 0 and list(table) == [] and table.start.tolist() == []
    assert table.depth.dtype == table.op.dtype == table.track.dtype and table.start.dtype.kind == "f"
    table.track_set([table.track_id("core 0,0")])
    assert len(table) == 0
