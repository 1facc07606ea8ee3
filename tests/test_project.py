"""The project's promises to a new user: its package metadata, quick start and CI entry point."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, "Quick start has no code block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_distribution_name_script_and_python():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "tilescope"
    assert project["scripts"]["tilescope"] == "app.cli:main"
    assert project["requires-python"] == ">=3.11"
    for required in ("dash", "plotly", "networkx", "numpy", "sqlalchemy"):
        assert any(dep.startswith(required) for dep in project["dependencies"]), required


def test_top_level_layout():
    for folder in ("app", "compiler", "overrides", "perfdb", "assets", "tests"):
        assert (ROOT / folder).is_dir(), folder


def test_quick_start_is_two_commands_and_ci_runs_the_second():
    commands = _quick_start_commands()
    assert len(commands) == 2
    serve, test = commands
    assert serve == "./run app" and test == "./run test"
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines()
