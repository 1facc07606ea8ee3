"""Timeline blocks: columns survive packing, and a run's zones split into blocks per track and level
of at most BLOCK_ROWS, which the queries read back whole."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from tilescope.perfdb import blocks
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.timeline import timeline_window, zones
from tilescope.perfdb.records import ZoneColumns
from tilescope.perfdb.schema import TimelineBlock
from tilescope.perfdb.store import save_run

from .test_store import _new_run


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.floats(-1e12, 1e12), st.floats(0, 1e6)), max_size=50),
    st.lists(st.text(max_size=8), max_size=5),
)
def test_packed_columns_and_strings_come_back_as_they_were(rows, strings):
    columns = {
        "depth": np.array([r[0] for r in rows], np.int16),
        "start": np.array([r[1] for r in rows], np.float64),
        "busy": np.array([r[2] for r in rows], np.float64),
    }
    found, found_strings = blocks.unpack(blocks.pack(columns, strings))
    assert list(found) == list(columns) and found_strings == strings
    for name, column in columns.items():
        assert found[name].dtype == column.dtype and found[name].tolist() == column.tolist()


def test_blocks_hold_one_track_by_level_then_start_and_at_most_block_rows():
    level = np.array([0, 0, 1, 0, 0, 1])
    track = np.array([0, 1, 0, 0, 1, 0])
    start = np.array([5.0, 1.0, 2.0, 3.0, 0.0, 1.0])
    # few rows: one block per track, highest level first
    assert [rows.tolist() for rows in blocks.split(level, track, start)] == [[5, 2, 3, 0], [4, 1]]
    # a level of many rows fills blocks of its own; the few of a higher level share the first
    many = np.arange(2 * blocks.BLOCK_ROWS + 1, dtype=np.float64)
    level = np.zeros(len(many), int)
    level[:3] = 5
    split = list(blocks.split(level, np.zeros(len(many), int), many[::-1]))
    assert [len(rows) for rows in split] == [blocks.BLOCK_ROWS, blocks.BLOCK_ROWS, 1]
    assert level[split[0]].tolist()[:4] == [5, 5, 5, 0] and sorted(np.concatenate(split).tolist()) == list(
        range(len(many))
    )
    # once a block holds SHARED_ROWS, the next level starts a block of its own
    level = np.repeat([3, 2], blocks.SHARED_ROWS)
    split = list(blocks.split(level, np.zeros(len(level), int), np.arange(len(level), dtype=float)))
    assert [level[rows].tolist() for rows in split] == [[3] * blocks.SHARED_ROWS, [2] * blocks.SHARED_ROWS]


def test_a_long_track_is_stored_in_several_blocks_and_read_back_whole(db_url):
    n = 3 * blocks.BLOCK_ROWS + 7
    # 1 us zones 1 us apart on one track, two ops' names taking turns, and each with a reader phase
    trace = [("core 0,0", 0, f"op_{i % 2}", 2e3 * i, 2e3 * i + 1e3, f"op_{i % 2}") for i in range(n)]
    trace += [("core 0,0/reader", 1, "read", 2e3 * i, 2e3 * i + 500, f"op_{i % 2}") for i in range(n)]
    sessions = session_factory(open_db(db_url))
    with sessions() as s:
        run_id = save_run(s, _new_run(zones=ZoneColumns.from_rows(trace)))
    with sessions() as s:
        stored = s.execute(
            select(TimelineBlock.track, func.count(), func.sum(TimelineBlock.rows), func.max(TimelineBlock.rows))
            .where(TimelineBlock.run_id == run_id, TimelineBlock.kind == blocks.ZONES)
            .group_by(TimelineBlock.track)
        ).all()
        assert {track: (total, largest <= blocks.BLOCK_ROWS) for track, _, total, largest in stored} == {
            "core 0,0": (n, True),
            "core 0,0/reader": (n, True),
        }
        assert all(count >= 4 for _, count, _, _ in stored)
        every = zones(s, run_id)
        assert sorted((z.track, z.depth, z.name, z.start_ns, z.end_ns, z.op) for z in every) == sorted(trace)
        assert [z.start_ns for z in zones(s, run_id, op="op_1", tracks=["core 0,0"])] == [
            2e3 * i for i in range(1, n, 2)
        ]
        assert zones(s, run_id, op="no such op") == []
        # zoomed in on the middle: exactly the zones there, from whichever blocks hold them
        t0, t1 = 2e3 * 3000, 2e3 * 3010
        window = timeline_window(s, run_id, t0, t1, 1.0, ["core 0,0"])
        assert [(i.name, i.start_ns) for i in window] == [(f"op_{k % 2}", 2e3 * k) for k in range(3000, 3011)]


# two cores that did the same work, and a third that did less
TWINS = [
    (core, depth, name, start, end, "op_a")
    for core in ("core 0,0", "core 0,1", "core 1,0")
    for depth, name, start, end in ((0, "op_a", 0.0, 100.0), (1, "read", 0.0, 40.0))
    if core != "core 1,0" or depth == 0
] + [("core 1,0", 1, "read", 0.0, 20.0, "op_a")]


def test_cores_with_the_same_zones_store_them_once_and_each_reads_them_back(db_url):
    sessions = session_factory(open_db(db_url))
    with sessions() as s:
        run_id = save_run(s, _new_run(zones=ZoneColumns.from_rows(TWINS)))
    with sessions() as s:
        stored = s.scalars(
            select(TimelineBlock.track).where(TimelineBlock.run_id == run_id, TimelineBlock.kind == blocks.ZONES)
        ).all()
        assert sorted(stored) == ["core 0,0", "core 1,0"]  # core 0,1 shares core 0,0's
        assert sorted((z.track, z.depth, z.name, z.start_ns, z.end_ns, z.op) for z in zones(s, run_id)) == sorted(TWINS)
        assert [(z.track, z.end_ns) for z in zones(s, run_id, tracks=["core 0,1"], depth=1)] == [("core 0,1", 40.0)]
        twice = zones(s, run_id, tracks=["core 0,1", "core 0,1", "core 0,0"], depth=1)  # each track once
        assert sorted((z.track, z.end_ns) for z in twice) == [("core 0,0", 40.0), ("core 0,1", 40.0)]
        window = timeline_window(s, run_id, 0.0, 100.0, 1.0, ["core 1,0", "core 0,1"])
        assert [(i.track, i.name, i.end_ns) for i in window] == [
            ("core 1,0", "op_a", 100.0),
            ("core 1,0", "read", 20.0),
            ("core 0,1", "op_a", 100.0),
            ("core 0,1", "read", 40.0),
        ]


def test_names_block_keeps_names_and_which_track_shares_which():
    names, same_as = blocks.unpack_names(blocks.names_block(["op_a", "core 0,0"], {"core 0,1": "core 0,0"}).data)
    assert names[:2] == ["op_a", "core 0,0"] and "core 0,1" in names and same_as == {"core 0,1": "core 0,0"}
    # as stored before tracks were shared: names, no columns
    assert blocks.unpack_names(blocks.pack({}, ["op_a"])) == (["op_a"], {})
