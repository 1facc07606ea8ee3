"""Frontend: MLIR text -> the `input` level, parsed by the real MLIR parser.

The parser is MLIR's own, through the Python bindings in the `iree-base-compiler` wheel. TTIR ops are
not registered there, so unregistered dialects are allowed: such ops parse in generic form, and
the custom syntax of Shardy's ops is rewritten to it first (compiler/frontend/mlir_text.py). Meshes,
shardings and collectives are read alongside (compiler/frontend/mesh_import.py).
"""

from __future__ import annotations

import hashlib
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass

from iree.compiler import ir

from tilescope.compiler.ir.meta import CODE_LINE, LINES, LOC, LineSpan
from tilescope.compiler.frontend import dialect_stubs
from tilescope.compiler.ir import dtypes
from tilescope.compiler.errors import ModelLoadError, clip
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.frontend.mesh_import import MeshReader
from tilescope.compiler.frontend.mlir_text import MAX_NESTING, check_text, make_parsable, strip_unparsable
from tilescope.compiler.frontend.source_lines import (
    UNKNOWN_LOC,
    attr_text,
    code_line,
    file_line,
    loc_name,
    locate_named_ops,
    read_properties,
)

__all__ = ["MAX_NESTING", "check_text", "strip_unparsable"]  # kept importable from here

ENTRY_NAMES = ("main", "forward")
MAX_PARSE_MESSAGE = 400  # characters of the parser's own message in an error line
LOADED_ONCE = ("#ttcore.argument_type<parameter>", "#ttcore.argument_type<constant>")


@dataclass
class ImportedModel:
    ref: str  # what the user asked for: a path or 'zoo:...'
    name: str
    text: str  # the MLIR source, unchanged: the `input` level's text
    graph: Graph  # the `input` level as a graph; each op's meta[LINES] locates it in `text`

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


# Tilescope models tensors of up to 2^48 elements (the largest real weights have about 2^31), so
# every size it works out (bytes up to 2^51) is an exact integer in 64 bits.
MAX_ELEMENTS = 2**48
# Names longer than this are shortened (a hash keeps them distinct): views and name scopes do work
# per dotted part, and real names (PyTorch module paths, JAX scopes) stay well under 200 characters.
MAX_NAME_CHARS = 512


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
        return sum(op.operation.name != "func.return" for op in entry.entry_block.operations)


def import_mlir(text: str, ref: str, name: str | None = None, function: str | None = None) -> ImportedModel:
    """Import `text`; `function` picks the entry function when the module has several."""
    warnings: list[str] = []
    with _parsed_entry(text, ref, function, warnings) as (entry, mesh):
        graph = _GraphBuilder(ref, mesh).build(entry, name or _model_name(ref, entry))
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
    return _checked_name(ir.StringAttr(entry.attributes["sym_name"]).value, "function", ref)


def _functions(block) -> list:
    """The func.func ops of `block` and of the modules nested in it, in program order. A stack,
    not recursion: modules may nest up to MAX_NESTING deep, past Python's recursion limit."""
    found = []
    pending = [iter(block.operations)]
    while pending:
        op = next(pending[-1], None)
        if op is None:
            pending.pop()
        elif op.operation.name == "func.func":
            found.append(op)
        elif op.operation.name == "builtin.module":
            pending.append(inner for region in op.operation.regions for b in region.blocks for inner in b.operations)
    return found


def _entry_function(module: ir.Module, ref: str, wanted: str | None, warnings: list[str]):
    """The function to compile: `wanted` if given, else main, forward, or the only public one.
    With several public functions and none of those names, the first is taken, with a warning."""
    funcs = _functions(module.body)
    if not funcs:
        raise ModelLoadError(f"{ref}: no func.func in the module")
    by_name = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs}
    if wanted is not None:
        if wanted not in by_name:
            listed = ", ".join(_shown(name) for name in list(by_name)[:10])
            more = f" and {len(by_name) - 10} more" if len(by_name) > 10 else ""
            raise ModelLoadError(f"{ref}: no function @{_shown(wanted)}; functions: {listed}{more}")
        return by_name[wanted]
    for name in ENTRY_NAMES:
        if name in by_name:
            return by_name[name]
    public = [name for name, f in by_name.items() if "sym_visibility" not in f.attributes]
    if len(public) > 1:
        warnings.append(
            f"{len(public)} public functions and no main or forward: showing @{_shown(public[0])}; "
            f"pick another with {ref.split('#')[0]}#NAME (e.g. #{_shown(public[1])})"
        )
    return by_name[public[0]] if public else funcs[0]


def _shown(name: str) -> str:
    """A name as a one-line message shows it: control characters escaped, long names cut."""
    return clip(name if name.isprintable() else repr(name)[1:-1])


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # control characters and line breaks


def _checked_name(name: str, what: str, ref: str, location: ir.Location | None = None) -> str:
    """`name`, shortened past MAX_NAME_CHARS (a hash of the whole keeps it distinct). A control
    character or line break is an error: names are keys of overrides, lines of reports and text in the database
    (where PostgreSQL refuses NUL), and one-line messages quote them."""
    bad = _CONTROL.search(name)
    if bad:
        raise ModelLoadError(
            f"{_where(ref, location)}: {what} name '{_shown(name)}' has a control character or line break "
            f"(U+{ord(bad.group()):04X})"
        )
    if len(name) > MAX_NAME_CHARS:
        return f"{name[: MAX_NAME_CHARS - 9]}~{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return name


def _where(ref: str, location: ir.Location | None) -> str:
    """ref:line:col of a location in the file, or ref alone (no location, or a name or unknown one)."""
    if isinstance(location, ir.FileLineColLoc):
        return f"{ref}:{location.start_line}:{location.start_col}"
    return ref


def _shape_and_dtype(mlir_type: ir.Type) -> tuple[tuple[int, ...], str] | str:
    """A value type's (shape, dtype), or why tilescope cannot model it."""
    if isinstance(mlir_type, ir.RankedTensorType):
        shape = tuple(mlir_type.shape)
        if any(d < 0 for d in shape):
            return "dynamic shapes are not supported"
        if 0 in shape:  # no tiles, so nothing to place or time: an error, not a zero-cost op
            return "zero-size tensors are not supported"
        if math.prod(shape) > MAX_ELEMENTS:
            return "tensors of more than 2^48 elements are not supported"
        return shape, dtypes.normalize(str(mlir_type.element_type))
    if isinstance(mlir_type, ir.UnrankedTensorType):
        return "unranked tensors are not supported"
    return (), dtypes.normalize(str(mlir_type))


def _attrs_each(func_op, key: str, count: int) -> list[ir.DictAttr | None]:
    """Each argument's (`arg_attrs`) or result's (`res_attrs`) attributes, read once: the bindings'
    `func_op.arg_attrs` builds a new array on every read, so reading it once per argument was
    quadratic (17 s for 3,000 arguments)."""
    if key not in func_op.attributes:
        return [None] * count
    found = [ir.DictAttr(a) for a in ir.ArrayAttr(func_op.attributes[key])]
    return found + [None] * (count - len(found))


def _arg_name(arg_attrs: ir.DictAttr | None, arg) -> str | None:
    if arg_attrs is not None and "ttir.name" in arg_attrs and isinstance(arg_attrs["ttir.name"], ir.StringAttr):
        return ir.StringAttr(arg_attrs["ttir.name"]).value
    return loc_name(arg.location)


def _loaded_once(arg_attrs: ir.DictAttr | None) -> bool:
    """Whether an argument is a weight the runtime loads before the first step: tt-xla and
    tt-torch mark weights `#ttcore.argument_type<parameter>` and buffers `<constant>`; anything
    else (unmarked, `<input>`) may change every step."""
    if arg_attrs is None or "ttcore.argument_type" not in arg_attrs:
        return False
    return str(arg_attrs["ttcore.argument_type"]) in LOADED_ONCE


class _Namer:
    """Stable, distinct tensor names: an op's MLIR loc name when present, else <kind>_<n> counted
    per kind; a name taken before gets #1, #2, ... An op with several results names them
    <name>:<i>, and none of those may be taken either."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.counts: dict[str, int] = {}  # per kind
        self.suffixes: dict[str, int] = {}  # per loc name, its next #k: one try per op, not k tries

    def name(self, loc_name: str | None, base: str, results: int = 1) -> tuple[str, list[str]]:
        """(op name, its result names)."""
        while True:
            if loc_name is None:
                n = self.counts.get(base, 0)
                self.counts[base] = n + 1
                candidate = f"{base}_{n}"
            else:
                k = self.suffixes.get(loc_name, 0)
                self.suffixes[loc_name] = k + 1
                candidate = f"{loc_name}#{k}" if k else loc_name
            outs = [candidate] if results == 1 else [f"{candidate}:{i}" for i in range(results)]
            if candidate not in self.taken and self.taken.isdisjoint(outs):
                self.taken.update((candidate, *outs))
                return candidate, outs


class _GraphBuilder:
    """The `input` graph of a function: its ops in program order, a manual_computation's body
    inlined in its place (mesh_import.py)."""

    def __init__(self, ref: str, mesh: MeshReader) -> None:
        self.ref, self.mesh = ref, mesh
        self.tensors: dict[str, Tensor] = {}
        self.value_names: dict[ir.Value, str] = {}
        self.namer = _Namer()
        self.ops: list[Op] = []
        self.shortened = 0
        # What every op of a kind, value of a type or use of an attribute shares, worked out once:
        # the bindings uniquify types and attributes, so equal ones hash alike.
        self.kinds: dict[str, tuple[str, bool]] = {}  # kind -> (base of unnamed ops' names, shortened)
        self.types: dict[ir.Type, tuple[tuple[int, ...], str] | str] = {}  # (shape, dtype) or the problem
        self.attr_texts: dict[ir.Attribute, str] = {}

    def checked(self, name: str | None, what: str, location: ir.Location) -> str | None:
        if name is None:
            return None
        self.shortened += len(name) > MAX_NAME_CHARS
        return _checked_name(name, what, self.ref, location)

    def build(self, func_op, model_name: str) -> Graph:
        inputs: list[str] = []
        arguments = list(func_op.arguments)
        for index, (arg, attributes) in enumerate(zip(arguments, _attrs_each(func_op, "arg_attrs", len(arguments)))):
            given = self.checked(_arg_name(attributes, arg), "argument", arg.location)
            name = self.namer.name(given if given is not None else f"arg{index}", "arg")[0]
            self.tensors[name] = self.tensor(name, arg.type, arg.location)
            self.tensors[name].is_parameter = _loaded_once(attributes)
            self.value_names[arg] = name
            self.mesh.value(name, attributes, _where(self.ref, arg.location))
            inputs.append(name)
        outputs: list[str] = []
        for mlir_op in func_op.entry_block.operations:
            if mlir_op.operation.name == "func.return":
                outputs = [self.value_names[v] for v in mlir_op.operation.operands]
                for name, attributes in zip(outputs, _attrs_each(func_op, "res_attrs", len(outputs))):
                    self.mesh.value(name, attributes, _where(self.ref, func_op.location))
            else:
                self.add(mlir_op.operation)
        graph = Graph(model_name, "input", self.tensors, self.ops, inputs, outputs)
        if self.shortened:
            graph.warnings.append(
                f"{self.shortened} names longer than {MAX_NAME_CHARS} characters shortened (a hash ends each)"
            )
        return graph

    def add(self, operation) -> None:
        if operation.name == "sdy.manual_computation":
            self.inline_manual(operation)
            return
        location = operation.location
        op = self.op(operation.name, list(operation.operands), list(operation.results), location)
        attributes = operation.attributes
        op.attrs = {key: self.attr_text(attributes[key]) for key in attributes}
        self.mesh.op(op, attributes, _where(self.ref, location))

    def attr_text(self, attr: ir.Attribute) -> str:
        text = self.attr_texts.get(attr)
        if text is None:
            text = self.attr_texts[attr] = attr_text(attr)
        return text

    def tensor(self, name: str, mlir_type: ir.Type, location: ir.Location) -> Tensor:
        """The tensor of a value; shapes tilescope cannot model are one-line errors naming it."""
        known = self.types.get(mlir_type)
        if known is None:
            known = self.types[mlir_type] = _shape_and_dtype(mlir_type)
        if isinstance(known, str):
            raise ModelLoadError(f"{_where(self.ref, location)}: {known}: {_shown(name)} is {clip(str(mlir_type))}")
        return Tensor(name, *known)

    def kind_base(self, kind: str, location: ir.Location) -> str:
        """`kind` checked, and the base of the names of its ops that have none."""
        known = self.kinds.get(kind)
        if known is None:
            _checked_name(kind, "op", self.ref, location)  # kinds are named in warnings, unnamed ops by them
            base = kind.split(".", 1)[-1]
            known = self.kinds[kind] = (_checked_name(base, "op", self.ref, location), len(base) > MAX_NAME_CHARS)
        self.shortened += known[1]
        return known[0]

    def op(self, kind: str, operands: list, results: list, location: ir.Location) -> Op:
        """An op of `kind` from MLIR values to MLIR values, named and located."""
        base = self.kind_base(kind, location)
        named = loc_name(location)
        name, out_names = self.namer.name(self.checked(named, "op", location), base, len(results))
        for value, out_name in zip(results, out_names):
            self.tensors[out_name] = self.tensor(out_name, value.type, location)
            self.value_names[value] = out_name
        op = Op(name=name, kind=kind, inputs=[self.value_names[v] for v in operands], outputs=out_names)
        line = file_line(location)
        if line is not None:
            op.meta[LINES] = LineSpan(line, line)
        elif named is not None:
            op.meta[LOC] = named
            made_by = code_line(location)
            if made_by is not None:
                op.meta[CODE_LINE] = made_by
        elif str(location) == "loc(unknown)":
            op.meta[LOC] = UNKNOWN_LOC
        self.ops.append(op)
        return op

    def inline_manual(self, operation) -> None:
        """A manual_computation's body in its place: a full_to_shard per operand gives the body
        its argument, a shard_to_full per result takes what the body returns."""
        where, location = _where(self.ref, operation.location), operation.location
        ins, outs, axes = self.mesh.manual(operation, where)
        blocks = [block for region in operation.regions for block in region.blocks]
        body = blocks[0] if len(blocks) == 1 else None
        returned = [o.operation.operands for o in body.operations if o.operation.name == "sdy.return"] if body else []
        if body is None or len(body.arguments) != len(ins) or [len(r) for r in returned] != [len(outs)]:
            raise ModelLoadError(
                f"{where}: manual_computation needs one block taking each operand and returning each result"
            )
        for operand, argument, spec in zip(operation.operands, body.arguments, ins):
            self.mesh.boundary(self.op("sdy.full_to_shard", [operand], [argument], location), spec, axes, where)
        self.mesh.manual_depth += 1
        for inner in body.operations:
            if inner.operation.name != "sdy.return":
                self.add(inner.operation)
        self.mesh.manual_depth -= 1
        for value, result, spec in zip(returned[0], operation.results, outs):
            self.mesh.boundary(self.op("sdy.shard_to_full", [value], [result], location), spec, axes, where)
