"""The project's modules and what each imports, read from the source with ast (nothing is imported):
the layer, size and import tests check them."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Collection, Iterable, Iterator
from functools import cache
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
# dotted package -> its folder, as the wheel installs them (pyproject.toml's package-dir)
_SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
PACKAGE_DIRS = {name: ROOT / folder for name, folder in _SETUPTOOLS["package-dir"].items()}


def module_name(path: Path) -> str:
    """The dotted name `path` imports as (a package's __init__.py: the package)."""
    package, folder = max(
        ((name, folder) for name, folder in PACKAGE_DIRS.items() if path.is_relative_to(folder)),
        key=lambda item: len(item[1].parts),
    )
    parts = path.relative_to(folder).with_suffix("").parts
    return ".".join((package, *parts[:-1], *([] if parts[-1] == "__init__" else parts[-1:])))


def modules(folder: Path) -> dict[str, Path]:
    """The modules below `folder` by dotted name."""
    return {module_name(path): path for path in sorted(folder.rglob("*.py"))}


def _package(path: Path) -> str:
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def import_statements(source: str, package: str) -> Iterator[tuple[str, list[str]]]:
    """(module, names) of every import in `source`, anywhere in it (in functions and under
    `if TYPE_CHECKING:` too), relative ones resolved against `package`: `import a` is (a, [])."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            yield ".".join(p for p in (base, node.module) if p), [alias.name for alias in node.names]


def imports(path: Path) -> set[str]:
    """Every name `path` imports: `from a import b` gives a and a.b (b may be a module)."""
    found = set()
    for module, names in import_statements(path.read_text(), _package(path)):
        found |= {module, *(f"{module}.{name}" for name in names)}
    return found


def resolve(statements: Iterable[tuple[str, list[str]]], known: Collection[str]) -> set[str]:
    """The modules of `known` that import statements import: `from a import b` is a.b where that
    is one of them, else a; any name stands for the longest of them it starts with."""
    found = set()
    for module, names in statements:
        subs = {f"{module}.{name}" for name in names} & set(known)
        found |= subs
        if len(subs) < len(names) or not names:
            parts = module.split(".")
            found |= next(({m} for n in range(len(parts), 0, -1) if (m := ".".join(parts[:n])) in known), set())
    return found


def imported_modules(path: Path, known: Collection[str]) -> set[str]:
    """The modules of `known` that `path` imports."""
    return resolve(import_statements(path.read_text(), _package(path)), known)


@cache
def import_graph(folder: Path) -> nx.DiGraph:
    """The modules below `folder`, an edge from each to every one of them it imports."""
    found = modules(folder)
    graph = nx.DiGraph()
    graph.add_nodes_from(found)
    for name, path in found.items():
        graph.add_edges_from((name, other) for other in imported_modules(path, found) if other != name)
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    """One cycle in each group of modules that import one another: its modules in import order,
    the first repeated at the end."""
    found = []
    for group in sorted(map(sorted, nx.strongly_connected_components(graph))):
        if len(group) > 1:
            edges = nx.find_cycle(graph.subgraph(group), source=group[0])
            found.append([edges[0][0], *(target for _, target in edges)])
    return found
