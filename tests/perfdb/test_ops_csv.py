"""Ops perf CSV in tt-metal's columns: written from a stored run, read back as a measured run, with
bad rows reported and skipped; on SQLite and PostgreSQL."""

from __future__ import annotations

from tilescope.overrides import parse_item

import csv
import io

import pytest

from tilescope.app.cli import main
from tilescope.app.workbench.runs import execute
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.ops_csv import COLUMNS, DURATION, CsvImportError, import_csv, write_csv
from tilescope.perfdb.timeline import counters
from tilescope.perfdb.diff import diff_runs
from tilescope.perfdb.runs import get_run, op_records
from tilescope.perfdb.schema import MeasuredImport

ANCHOR_COLUMNS = [  # what users' scripts read (tt-metal ops perf report)
    "OP CODE",
    "OP TYPE",
    "GLOBAL CALL COUNT",
    "DEVICE ID",
    "MATH FIDELITY",
    "CORE COUNT",
    "DEVICE KERNEL DURATION [ns]",
    "DEVICE FW DURATION [ns]",
    "OP TO OP LATENCY [ns]",
    "INPUT_0_MEMORY",
    "OUTPUT_0_MEMORY",
    "INPUT_0_W",
    "INPUT_0_Z",
    "INPUT_0_Y",
    "INPUT_0_X",
    "INPUT_0_DATATYPE",
    "INPUT_0_LAYOUT",
    "PM IDEAL [ns]",
    "PM COMPUTE [ns]",
    "PM BANDWIDTH [ns]",
    "DRAM BW UTIL (%)",
    "NOC UTIL (%)",
    "LOC",
]


@pytest.fixture
def sessions(db_url):
    return session_factory(open_db(db_url))


SHARDED = [parse_item("matmul_1=1x2:l1:block_sharded")]


@pytest.fixture
def base(sessions, tiny_path):
    return execute(sessions, tiny_path, options=CompileOptions(SHARDED, dispatch="trace")).run_id


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_has_the_ops_perf_report_columns_and_the_run_values(sessions, base):
    with sessions() as s:
        text = write_csv(s, base, {"dram": 258e9})
        ops = op_records(s, base)
    rows = _rows(text)
    assert set(ANCHOR_COLUMNS) <= set(COLUMNS) == set(rows[0])
    assert [r["LOC"] for r in rows] == [o.name for o in ops] == ["matmul_0", "matmul_1"]
    first, second = rows
    assert (first["OP CODE"], first["GLOBAL CALL COUNT"], first["DEVICE ID"]) == ("matmul", "0", "0")
    assert int(first[DURATION]) == round(ops[0].duration_ns) and int(first["CORE COUNT"]) == ops[0].cores
    assert first["MATH FIDELITY"] == "HiFi4"  # f32 runs at full fidelity
    # x: 32x64 f32 in DRAM, as W, Z, Y, X
    assert [first[f"INPUT_0_{d}"] for d in "WZYX"] == ["1", "1", "32", "64"]
    assert (first["INPUT_0_DATATYPE"], first["INPUT_0_LAYOUT"], first["INPUT_0_MEMORY"]) == (
        "FLOAT32",
        "TILE",
        "DEV_0_DRAM_INTERLEAVED",
    )
    assert second["OUTPUT_0_MEMORY"] == "DEV_0_L1_BLOCK_SHARDED"
    assert int(first["PM IDEAL [ns]"]) == round(max(ops[0].compute_ns, ops[0].bandwidth_ns)) > 0
    dram = ops[0].bytes["dram"] / (ops[0].duration_ns / 1e9) / 258e9 * 100
    assert float(first["DRAM BW UTIL (%)"]) == pytest.approx(dram, abs=0.01)
    assert first["NOC UTIL (%)"] == ""  # no NoC peak given


@pytest.mark.parametrize("dispatch", ["trace", "host"])
def test_a_report_round_trips_as_a_measured_run(sessions, tiny_path, dispatch):
    base = execute(sessions, tiny_path, options=CompileOptions(SHARDED, dispatch=dispatch)).run_id
    with sessions() as s:
        text = write_csv(s, base)
        measured, problems = import_csv(s, text, base, "ops.csv")
    assert problems == []
    with sessions() as s:
        run = get_run(s, measured)
        assert (run.kind, run.parent_id, run.label, run.model_ref) == (
            "measured",
            base,
            "measured: ops.csv",
            get_run(s, base).model_ref,
        )
        diff = diff_runs(s, base, measured)
        record = s.query(MeasuredImport).filter_by(run_id=measured).one()
        assert (record.source, record.rows, record.matched, record.problems) == ("ops.csv", 2, 2, [])
    assert diff.removed == diff.inserted == () and diff.alignment == "name"
    # which run is the measurement, and nothing else
    assert diff.warnings == (
        f"run {base} is the simulation measured run {measured} was imported against: predicted against measured",
    )
    assert all(abs(op.delta_ns) <= 0.5 for op in diff.ops)  # durations travel as whole ns
    # and the waits before each op, the host's before the first included: the total is kept
    assert abs(diff.total_delta_ns) <= len(diff.ops)
    assert (diff.times.a.host_ns > 0) == (dispatch == "host")
    assert all(op.changes == () for op in diff.ops)  # the measured program ran as compiled


def test_a_measured_run_keeps_the_programs_bytes_and_l1_at_its_own_times(sessions, base):
    """Measured on hardware, the same program moved the same bytes and held the same L1; only the
    times are the hardware's. So the roofline, memory view and counter plots have what they need."""
    text = f"LOC,{DURATION},OP TO OP LATENCY [ns]\nmatmul_0,1000,0\nmatmul_1,4000,500\n"
    with sessions() as s:
        measured, _ = import_csv(s, text, base, "lab.csv")
        simulated = {o.name: o for o in op_records(s, base)}
        ops = {o.name: o for o in op_records(s, measured)}
        assert all(ops[n].bytes == simulated[n].bytes and ops[n].bytes for n in ops)
        base_l1 = [c for c in counters(s, base, "l1_bytes") if c.t_ns == simulated["matmul_1"].start_ns]
        l1 = [c for c in counters(s, measured, "l1_bytes") if c.t_ns == 1500.0]  # matmul_1 starts at 1000 + 500
        assert sorted((c.track, c.value) for c in l1) == sorted((c.track, c.value) for c in base_l1) != []
        dram = [(c.t_ns, c.value) for c in counters(s, measured, "dram_bytes_per_s")]
    assert dram[2:] == [(1500.0, pytest.approx(ops["matmul_1"].bytes["dram"] / 4e-6)), (5500.0, 0.0)]


def test_bad_rows_are_reported_and_skipped(sessions, base):
    text = (
        f"LOC,{DURATION},OP TO OP LATENCY [ns],MATH FIDELITY\n"
        'loc("matmul_0"),1500,0,LoFi\n'
        "nope_7,100,0,\n"
        "matmul_1,fast,0,\n"
        "matmul_1,-4,0,\n"
        ",100,0,\n"
        "matmul_1,2500,250,\n"
    )
    with sessions() as s:
        measured, problems = import_csv(s, text, base, "lab.csv")
    assert problems == [
        f"lab.csv:3: op 'nope_7' is not in run {base}",
        f"lab.csv:4: matmul_1: {DURATION} 'fast' is not a duration in ns (0 to 1e+15)",
        f"lab.csv:5: matmul_1: {DURATION} '-4' is not a duration in ns (0 to 1e+15)",
        "lab.csv:6: no LOC or OP NAME",
    ]
    with sessions() as s:
        ops = op_records(s, measured)
        assert [(o.name, o.start_ns, o.duration_ns, o.fidelity) for o in ops] == [
            ("matmul_0", 0.0, 1500.0, "lofi"),
            ("matmul_1", 1750.0, 2500.0, ops[1].fidelity),
        ]
        assert get_run(s, measured).total_ns == 4250.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("LOC,CORE COUNT\nmatmul_0,4\n", "no 'DEVICE KERNEL DURATION [ns]' column"),
        (f"OP CODE,{DURATION}\nmatmul,4\n", "no LOC or OP NAME column"),
        (f"LOC,{DURATION}\nnope,4\n", "no row matched an op of run"),
    ],
)
def test_unusable_files_are_one_error_and_store_nothing(sessions, base, text, message):
    with sessions() as s:
        before = len(s.query(MeasuredImport).all())
        with pytest.raises(CsvImportError) as err:
            import_csv(s, text, base, "x.csv")
        assert message in str(err.value)
    with sessions() as s:
        assert len(s.query(MeasuredImport).all()) == before


def test_cli_export_and_import(capsys, tmp_path, db_url, base):
    out = tmp_path / "ops.csv"
    assert main(["export", str(base), "--format", "csv", "--db", db_url, "-o", str(out)]) == 0
    assert _rows(out.read_text())[0]["LOC"] == "matmul_0"
    capsys.readouterr()
    assert main(["import", str(base), str(out), "--db", db_url, "--label", "bench"]) == 0
    printed = capsys.readouterr().out
    assert "measured, 2 op(s) from ops.csv; 0 bad row(s) skipped" in printed and f"tilescope diff {base} " in printed
    bad = tmp_path / "bad.csv"
    bad.write_text("hello\n")
    assert main(["import", str(base), str(bad), "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"tilescope: error: bad.csv: no {DURATION!r} column (an ops perf report has it)"
    ]


# --- malformed and hostile reports: one line, or a stored run with every bad row listed ---------------

HEADER = f"LOC,{DURATION},OP TO OP LATENCY [ns]\n"
UNUSABLE = [  # (file, what the one line says); none stores anything
    ("", "x.csv: empty file (an ops perf report has a header line)"),
    ("\n\n\n", "x.csv: empty file"),
    (HEADER, "x.csv: no row matched an op of run"),
    (bytes(range(256)).decode("latin-1") * 4, f"x.csv: no {DURATION!r} column"),
    ("LOC\x00,x\n\x00\x00\n", f"x.csv: no {DURATION!r} column"),
    (HEADER.replace(",", ";") + "matmul_0;100;0\n", "columns must be separated by commas"),
    (
        HEADER + "matmul_0," + "1" * 200_000 + ",0\n",
        "x.csv: not a CSV ops report: field larger than field limit (131072)",
    ),
    (HEADER + "matmul_0,100,0\n" + '"' + "x" * 200_000 + '"\n', "field larger than field limit"),
    (f"LOC,{DURATION},{DURATION}\nmatmul_0,100,200\n", f"x.csv: column {DURATION!r} appears 2 times"),
    (f"LOC, LOC ,{DURATION}\nmatmul_0,matmul_1,200\n", "x.csv: column 'LOC' appears 2 times"),
    (HEADER + "matmul_0,1,0\n" * 100_001, "x.csv: more than 100,000 rows; import the report in parts"),
    (
        HEADER + "matmul_0,1e308,0\nmatmul_1,1e308,0\n",
        "(x.csv:2: matmul_0: DEVICE KERNEL DURATION [ns] '1e308' is not a duration in ns (0 to 1e+15))",
    ),
    (
        HEADER + "matmul_0,1,1e308\n",
        "(x.csv:2: matmul_0: OP TO OP LATENCY [ns] '1e308' is not a latency in ns (0 to 1e+15))",
    ),
    (HEADER + "matmul_0,1,-1\n", "OP TO OP LATENCY [ns] '-1' is not a latency"),
    (HEADER + "matmul_0," + "9" * 5000 + ",0\n", "is not a duration in ns"),
    (f"LOC,{DURATION},CORE COUNT\nmatmul_0,1," + "9" * 5000 + "\n", "is not a number of cores (1 to 65,536)"),
    (
        f"LOC,{DURATION},CORE COUNT\nmatmul_0,1,99999999999999999999999\n",
        "CORE COUNT '99999999999999999999999' is not a number of cores",
    ),
]


@pytest.mark.parametrize("text, message", UNUSABLE, ids=range(len(UNUSABLE)))
def test_an_unusable_report_is_one_line_and_stores_nothing(sessions, base, text, message):
    with sessions() as s:
        runs = len(s.query(MeasuredImport).all()), len(op_records(s, base))
        with pytest.raises(CsvImportError) as err:
            import_csv(s, text, base, "x.csv")
    assert message in str(err.value) and "\n" not in str(err.value) and len(str(err.value)) < 500
    with sessions() as s:
        assert (len(s.query(MeasuredImport).all()), len(op_records(s, base))) == runs


def test_times_past_the_bound_are_row_problems_and_the_total_stays_finite(sessions, base):
    """1e308 ns twice made the total infinite, and the run's CSV export then crashed."""
    text = HEADER + "".join(
        f"matmul_{i % 2},{value},0\n" for i, value in enumerate(["1e308", "inf", "nan", "1e16", "1e15", "2.5"])
    )
    text += "matmul_0,3,1e308\nmatmul_1,4,0\n"
    with sessions() as s:
        measured, problems = import_csv(s, text, base, "lab.csv")
        total = get_run(s, measured).total_ns
        exported = _rows(write_csv(s, measured))
    assert [p.split(": ", 2)[2].split(" is ")[0] for p in problems] == [
        f"{DURATION} '1e308'",
        f"{DURATION} 'inf'",
        f"{DURATION} 'nan'",
        f"{DURATION} '1e16'",
        "OP TO OP LATENCY [ns] '1e308'",
    ]
    assert total == 1e15 + 2.5 + 4
    assert [r[DURATION] for r in exported] == [str(10**15), "2", "4"]


@pytest.mark.parametrize("line_end", ["\r", "\r\n"])
def test_old_mac_and_windows_line_ends_and_a_byte_order_mark_import(sessions, base, line_end):
    text = "\ufeff" + (HEADER + "matmul_0,100,0\nmatmul_1,200,5\n").replace("\n", line_end)
    with sessions() as s:
        measured, problems = import_csv(s, text, base, "x.csv")
        assert problems == [] and get_run(s, measured).total_ns == 305.0


def test_a_run_stored_with_an_infinite_time_still_exports(sessions, base):
    """Runs imported before times were bounded may hold inf: their export leaves those cells blank."""
    from tilescope.perfdb.schema import OpRecord

    with sessions() as s:
        measured, _ = import_csv(s, HEADER + "matmul_0,100,0\nmatmul_1,200,0\n", base, "x.csv")
        s.query(OpRecord).filter_by(run_id=measured, name="matmul_1").update({"duration_ns": float("inf")})
        s.commit()
        rows = _rows(write_csv(s, measured, {"dram": 258e9}))
    assert [(r["LOC"], r[DURATION], r["HOST END TS"]) for r in rows] == [
        ("matmul_0", "100", "100"),
        ("matmul_1", "", ""),
    ]


def test_a_vanishing_duration_stores_no_infinite_bandwidth(sessions, base):
    """5e-324 ns made bytes / (duration * 1e-9) divide by zero; under 1 ns no bandwidth is plotted."""
    with sessions() as s:
        measured, problems = import_csv(s, HEADER + "matmul_0,5e-324,0\nmatmul_1,1e-300,0\n", base, "x.csv")
        bandwidth = [c.value for c in counters(s, measured, "dram_bytes_per_s")]
        rows = _rows(write_csv(s, measured, {"dram": 258e9}))
    assert problems == [] and bandwidth == []
    assert [r["DRAM BW UTIL (%)"] for r in rows] == ["", ""]


@pytest.mark.parametrize("failure", ["too many rows", "import record refused"])
def test_a_report_failing_on_a_late_row_stores_nothing(sessions, base, monkeypatch, failure):
    """The measured run, its ops, zones and counters and its import record go in one transaction."""
    from tilescope.perfdb import ops_csv
    from tilescope.perfdb.schema import OpRecord, Run, TimelineBlock

    text = HEADER + "matmul_0,100,0\nmatmul_1,200,0\nnope,5,0\n"  # the last row names no op of the run
    if failure == "too many rows":
        monkeypatch.setattr(ops_csv, "MAX_ROWS", 2)
    else:  # the database refuses the record of the import, written after the run and its ops

        def refused(**record):
            raise CsvImportError(f"refused: {record['problems'][-1]}")

        monkeypatch.setattr(ops_csv, "MeasuredImport", refused)

    def stored() -> list[int]:
        with sessions() as s:
            return [s.query(table).count() for table in (Run, OpRecord, TimelineBlock, MeasuredImport)]

    before = stored()
    with sessions() as s:
        with pytest.raises(CsvImportError, match="more than 2 rows" if failure == "too many rows" else "nope"):
            import_csv(s, text, base, "x.csv")
    assert stored() == before


def test_a_measured_row_of_a_load_time_op_is_measured_load_time_work(sessions):
    """The device runs a const-eval op too, once, when the model is loaded: its row in a report is
    load-time work of the measured run, not an op of its step nor a row the run lacks."""
    from tilescope.perfdb.runs import load_ops

    from .load_work import store_hoisted

    fc1, fc2 = "mlp.layer.0.fc1.matmul", "mlp.layer.0.fc2.matmul"
    base, sim = store_hoisted(sessions, {fc1})
    (simulated,) = [op for op in sim.load_ops if op.name == fc1]
    text = f"LOC,{DURATION},OP TO OP LATENCY [ns]\n{fc1},9000,100\n{fc2},4000,500\nnope,1,0\n"
    with sessions() as s:
        measured, problems = import_csv(s, text, base, "lab.csv")
    assert problems == [f"lab.csv:4: op 'nope' is not in run {base}"]
    with sessions() as s:
        run = get_run(s, measured)
        ops = op_records(s, measured)
        record = s.query(MeasuredImport).filter_by(run_id=measured).one()
    (loaded,) = [op for op in load_ops(run) if op.name == fc1]
    assert (loaded.duration_ns, loaded.bound, loaded.kind, loaded.bytes) == (
        9000.0,
        "measured",
        "matmul",
        simulated.bytes,
    )
    assert run.load_ns == sum(op.duration_ns for op in load_ops(run)) and len(load_ops(run)) == 1
    assert [(o.name, o.start_ns, o.duration_ns) for o in ops] == [(fc2, 500.0, 4000.0)]  # the step's clock alone
    assert run.total_ns == 4500.0 and record.matched == 2
