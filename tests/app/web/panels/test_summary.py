"""The run summary and the shown run's export."""

from __future__ import annotations

import json

from dash import no_update

from .conftest import FC1, rerun, shown_run


def test_the_summary_names_the_run_its_totals_and_overrides(cb):
    base_id = shown_run(cb)
    assert "run #" in str(cb["show_summary"](base_id)) and "overrides" not in str(cb["show_summary"](base_id))
    run_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    summary = str(cb["show_summary"](run_id))
    assert f"run #{run_id}" in summary and f"overrides: {FC1}=8x8:l1:width_sharded" in summary


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
