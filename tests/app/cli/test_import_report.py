"""`tilescope import REPORT`: a profile stored as a measured run on its own, and what was read of
it; `tilescope import RUN CSV` as before; `tilescope stats --by code`; bad input in one line."""

from __future__ import annotations

import json

import pytest

from tilescope.app.cli import main
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import list_runs
from tests.compiler.profiles.reports import DURATION, add, matmul, report_text, signpost

DEEPSEEK = "bh_8xp150_deepseek_v3_d_p.csv"


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _runs(db: str) -> list:
    with session_factory(open_db(db))() as session:
        return list_runs(session)


def test_a_report_alone_is_stored_and_said_what_was_read(capsys, tmp_path, db_url):
    host = add(**{"OP CODE": "torch::pad", "OP TYPE": "tt_dnn_cpu", DURATION: ""})
    bad = add(**{DURATION: "soon"})
    report = tmp_path / "ops.csv"
    report.write_text(report_text(matmul(), signpost("block"), add(), *[bad] * 7, host))
    code, out, err = _cli(capsys, "import", str(report), "--db", db_url, "--label", "first try")
    assert code == 0, err
    (run,) = _runs(db_url)
    assert out.splitlines() == [
        f"run {run.id}: measured, 2 op(s) from ops.csv on wormhole_n150; 11 rows read, 7 skipped, 1 host-only, "
        "1 signposts",
        "device time: 1.2 us summed",
    ]
    warned = err.splitlines()
    assert warned[:5] == [f"tilescope: warning: skipped ops.csv:{line}: BinaryNgDeviceOperation: DEVICE KERNEL "
                          "DURATION [ns] 'soon' is not a time in ns (0 to 1e+15)" for line in range(5, 10)]  # fmt: skip
    assert warned[5:] == ["tilescope: warning: ... and 2 more rows skipped"]
    assert (run.kind, run.label, run.model_ref) == ("measured", "first try", "report:ops.csv")


def test_the_eight_device_report_says_each_devices_ops_and_time(capsys, perf_reports, db_url):
    code, out, _ = _cli(capsys, "import", str(perf_reports / DEEPSEEK), "--db", db_url)
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith("208 rows read, 0 skipped, 0 host-only")
    assert [line.split(":")[0] for line in lines[1:9]] == [f"  device {d}" for d in range(8)]
    assert all(": 26 ops, " in line for line in lines[1:9])
    assert lines[9] == "device time: 79,468.7 us summed over 8 devices"


def test_stats_by_op_code(capsys, tmp_path, sqlite_url):
    report = tmp_path / "ops.csv"
    report.write_text(report_text(matmul(), add(), add(**{"ATTRIBUTES": "{'binary_op_type': 'BinaryOpType::MUL'}"})))
    assert main(["import", str(report), "--db", sqlite_url]) == 0
    capsys.readouterr()
    code, out, _ = _cli(capsys, "stats", "last", "--by", "code", "--db", sqlite_url, "--json")
    assert code == 0
    assert {row["code"]: row["count"] for row in json.loads(out)} == {
        "MatmulDeviceOperation": 1,
        "BinaryNgDeviceOperation": 2,
    }
    _, out, _ = _cli(capsys, "stats", "last", "--by", "kind", "--db", sqlite_url, "--json")
    assert {row["kind"] for row in json.loads(out)} == {"matmul", "add", "multiply"}


def test_a_trace_and_a_chosen_target(capsys, tmp_path, sqlite_url):
    trace = tmp_path / "t.json"
    events = [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 3}, {"ph": "C", "name": "m"}]
    trace.write_text(json.dumps(events))
    code, out, err = _cli(capsys, "import", str(trace), "--target", "wormhole_n150", "--db", sqlite_url)
    assert code == 0 and "1 op(s) from t.json on wormhole_n150" in out
    assert err == "tilescope: t.json: 1 event of phase 'C' not read (not an op)\n"


def test_a_report_naming_no_chip_says_which_target_it_took(capsys, tmp_path, sqlite_url):
    report = tmp_path / "ops.csv"
    report.write_text(report_text(add()))
    code, out, err = _cli(capsys, "import", str(report), "--db", sqlite_url)
    assert code == 0 and "on blackhole_p150" in out
    assert err == ("tilescope: the report names no chip (DEVICE ARCH): taken as measured on blackhole_p150\n")


@pytest.mark.parametrize(
    "content, reason",
    [
        (None, "nope.csv: no such file"),
        ("", "empty file (an ops perf report has a header line)"),
        ("OP CODE,x\n", "no 'DEVICE KERNEL DURATION [ns]' column"),
        (report_text(add(**{DURATION: "x"})), "no device op to store"),
        ("[" * 100, "nested more than 32 deep"),
        (b"\xff\xfe\xfa", "not a text file"),
    ],
)
def test_bad_input_is_one_line_and_stores_nothing(capsys, tmp_path, sqlite_url, content, reason):
    path = tmp_path / "nope.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    code, out, err = _cli(capsys, "import", str(path), "--db", sqlite_url)
    assert code == 2 and out == ""
    assert err.startswith("tilescope: error: ") and reason in err and err.count("\n") == 1, err
    assert _runs(sqlite_url) == []


def test_a_directory_is_no_report(capsys, tmp_path, sqlite_url):
    code, _, err = _cli(capsys, "import", str(tmp_path), "--db", sqlite_url)
    assert code == 2 and err == f"tilescope: error: {tmp_path}: a directory, not a file\n"


def test_a_run_then_a_file_is_the_import_beside_a_simulated_run(capsys, tmp_path, sqlite_url, tiny_path):
    assert main(["run", tiny_path, "--db", sqlite_url]) == 0
    report = tmp_path / "ops.csv"
    assert main(["export", "last", "--format", "csv", "-o", str(report), "--db", sqlite_url]) == 0
    capsys.readouterr()
    code, out, _ = _cli(capsys, "import", "last", str(report), "--db", sqlite_url)
    assert code == 0 and out.splitlines()[1] == "compare: tilescope diff 1 2"
    assert _runs(sqlite_url)[0].parent_id == 1
    code, _, err = _cli(capsys, "import", "nope", str(report), "--db", sqlite_url)
    assert code == 2 and err == "tilescope: error: 'nope' is not a run: give a run id, last, or last~N\n"
    code, _, err = _cli(capsys, "import", "1", str(report), "--target", "wormhole_n150", "--db", sqlite_url)
    assert code == 2 and "--target is for a report imported alone" in err
