"""`tilescope export`: a file written is said in one line, what of which run went where; to standard
output, the export alone."""

from __future__ import annotations

import json

import pytest

from tilescope.app.cli import main


@pytest.fixture
def db(tmp_path, capsys) -> str:
    url = f"sqlite:///{tmp_path / 'export.db'}"
    assert main(["run", "ffn.mlir", "--db", url, "--override", "ffn.fc1=8x8:l1:block_sharded"]) == 0
    capsys.readouterr()
    return url


@pytest.mark.parametrize(
    "fmt, said",
    [
        ("overrides", "run 1's overrides to {} (tilescope JSON)"),
        ("tt-mlir", "run 1's overrides to {} (tt-mlir options)"),
        ("chrome", "run 1's trace to {} (Chrome/Perfetto JSON)"),
        ("csv", "run 1's ops to {} (tt-metal CSV)"),
    ],
)
def test_an_export_to_a_file_says_what_it_wrote_where(capsys, tmp_path, db, fmt, said):
    path = tmp_path / f"run.{fmt}"
    assert main(["export", "last", "--db", db, "--format", fmt, "-o", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"wrote {said.format(path)}\n" and err == ""
    assert path.stat().st_size > 0


def test_an_export_to_standard_output_is_the_export_alone(capsys, db):
    assert main(["export", "last", "--db", db]) == 0
    (item,) = json.loads(capsys.readouterr().out)["overrides"]
    assert item["op"] == "ffn.fc1" and item["memory"] == "l1"
