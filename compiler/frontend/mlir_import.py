"""Frontend: MLIR text -> the `input` level, parsed by the real MLIR parser.

The parser is MLIR's own, through the Python bindings in the `iree-base-compiler` wheel. TTIR ops are
not registered there, so unregistered dialects are allowed: such ops parse in generic form, and
the custom syntax of Shardy's ops is rewritten to it first (compiler/frontend/mlir_text.py). Meshes,
shardings and collectives are read alongside (compiler/frontend/mesh_import.py).
"""

from __future__ import annotations

import hashlib
import re
from contextlib import contextmanager
from dataclasses import dataclass

from iree.compiler import ir

from tilescope.compiler.frontend import dialect_stubs
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.frontend.graph_builder import MAX_ELEMENTS, MAX_NAME_CHARS, GraphBuilder, checked_name, shown
from tilescope.compiler.frontend.iree_program import RETURNS, Program, symbol
from tilescope.compiler.frontend.mesh_import import MeshReader
from tilescope.compiler.frontend.mlir_text import MAX_NESTING, check_text, make_parsable, strip_unparsable
from tilescope.compiler.frontend.source_lines import locate_named_ops, read_properties

# kept importable from here
__all__ = ["MAX_ELEMENTS", "MAX_NAME_CHARS", "MAX_NESTING", "check_text", "strip_unparsable"]

ENTRY_NAMES = ("main", "forward")
FUNCTIONS = ("func.func", "util.func")  # IREE's programs define theirs with util.func
MAX_PARSE_MESSAGE = 400  # characters of the parser's own message in an error line


@dataclass
class ImportedModel:
    ref: str  # what the user asked for: a path or 'zoo:...'
    name: str
    text: str  # the MLIR source, unchanged: the `input` level's text
    graph: Graph  # the `input` level as a graph; each op's meta[LINES] locates it in `text`

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def new_context() -> ir.Context:
    # The bindings' default loads every dialect IREE registers into each new context: 7-9 ms, more
    # than importing a 100-op model. None loaded, the parser loads each dialect the text names.
    dialect_stubs.install()  # before any op is wrapped
    ctx = ir.Context(load_on_create_dialects=[])
    ctx.allow_unregistered_dialects = True
    return ctx


def parse_module(text: str, source_name: str, ctx: ir.Context | None = None) -> ir.Module:
    """Parse MLIR text; a syntax error becomes one line naming file:line:col and the cause."""
    ctx = ctx or new_context()
    try:
        return ir.Module.parse(text, ctx)
    except ir.MLIRError as err:
        diags = err.error_diagnostics
        if diags:
            where = _line_col(str(diags[0].location))
            raise ModelLoadError(f"{source_name}:{where}: {_cut(diags[0].message)}") from None
        raise ModelLoadError(f"{source_name}: cannot parse MLIR: {_cut(str(err))}") from None


def _cut(said: str) -> str:
    """The parser's message on one line, short: it quotes what it read (a deep type spelled out)."""
    said = " ".join(said.split())
    return said if len(said) <= MAX_PARSE_MESSAGE else said[: MAX_PARSE_MESSAGE - 3] + "..."


def _line_col(location: str) -> str:
    match = re.search(r":(\d+):(\d+)", location)
    return f"{match.group(1)}:{match.group(2)}" if match else "?"


def op_count(text: str, ref: str, function: str | None = None) -> int:
    """How many ops the function `import_mlir` would take has, from a parse alone: the parser is
    native and fast, building the graph is what grows with the ops (~15x the parse)."""
    with _parsed_entry(text, ref, function, []) as (entry, _):
        return sum(op.operation.name not in RETURNS for op in entry.regions[0].blocks[0].operations)


def import_mlir(text: str, ref: str, name: str | None = None, function: str | None = None) -> ImportedModel:
    """Import `text`; `function` picks the entry function when the module has several."""
    warnings: list[str] = []
    with _parsed_entry(text, ref, function, warnings) as (entry, mesh):
        graph = GraphBuilder(ref, mesh, Program(entry.operation.parent.regions[0].blocks[0])).build(
            entry, name or _model_name(ref, entry)
        )
        locate_named_ops(graph, text)
        read_properties(graph, text)
        mesh.finish(graph)
    graph.warnings[:0] = warnings
    return ImportedModel(ref=ref, name=graph.name, text=text, graph=graph)


@contextmanager
def _parsed_entry(text: str, ref: str, function: str | None, warnings: list[str]):
    """The entry function of `text`, parsed, inside its MLIR context, and a reader of its mesh;
    what was dropped to parse it goes to `warnings`."""
    check_text(text, ref)  # before anything else reads it: what follows may assume bounded nesting
    ctx = new_context()
    parsable, dropped, declared = make_parsable(text, ref)
    warnings += dropped
    with ctx:
        module = parse_module(parsable, ref, ctx)
        yield _entry_function(module, ref, function, warnings), MeshReader(ref, declared, parsable)


def _model_name(ref: str, entry) -> str:
    stem = ref.rsplit("/", 1)[-1]
    if stem.removesuffix(".mlir"):
        return stem.removesuffix(".mlir")
    return checked_name(ir.StringAttr(entry.attributes["sym_name"]).value, "function", ref)


def _functions(block) -> list:
    """The func.func ops of `block` and of the modules nested in it, in program order. A stack,
    not recursion: modules may nest up to MAX_NESTING deep, past Python's recursion limit."""
    found = []
    pending = [iter(block.operations)]
    while pending:
        op = next(pending[-1], None)
        if op is None:
            pending.pop()
        elif op.operation.name in FUNCTIONS:
            found.append(op)
        elif op.operation.name == "builtin.module":
            pending.append(inner for region in op.operation.regions for b in region.blocks for inner in b.operations)
    return found


def _entry_function(module: ir.Module, ref: str, wanted: str | None, warnings: list[str]):
    """The function to compile (see _chosen_function), which must have a body."""
    entry = _chosen_function(module, ref, wanted, warnings)
    if not len(entry.regions[0].blocks):
        name = ir.StringAttr(entry.attributes["sym_name"]).value
        raise ModelLoadError(f"{ref}: @{shown(name)} is a declaration, with no body to compile")
    return entry


def _chosen_function(module: ir.Module, ref: str, wanted: str | None, warnings: list[str]):
    """The function to compile: `wanted` if given, else main, forward, or the only public one.
    With several public functions and none of those names, the first is taken, with a warning."""
    funcs = _functions(module.body)
    if not funcs:
        raise ModelLoadError(f"{ref}: no func.func or util.func in the module")
    by_name = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs}
    if wanted is not None:
        if wanted not in by_name:
            listed = ", ".join(shown(name) for name in list(by_name)[:10])
            more = f" and {len(by_name) - 10} more" if len(by_name) > 10 else ""
            raise ModelLoadError(f"{ref}: no function @{shown(wanted)}; functions: {listed}{more}")
        return by_name[wanted]
    for name in ENTRY_NAMES:
        if name in by_name:
            return by_name[name]
    public = [name for name, f in by_name.items() if _visibility(f) == "public"]
    if len(public) > 1:
        warnings.append(
            f"{len(public)} public functions and no main or forward: showing @{shown(public[0])}; "
            f"pick another with {ref.split('#')[0]}#NAME (e.g. #{shown(public[1])})"
        )
    return by_name[public[0]] if public else funcs[0]


def _visibility(function) -> str:
    return symbol(function, "sym_visibility") or "public"  # util.func spells out "public"
