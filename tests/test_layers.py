"""Imports point one way: the Python API (tilescope/) -> app.cli -> app.web -> app.workbench ->
perfdb, overrides -> compiler, and no Dash below the web."""

from __future__ import annotations

import ast

import pytest

from tests.import_graph import PACKAGE_DIRS, ROOT, imports

APP = ROOT / "app"


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("app/cli", ()),
        ("app/workbench", ("dash", "plotly", "tilescope.app.web", "tilescope.app.cli")),
        ("app/web", ("tilescope.app.cli",)),
        ("perfdb", ("tilescope.app", "dash")),
        ("overrides", ("tilescope.app", "tilescope.perfdb", "dash")),
        ("compiler", ("tilescope.app", "tilescope.perfdb", "tilescope.overrides", "dash")),
    ],
)
def test_a_layer_imports_nothing_above_it(layer, forbidden):
    forbidden = (*forbidden, "tilescope.api")  # the Python API is above every layer
    for path in sorted((ROOT / layer).rglob("*.py")):
        above = sorted(
            m for m in imports(path) if m == "tilescope" or m.split(".")[0] in forbidden or m.startswith(forbidden)
        )
        assert not above, f"{path.relative_to(ROOT)} imports {above}"


@pytest.mark.parametrize("package", sorted(PACKAGE_DIRS))
def test_every_import_is_absolute_and_rooted(package):
    """`from tilescope.compiler.ir.graph import Graph`: a module is found by its one name, never
    by where the importer sits, nor by its folder's name (which installs under tilescope)."""
    folders = {folder.name for name, folder in PACKAGE_DIRS.items() if name != "tilescope"}
    found = []
    for path in sorted(PACKAGE_DIRS[package].rglob("*.py")):
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                found.append(f"{where}:{node.lineno} a relative import")
        found += [f"{where}: {m} has no root" for m in sorted(imports(path)) if m.split(".")[0] in folders]
    assert not found, found


def test_app_holds_only_its_layers():
    assert sorted(p.name for p in APP.iterdir() if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")) == [
        "__init__.py",
        "cli",
        "web",
        "workbench",
    ]


MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 400
# migrations are the database's history: each is written once, for its version, and never edited
NOT_SIZED = (PACKAGE_DIRS["tilescope.perfdb"] / "migrations" / "versions",)


@pytest.mark.parametrize("package", sorted(PACKAGE_DIRS))
def test_every_package_is_in_rooms_of_readable_size(package):
    """Each module fits in a few screens and each function on one or two: a module holds one
    concept, a function does one thing (a panel is one file, a pass one module)."""
    found = []
    for path in sorted(PACKAGE_DIRS[package].rglob("*.py")):
        if any(path.is_relative_to(folder) for folder in NOT_SIZED):
            continue
        text = path.read_text()
        where = path.relative_to(ROOT)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    assert not found, "too long:\n" + "\n".join(found)
