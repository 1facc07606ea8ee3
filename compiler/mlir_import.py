"""Frontend: MLIR text -> the `input` level, parsed by the real MLIR parser.

The parser is MLIR's own, through the Python bindings in the `iree-base-compiler` wheel. TTIR ops are
not registered there, so unregistered dialects are allowed: such ops parse in generic form.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
import sys
import types
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass

from iree.compiler import ir

from . import dtypes
from .errors import ModelLoadError, clip
from .ir import Graph, Op, Tensor

ENTRY_NAMES = ("main", "forward")
_MAX_ATTR_CHARS = 200  # huge splat constants are summarised, not copied into every level
LOADED_ONCE = ("#ttcore.argument_type<parameter>", "#ttcore.argument_type<constant>")


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
# A dialect namespace: quoted generic op names, or a bare `dialect.op ` not inside a longer dotted
# word. Possessive quantifiers and the look-behind make the scan linear: an op name in a long
# dotted loc name ("a.a.a...") is tried from its first word only, and never backtracked into.
_OP_NAMESPACES = re.compile(r'"([A-Za-z_][\w$]*+)\.[\w.$]++"\s*+\(|(?<![\w.$])([a-z_]\w*+)\.[a-z_][\w.]*+\s')
# Dialects real models use, stubbed whenever seen; any other name only while fewer than
# _MAX_OTHER_STUBS have been, so a server fed random input keeps sys.modules bounded.
_KNOWN_DIALECTS = frozenset(
    {
        "ttir",
        "ttnn",
        "ttcore",
        "ttkernel",
        "ttmetal",
        "d2m",
        "stablehlo",
        "mhlo",
        "chlo",
        "vhlo",
        "sdy",
        "jax",
        "tosa",
        "linalg",
        "tensor",
        "arith",
        "math",
        "func",
        "builtin",
        "cf",
        "scf",
        "memref",
        "bufferization",
        "quant",
        "ml_program",
        "shape",
        "emitc",
        "tt",
    }
)
_MAX_OTHER_STUBS = 64
_stubbed: set[str] = set()  # namespaces looked up, stubbed or not
_others: set[str] = set()  # those of them not in _KNOWN_DIALECTS


def _stub_unknown_dialect_modules(text: str) -> None:
    """The bindings look for a Python module per dialect each time they wrap an op; for dialects
    they ship none for (ttir, stablehlo, ...) that is a failed import per op. One empty module per
    such namespace makes the lookup succeed once and for all; ops stay generic OpViews."""
    for match in _OP_NAMESPACES.finditer(text[:200_000]):
        namespace = match.group(1) or match.group(2)
        if namespace in _stubbed or not namespace.isidentifier():
            continue
        if namespace not in _KNOWN_DIALECTS:
            if len(_others) >= _MAX_OTHER_STUBS:
                continue  # an unknown dialect past the cap only costs its failed imports
            _others.add(namespace)
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


# MLIR's parser recurses per nesting level and segfaults with the C++ stack exhausted: about 2,000
# nested regions or 6,000 nested arrays with an 8 MB stack, from a 15 KB file. Real models nest
# up to 7 levels (the corpus); 256 leaves room for any real model and keeps the parser's stack
# under about 1 MB, so a thread of a server parses it as safely as the main thread.
MAX_NESTING = 256
# Tilescope models tensors of up to 2^48 elements (the largest real weights have about 2^31), so
# every size it works out (bytes up to 2^51) is an exact integer in 64 bits.
MAX_ELEMENTS = 2**48
# Names longer than this are shortened (a hash keeps them distinct): views and name scopes do work
# per dotted part, and real names (PyTorch module paths, JAX scopes) stay well under 200 characters.
MAX_NAME_CHARS = 512

# An MLIR string's body (strings never span lines), unrolled so that Python's re keeps no state per
# character: `(?:[^"\\]|\\.)*` costs about 100 bytes a character, gigabytes on a long loc name.
_STRING_BODY = r'[^"\\\n]*+(?:\\.[^"\\\n]*+)*+'
# Tokens that nest, and what the depth scan steps over: strings (which never span lines),
# comments, arrows (`->`) and the `>=` of integer sets.
_NESTING_TOKENS = re.compile(rf'"{_STRING_BODY}"?|//[^\n]*|->|>=|[{{}}\[\]()<>]')
_DEPTH_STEP = {"{": 1, "[": 1, "(": 1, "<": 1, "}": -1, "]": -1, ")": -1, ">": -1}
_STRING_ESCAPE = re.compile(r"\\([0-9a-fA-F]{2}|.)")


def check_text(text: str, ref: str) -> None:
    """Reject, before MLIR's parser sees it, text that would crash the parser or its Python
    bindings or that no database can store: one line naming where and why. Linear in the text."""
    try:
        text.encode()
    except UnicodeEncodeError as err:
        raise ModelLoadError(f"{ref}:{_position(text, err.start)}: not UTF-8 text (a lone surrogate)") from None
    nul = text.find("\0")
    if nul >= 0:
        raise ModelLoadError(f"{ref}:{_position(text, nul)}: NUL character (MLIR is text)")
    depth = 0
    for token in _NESTING_TOKENS.finditer(text):
        step = _DEPTH_STEP.get(token.group())
        if step is None:
            # a string whose \XX escapes are not UTF-8 aborts the process when the bindings read it
            # as a name (nanobind's conversion error is not catchable), so no string may be one
            if token.group()[0] == '"' and "\\" in token.group() and not _is_utf8(token.group()):
                raise ModelLoadError(f"{ref}:{_position(text, token.start())}: string escapes are not UTF-8 text")
        elif step > 0:
            depth += 1
            if depth > MAX_NESTING:
                raise ModelLoadError(
                    f"{ref}:{_position(text, token.start())}: nesting deeper than {MAX_NESTING} levels "
                    "(brackets, braces, regions)"
                )
        elif depth:  # a stray closer (a `>` of a custom syntax) never makes the depth negative
            depth -= 1


def _is_utf8(literal: str) -> bool:
    """Whether an MLIR string literal's bytes, \\XX escapes decoded, are UTF-8."""
    raw, pos = bytearray(), 0
    for match in _STRING_ESCAPE.finditer(literal):
        raw += literal[pos : match.start()].encode()
        code = match.group(1)
        raw += bytes([int(code, 16)]) if len(code) == 2 else code.encode()  # \n, \t, \", \\: ASCII
        pos = match.end()
    raw += literal[pos:].encode()
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def _position(text: str, index: int) -> str:
    """1-based line:col of text[index], lines counted as MLIR counts them (by \\n)."""
    line_start = text.rfind("\n", 0, index) + 1
    return f"{text.count(chr(10), 0, index) + 1}:{index - line_start + 1}"


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
_BRACES = re.compile(rf'"{_STRING_BODY}"|//[^\n]*|[{{}}]')


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace each (start, end) span of text, in order and apart, with spaces (newlines kept) so
    every line:col stays where it was. One copy of the text however many spans."""
    parts, pos = [], 0
    for start, end in spans:
        parts += [text[pos:start], re.sub(r"[^\n]", " ", text[start:end])]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def strip_unparsable(text: str) -> tuple[str, list[str]]:
    """Remove custom-syntax wrappers and declarations of unregistered dialects, with warnings.
    One pass over the text for each (braces paired on a stack), however many there are."""
    warnings: list[str] = []
    headers = {match.end() - 1: match for match in _WRAPPERS.finditer(text)}  # by their `{`
    spans: list[tuple[int, int]] = []
    unwrapped: dict[str, int] = {}
    opened: list[int] = []
    for token in _BRACES.finditer(text) if headers else ():
        if token.group() == "{":
            opened.append(token.start())
        elif token.group() == "}" and opened:  # unbalanced: left for the parser to report where
            match = headers.get(opened.pop())
            if match is not None:
                close = token.start()
                trailing_loc = _TRAILING_LOC.match(text, close + 1)
                spans += [match.span(), (close, trailing_loc.end() if trailing_loc else close + 1)]
                unwrapped[match.group(1)] = unwrapped.get(match.group(1), 0) + 1
    text = _blank(text, sorted(spans))
    for kind, count in unwrapped.items():
        several = f" x{count} (their bodies are" if count > 1 else " (its body is"
        warnings.append(f"unwrapped {kind}{several} the model)")
    declarations = list(_DECLARATIONS.finditer(text))
    text = _blank(text, [match.span() for match in declarations])
    dropped: dict[str, list[str]] = {}
    for match in declarations:
        dropped.setdefault(match.group(1), []).append(clip(match.group(2)))
    for kind, names in dropped.items():
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        warnings.append(f"dropped {kind} {', '.join(names[:5])}{more}: device meshes are not modelled")
    return text, warnings


def op_count(text: str, ref: str, function: str | None = None) -> int:
    """How many ops the function `import_mlir` would take has, from a parse alone: the parser is
    native and fast, building the graph is what grows with the ops (~15x the parse)."""
    with _parsed_entry(text, ref, function, []) as entry:
        return sum(op.operation.name != "func.return" for op in entry.entry_block.operations)


def import_mlir(text: str, ref: str, name: str | None = None, function: str | None = None) -> ImportedModel:
    """Import `text`; `function` picks the entry function when the module has several."""
    warnings: list[str] = []
    with _parsed_entry(text, ref, function, warnings) as entry:
        graph = _graph_of(entry, name or _model_name(ref, entry), ref)
        _locate_named_ops(graph, text)
        _read_properties(graph, text)
    graph.warnings[:0] = warnings
    return ImportedModel(ref=ref, name=graph.name, text=text, graph=graph)


@contextmanager
def _parsed_entry(text: str, ref: str, function: str | None, warnings: list[str]):
    """The entry function of `text`, parsed, inside its MLIR context; what was dropped to parse it
    goes to `warnings`."""
    check_text(text, ref)  # before anything else reads it: what follows may assume bounded nesting
    ctx = new_context()
    parsable, dropped = strip_unparsable(text)
    warnings += dropped
    _stub_unknown_dialect_modules(parsable)
    with ctx:
        module = parse_module(parsable, ref, ctx)
        yield _entry_function(module, ref, function, warnings)


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
    """ref:line:col of a location in the file, or ref alone."""
    try:
        return f"{ref}:{location.start_line}:{location.start_col}"
    except AttributeError:  # no location, or one with no file position (a name, unknown)
        return ref


def _tensor_of(name: str, mlir_type: ir.Type, ref: str, location: ir.Location) -> Tensor:
    """The tensor of a value; shapes tilescope cannot model are one-line errors naming it."""
    if isinstance(mlir_type, ir.RankedTensorType):
        shape = tuple(mlir_type.shape)
        if any(d < 0 for d in shape):
            problem = "dynamic shapes are not supported"
        elif 0 in shape:  # no tiles, so nothing to place or time: an error, not a zero-cost op
            problem = "zero-size tensors are not supported"
        elif math.prod(shape) > MAX_ELEMENTS:
            problem = "tensors of more than 2^48 elements are not supported"
        else:
            return Tensor(name, shape, dtypes.normalize(str(mlir_type.element_type)))
    elif isinstance(mlir_type, ir.UnrankedTensorType):
        problem = "unranked tensors are not supported"
    else:
        return Tensor(name, (), dtypes.normalize(str(mlir_type)))
    raise ModelLoadError(f"{_where(ref, location)}: {problem}: {_shown(name)} is {clip(str(mlir_type))}")


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
        for m in re.finditer(rf'^(#[\w.$-]+)\s*=\s*loc\((?:"({_STRING_BODY})"(?:\(.*\))?|unknown)\)', text, re.M)
    }
    wanted: dict[str, deque[Op]] = {}
    for op in graph.ops:
        if "loc" in op.meta and "lines" not in op.meta:
            wanted.setdefault(op.meta["loc"], deque()).append(op)
    if not wanted:
        return
    for number, line in enumerate(text.split("\n"), start=1):
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
_TRAILING_OP_LOC = re.compile(rf'loc\((?:"({_STRING_BODY})"|(#[\w.$-]+)|(unknown))\)\s*$')
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
    bindings' attribute API; read them from the op's source line with MLIR's attribute parser.
    Each line is read once, however many ops it holds (a model may be one line)."""
    lines = text.split("\n")  # numbered as MLIR numbers them
    parsed: dict[int, list[tuple[str, str]]] = {}
    for op in graph.ops:
        span = op.meta.get("lines")
        if span is None:
            continue
        if span[0] not in parsed:
            parsed[span[0]] = _line_properties(lines[span[0] - 1])
        for key, value in parsed[span[0]]:
            op.attrs.setdefault(key, value)


def _line_properties(line: str) -> list[tuple[str, str]]:
    """(name, text) of the properties on an op's source line."""
    body = _properties_text(line)
    if body is None:
        return []
    if len(body) > _MAX_PROPERTIES_CHARS:
        return [("properties", body[: _MAX_ATTR_CHARS - 3] + "...")]
    try:
        props = ir.DictAttr(ir.Attribute.parse(body))
    except (ir.MLIRError, ValueError):
        return []  # the op parsed, so its properties did too; a line we misread is not an error
    return [(props[i].name, _attr_text(props[i].attr)) for i in range(len(props))]


def _loc_name(location: ir.Location) -> str | None:
    try:
        return location.name_str or None
    except AttributeError:
        return None


def _arg_attrs(func_op, index: int) -> ir.DictAttr | None:
    attrs = func_op.arg_attrs
    return ir.DictAttr(attrs[index]) if attrs is not None and index < len(attrs) else None


def _arg_name(func_op, index: int, arg) -> str | None:
    arg_attrs = _arg_attrs(func_op, index)
    if arg_attrs is not None and "ttir.name" in arg_attrs and isinstance(arg_attrs["ttir.name"], ir.StringAttr):
        return ir.StringAttr(arg_attrs["ttir.name"]).value
    return _loc_name(arg.location)


def _loaded_once(func_op, index: int) -> bool:
    """Whether an argument is a weight the runtime loads before the first step: tt-xla and
    tt-torch mark weights `#ttcore.argument_type<parameter>` and buffers `<constant>`; anything
    else (unmarked, `<input>`) may change every step."""
    arg_attrs = _arg_attrs(func_op, index)
    if arg_attrs is None or "ttcore.argument_type" not in arg_attrs:
        return False
    return str(arg_attrs["ttcore.argument_type"]) in LOADED_ONCE


def _attr_text(attr: ir.Attribute) -> str:
    text = str(attr)
    return text if len(text) <= _MAX_ATTR_CHARS else text[: _MAX_ATTR_CHARS - 3] + "..."


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


def _graph_of(func_op, model_name: str, ref: str) -> Graph:
    tensors: dict[str, Tensor] = {}
    value_names: dict[ir.Value, str] = {}
    inputs: list[str] = []
    namer = _Namer()
    shortened = 0

    def checked(name: str | None, what: str, location: ir.Location) -> str | None:
        nonlocal shortened
        if name is None:
            return None
        shortened += len(name) > MAX_NAME_CHARS
        return _checked_name(name, what, ref, location)

    for index, arg in enumerate(func_op.arguments):
        given = checked(_arg_name(func_op, index, arg), "argument", arg.location)
        name = namer.name(given, "arg")[0] if given is not None else namer.name(f"arg{index}", "arg")[0]
        tensors[name] = _tensor_of(name, arg.type, ref, arg.location)
        tensors[name].is_parameter = _loaded_once(func_op, index)
        value_names[arg] = name
        inputs.append(name)

    ops: list[Op] = []
    outputs: list[str] = []
    for mlir_op in func_op.entry_block.operations:
        operation = mlir_op.operation
        kind = operation.name
        if kind == "func.return":
            outputs = [value_names[v] for v in operation.operands]
            continue
        _checked_name(kind, "op", ref, operation.location)  # kinds are named in warnings, unnamed ops by them
        loc_name = _loc_name(operation.location)
        results = list(operation.results)
        name, out_names = namer.name(
            checked(loc_name, "op", operation.location),
            checked(kind.split(".", 1)[-1], "op", operation.location),
            len(results),
        )
        for value, out_name in zip(results, out_names):
            tensors[out_name] = _tensor_of(out_name, value.type, ref, operation.location)
            value_names[value] = out_name
        attrs = {key: _attr_text(operation.attributes[key]) for key in operation.attributes}
        operands = [value_names[v] for v in operation.operands]
        op = Op(name=name, kind=kind, inputs=operands, outputs=out_names, attrs=attrs)
        line = _file_line(operation.location)
        if line is not None:
            op.meta["lines"] = (line, line)
        elif loc_name is not None:
            op.meta["loc"] = loc_name
        elif str(operation.location) == "loc(unknown)":
            op.meta["loc"] = UNKNOWN_LOC
        ops.append(op)
    graph = Graph(model_name, "input", tensors, ops, inputs, outputs)
    if shortened:
        graph.warnings.append(f"{shortened} names longer than {MAX_NAME_CHARS} characters shortened (a hash ends each)")
    return graph
