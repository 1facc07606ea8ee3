"""A profile uploaded from the run bar becomes a measured run the page shows at once; every panel
shows it (no graph or MLIR: a line saying so, offering replay; no overrides or tune); a bad file is
one line on the page and stores nothing."""

from __future__ import annotations

import json

import pytest
from dash import no_update

from tilescope.app.web import ids
from tilescope.app.workbench import explorer as explorer_module
from tilescope.perfdb.runs import list_runs
from tests.compiler.profiles.reports import DURATION, add, matmul, report_text, signpost

from .conftest import POLICY, TARGET, data_url, fired, form, progress

REPORT = report_text(matmul(**{"DEVICE ARCH": "blackhole"}), signpost("block"), add(), add(**{"DEVICE ID": "1"}), add())


def _upload(cb, data: str = REPORT, name: str = "model.csv") -> dict:
    return cb["upload_report"](progress, data_url(data), name)


def test_an_uploaded_report_is_shown_as_a_measured_run(app, cb):
    shown = _upload(cb)
    run_id = shown["run_id"]
    assert (shown["model"], shown["target"], shown["contents"]) == ("report:model.csv", "blackhole_p150", None)
    assert "report:model.csv" in shown["model_options"]
    assert [o["value"] for o in shown["run_options"]] == [run_id]
    assert "measured on blackhole_p150" in shown["run_options"][0]["label"]
    said = [p.children for p in shown["message"].children]
    assert said[0].startswith(f"run {run_id}: measured, 4 op(s) from model.csv on blackhole_p150; 5 rows read")
    devices = "device 0: 3 ops, 1.4 us · device 1: 1 ops, 0.2 us"
    assert said[1:] == [f"{devices} · device time: 1.6 us summed over 2 devices"]  # one line on the page
    # the model menu's choice of it opens the same run, whatever target the page shows
    chosen = cb["choose_model"]("report:model.csv", TARGET, POLICY)
    assert chosen["run_id"] == run_id and chosen["status"] is None
    summary = str(cb["show_summary"](run_id))
    assert "measured on hardware" in summary and "model.csv" in summary and "policy" not in summary


def test_every_panel_shows_a_measured_run(app, cb):
    run_id = _upload(cb)["run_id"]
    figure = cb["show_timeline"](run_id, None, ["counters"])
    assert figure.layout.meta["rows"] == ["device", "device 0", "device 1", "signposts"]
    stats = cb["show_statistics"](run_id, "code", "statistics")
    assert {row["code"]: row["count"] for row in stats["data"]} == {
        "MatmulDeviceOperation": 1,
        "BinaryNgDeviceOperation": 3,
    }
    assert stats["columns"][0]["headerName"] == "op code"
    cell = {"rowId": "BinaryNgDeviceOperation"}
    found = fired(f"{ids.STATS_TABLE}.cellClicked", cb["find_zone"], run_id, None, cell, "statistics", "code", None)
    assert "op code BinaryNgDeviceOperation: 3 ops" in found["figure"].layout.title.text
    assert cb["show_roofline"](run_id, None, "roofline").data
    memory = cb["show_memory"](run_id, "memory")
    assert "on each core of its grid while MatmulDeviceOperation#1 runs" in str(memory["peak"])
    inspected = str(cb["inspect"]("MatmulDeviceOperation#1", run_id))
    assert "MatmulDeviceOperation" in inspected and "height_sharded" in inspected and "hifi2" in inspected


def test_graph_and_mlir_say_a_measured_run_has_none_and_offer_replay(app, cb):
    run_id = _upload(cb)["run_id"]
    graph = cb["show_graph"](run_id)
    assert "A measured run has no graph" in graph["note"].children and graph["group_options"] == []
    assert "tilescope replay model.csv" in graph["note"].children
    lines = cb["show_mlir"](run_id, "graph", None)["window"]["lines"]
    assert len(lines) == 2 and lines[0].startswith("// A measured run has no graph") and "replay" in lines[1]


def test_a_measured_run_is_not_re_run_nor_tuned(app, cb):
    run_id = _upload(cb)["run_id"]
    filled = cb["fill_form"]("MatmulDeviceOperation#1", run_id)
    assert filled["apply_disabled"] is True and filled["stage_disabled"] is True
    applied = cb["apply_override"](
        progress,
        _clicks=1,
        run_id=run_id,
        selected="MatmulDeviceOperation#1",
        pending=[],
        form=form(memory="l1", memory_layout="block_sharded", rows=1, cols=1),
    )
    assert "A measured run has no graph" in str(applied["status"])
    before = len(list_runs(app.explorer.sessions()))
    tuned = cb["tune_run"](progress, 1, run_id, 5)
    assert "A measured run has no graph" in str(tuned["status"])
    assert len(list_runs(app.explorer.sessions())) == before


def test_runs_and_diff_list_measured_runs_as_such(app, cb):
    first = _upload(cb)["run_id"]
    second = _upload(cb, REPORT.replace("1000", "900"), "model.csv")["run_id"]
    rows = cb["list_runs"](None, "report:model.csv")["rows"]
    assert [(r["id"], r["kind"]) for r in rows] == [(second, "measured"), (first, "measured")]
    diff = cb["show_diff"]([first, second], second, "runs")
    assert "MatmulDeviceOperation#1" in str(diff["body"])


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("x.csv", "OP CODE,DURATION\na,1\n", "x.csv: no 'DEVICE KERNEL DURATION [ns]' column"),
        ("x.csv", report_text(add(**{DURATION: "soon"})), "x.csv: no device op to store"),
        ("x.json", '{"traceEvents": [', "x.json: not JSON"),
        ("x.json", "[" * 5000, "x.json: nested more than 32 deep"),
        ("x.csv", b"\xff\xfe\x00garbage", "x.csv: not a text file"),
    ],
)
def test_a_bad_profile_is_one_line_on_the_page_and_stores_nothing(app, cb, name, data, reason):
    shown = _upload(cb, data, name)
    assert shown["model"] is no_update and shown["run_id"] is no_update and shown["contents"] is None
    text = shown["message"].children
    assert text.startswith(reason) and "\n" not in text and "Traceback" not in text
    assert [r for r in list_runs(app.explorer.sessions()) if r.kind == "measured"] == []


def test_a_profile_over_the_size_limit_is_refused(cb, monkeypatch):
    monkeypatch.setattr(explorer_module, "MAX_SOURCE_BYTES", 100)
    message = _upload(cb)["message"].children
    assert message.startswith("model.csv: ") and "MiB is over the" in message


def test_a_trace_uploads_as_a_measured_run_of_its_threads(app, cb):
    events = [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": t, "ts": t, "dur": 2} for t in (1, 2)]
    shown = _upload(cb, json.dumps({"traceEvents": events}), "torch.json")
    figure = cb["show_timeline"](shown["run_id"], None, [])
    assert figure.layout.meta["rows"] == ["device", "pid 1 / tid 1", "pid 1 / tid 2"]
