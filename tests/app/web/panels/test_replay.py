"""The Replay action on a measured run: offered for a measured report alone, it replays the report
as a background job, stores the replay as a run whose parent is the measured run, shows it and
opens its comparison with the measurement; a replay that cannot be made is one line and stores
nothing. Measured runs of other reports are listed in Runs & diff, so two reports compare."""

from __future__ import annotations

import json

import pytest
from dash import no_update

from tilescope.app.web import ids
from tilescope.app.web.panels.runs import TAB as RUNS
from tilescope.perfdb.runs import get_run, list_runs
from tests.compiler.profiles.reports import add, matmul, report_text
from tests.conftest import PERF_REPORTS

from .conftest import TARGET, data_url, progress, shown_run

BLACKHOLE = report_text(matmul(**{"DEVICE ARCH": "blackhole"}), add(), add())
WORMHOLE = report_text(matmul(), add(), add(), add())
# an op code tilescope has no op for: stored as measured, but nothing of it can be built
UNKNOWN = report_text(add(**{"OP CODE": "FrobnicateDeviceOperation", "DEVICE ARCH": "wormhole_b0"}))


def _upload(cb, data: str, name: str) -> int:
    return cb["upload_report"](progress, data_url(data), name)["run_id"]


def _runs(app) -> list[tuple[int, str]]:
    with app.explorer.sessions() as session:
        return [(r.id, r.kind) for r in list_runs(session)]


def _replay(cb, run_id: int, target: str | None = None) -> dict:
    return cb["replay_run"](progress, 1, run_id, target)


def test_a_measured_report_is_offered_its_replay_on_the_page_target(app, cb):
    measured = _upload(cb, BLACKHOLE, "clip.csv")
    offered = cb["offer_replay"](measured, "blackhole_p150")
    assert offered["hidden"] is False and offered["label"] == "Replay on blackhole_p150"
    assert "compare it with this measurement" in offered["title"]
    assert cb["offer_replay"](measured, "wormhole_n150")["label"] == "Replay on wormhole_n150"
    assert cb["offer_replay"](shown_run(cb), TARGET)["hidden"] is True  # a simulated model has no replay


def test_replay_stores_the_prediction_shows_it_and_compares_it_with_the_measurement(app, cb):
    measured = _upload(cb, BLACKHOLE, "clip.csv")
    shown = _replay(cb, measured, "blackhole_p150")
    replayed = shown["run_id"]
    assert isinstance(replayed, int) and replayed != measured and shown["tab"] == RUNS
    line, where = (p.children for p in shown["message"].children)
    assert where == "The two compared op by op: Runs & diff, below."
    assert line.startswith(
        f"run {replayed}: replay of clip.csv on blackhole_p150, compared with measured run {measured}: "
        "3 of 3 ops built (100.0% of the device time measured); "
    )
    assert line.endswith(" us measured") and "\n" not in line
    assert [o["value"] for o in shown["run_options"]] == [replayed, measured]  # the report's runs, newest first
    with app.explorer.sessions() as session:
        run = get_run(session, replayed)
        assert (run.kind, run.parent_id, run.model_ref) == ("simulated", measured, "report:clip.csv")
    # the replay is no measured run: it offers no replay of its own, and its graph says it was built op by op
    assert cb["offer_replay"](replayed, "blackhole_p150")["hidden"] is True
    assert "A replay of clip.csv has no graph" in cb["show_graph"](replayed)["note"].children
    # no run ticked: the shown replay is compared with its parent, the measurement
    diff = cb["show_diff"]([], replayed, RUNS)
    head = str(diff["view"])
    assert f"#{measured} measured" in head and f"#{replayed} predicted" in head
    assert f"run {replayed} is a replay of measured run {measured}: predicted against measured" in head
    # device time against device time (a report's device clock holds the host's work between ops)
    with app.explorer.sessions() as session:
        a, b = (get_run(session, i) for i in (measured, replayed))
    verdict = "predicted under measured" if b.device_ns < a.device_ns else "predicted over measured"
    assert f"device {a.device_ns / 1e3:,.1f} us -> {b.device_ns / 1e3:,.1f} us" in head and verdict in head
    assert "measured: measured" not in head and "settings:" not in head  # no policy nor dispatch was measured
    assert "Each run's ops laid back to back on each device" in head
    assert "MatmulDeviceOperation#1" in str(diff["body"])
    rows = cb["list_runs"](None, "report:clip.csv")["rows"]
    assert [(r["id"], r["kind"]) for r in rows][:2] == [(replayed, "replay"), (measured, "measured")]


def test_a_replay_is_a_background_job_as_uploads_are(app):
    """Jobs are counted in the job book (two per client, four per server) by the app's job
    manager: a replay is one, its stage shown under the bar."""
    (job,) = [c for c in app.callback_map.values() if "replay-progress" in str((c.get("background") or {}))]
    assert [str(o) for o in job["background"]["progress"]] == [f"{ids.REPLAY_PROGRESS}.children"]
    assert job["manager"] is None  # the app's own, which keeps the book
    assert job["callback"].__name__ == "replay_run"


def test_a_report_replays_on_another_built_in_target(app, cb):
    measured = _upload(cb, BLACKHOLE, "clip.csv")
    shown = _replay(cb, measured, "wormhole_n150")
    assert "replay of clip.csv on wormhole_n150" in shown["message"].children[0].children
    with app.explorer.sessions() as session:
        assert get_run(session, shown["run_id"]).target.name == "wormhole_n150"


@pytest.mark.parametrize(
    "data, name, target, reason",
    [
        (UNKNOWN, "odd.csv", None, "odd.csv: no op could be built (FrobnicateDeviceOperation: "),
        (
            json.dumps({"traceEvents": [{"ph": "X", "name": "mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}),
            "torch.json",
            None,
            "torch.json is a trace: only an ops perf report says enough of its ops to replay them",
        ),
        (BLACKHOLE, "clip.csv", "/etc/passwd", "a replay runs on a built-in target ("),
    ],
    ids=["nothing built", "a trace", "a path for a target"],
)
def test_a_replay_that_cannot_be_made_is_one_line_and_stores_nothing(app, cb, data, name, target, reason):
    measured = _upload(cb, data, name)
    before = _runs(app)
    shown = _replay(cb, measured, target)
    assert shown["run_id"] is no_update and shown["tab"] is no_update
    line = shown["message"].children
    assert line.startswith(reason) and "\n" not in line
    assert _runs(app) == before


def test_a_simulated_run_is_not_replayed(app, cb):
    run_id = shown_run(cb)
    before = _runs(app)
    line = _replay(cb, run_id)["message"].children
    assert line == f"run {run_id} is not a measured report: only a measured run can be replayed"
    assert _runs(app) == before
    assert cb["replay_run"](progress, 0, run_id, None) is no_update  # the button drawn, not pressed


def test_measured_runs_of_other_reports_are_listed_and_compare_across_chips(app, cb):
    opening = shown_run(cb)
    wormhole = _upload(cb, WORMHOLE, "wh_clip.csv")
    blackhole = _upload(cb, BLACKHOLE, "bh_clip.csv")
    rows = cb["list_runs"](None, "report:bh_clip.csv")["rows"]
    # the report's own run first, then the measured run of the other report; no simulated model's run
    assert [(r["id"], r["model"], r["kind"]) for r in rows] == [
        (blackhole, "report:bh_clip.csv", "measured"),
        (wormhole, "report:wh_clip.csv", "measured"),
    ]
    # a model's own runs, then every measured run
    model_rows = cb["list_runs"](None, "zoo:mlp?layers=1")["rows"]
    assert [(r["id"], r["kind"]) for r in model_rows] == [
        (opening, "simulated"),
        (blackhole, "measured"),
        (wormhole, "measured"),
    ]
    diff = cb["show_diff"]([wormhole, blackhole], blackhole, RUNS)
    head = str(diff["view"])
    assert f"measured on different chips: run {wormhole} on wormhole_n150, run {blackhole} on blackhole_p150" in head
    assert f"#{wormhole} measured" in head and f"#{blackhole} measured" in head
    assert "Ops aligned by op code in execution order" in head


@pytest.mark.skipif(not (PERF_REPORTS / "wh_clip_encoder_2.csv").is_file(), reason="shared reports not found")
def test_the_two_clip_reports_compare_in_the_diff_view(app, cb):
    runs = [
        _upload(cb, (PERF_REPORTS / name).read_text(), name)
        for name in ("wh_clip_encoder_2.csv", "bh_64_clip_encoder_1.csv")
    ]
    head = str(cb["show_diff"](runs, runs[1], RUNS)["view"])
    assert f"measured on different chips: run {runs[0]} on wormhole_n150, run {runs[1]} on blackhole_p150" in head
