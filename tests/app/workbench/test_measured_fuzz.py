"""Fuzzing the store of measured profiles, on SQLite and PostgreSQL: the reports and traces
tests/compiler/profiles/test_profile_fuzz.py makes, read and stored as measured runs. Each is one
TilescopeError line that stores nothing, or a run whose times are finite, with one record per op
stored and its import's record, that every view reads and that exports again."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.measured_runs import store_measured
from tilescope.app.workbench.run_export import export_run
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.profiles.profile_file import read_profile
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import get_run, op_records
from tilescope.perfdb.schema import MeasuredImport, Run
from tests.compiler.profiles.test_profile_fuzz import reports, traces
from tests.fuzzing import case, fuzz_settings, one_line


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


# a denormal duration (found by this fuzz): its seconds underflow to 0, so it has no rate
DENORMAL = (
    "OP TYPE,GLOBAL CALL COUNT,DEVICE ID,DEVICE ARCH,OP CODE,LOC,DEVICE KERNEL DURATION [ns]\n"
    ",,,,MatmulDeviceOperation,,5e-324\n"
)


@fuzz_settings(default=60)
@given(st.one_of(reports(), traces()))
@example(text=DENORMAL)
def test_fuzz_measured_store(sessions, text):
    with sessions() as s, case(f"profiles: stored ({s.get_bind().dialect.name})", lambda: text):
        before = (s.query(Run).count(), s.query(MeasuredImport).count())
        try:
            stored = store_measured(s, read_profile(text, "fuzz.csv"), text)
        except TilescopeError as err:
            one_line(str(err))
            s.rollback()
            assert (s.query(Run).count(), s.query(MeasuredImport).count()) == before  # nothing stored
            return
        run = get_run(s, stored.run_id)
        ops = op_records(s, run.id)
        assert len(ops) == stored.ops and math.isfinite(run.total_ns) and math.isfinite(run.device_ns)
        assert all(math.isfinite(op.start_ns) and 0 <= op.duration_ns <= 1e15 for op in ops)
        assert s.query(MeasuredImport).filter_by(run_id=run.id).one().matched == stored.ops
        for fmt in ("csv", "chrome"):
            export_run(s, run.id, fmt)
    explorer = Explorer(sessions)
    view = explorer.view(stored.run_id)
    explorer.timeline(view)
    explorer.statistics(view.id, "code")
    explorer.roofline(view)
    explorer.memory(view)
