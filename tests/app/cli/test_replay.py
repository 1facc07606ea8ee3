"""`tilescope replay REPORT` and `tilescope validate --report FILE...`: a measured report replayed,
stored as a simulated run named op for op as the measured run, and compared with it."""

from __future__ import annotations

import json

import pytest

from tilescope.app.workbench.measured_runs import REPORT_REF, source_hash
from tilescope.compiler.profiles.naming import op_names
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.sim.records import OpTiming
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.records import NewRun, ZoneColumns
from tilescope.perfdb.runs import get_run, list_runs, op_records
from tilescope.perfdb.store import save_run

from tests.app.cli.invoke import cli
from tests.compiler.profiles.replay_reports import op, report_text, t

RELU = "{BasicUnaryWithParam<float>(op_type=UnaryOpType::RELU;param={})}"
ROWS = (
    op("UnaryDeviceOperation", [t(1, 1, 256, 256)], [t(1, 1, 256, 256)], ns=4000, op_chain=RELU),
    op("FrobnicateDeviceOperation", [t(1, 1, 32, 32)], [t(1, 1, 32, 32)], ns=1000),
    op("UnaryDeviceOperation", [t(1, 1, 256, 256)], [t(1, 1, 256, 256)], ns=5000, op_chain=RELU),
)


@pytest.fixture
def report_file(tmp_path):
    path = tmp_path / "relus.csv"
    path.write_text(report_text(*ROWS))
    return path


def _store_measured(db_url, text: str) -> int:
    """A measured run of the report `text`, as an import stores one: its model the report."""
    report = read_ops_report(text, "relus.csv")
    ops = [
        OpTiming(
            name=name, kind="relu", start_ns=0.0, duration_ns=op.kernel_ns, flops=0, bytes={}, bound="measured",
            memory="dram", grid="1x1", cores=1, roofline_ns=0.0, level="measured",
        )
        for name, op in zip(op_names(report), report.ops)
    ]  # fmt: skip
    new = NewRun(
        model_ref=REPORT_REF + "relus.csv",
        model_name="relus.csv",
        source_hash=source_hash(text),
        source_text=text,
        target="wormhole_n150",
        total_ns=10_000.0,
        device_ns=10_000.0,
        ops=ops,
        zones=ZoneColumns.from_rows([]),
        kind="measured",
    )
    with session_factory(open_db(db_url))() as session:
        return save_run(session, new)


def test_replay_stores_a_simulated_run_named_as_the_measured_one_and_prints_its_coverage(capsys, db_url, report_file):
    code, out, err = cli(capsys, "replay", str(report_file), "--db", db_url)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("relus.csv: built 2 of 3 ops, 90.0% of its device time (9.0 us measured, ")
    assert lines[0].endswith(" us predicted on wormhole_n150)")
    assert lines[1].startswith("  not built: FrobnicateDeviceOperation x1, 10.0% of device time: op code ")
    assert lines[2].startswith("run ") and lines[2].endswith(": simulated, 2 op(s) of relus.csv on wormhole_n150")
    assert "compare:" not in out  # no measured run of this report is stored
    with session_factory(open_db(db_url))() as session:
        (run,) = list_runs(session)
        assert (run.kind, run.model_ref, run.dispatch, run.parent_id) == (
            "simulated",
            "report:relus.csv",
            "trace",
            None,
        )
        assert run.label == "replay: relus.csv on wormhole_n150"
        records = op_records(session, run.id)
    assert [r.name for r in records] == ["UnaryDeviceOperation#1", "UnaryDeviceOperation#2"]
    assert records[1].start_ns == pytest.approx(records[0].start_ns + records[0].duration_ns)


def test_a_stored_measured_run_of_the_report_is_the_replay_s_parent(capsys, db_url, report_file):
    measured = _store_measured(db_url, report_file.read_text())
    code, out, err = cli(
        capsys, "replay", str(report_file), "--db", db_url, "--label", "mine", "--target", "blackhole_p150"
    )
    assert code == 0, err
    run_id = int(out.splitlines()[-2].split()[1].rstrip(":"))
    assert out.splitlines()[-1] == f"compare: tilescope diff {measured} {run_id}"
    with session_factory(open_db(db_url))() as session:
        run = get_run(session, run_id)
        assert (run.parent_id, run.label, run.target_ref) == (measured, "mine", "blackhole_p150")
        names = {r.name for r in op_records(session, measured)} & {r.name for r in op_records(session, run_id)}
    assert names == {"UnaryDeviceOperation#1", "UnaryDeviceOperation#2"}  # the diff aligns them by name


@pytest.mark.parametrize(
    "text, said",
    [
        (None, "nope.csv: no such file"),
        ("just some words\n", "no 'OP CODE' column"),
        ("OP CODE,DEVICE KERNEL DURATION [ns]\n", "no device op to replay"),
        (b"\xff\xfe\x00junk", "not a text file"),
        (report_text(ROWS[1]), "no op could be built (FrobnicateDeviceOperation: op code "),
    ],
)
def test_a_file_that_is_no_report_is_one_line_and_stores_nothing(capsys, db_url, tmp_path, text, said):
    path = tmp_path / "nope.csv"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    code, out, err = cli(capsys, "replay", str(path), "--db", db_url)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("tilescope: error: ") and said in err, err
    with session_factory(open_db(db_url))() as session:
        assert list_runs(session) == []


def test_validate_report_prints_each_kind_and_each_report(capsys, report_file, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text(report_text(op("SoftmaxDeviceOperation", [t(1, 8, 64, 64)], [t(1, 8, 64, 64)], ns=3000)))
    code, out, err = cli(capsys, "validate", "--report", str(report_file), str(other))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["kind", "rows", "measured", "us", "predicted", "us"]
    assert lines[1].split()[:3] == ["relu", "2", "9.0"] and lines[2].split()[:3] == ["softmax", "1", "3.0"]
    reports = [line.split() for line in lines if line.startswith(("relus.csv", "other.csv"))]
    assert [(r[0], r[1], r[2], r[3]) for r in reports] == [
        ("relus.csv", "wormhole_n150", "2/3", "90.0%"),
        ("other.csv", "wormhole_n150", "1/1", "100.0%"),
    ]
    assert lines[-1].startswith("error: simulated over measured throughput, minus one")


def test_validate_report_json_has_each_row_and_each_report(capsys, report_file):
    code, out, err = cli(capsys, "validate", "--report", str(report_file), "--json", "--target", "blackhole_p150")
    assert code == 0, err
    data = json.loads(out)
    assert [(r["op_code"], r["kind"], r["measured_ns"]) for r in data["rows"]] == [
        ("UnaryDeviceOperation", "relu", 4000.0),
        ("UnaryDeviceOperation", "relu", 5000.0),
    ]
    assert all(r["predicted_ns"] > 0 and r["error"] == r["measured_ns"] / r["predicted_ns"] - 1 for r in data["rows"])
    (report,) = data["reports"]
    assert (report["name"], report["target"], report["measured_ns"]) == ("relus.csv", "blackhole_p150", 9000.0)
    assert report["predicted_ns"] == pytest.approx(sum(r["predicted_ns"] for r in data["rows"]))
    assert data["kinds"][0]["kind"] == "relu" and data["kinds"][0]["rows"] == 2


def test_validate_target_is_for_reports_only(capsys):
    code, _, err = cli(capsys, "validate", "--target", "blackhole_p150")
    assert code == 2 and "--target is for --report" in err
    code, _, err = cli(capsys, "validate", "--report", "x.csv", "--models")
    assert code == 2 and "--report compares reports alone" in err


def test_a_stored_measured_report_replays_from_the_database(db_url, report_file):
    from tilescope.app.workbench.replay_runs import replay_measured
    from tilescope.compiler.errors import TilescopeError

    measured = _store_measured(db_url, report_file.read_text())
    with session_factory(open_db(db_url))() as session:
        stored = replay_measured(session, measured, "blackhole_p150", "again")
        run = get_run(session, stored.run_id)
        assert (stored.measured_id, run.parent_id, run.label, run.kind) == (measured, measured, "again", "simulated")
        assert [r.name for r in op_records(session, stored.run_id)] == [
            "UnaryDeviceOperation#1",
            "UnaryDeviceOperation#2",
        ]
        with pytest.raises(TilescopeError, match=rf"^run {stored.run_id} is not a measured report \(simulated run"):
            replay_measured(session, stored.run_id)
