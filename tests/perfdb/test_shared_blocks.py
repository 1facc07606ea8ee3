"""A re-run stored as its parent's child shares the parent's timeline blocks, as they were and
shifted in time, and reads back exactly what it reads back stored alone."""

from __future__ import annotations

import numpy as np
import pytest
from alembic import command
from sqlalchemy import create_engine, delete, func, select, update
from sqlalchemy.exc import IntegrityError

from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item
from tilescope.perfdb import blocks, pages, timeline
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.migrate import config
from tilescope.perfdb.schema import Run, TimelineBlock
from tilescope.perfdb.shared_blocks import own_bytes, parent
from tilescope.perfdb.store import save_run
from tilescope.app.workbench.runs import new_run

REF = "zoo:bert-base?layers=2"
# a middle matmul's output into L1 and back: every op after it starts later by the same time
ITEMS = ("encoder.layer.0.output.dense.matmul=l1:interleaved", "encoder.layer.1.attention.self.key.matmul=l1")


@pytest.fixture(scope="module")
def runs():
    """The model compiled and simulated, then again after each override, each since the one before."""
    target = load_target("wormhole_n150")
    model = load_model(REF)
    compiled, sims, items = [compile_model(model, target, CompileOptions())], [], []
    sims.append(simulate(compiled[0].kernel, target, "host"))
    for item in ITEMS:
        items.append(item)
        options = CompileOptions(tuple(parse_item(i) for i in items))
        compiled.append(compile_model(model, target, options, since=compiled[-1]))
        sims.append(simulate(compiled[-1].kernel, target, "host", known=sims[-1].costs))
    return compiled, sims


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    # two layers of bert-base run about 30 ops: pages of 4 cut them as a large model's are cut
    monkeypatch.setattr(pages, "MIN_PAGE_OPS", 4)


def _store(sessions, compilation, sim, parent=None) -> int:
    with sessions() as session:
        return save_run(session, new_run(compilation, sim, REF, "wormhole_n150", "", parent_id=parent))


def _parent_and_child(runs, db_url) -> tuple:
    """The first two runs stored, the second as the first's child: (sessions, parent, child, the
    child's end)."""
    (base, changed, _), (base_sim, changed_sim, _) = runs
    sessions = session_factory(open_db(db_url))
    parent = _store(sessions, base, base_sim)
    return sessions, parent, _store(sessions, changed, changed_sim, parent), changed_sim.total_ns


def _read_back(session, run_id: int, end_ns: float) -> dict:
    """Everything a run's timeline is read back as."""
    return {
        "zones": timeline.zones(session, run_id),
        "windows": [timeline.timeline_window(session, run_id, 0, end_ns, r) for r in (1.0, 1e3, 1e4, 1e5, 1e6)],
        "zoomed": timeline.timeline_window(session, run_id, end_ns / 3, end_ns / 2, 1e2),
        "counters": timeline.counters(session, run_id),
        "counter names": timeline.counter_names(session, run_id),
        "envelope": timeline.counter_envelope(session, run_id, "l1_bytes"),
        "same tracks": timeline.zone_names(session, run_id)[1],  # its names list its parent's first
    }


def test_a_rerun_shares_its_parents_blocks_and_reads_back_as_stored_alone(runs, db_url):
    (base, changed, _), (base_sim, changed_sim, _) = runs
    shifted = {o.name: o.start_ns for o in changed_sim.ops}
    moved = [shifted[o.name] - o.start_ns for o in base_sim.ops if o.name in shifted]
    assert 0.0 in moved and len(set(moved) - {0.0}) >= 1  # ops before the change, and shifted ones after
    sessions = session_factory(open_db(db_url))
    parent = _store(sessions, base, base_sim)
    alone = _store(sessions, changed, changed_sim)
    child = _store(sessions, changed, changed_sim, parent)
    with sessions() as session:
        assert _read_back(session, child, changed_sim.total_ns) == _read_back(session, alone, changed_sim.total_ns)
        b = TimelineBlock
        count = session.execute(select(func.count(), func.count(b.source_id)).where(b.run_id == child)).one()
        shifts = set(session.scalars(select(b.shift_ns).where(b.run_id == child, b.source_id.is_not(None))))
        assert count[1] >= count[0] / 2 and len(shifts - {0.0}) >= 1  # shared as they were and shifted
        assert own_bytes(session, child) < own_bytes(session, alone) / 2


def test_a_rerun_of_a_rerun_names_the_block_holding_the_rows(runs, db_url):
    (base, changed, twice), (base_sim, changed_sim, twice_sim) = runs
    sessions = session_factory(open_db(db_url))
    first = _store(sessions, base, base_sim)
    second = _store(sessions, changed, changed_sim, first)
    third = _store(sessions, twice, twice_sim, second)
    alone = _store(sessions, twice, twice_sim)
    with sessions() as session:
        assert _read_back(session, third, twice_sim.total_ns) == _read_back(session, alone, twice_sim.total_ns)
        b = TimelineBlock
        sources = select(b.source_id).where(b.run_id == third, b.source_id.is_not(None))
        held = session.execute(select(b.run_id, b.source_id, func.length(b.data)).where(b.id.in_(sources))).all()
        assert held and {run for run, _, _ in held} <= {first, second}
        assert all(source is None and size > 0 for _, source, size in held)  # one hop, to rows of its own


def test_deleting_a_run_whose_blocks_another_reads_is_refused_and_loses_nothing(runs, db_url):
    sessions, parent, child, end = _parent_and_child(runs, db_url)
    with sessions() as session:
        before = _read_back(session, child, end), _read_back(session, parent, end)
    with sessions() as session, pytest.raises(IntegrityError):
        with session.begin():
            session.execute(delete(Run).where(Run.id == parent))
    with sessions() as session:
        assert (_read_back(session, child, end), _read_back(session, parent, end)) == before


def test_downgrading_gives_each_shared_block_its_rows(runs, db_url):
    sessions, _, child, end = _parent_and_child(runs, db_url)
    with sessions() as session:
        before = _read_back(session, child, end)
    engine = create_engine(db_url)
    with engine.begin() as connection:
        command.downgrade(config(connection=connection), "0013")
    with engine.begin() as connection:
        command.upgrade(config(connection=connection), "head")
    engine.dispose()
    sessions = session_factory(open_db(db_url))
    with sessions() as session:
        assert session.scalar(select(func.count(TimelineBlock.source_id))) == 0
        assert _read_back(session, child, end) == before


def test_times_off_the_clocks_tick_get_no_digest_and_are_never_shared():
    level, track, depth = np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64)
    name = op = np.zeros(3, np.int64)
    on_ticks = np.array([0.0, 1.5, 3.0])
    off = on_ticks + 0.1  # a measured run's times, say
    made = [
        blocks.zone_blocks(["core 0,0"], level, track, depth, start, start + 1.0, name, op)[0]
        for start in (on_ticks, on_ticks + 1024.0, off)
    ]
    assert made[0].digest is not None and made[0].digest == made[1].digest  # the same rows, shifted
    assert made[2].digest is None


def test_a_rerun_cuts_pages_of_its_parents_size_and_a_measured_parent_shares_nothing(runs, db_url):
    """A re-run of one op more than a page-size boundary would cut pages of another size alone."""
    sessions, first, _, _ = _parent_and_child(runs, db_url)
    (base, *_), (base_sim, *_) = runs
    with sessions() as session:
        assert parent(session, first).page_ops == pages.page_ops(len(base_sim.ops))
        session.execute(update(Run).where(Run.id == first).values(kind="measured"))
        found = parent(session, first)
        assert (found.names, found.by_digest, found.page_ops) == ([], {}, None)
