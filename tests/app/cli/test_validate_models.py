"""`tilescope validate --models`: whole models against tt-metal's published figures."""

from __future__ import annotations

import csv
import json

import pytest

from tilescope.app.cli import main
from tilescope.compiler.validation import whole_models as mv

ROW = {
    "model": "1B decode",
    "hardware": "n150",
    "target": "wormhole_n150",
    "ref": "zoo:llama-3.2-1b?mode=decode&batch=32&cache=128&layers=1",
    "metric": "t/s/u",
    "published": "80.5",
    "batch": "32",
    "seq": "128",
    "formats": "weights bfp8, FF1/FF3 bfp4",
    "dispatch": "trace",
    "release": "v0.62.0-dev20251015",
    "split": "dev",
}


def write_table(path, *rows):
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=mv.COLUMNS)
        writer.writeheader()
        writer.writerows({**ROW, **row} for row in rows)
    return str(path)


def cli(capsys, *argv):
    code = main(["validate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_models_prints_every_published_figure_and_a_summary_per_split(capsys):
    code, out, err = cli(capsys, "--models")
    assert code == 0 and "Traceback" not in err
    lines = out.splitlines()
    assert lines[0].split()[:9] == [
        "model",
        "hardware",
        "metric",
        "published",
        "predicted",
        "ratio",
        "split",
        "grid",
        "formats",
    ]
    shipped = mv.load_models()
    body = lines[1 : 1 + len(shipped)]
    for line, m in zip(body, shipped):
        assert line.startswith(m.model) and m.hardware in line and m.metric in line
        assert "error:" not in line, line  # every zoo model the table names compiles
        ratio = float(next(w for w in line.split() if w.endswith("x") and w[:-1].replace(".", "").isdigit())[:-1])
        assert 1 / 4 < ratio < 4, line  # whole models within 4x of the chip, either way
        assert line.rstrip().endswith(m.formats)
        assert f"  {f'{m.grid[0]}x{m.grid[1]}' if m.grid else 'all'}  " in line  # the cores the demo ran on
    summary = {line.split()[0]: line.split() for line in lines if line.startswith(("dev ", "held-out "))}
    assert set(summary) == {"dev", "held-out"}
    assert int(summary["dev"][1]) + int(summary["held-out"][1]) == len(shipped)
    assert "optimizer policy" in lines[-1]


def test_models_json_has_the_rows_and_summaries_of_the_table_given(capsys, tmp_path):
    table = write_table(
        tmp_path / "t.csv", {}, {"model": "3B held", "split": "held-out", "ref": ROW["ref"].replace("1b", "3b")}
    )
    code, out, _ = cli(capsys, "--models", table, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["policy"] == mv.POLICY
    assert [r["model"] for r in report["rows"]] == ["1B decode", "3B held"]
    for row in report["rows"]:
        assert row["predicted"] == pytest.approx(1e9 / row["step_ns"])
        assert row["ratio"] == pytest.approx(row["step_ns"] / 1e9 * row["published"])
        assert row["error"] == "" and row["formats"] == ROW["formats"]
    assert [(s["split"], s["rows"], s["errors"]) for s in report["summaries"]] == [("dev", 1, 0), ("held-out", 1, 0)]
    # --rows changes nothing: the rows are always part of the report
    assert cli(capsys, "--models", table, "--json", "--rows")[1] == out


def test_a_model_that_cannot_be_compiled_is_an_error_on_its_row(capsys, tmp_path):
    table = write_table(tmp_path / "t.csv", {"model": "missing", "ref": "zoo:llama-9b?mode=decode"}, {})
    code, out, err = cli(capsys, "--models", table)
    assert code == 0 and "Traceback" not in err
    missing, ok = out.splitlines()[1:3]
    assert missing.startswith("missing") and "error: unknown zoo model 'zoo:llama-9b?mode=decode'" in missing
    assert ok.startswith("1B decode") and "error" not in ok
    dev = next(line for line in out.splitlines() if line.startswith("dev "))
    assert dev.split()[1:3] == ["1", "1"]  # one row predicted, one error


@pytest.mark.parametrize(
    "row, fragment",
    [
        ({"metric": "tokens/s"}, "row 2: metric must be one of"),
        ({"published": "many"}, "row 2: published must be a number"),
        ({"target": "blackhole_p150"}, "row 2: target for n150 is wormhole_n150"),
    ],
)
def test_a_malformed_table_is_one_error_line_naming_file_and_row(capsys, tmp_path, row, fragment):
    table = write_table(tmp_path / "bad.csv", row)
    code, out, err = cli(capsys, "--models", table)
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tilescope: error: {table}: ") and fragment in lines[0]


def test_an_unreadable_table_is_one_error_line(capsys, tmp_path):
    code, _, err = cli(capsys, "--models", str(tmp_path / "absent.csv"))
    assert code != 0 and "Traceback" not in err
    assert err.strip() == f"tilescope: error: {tmp_path / 'absent.csv'}: cannot read: No such file or directory"


def test_validate_fit_refits_and_reports_with_the_refitted_constants(capsys):
    code, out, err = cli(capsys, "--fit")
    assert code == 0, err
    fitted = next(line for line in out.splitlines() if line.startswith("fitted on the calibration half"))
    # Wormhole's constants and Blackhole's own unpacker, each named once
    assert "launch_ns = " in fitted and fitted.count("unpack_bytes_per_cycle") == 2
    assert "held-out" in out and "Traceback" not in err
