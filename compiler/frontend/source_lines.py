"""Where an op comes from: its loc's name and the source line a loc wraps, and what the parser
does not keep, read back from an op's line of MLIR: the line of ops named by a loc, and the
properties (`<{dimension = 1 : si32}>`) of unregistered ops."""

from __future__ import annotations

import re
from collections import deque

from iree.compiler import ir

from tilescope.compiler.ir.meta import LINES, LOC, CodeLine, LineSpan
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.frontend.mlir_text import STRING_BODY

MAX_ATTR_CHARS = 200  # huge splat constants are summarised, not copied into every level
MAX_CODE_CHARS, MAX_FILE_CHARS = 200, 240  # a line of source's code and file, as an op keeps them


def file_line(location: ir.Location) -> int | None:
    """The line of a bare file location (an op located in its MLIR file)."""
    return location.start_line if isinstance(location, ir.FileLineColLoc) else None


def loc_name(location: ir.Location) -> str | None:
    """The name of a named location (`loc("encoder.fc1")`)."""
    return (location.name_str or None) if isinstance(location, ir.NameLoc) else None


def code_line(location: ir.Location) -> CodeLine | None:
    """The source line a named loc wraps: `"name"("file":line:col)`, with the line's code between
    as the PyTorch import writes it (`"name"("code"("file":line:col))`), or a call site whose
    callee names the function and its line, as JAX writes it
    (`"jit(f)/dot_general"(callsite("f"("model.py":12:0) at ...))`)."""
    child = location.child_loc
    code = ""
    if isinstance(child, ir.CallSiteLoc):  # the innermost frame: where the op was made
        child = child.callee
        if isinstance(child, ir.NameLoc):  # the function's name, not the line's code
            child = child.child_loc
    elif isinstance(child, ir.NameLoc):
        code, child = child.name_str, child.child_loc
    if isinstance(child, ir.FileLineColLoc):  # a long one (an upload's) kept to its useful part
        return CodeLine(child.filename[-MAX_FILE_CHARS:], child.start_line, code[:MAX_CODE_CHARS])
    return None


def attr_text(attr: ir.Attribute) -> str:
    text = str(attr)
    return text if len(text) <= MAX_ATTR_CHARS else text[: MAX_ATTR_CHARS - 3] + "..."


_OP_LINE = re.compile(r'^\s*(?:%[^=]*=\s*)?"?[A-Za-z_][\w$]*\.[\w.$]+"?\s*[(<{ %@]')


def locate_named_ops(graph: Graph, text: str) -> None:
    """Source line of ops named by loc("...") (inline or through a #loc alias); the parser keeps no
    file position for them, so find the op lines that carry their loc. Ops sharing a loc name take
    its op lines in program order."""
    alias_names = {
        m.group(1): m.group(2) if m.group(2) is not None else UNKNOWN_LOC
        for m in re.finditer(rf'^(#[\w.$-]+)\s*=\s*loc\((?:"({STRING_BODY})"(?:\(.*\))?|unknown)\)', text, re.M)
    }
    wanted: dict[str, deque[Op]] = {}
    for op in graph.ops:
        if LOC in op.meta and LINES not in op.meta:
            wanted.setdefault(op.meta[LOC], deque()).append(op)
    if not wanted:
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if "loc(" not in line or not _OP_LINE.match(line) or line.lstrip().startswith(("func.func", "module")):
            continue
        match = _trailing_loc(line)
        if match is None:
            continue
        if match.group(3) is not None:
            name = UNKNOWN_LOC
        else:
            name = match.group(1) if match.group(1) is not None else alias_names.get(match.group(2))
        queue = wanted.get(name) if name is not None else None
        # unknown locations say nothing about the op: take the next one whose kind is on the line
        if queue and (name != UNKNOWN_LOC or queue[0].kind in line):
            queue.popleft().meta[LINES] = LineSpan(number, number)


def _trailing_loc(line: str) -> re.Match | None:
    """The loc that ends an op's line, tried at each of the line's last few `loc(` (a line of
    source's code may hold more): each try anchored, so a long line costs a few passes over it,
    never its length squared."""
    for start in [m.start() for m in _LOC_START.finditer(line)][-MAX_LOC_TRIES:]:
        found = _TRAILING_OP_LOC.match(line, start)
        if found:
            return found
    return None


UNKNOWN_LOC = "<unknown>"
_LOC_START = re.compile(r"loc\(")
MAX_LOC_TRIES = 8
# a loc at the end of an op's line: a name (wrapping where it came from, as the PyTorch import's
# `loc("name"("code"("file":57:0)))` do), an alias or unknown
_TRAILING_OP_LOC = re.compile(rf'loc\((?:"({STRING_BODY})"(?:\(.*\))?|(#[\w.$-]+)|(unknown))\)\s*$')
_MAX_PROPERTIES_CHARS = 4096  # longer property dicts hold constant data, summarised not parsed
_PROPERTY_TOKENS = re.compile(rf'"{STRING_BODY}"?|[{{}}]')  # strings, whose braces do not count


def _properties_text(line: str) -> str | None:
    """The `{...}` inside an op's `<{...}>` on its source line, braces balanced, strings skipped."""
    start = line.find("<{")
    if start < 0:
        return None
    depth = 0
    for token in _PROPERTY_TOKENS.finditer(line, start + 1):
        if token.group() == "{":
            depth += 1
        elif token.group() == "}":
            depth -= 1
            if depth == 0:
                return line[start + 1 : token.end()]
    return None


def read_properties(graph: Graph, text: str) -> None:
    """Properties (`<{dimension = 1 : si32}>`) of unregistered ops are not visible through the
    bindings' attribute API; read them from the op's source line with MLIR's attribute parser.
    Each line is read once, however many ops it holds (a model may be one line)."""
    lines = text.split("\n")  # numbered as MLIR numbers them
    parsed: dict[int, list[tuple[str, str]]] = {}
    by_text: dict[str | None, list[tuple[str, str]]] = {None: []}  # ops of a kind often share them
    for op in graph.ops:
        span = op.meta.get(LINES)
        if span is None:
            continue
        if span[0] not in parsed:
            body = _properties_text(lines[span[0] - 1])
            if body not in by_text:
                by_text[body] = _properties(body)
            parsed[span[0]] = by_text[body]
        for key, value in parsed[span[0]]:
            op.attrs.setdefault(key, value)


def _properties(body: str) -> list[tuple[str, str]]:
    """(name, text) of the properties `{...}` of an op."""
    if len(body) > _MAX_PROPERTIES_CHARS:
        return [("properties", body[: MAX_ATTR_CHARS - 3] + "...")]
    try:
        props = ir.DictAttr(ir.Attribute.parse(body))
    except (ir.MLIRError, ValueError):
        return []  # the op parsed, so its properties did too; a line we misread is not an error
    return [(props[i].name, attr_text(props[i].attr)) for i in range(len(props))]
