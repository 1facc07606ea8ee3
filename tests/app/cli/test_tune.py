"""`tilescope tune`: the start and the tuned run stored as parent and child, the set in three
formats that reproduce the tuned time and pass the check, the report, and one line per bad input."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from tilescope.app.cli import main
from tilescope.app.cli.tune import output_paths
from tilescope.overrides.formats import load_file
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import get_run

from .test_cli import assert_one_error_line, cli, run_json

MODEL = "zoo:bert-base?layers=1&seq=128"


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """One search, shared: 80 trials on a one-layer BERT, its report as JSON and its files."""
    where = tmp_path_factory.mktemp("tune")
    db, out_file = f"sqlite:///{where}/runs.db", where / "tuned.json"
    out, err = io.StringIO(), io.StringIO()  # a module's fixture has no capsys
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["tune", MODEL, "--db", db, "--trials", "80", "-o", str(out_file), "--json"])
    assert code == 0, err.getvalue()
    return db, json.loads(out.getvalue()), output_paths(str(out_file))


def test_the_start_and_the_tuned_set_are_stored_as_parent_and_child(tuned):
    db, report, _ = tuned
    with session_factory(open_db(db))() as session:
        start, best = get_run(session, report["parent_run_id"]), get_run(session, report["run_id"])
        assert best.parent_id == start.id and start.dispatch == best.dispatch == "trace"
        assert best.total_ns == report["total_ns"] < start.total_ns
        assert sorted(best.overrides) == sorted(report["overrides"]) and best.policy == report["start_policy"]
    assert report["trials"] == 80 and report["stopped"] == "stopped after its 80 trials"
    assert report["speedup_over_parent"] == pytest.approx(start.total_ns / best.total_ns)
    assert report["speedup_over_greedy_l1"] == pytest.approx(report["policies_ns"]["greedy-l1"] / best.total_ns)
    assert report["speedup_over_greedy_l1"] > 1.0  # the search gained on the best policy, not just picked it
    assert 1.0 < report["roofline_gap"] == pytest.approx(best.total_ns / report["roofline_ns"])
    worth = report["contributions"]
    assert worth and all(c["ns"] is None or c["ns"] > -1e-6 for c in worth)


def test_the_files_reproduce_the_tuned_time_and_pass_the_check(tuned, capsys, db_url):
    _, report, paths = tuned
    assert {fmt: p.exists() for fmt, p in paths.items()} == {"overrides": True, "tt-mlir": True, "tt-explorer": True}
    written = load_file(str(paths["overrides"]))
    assert (written.policy, written.dispatch) == (report["start_policy"], "trace")
    again = run_json(capsys, MODEL, "--db", db_url, "--overrides", str(paths["overrides"]))
    assert again["total_ns"] == report["total_ns"]
    code, out, _ = cli(capsys, "check", MODEL, "--overrides", str(paths["overrides"]))
    assert code == 0 and out.startswith("no problems")
    # the tools' formats carry what they can read (the output layouts), and the check takes them too
    for fmt in ("tt-mlir", "tt-explorer"):
        code, out, _ = cli(capsys, "check", MODEL, "--overrides", str(paths[fmt]))
        assert code == 0, out


def test_an_overrides_files_dispatch_is_the_starts_unless_one_is_given(capsys, db_url, tmp_path):
    (tmp_path / "host.json").write_text('{"version": 1, "overrides": [], "dispatch": "host"}')
    code, out, err = cli(
        capsys,
        "tune",
        "zoo:mlp?layers=1",
        "--db",
        db_url,
        "--trials",
        "5",
        "--overrides",
        str(tmp_path / "host.json"),
        "--json",
    )
    assert code == 0, err
    with session_factory(open_db(db_url))() as session:
        assert get_run(session, json.loads(out)["run_id"]).dispatch == "host"


def test_the_report_names_speedups_the_roofline_and_the_top_changes(capsys, db_url, tmp_path):
    code, out, err = cli(capsys, "tune", "zoo:mlp?layers=1", "--db", db_url, "--trials", "30")
    assert code == 0, err
    # its start is not what `tilescope run` of the same model times, and it says why
    assert out.startswith("tuned zoo:mlp?layers=1 on wormhole_n150 (trace dispatch: tune's default; run's is host), ")
    assert "stopped after its 30 trials" in out and "over greedy-l1" in out and "roofline bound" in out
    assert "compare: tilescope diff" in out
    assert err.startswith("tune: start: ")  # progress on standard error


@pytest.mark.parametrize("dispatch", ["trace", "host"])
def test_a_dispatch_given_is_named_alone(capsys, db_url, dispatch):
    code, out, err = cli(capsys, "tune", "zoo:mlp?layers=1", "--db", db_url, "--trials", "1", "--dispatch", dispatch)
    assert code == 0, err
    assert out.startswith(f"tuned zoo:mlp?layers=1 on wormhole_n150 ({dispatch} dispatch), ")


def test_files_are_not_replaced_without_force_and_unwritable_ones_are_said_before_the_search(capsys, db_url, tmp_path):
    (tmp_path / "tuned.tt-mlir.txt").write_text("kept")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere")
    for output, said in (
        ("tuned.json", "tuned.tt-mlir.txt: exists; give --force"),
        ("dangling.json", "dangling.json: exists; give --force"),
        ("no/such/dir/x.json", "no such directory"),
        (".", "a directory"),
    ):
        code, _, err = cli(capsys, "tune", "zoo:mlp", "--db", db_url, "--trials", "1", "-o", str(tmp_path / output))
        assert_one_error_line(code, err, said)
    assert (tmp_path / "tuned.tt-mlir.txt").read_text() == "kept"
    assert not (tmp_path / "nowhere").exists()
    code, out, _ = cli(capsys, "runs", "--db", db_url)
    assert code == 0 and "tune" not in out  # refused before anything was stored


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--knobs", "memory,speed"], "unknown knob 'speed'"),
        (["--knobs", ","], "name at least one"),
        (["--budget", "0"], "budget must be more than 0"),
        (["--budget", "1e9"], "at most 3600 s"),
        (["--trials", "0"], "trials must be at least 1"),
        (["--override", "nothing=l1"], "'nothing=l1': no such op"),
    ],
)
def test_bad_input_is_one_line(capsys, db_url, argv, fragment):
    code, _, err = cli(capsys, "tune", "zoo:mlp", "--db", db_url, *argv)
    assert_one_error_line(code, err, fragment)


def test_tool_files_sit_beside_the_json():
    paths = output_paths("out/best.json")
    assert [str(p) for p in paths.values()] == ["out/best.json", "out/best.tt-mlir.txt", "out/best.tt-explorer.json"]
    assert str(output_paths("best")["tt-mlir"]) == "best.tt-mlir.txt"


def test_the_knobs_option_defaults_to_the_searchs_layout_knobs():
    """Spelt apart so that building the parser imports no compiler; they must stay the same."""
    from tilescope.app.cli.tune import KNOBS
    from tilescope.overrides.search import LAYOUT_KNOBS

    assert KNOBS == ",".join(LAYOUT_KNOBS)
