"""perfdb.statistics: per op name or kind, where a run's device time goes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.errors import RunNotFound
from tilescope.perfdb.runs import MAX_ID
from tilescope.perfdb.statistics import OpStats, op_statistics, percentile


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1e9), min_size=1, max_size=30), st.sampled_from([0, 10, 50, 90, 100]))
def test_statistics_percentiles_are_numpys(values, q):
    assert percentile(sorted(values), q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)


def test_a_row_in_json_names_its_group_by_what_it_groups():
    row = OpStats("matmul", 2, 30.0, 30.0, 15.0, 10.0, 20.0, 15.0, 19.0, 75.0)
    assert list(row.to_json("kind").items()) == [
        ("kind", "matmul"),
        ("count", 2),
        ("total_ns", 30.0),
        ("self_ns", 30.0),
        ("mean_ns", 15.0),
        ("min_ns", 10.0),
        ("max_ns", 20.0),
        ("median_ns", 15.0),
        ("p90_ns", 19.0),
        ("pct_of_run", 75.0),
    ]
    assert row.to_json("name")["name"] == "matmul"


def test_statistics_of_no_run_or_by_no_key(db_url):
    with session_factory(open_db(db_url))() as session:
        for run_id in (0, 1, MAX_ID + 1):
            with pytest.raises(RunNotFound, match=f"no run with id {run_id}"):
                op_statistics(session, run_id)
        with pytest.raises(ValueError, match="statistics by 'grid'; one of name, kind"):
            op_statistics(session, 1, "grid")
