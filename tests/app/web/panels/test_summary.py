"""The run summary and the shown run's export."""

from __future__ import annotations

import json

from dash import no_update

from .conftest import FC1, fired, rerun, shown_run


def test_the_summary_names_the_run_its_totals_and_overrides(cb):
    base_id = shown_run(cb)
    assert "run #" in str(cb["show_summary"](base_id)) and "overrides" not in str(cb["show_summary"](base_id))
    run_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    summary = str(cb["show_summary"](run_id))
    assert f"run #{run_id}" in summary and f"overrides (1): {FC1}=8x8:l1:width_sharded" in summary


def test_the_shown_run_exports_its_trace_ops_and_overrides(cb):
    run_id = rerun(cb, shown_run(cb), memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    trace = cb["export_run"](1, run_id, "chrome")["download"]
    events = json.loads(trace["content"])["traceEvents"]
    assert trace["filename"] == f"tilescope-run{run_id}-trace.json" and any(e.get("name") == FC1 for e in events)
    table = cb["export_run"](1, run_id, "csv")["download"]
    assert table["filename"].endswith(".csv") and FC1 in table["content"] and table["content"].startswith("OP CODE")
    options = cb["export_run"](1, run_id, "tt-mlir")["download"]
    assert options["content"].startswith(f"override-output-layout={FC1}=8x8:l1:width_sharded:tile:bf16 ")
    ours = cb["export_run"](1, run_id, "overrides")["download"]
    assert json.loads(ours["content"])["overrides"]
    refused = cb["export_run"](1, run_id, "pdf")
    assert refused["download"] is no_update and "unknown export format" in str(refused["message"])


def test_a_tools_export_says_what_it_left_out(cb):
    run_id = rerun(cb, shown_run(cb), memory="l1", memory_layout="width_sharded", rows=8, cols=8, fidelity="lofi")
    exported = cb["export_run"](1, run_id, "tt-mlir")
    # tt-mlir reads the layout; the fidelity is tilescope's, named on the page instead
    assert (
        "#" not in exported["download"]["content"] and f"{FC1}=8x8:l1:width_sharded" in exported["download"]["content"]
    )
    note = str(exported["message"])
    assert f"left out of the tt-mlir file, as tt-mlir does not read them: {FC1}=fidelity#lofi" in note
    explorer = cb["export_run"](1, run_id, "tt-explorer")
    assert "fidelity" not in explorer["download"]["content"] and "TT-Explorer does not read" in str(explorer["message"])
    assert cb["export_run"](1, run_id, "overrides")["message"] is None  # tilescope JSON keeps it all


def test_the_summary_shows_the_load_time_beside_the_time_per_step(app, cb):
    from tilescope.app.workbench.load_time import duration_text
    from tests.perfdb.load_work import store_hoisted

    from .conftest import MODEL

    plain = str(cb["show_summary"](shown_run(cb)))
    assert "once per model load" not in plain and "per step" not in plain  # no load-time work: as before
    run_id, sim = store_hoisted(app.explorer.sessions, {FC1}, ref=MODEL)
    summary = cb["show_summary"](run_id)
    (load,) = [part for part in summary if getattr(part, "id", None) == "run-load-time"]
    text = str(load)
    assert f"load {duration_text(sim.load_ns)}" in text and sim.load_ns > 0
    assert " once per model load: " in text
    (link,) = [c for c in load.children if getattr(c, "id", None) == {"type": "show-load-ops", "index": run_id}]
    assert link.children == f"{len(sim.load_ops)} const-eval op"
    assert cb["show_load_ops"]([1]) == "statistics"  # a click on it opens the tab that lists them
    assert cb["show_load_ops"]([0]) is no_update and cb["show_load_ops"]([]) is no_update  # redrawn, not clicked
    assert f"total {sim.total_ns / 1e3:,.1f} us per step" in str(summary)
    # beside the step's times, after them
    order = [str(part) for part in summary]
    assert order.index(text) == 1 + next(i for i, part in enumerate(order) if "device busy" in part)


def test_a_run_with_overrides_says_it_is_not_the_baseline_and_opens_it(cb):
    base_id = shown_run(cb)
    assert "not the baseline" not in str(cb["show_summary"](base_id))
    run_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    summary = cb["show_summary"](run_id)
    (note,) = [part for part in summary if getattr(part, "id", None) == "run-not-baseline"]
    assert "not the baseline (1 override)" in str(note)
    (button,) = [c for c in note.children if getattr(c, "id", None) == {"type": "show-baseline", "index": base_id}]
    assert button.children == f"show baseline #{base_id}"
    assert fired(f'{{"index":{base_id},"type":"show-baseline"}}.n_clicks', cb["show_baseline"], [1]) == base_id
    assert cb["show_baseline"]([0]) is no_update and cb["show_baseline"]([]) is no_update  # redrawn, not clicked
