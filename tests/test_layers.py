"""Imports point one way: app.cli -> app.web -> app.workbench -> perfdb, overrides -> compiler, and no Dash
below the web."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app"


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, relative imports resolved against its package."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}  # `from . import ids`
    return found


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("app/workbench", ("dash", "plotly", "tilescope.app.web", "tilescope.app.cli")),
        ("app/web", ("tilescope.app.cli",)),
        ("perfdb", ("tilescope.app", "dash")),
        ("overrides", ("tilescope.app", "tilescope.perfdb", "dash")),
        ("compiler", ("tilescope.app", "tilescope.perfdb", "tilescope.overrides", "dash")),
    ],
)
def test_a_layer_imports_nothing_above_it(layer, forbidden):
    for path in sorted((ROOT / layer).rglob("*.py")):
        above = sorted(m for m in _imports(path) if m.split(".")[0] in forbidden or m.startswith(forbidden))
        assert not any(m.split(".")[0] in ("app", "compiler", "overrides", "perfdb") for m in _imports(path)), path
        assert not above, f"{path.relative_to(ROOT)} imports {above}"


def test_app_holds_only_its_layers():
    assert sorted(p.name for p in APP.iterdir() if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")) == [
        "__init__.py",
        "cli",
        "web",
        "workbench",
    ]


MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 400


def test_the_app_is_in_rooms_of_readable_size():
    """Each module of app/ and each function in it fits on a screen or two: a panel is one file,
    a callback translates and calls the workbench."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    assert not found, found
