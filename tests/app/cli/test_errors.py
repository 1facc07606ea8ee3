"""What the command line says when it is given what it cannot take: one line naming the cause, exit
code 2, whatever the input (a wrong choice, bytes that are not UTF-8, a name no file system takes, a
hundred thousand characters), and nothing stored."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from werkzeug.security import check_password_hash

from tilescope.app.cli import main
from tilescope.compiler.frontend.model_refs import EXAMPLES
from tilescope.perfdb.engine import open_db, session_factory
from tilescope.perfdb.runs import list_runs

LONGEST_LINE = 300  # characters: an error line a terminal shows in a few rows


def said(capsys, *argv: str) -> tuple[int, str]:
    """(exit code, standard error) of `tilescope ARGV`, run in this process."""
    try:
        code = main(list(argv))
    except SystemExit as exited:  # refused while the arguments were read
        code = exited.code
    return code, capsys.readouterr().err


def one_line(err: str, *fragments: str) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err[:3000]
    assert len(lines[0]) <= LONGEST_LINE, lines[0][:3000]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def runs_in(db: str) -> list:
    with session_factory(open_db(db))() as session:
        return list_runs(session)


@pytest.fixture
def db(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'errors.db'}"


@pytest.mark.parametrize(
    "argv, line",
    [
        (
            ["run", "ffn.mlir", "--policy", "greedy"],
            "tilescope run: error: argument --policy: invalid choice: 'greedy'",
        ),
        (["run", "ffn.mlir", "--dispatch", "traced"], "tilescope run: error: argument --dispatch: invalid choice"),
        (["show", "ffn.mlir", "--level", "kernels"], "tilescope show: error: argument --level: invalid choice"),
        (["export", "last", "--format", "pdf"], "tilescope export: error: argument --format: invalid choice: 'pdf'"),
        (["run"], "tilescope run: error: the following arguments are required: model"),
        (["run", "ffn.mlir", "--budget", "1"], "tilescope: error: unrecognized arguments: --budget 1"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_command_and_the_cause(capsys, argv, line):
    code, err = said(capsys, *argv)
    assert code == 2 and one_line(err).startswith(line)


def test_a_choice_typed_a_hundred_thousand_characters_long_is_cut_in_the_line(capsys):
    code, err = said(capsys, "run", "ffn.mlir", "--policy", "g" * 100_000)
    assert code == 2
    one_line(err, "argument --policy: invalid choice: 'ggg", "characters", "(choose from ")


def test_a_hundred_thousand_character_knobs_is_cut_in_the_line(capsys, db):
    code, err = said(capsys, "tune", "ffn.mlir", "--db", db, "--trials", "1", "--knobs", "memory," + "k" * 100_000)
    assert code == 2
    one_line(err, "tilescope: error: unknown knob 'kkk", "characters", "known: memory")


@pytest.mark.parametrize("command", ["run", "show", "check"])
def test_an_l1_usage_cap_outside_0_to_1_is_one_line_in_every_command_that_compiles(capsys, db, command):
    """run, show and check read their options alike: a share of L1 past the whole is refused
    (check compiled with it, giving tensors twice a core's L1)."""
    code, err = said(capsys, command, "ffn.mlir", *(["--db", db] if command == "run" else []), "--l1-usage-cap", "2")
    assert code == 2
    one_line(err, "--l1-usage-cap must be in (0, 1], got 2")


def test_a_hundred_thousand_character_override_is_cut_in_the_line(capsys, db):
    code, err = said(capsys, "run", "ffn.mlir", "--db", db, "--override", "ffn.fc1=" + "8x8:" * 25_000)
    assert code == 2
    one_line(err, "tilescope: error: ")
    assert runs_in(db) == []


def test_a_label_that_is_not_utf8_is_one_line_and_stores_nothing(tmp_path, db):
    """As typed in a shell: `--label $'\\xff'` reaches Python as bytes it cannot decode."""
    done = subprocess.run(
        [sys.executable, "-m", "tilescope.app.cli", "run", "ffn.mlir", "--db", db, "--label", b"caf\xe9"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    one_line(done.stderr, "tilescope: error: ", r"caf\xe9", "not valid UTF-8")
    assert runs_in(db) == []


def test_a_model_path_that_is_not_utf8_is_one_line(capsys, tmp_path, db):
    model = tmp_path / os.fsdecode(b"\xff.mlir")
    model.write_text((EXAMPLES / "ffn.mlir").read_text())
    code, err = said(capsys, "run", str(model), "--db", db)
    assert code == 2
    one_line(err, r"\xff.mlir", "not valid UTF-8")
    assert runs_in(db) == []


@pytest.mark.parametrize("command", [["export", "last"], ["tune", "ffn.mlir", "--trials", "1"]])
def test_an_output_name_longer_than_a_file_system_takes_is_one_line(capsys, tmp_path, db, command):
    assert main(["run", "ffn.mlir", "--db", db]) == 0
    capsys.readouterr()
    output = tmp_path / ("a" * 300 + ".json")
    code, err = said(capsys, *command, "--db", db, "-o", str(output))
    assert code == 2
    one_line(err, "tilescope: error: ", "cannot write: File name too long")
    assert len(runs_in(db)) == 1  # tune said so before it stored a start


@pytest.mark.parametrize(
    "command, suffix",
    [
        (["import", "1"], ".csv"),
        (["run", "ffn.mlir", "--overrides"], ".json"),
        (["run"], ".mlir"),
        (["run", "ffn.mlir", "--target"], ".toml"),
    ],
)
def test_an_input_name_longer_than_a_file_system_takes_is_one_line(capsys, tmp_path, monkeypatch, db, command, suffix):
    monkeypatch.chdir(tmp_path)
    code, err = said(capsys, *command, "b" * 300 + suffix, "--db", db)
    assert code == 2
    assert one_line(err).startswith("tilescope: error: bbbbbbbbbb")  # the name as typed, cut


@pytest.mark.parametrize("typed", ["pw\r\n", "pw\n", "pw"])
def test_passwd_reads_a_password_line_without_its_end(capsys, tmp_path, monkeypatch, typed):
    """A password piped in from a file written on Windows ends in CR LF; the CR is not the password's."""
    users = tmp_path / "users"
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    assert main(["passwd", str(users), "alice"]) == 0
    name, _, hashed = users.read_text().strip().partition(":")
    assert name == "alice" and check_password_hash(hashed, "pw")
