"""`tilescope calibrate REPORT... -o my_chip.toml`: a chip fitted to measured reports, its held-out
error printed per kind, and a target file `run --target` takes."""

from __future__ import annotations

import json


from tests.app.cli.invoke import cli
from tests.compiler.profiles.replay_reports import op, report_text, t

RELU = "{BasicUnaryWithParam<float>(op_type=UnaryOpType::RELU;param={})}"


def _report(tmp_path, name: str = "mine.csv"):
    rows = []
    for n in range(1, 13):  # twelve shapes; times as a chip slower than the model would measure
        rows.append(
            op("UnaryDeviceOperation", [t(1, 1, 64 * n, 256)], [t(1, 1, 64 * n, 256)], ns=3000 + 900 * n, op_chain=RELU)
        )
        rm = t(1, 1, 512 * n, 8, layout="row_major")
        rows.append(op("TilizeWithValPaddingDeviceOperation", [rm], [t(1, 1, 512 * n, 32)], ns=20000 * n, cores=16))
    path = tmp_path / name
    path.write_text(report_text(*rows))
    return path


def test_calibrate_writes_a_target_that_run_takes(capsys, tmp_path, tiny_path, db_url):
    report, chip = _report(tmp_path), tmp_path / "my_chip.toml"
    code, out, err = cli(capsys, "calibrate", str(report), "-o", str(chip))
    assert code == 0, err
    assert "calibrated wormhole_n150" in out and "held out" in out
    assert "noc.round_trip_cycles" in out and "to_layout" in out
    assert f"wrote {chip} (target 'my_chip')" in out
    code, out, err = cli(capsys, "run", tiny_path, "--target", str(chip), "--db", db_url, "--json")
    assert code == 0, err
    assert json.loads(out)["target"] == "my_chip"


def test_calibrate_json_and_refusals(capsys, tmp_path):
    report, chip = _report(tmp_path), tmp_path / "chip.toml"
    code, out, err = cli(capsys, "calibrate", str(report), "-o", str(chip), "--json", "--no-fit")
    assert code == 0, err
    result = json.loads(out)
    assert result["was"] == result["now"] and result["bands"]["default"] > 0
    # on another chip than the report names: done, and said
    code, out, err = cli(
        capsys, "calibrate", str(report), "-o", str(tmp_path / "bh.toml"), "--no-fit", "--target", "blackhole_p150"
    )
    assert code == 0 and "mine.csv: measured on wormhole_b0 (wormhole_n150), replayed on blackhole_p150 as asked" in err
    # an existing file needs --force; a name not .toml, a held-out report not given, all held out: one line
    for argv, said in (
        (["-o", str(chip)], "exists; give --force"),
        (["-o", str(tmp_path / "chip.txt")], "ends in .toml"),
        (["-o", str(tmp_path / "c.toml"), "--hold-out", "other.csv"], "not one of the reports"),
        (["-o", str(tmp_path / "c.toml"), "--hold-out", "mine.csv"], "nothing is left to fit"),
        (["-o", str(tmp_path / "c.toml"), "--target", "t3k"], "fits a chip"),
        (["-o", str(tmp_path / "c.toml"), "--hold-out", "mine.csv", "--hold-out", "mine.csv"], "nothing is left"),
        ([str(report), "-o", str(tmp_path / "c.toml")], "two reports are named 'mine.csv'"),
        (["-o", str(tmp_path / "c.toml"), "--name", "a\nb"], "--name: a target's name"),
    ):
        code, out, err = cli(capsys, "calibrate", str(report), *argv)
        assert code != 0 and said in err and len(err.strip().splitlines()) == 1, (argv, err)
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a,report\n1,2,3\n")
    code, _, err = cli(capsys, "calibrate", str(bad), "-o", str(tmp_path / "d.toml"))
    assert code != 0 and len(err.strip().splitlines()) == 1
