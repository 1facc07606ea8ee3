"""Level-of-detail timeline windows: every zone is drawn alone or inside a marker, and a window
never returns much more than two items per pixel per track, whatever the trace holds."""

from __future__ import annotations

import numpy as np
import pytest

from tilescope.perfdb import lod
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.timeline import timeline_window, zones
from tilescope.perfdb.records import ZoneColumns
from tilescope.perfdb.store import save_run

from .test_store import _new_run

TRACKS = ["device", "core 0,0", "core 0,0/reader", "core 0,1"]


def _trace(seed: int, n: int = 4000):
    """Zones back to back on each track, of lengths spread over five decades (10 ns .. 1 ms)."""
    rng = np.random.default_rng(seed)
    rows = []
    for track in TRACKS:
        t = 0.0
        for i, length in enumerate(10 ** rng.uniform(1, 6, n // len(TRACKS))):
            gap = rng.uniform(0, 50)
            rows.append((track, 1 if "/" in track else 0, f"op_{i}", t + gap, t + gap + length, f"op_{i}"))
            t += gap + length
    return rows


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('lod') / 't.db'}"
    trace = _trace(1)
    sessions = session_factory(open_db(url))
    with sessions() as s:
        run_id = save_run(s, _new_run(zones=ZoneColumns.from_rows(trace)))
    return sessions, run_id, trace


def test_a_zone_is_short_from_the_first_level_whose_bucket_is_longer():
    durations = np.array([1.0, 99.9, 100.0, 399.0, 400.0, 1e4, 1e12])
    assert lod.short_level(durations).tolist() == [0, 0, 1, 1, 2, 4, lod.LEVELS]
    assert lod.level_for(1000.0) == 2 and lod.width(2) == 1600.0


def test_only_groups_of_two_or_more_become_markers():
    # one track: two 10 ns zones close together, one 10 ns zone far away, one 1 ms zone
    start = np.array([0.0, 20.0, 1e6, 2e6])
    end = np.array([10.0, 30.0, 1e6 + 10, 3e6])
    found = lod.markers(np.zeros(4, np.int64), np.zeros(4, np.int64), start, end)
    assert found.zone_lod.tolist()[:2] == [1, 1]  # merged from the first level
    assert set(found.count.tolist()) >= {2} and all(c >= 2 for c in found.count.tolist())
    # the lone zone is merged only once a bucket reaches back to the pair, 1 ms away: level 7's
    # buckets are 100 ns * 4**7 = 1.6 ms
    assert found.zone_lod[2] == 7
    assert found.zone_lod[3] > found.zone_lod[2]


@pytest.mark.parametrize("span_frac, pixels", [(1.0, 1500), (0.1, 1500), (0.01, 800), (1e-4, 1000)])
def test_every_zone_in_the_window_is_drawn_alone_or_merged_and_the_count_is_bounded(stored, span_frac, pixels):
    sessions, run_id, trace = stored
    end = max(z[4] for z in trace)
    t0 = end * 0.3
    t1 = t0 + end * span_frac
    resolution = (t1 - t0) / pixels
    with sessions() as s:
        items = timeline_window(s, run_id, t0, t1, resolution)
    inside = [z for z in trace if z[3] <= t1 and z[4] >= t0]
    alone = {(i.track, i.start_ns) for i in items if i.count == 1 and i.op}
    markers = [i for i in items if not i.op]
    level = lod.level_for(resolution)
    for track, depth, name, start, stop, _op in inside:
        if (track, start) in alone:
            continue
        # merged: too short to draw at this zoom, and inside a marker of its track
        assert stop - start < lod.width(level), (name, stop - start, resolution)
        assert any(
            m.track == track and m.depth == depth and m.start_ns <= start and stop <= m.end_ns for m in markers
        ), name
    # zones long enough to see are always drawn alone
    assert all((z[0], z[3]) in alone for z in inside if z[4] - z[3] >= lod.width(level))
    for track in TRACKS:
        on_track = [i for i in items if i.track == track]
        assert len(on_track) <= 2 * pixels + 4
        assert [i.start_ns for i in on_track] == sorted(i.start_ns for i in on_track)
    # markers say how many zones they hold and how busy they were
    assert all(m.count >= 2 and m.name == f"{m.count} zones" for m in markers)
    assert all(0 < m.busy_ns <= m.end_ns - m.start_ns + 1e-6 for m in markers)


def test_fully_zoomed_in_returns_the_zones_themselves(stored):
    sessions, run_id, trace = stored
    z = trace[100]
    with sessions() as s:
        items = timeline_window(s, run_id, z[3], z[4], 1.0, tracks=[z[0]])
        plain = zones(s, run_id, z[3], z[4], tracks=[z[0]])
    assert [(i.name, i.start_ns, i.end_ns) for i in items] == [(p.name, p.start_ns, p.end_ns) for p in plain]
    assert all(i.count == 1 for i in items)


def test_tracks_limit_the_window(stored):
    sessions, run_id, trace = stored
    with sessions() as s:
        items = timeline_window(s, run_id, 0, 1e12, 1e6, tracks=["core 0,1"])
        assert {i.track for i in items} == {"core 0,1"}
        assert timeline_window(s, run_id, 10, 5, 1.0) == []


def test_the_window_on_postgresql_matches_sqlite(db_url, stored):
    sessions, run_id, trace = stored
    other = session_factory(open_db(db_url))
    with other() as s:
        other_id = save_run(s, _new_run(zones=ZoneColumns.from_rows(trace)))
    end = max(z[4] for z in trace)
    for resolution in (end / 1500, end / 1e5, 50.0):
        with sessions() as a, other() as b:
            mine = [
                (i.track, i.name, i.start_ns, i.end_ns, i.count) for i in timeline_window(a, run_id, 0, end, resolution)
            ]
            theirs = [
                (i.track, i.name, i.start_ns, i.end_ns, i.count)
                for i in timeline_window(b, other_id, 0, end, resolution)
            ]
        assert mine == theirs
