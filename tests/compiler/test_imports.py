"""Imports of the compiler's modules: none imports itself back through others, the perf database
reads only the compiler's vocabulary, and override files know no pass."""

from __future__ import annotations

import networkx as nx

from tests.import_graph import (
    PACKAGE_DIRS,
    cycles,
    import_graph,
    import_statements,
    imported_modules,
    modules,
    resolve,
)

COMPILER = PACKAGE_DIRS["tilescope.compiler"]
# what the perf database may know of the compiler: op kinds, track names, its errors and the
# simulator's per-op record, which it stores
VOCABULARY = {
    "tilescope.compiler.ir.opset",
    "tilescope.compiler.sim.tracks",
    "tilescope.compiler.errors",
    "tilescope.compiler.sim.records",
}


def test_no_compiler_module_imports_itself_through_others():
    """Counted are imports anywhere in a module, under `if TYPE_CHECKING:` too: a cycle there is
    still two modules that cannot be read, changed or tested one without the other."""
    found = cycles(import_graph(COMPILER))
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_cycles_are_found_and_named_in_import_order():
    graph = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d")])
    assert cycles(graph) == [["a", "b", "c", "a"], ["d", "e", "d"]]
    assert cycles(nx.DiGraph([("a", "b"), ("b", "c")])) == []


def test_an_import_anywhere_counts_and_names_the_module_it_reads():
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from p.a import Record\n"
        "def f():\n    from p import b, VALUE\n"
        "from . import c\n"
        "import p.d.e\n"
    )
    known = {"p", "p.a", "p.b", "p.c", "p.d", "p.unused"}
    # `from p import b, VALUE` reads p.b, and p for VALUE; p.d.e is no module here: p.d stands for it
    assert resolve(import_statements(source, "p"), known) == {"p", "p.a", "p.b", "p.c", "p.d"}
    assert resolve(import_statements("from p import b", "q"), known) == {"p.b"}


def test_the_perf_database_reads_only_the_compilers_vocabulary():
    compiler = modules(COMPILER)
    found = {
        f"{path.relative_to(PACKAGE_DIRS['tilescope.perfdb'].parent)}: {module}"
        for path in sorted(PACKAGE_DIRS["tilescope.perfdb"].rglob("*.py"))
        for module in imported_modules(path, compiler) - VOCABULARY
    }
    assert not found, sorted(found)


def test_override_files_import_no_pass():
    passes = {name for name in modules(COMPILER) if name.startswith("tilescope.compiler.passes.")}
    found = {
        f"{path.name}: {module}"
        for path in sorted(PACKAGE_DIRS["tilescope.overrides"].rglob("*.py"))
        for module in imported_modules(path, passes)
    }
    assert not found, sorted(found)
