"""Tuning a stored run: the tuned run is the start's child and never slower; knobs and budgets as
typed, or one line saying what is wrong with them."""

from __future__ import annotations

import os

import pytest

from tilescope.app.workbench import runs
from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.tuning import check_budget, knobs_of
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.overrides import format_item, parse_item
from tilescope.overrides.search import LAYOUT_KNOBS, PRECISION_KNOBS
from tilescope.perfdb.engine import open_db, session_factory

TRACE = CompileOptions(dispatch="trace")


def test_a_tuned_run_is_stored_as_the_child_of_the_run_it_started_from(db_url):
    sessions = session_factory(open_db(db_url))
    explorer = Explorer(sessions)
    start = runs.execute(sessions, "zoo:mlp?layers=1", options=TRACE, label="start").run_id
    heard: list[str] = []
    report = explorer.tune(start, max_trials=30, budget_s=None, progress=heard.append)
    tuned = explorer.view(report.run_id)
    assert tuned.parent_id == start and tuned.options.dispatch == "trace"
    assert tuned.total_ns == report.total_ns == report.tuned.best_ns <= report.tuned.start_ns
    assert report.total_ns < report.parent.total_ns  # greedy-l1 alone beats the start's dram-interleaved
    assert sorted(map(format_item, tuned.options.overrides)) == sorted(report.tuned.items)
    assert heard[0].startswith("start: ") and heard[-1] == "storing the tuned run"
    assert report.as_dict()["parent_run_id"] == start
    # the tuned time carries the model's error: a kind's ops err alike, the kinds independently
    records = explorer.op_records(report.run_id)
    matmuls = sum(r.error_band * r.duration_ns for r in records if r.kind == "matmul")
    assert report.error_ns >= matmuls > 0  # every matmul's band, added: not shrunk by their count
    assert report.gain_text.startswith("gain ") and " us +- " in report.gain_text


def test_a_cancelled_search_stores_the_best_it_had(db_url):
    sessions = session_factory(open_db(db_url))
    start = runs.execute(sessions, "zoo:mlp?layers=1", options=TRACE).run_id
    report = Explorer(sessions).tune(start, budget_s=60, cancelled=lambda: True)
    assert report.tuned.trials == 0 and report.tuned.stopped.startswith("cancelled")
    assert report.total_ns == min(report.tuned.policies.values())


def test_knobs_as_typed():
    assert knobs_of("memory, grid") == ("memory", "grid")
    assert knobs_of("+precision") == (*LAYOUT_KNOBS, *PRECISION_KNOBS)
    assert knobs_of("block,+precision") == ("block", *PRECISION_KNOBS)
    with pytest.raises(TilescopeError, match="unknown knob 'colour'"):
        knobs_of("memory,colour")


@pytest.mark.parametrize(
    "budget, trials, message",
    [(None, None, "give the search a budget"), (0.0, None, "more than 0"), (None, -1, "at least 1")],
)
def test_a_search_without_a_bound_is_refused(budget, trials, message):
    with pytest.raises(TilescopeError, match=message):
        check_budget(budget, trials)


def test_a_run_of_a_policy_that_changes_precision_is_tuned_only_with_precision_knobs(db_url):
    sessions = session_factory(open_db(db_url))
    explorer = Explorer(sessions)
    start = runs.execute(
        sessions, "zoo:mlp?layers=1", options=CompileOptions(policy="optimizer", dispatch="trace")
    ).run_id
    with pytest.raises(TilescopeError, match="optimizer policy, which changes precision: tune it with \\+precision"):
        explorer.tune(start, max_trials=5, budget_s=None)
    report = explorer.tune(start, knobs=knobs_of("+precision"), max_trials=5, budget_s=None)
    assert "optimizer" in report.tuned.policies  # a start too: the tuned run is never slower than its parent
    assert report.total_ns <= report.parent.total_ns


def _on_a_server(db_url: str, max_ops: int = 50_000) -> Explorer:
    from tilescope.app.workbench.model_access import ModelAccess

    return Explorer(session_factory(open_db(db_url)), access=ModelAccess(max_ops=max_ops))


def test_a_page_tune_of_a_run_past_max_ops_is_one_line_and_stores_nothing(db_url):
    """A page tune of a stored 102,615-op run ran 109 s and peaked at 7.4 GB: --max-ops did not apply."""
    explorer = _on_a_server(db_url, max_ops=5)
    start = runs.execute(explorer.sessions, "zoo:mlp?layers=2", options=TRACE).run_id  # by the CLI: no limit
    with pytest.raises(TilescopeError, match=r"^zoo:mlp\?layers=2: 10 ops is over this server's limit of 5 "):
        explorer.tune(start, budget_s=60)
    assert [r.id for r in explorer.runs_of("zoo:mlp?layers=2")] == [start]


def test_a_page_tune_runs_whole_in_a_child_process_under_the_memory_cap(db_url, tmp_path):
    """The search, what each override is worth and the store: each phase within the child's caps."""
    import resource

    explorer = _on_a_server(db_url)
    start = runs.execute(explorer.sessions, "zoo:mlp?layers=1", options=TRACE).run_id
    seen = tmp_path / "seen"

    def cancelled() -> bool:  # asked before each trial, where the search runs
        with seen.open("a") as out:
            out.write(f"{os.getpid()} {resource.getrlimit(resource.RLIMIT_AS)[0]}\n")
        return False

    heard: list[str] = []
    report = explorer.tune(start, max_trials=20, budget_s=None, cancelled=cancelled, progress=heard.append)
    searched = {tuple(map(int, line.split())) for line in seen.read_text().splitlines()}
    assert searched and all(pid != os.getpid() and cap != resource.RLIM_INFINITY for pid, cap in searched)
    assert heard[0].startswith("start: ") and heard[-1] == "storing the tuned run"  # said here, as it went
    assert explorer.view(report.run_id).parent_id == start and report.tuned.trials == 20


def test_the_budget_covers_the_starts_and_what_each_override_is_worth(db_url):
    """Past its budget, a search compiled its other starts and measured what its overrides are
    worth all the same: a 1-s budget ran 109 s."""
    sessions = session_factory(open_db(db_url))
    fc1 = parse_item("mlp.layer.0.fc1.matmul=l1")
    start = runs.execute(
        sessions, "zoo:mlp?layers=2", options=CompileOptions([fc1], "greedy-l1", dispatch="trace")
    ).run_id
    report = Explorer(sessions).tune(start, budget_s=1e-3)  # over once the first start is compiled
    assert list(report.tuned.policies) == ["greedy-l1"]  # the run's own policy: never slower than it
    assert report.tuned.trials == 0 and report.contributions == [] and report.unmeasured == 1
    assert report.total_ns <= report.parent.total_ns


def test_a_search_whose_budget_ends_before_greedy_l1_is_timed_says_so(db_url):
    """A loaded machine ended a 2-s search before its greedy-l1 start: its report failed with
    KeyError 'greedy-l1' instead of saying there was no such time."""
    from tilescope.app.web.panels.tune import report_lines

    sessions = session_factory(open_db(db_url))
    start = runs.execute(sessions, "zoo:mlp?layers=2", options=TRACE).run_id  # dram-interleaved
    report = Explorer(sessions).tune(start, budget_s=1e-3)  # over once its own start is compiled
    assert list(report.tuned.policies) == ["dram-interleaved"]
    assert report.greedy_ns is None and report.over_greedy is None
    assert report.as_dict()["speedup_over_greedy_l1"] is None
    assert "greedy-l1 not timed (the budget ended first)" in str(report_lines(report))
