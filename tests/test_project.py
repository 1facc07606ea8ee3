"""The project's promises to a new user: its package metadata, quick start and CI entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_distribution_name_script_and_python():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "tilescope"
    assert project["scripts"]["tilescope"] == "tilescope.app.cli:entry"
    assert project["requires-python"] == ">=3.11"
    for required in ("dash", "plotly", "networkx", "numpy", "sqlalchemy"):
        assert any(dep.startswith(required) for dep in project["dependencies"]), required


def test_top_level_layout():
    for folder in ("app", "compiler", "overrides", "perfdb", "assets", "tests"):
        assert (ROOT / folder).is_dir(), folder


def _run_script(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    if not (ROOT / ".venv" / "bin" / "tilescope").exists():
        pytest.skip("no .venv in the checkout: the suite runs outside ./run")
    return subprocess.run(
        [str(ROOT / "run"), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_run_reads_and_writes_paths_where_they_are_typed(tmp_path):
    """`/path/to/checkout/run tilescope ...` from another directory: relative paths are that directory's."""
    shutil.copy(ROOT / "compiler" / "frontend" / "examples" / "classifier.mlir", tmp_path / "x.mlir")
    env = {"TILESCOPE_DB": f"sqlite:///{tmp_path / 'runs.db'}"}
    stored = _run_script("tilescope", "run", "./x.mlir", cwd=tmp_path, env=env)
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("run 1  ./x.mlir on wormhole_n150")
    exported = _run_script("tilescope", "export", "1", "--format", "chrome", "-o", "out.json", cwd=tmp_path, env=env)
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "out.json").read_text().startswith("{")
    assert not (ROOT / "out.json").exists()


def test_run_without_a_command_prints_its_usage_and_fails(tmp_path):
    done = _run_script(cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "usage:",
        "  ./run app [tilescope serve options]   start the explorer on http://127.0.0.1:8050",
        "  ./run test [pytest options]           run the whole test suite (test paths relative to the checkout)",
        "  ./run tilescope ARGS...               any tilescope command inside the environment",
    ]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_the_code_is_lint_clean_and_formatted(command):
    """ruff, configured in pyproject.toml: pycodestyle, pyflakes and bugbear, and its formatter."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
