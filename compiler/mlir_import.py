"""Frontend: MLIR text -> the `input` level, parsed by the real MLIR parser.

The parser is MLIR's own, through the Python bindings in the `iree-base-compiler` wheel. TTIR ops are
not registered there, so unregistered dialects are allowed: such ops parse in generic form.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import types
from collections import deque
from dataclasses import dataclass

from iree.compiler import ir

from . import dtypes
from .errors import ModelLoadError
from .ir import Graph, Op, Tensor

ENTRY_NAMES = ("main", "forward")
_MAX_ATTR_CHARS = 200  # huge splat constants are summarised, not copied into every level


@dataclass
class ImportedModel:
    ref: str  # what the user asked for: a path or 'zoo:...'
    name: str
    text: str  # the MLIR source, unchanged: the `input` level's text
    graph: Graph  # the `input` level as a graph; each op's meta["lines"] locates it in `text`

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


_DIALECT_PACKAGE = "iree.compiler.dialects"
_OP_NAMESPACES = re.compile(r'"([A-Za-z_][\w$]*)\.[\w.$]+"\s*\(|\b([a-z_][\w]*)\.[a-z_][\w.]*\s')
_stubbed: set[str] = set()


def _stub_unknown_dialect_modules(text: str) -> None:
    """The bindings look for a Python module per dialect each time they wrap an op; for dialects
    they ship none for (ttir, stablehlo, ...) that is a failed import per op. One empty module per
    such namespace makes the lookup succeed once and for all; ops stay generic OpViews."""
    for match in _OP_NAMESPACES.finditer(text[:200_000]):
        namespace = match.group(1) or match.group(2)
        if namespace in _stubbed:
            continue
        _stubbed.add(namespace)
        module_name = f"{_DIALECT_PACKAGE}.{namespace}"
        if module_name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(module_name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            sys.modules[module_name] = types.ModuleType(module_name)


def new_context() -> ir.Context:
    ctx = ir.Context()
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
            raise ModelLoadError(f"{source_name}:{where}: {diags[0].message}") from None
        raise ModelLoadError(f"{source_name}: cannot parse MLIR: {err}") from None


def _line_col(location: str) -> str:
    match = re.search(r":(\d+):(\d+)", location)
    return f"{match.group(1)}:{match.group(2)}" if match else "?"


# Ops in the custom syntax of dialects no public wheel registers, which MLIR cannot parse.
# Wrappers are unwrapped (their body kept); declarations are dropped.
_WRAPPERS = re.compile(r"^[ \t]*(ttcore\.(?:device|cpu)_module)[ \t]*\{", re.M)
_DECLARATIONS = re.compile(r"^[ \t]*(sdy\.mesh)[ \t]+(@[\w.$-]+)[^\n]*$", re.M)
_TRAILING_LOC = re.compile(r"[ \t]*loc\((?:[^()\n]|\([^()\n]*\))*\)")
_BRACES = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[{}]')


def _blank(text: str, start: int, end: int) -> str:
    """Replace text[start:end] with spaces (newlines kept) so every line:col stays where it was."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip_unparsable(text: str) -> tuple[str, list[str]]:
    """Remove custom-syntax wrappers and declarations of unregistered dialects, with warnings."""
    warnings: list[str] = []
    while match := _WRAPPERS.search(text):
        depth, close = 0, None
        for token in _BRACES.finditer(text, match.end() - 1):
            if token.group() == "{":
                depth += 1
            elif token.group() == "}":
                depth -= 1
                if depth == 0:
                    close = token.start()
                    break
        if close is None:
            break  # unbalanced: let the parser report where
        trailing_loc = _TRAILING_LOC.match(text, close + 1)
        text = _blank(text, close, trailing_loc.end() if trailing_loc else close + 1)
        text = _blank(text, match.start(), match.end())
        warnings.append(f"unwrapped {match.group(1)} (its body is the model)")
    for match in reversed(list(_DECLARATIONS.finditer(text))):
        text = _blank(text, match.start(), match.end())
        warnings.append(f"dropped {match.group(1)} {match.group(2)}: device meshes are not modelled")
    return text, warnings


def import_mlir(text: str, ref: str, name: str | None = None, function: str | None = None) -> ImportedModel:
    """Import `text`; `function` picks the entry function when the module has several."""
    ctx = new_context()
    parsable, warnings = strip_unparsable(text)
    _stub_unknown_dialect_modules(parsable)
    with ctx:
        module = parse_module(parsable, ref, ctx)
        entry = _entry_function(module, ref, function, warnings)
        graph = _graph_of(entry, name or _model_name(ref, entry))
        _locate_named_ops(graph, text)
        _read_properties(graph, text)
    graph.warnings[:0] = warnings
    return ImportedModel(ref=ref, name=graph.name, text=text, graph=graph)


def _model_name(ref: str, entry) -> str:
    stem = ref.rsplit("/", 1)[-1]
    return stem.removesuffix(".mlir") or ir.StringAttr(entry.attributes["sym_name"]).value


def _functions(block) -> list:
    found = []
    for op in block.operations:
        if op.operation.name == "func.func":
            found.append(op)
        elif op.operation.regions and op.operation.name in ("builtin.module",):
            for region in op.operation.regions:
                for inner in region.blocks:
                    found.extend(_functions(inner))
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
            raise ModelLoadError(f"{ref}: no function @{wanted}; functions: {', '.join(by_name)}")
        return by_name[wanted]
    for name in ENTRY_NAMES:
        if name in by_name:
            return by_name[name]
    public = [name for name, f in by_name.items() if "sym_visibility" not in f.attributes]
    if len(public) > 1:
        warnings.append(
            f"{len(public)} public functions and no main or forward: showing @{public[0]}; "
            f"pick another with {ref.split('#')[0]}#NAME (e.g. #{public[1]})"
        )
    return by_name[public[0]] if public else funcs[0]


def _tensor_of(name: str, mlir_type: ir.Type) -> Tensor:
    if isinstance(mlir_type, ir.RankedTensorType):
        return Tensor(name, tuple(mlir_type.shape), dtypes.normalize(str(mlir_type.element_type)))
    return Tensor(name, (), dtypes.normalize(str(mlir_type)))


def _file_line(location: ir.Location) -> int | None:
    try:
        return location.start_line
    except AttributeError:
        return None


_OP_LINE = re.compile(r'^\s*(?:%[^=]*=\s*)?"?[A-Za-z_][\w$]*\.[\w.$]+"?\s*[(<{ %@]')


def _locate_named_ops(graph: Graph, text: str) -> None:
    """Source line of ops named by loc("...") (inline or through a #loc alias); the parser keeps no
    file position for them, so find the op lines that carry their loc. Ops sharing a loc name take
    its op lines in program order."""
    alias_names = {
        m.group(1): m.group(2) if m.group(2) is not None else UNKNOWN_LOC
        for m in re.finditer(r'^(#[\w.$-]+)\s*=\s*loc\((?:"((?:[^"\\]|\\.)*)"(?:\(.*\))?|unknown)\)', text, re.M)
    }
    wanted: dict[str, deque[Op]] = {}
    for op in graph.ops:
        if "loc" in op.meta and "lines" not in op.meta:
            wanted.setdefault(op.meta["loc"], deque()).append(op)
    if not wanted:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if "loc(" not in line or not _OP_LINE.match(line) or line.lstrip().startswith(("func.func", "module")):
            continue
        match = _TRAILING_OP_LOC.search(line)
        if match is None:
            continue
        if match.group(3) is not None:
            name = UNKNOWN_LOC
        else:
            name = match.group(1) if match.group(1) is not None else alias_names.get(match.group(2))
        queue = wanted.get(name) if name is not None else None
        # unknown locations say nothing about the op: take the next one whose kind is on the line
        if queue and (name != UNKNOWN_LOC or queue[0].kind in line):
            queue.popleft().meta["lines"] = (number, number)


UNKNOWN_LOC = "<unknown>"
_TRAILING_OP_LOC = re.compile(r'loc\((?:"((?:[^"\\]|\\.)*)"|(#[\w.$-]+)|(unknown))\)\s*$')
_MAX_PROPERTIES_CHARS = 4096  # longer property dicts hold constant data, summarised not parsed


def _properties_text(line: str) -> str | None:
    """The `{...}` inside an op's `<{...}>` on its source line, braces balanced, strings skipped."""
    start = line.find("<{")
    if start < 0:
        return None
    depth, i, quoted = 0, start + 1, False
    while i < len(line):
        ch = line[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return line[start + 1 : i + 1]
        i += 1
    return None


def _read_properties(graph: Graph, text: str) -> None:
    """Properties (`<{dimension = 1 : si32}>`) of unregistered ops are not visible through the
    bindings' attribute API; read them from the op's source line with MLIR's attribute parser."""
    lines = text.splitlines()
    for op in graph.ops:
        span = op.meta.get("lines")
        if span is None:
            continue
        body = _properties_text(lines[span[0] - 1])
        if body is None:
            continue
        if len(body) > _MAX_PROPERTIES_CHARS:
            op.attrs.setdefault("properties", body[: _MAX_ATTR_CHARS - 3] + "...")
            continue
        try:
            props = ir.DictAttr(ir.Attribute.parse(body))
        except (ir.MLIRError, ValueError):
            continue  # the op parsed, so its properties did too; a line we misread is not an error
        for i in range(len(props)):
            named = props[i]
            op.attrs.setdefault(named.name, _attr_text(named.attr))


def _loc_name(location: ir.Location) -> str | None:
    try:
        return location.name_str or None
    except AttributeError:
        return None


def _arg_name(func_op, index: int, arg) -> str:
    attrs = func_op.arg_attrs
    if attrs is not None and index < len(attrs):
        arg_attrs = ir.DictAttr(attrs[index])
        if "ttir.name" in arg_attrs:
            return ir.StringAttr(arg_attrs["ttir.name"]).value
    return _loc_name(arg.location) or f"arg{index}"


def _attr_text(attr: ir.Attribute) -> str:
    text = str(attr)
    return text if len(text) <= _MAX_ATTR_CHARS else text[: _MAX_ATTR_CHARS - 3] + "..."


class _Namer:
    """Stable op names: the MLIR loc name when present, else <kind>_<n> counted per kind."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.counts: dict[str, int] = {}

    def name(self, loc_name: str | None, base: str) -> str:
        if loc_name is None:
            while True:
                n = self.counts.get(base, 0)
                self.counts[base] = n + 1
                candidate = f"{base}_{n}"
                if candidate not in self.taken:
                    break
        else:
            candidate, k = loc_name, 1
            while candidate in self.taken:  # two ops with one loc name keep distinct names
                candidate = f"{loc_name}#{k}"
                k += 1
        self.taken.add(candidate)
        return candidate


def _graph_of(func_op, model_name: str) -> Graph:
    tensors: dict[str, Tensor] = {}
    value_names: dict[ir.Value, str] = {}
    inputs: list[str] = []
    for index, arg in enumerate(func_op.arguments):
        tensor = _tensor_of(_arg_name(func_op, index, arg), arg.type)
        tensors[tensor.name] = tensor
        value_names[arg] = tensor.name
        inputs.append(tensor.name)

    namer = _Namer()
    namer.taken.update(inputs)
    ops: list[Op] = []
    outputs: list[str] = []
    for mlir_op in func_op.entry_block.operations:
        operation = mlir_op.operation
        if operation.name == "func.return":
            outputs = [value_names[v] for v in operation.operands]
            continue
        base = operation.name.split(".", 1)[-1]
        loc_name = _loc_name(operation.location)
        name = namer.name(loc_name, base)
        results = list(operation.results)
        out_names = [name] if len(results) == 1 else [f"{name}:{i}" for i in range(len(results))]
        for value, out_name in zip(results, out_names):
            tensors[out_name] = _tensor_of(out_name, value.type)
            value_names[value] = out_name
        attrs = {key: _attr_text(operation.attributes[key]) for key in operation.attributes}
        op = Op(
            name=name,
            kind=operation.name,
            inputs=[value_names[v] for v in operation.operands],
            outputs=out_names,
            attrs=attrs,
        )
        line = _file_line(operation.location)
        if line is not None:
            op.meta["lines"] = (line, line)
        elif loc_name is not None:
            op.meta["loc"] = loc_name
        elif str(operation.location) == "loc(unknown)":
            op.meta["loc"] = UNKNOWN_LOC
        ops.append(op)
    return Graph(model_name, "input", tensors, ops, inputs, outputs)
