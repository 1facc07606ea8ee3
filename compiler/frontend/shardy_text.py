"""Shardy's custom syntax rewritten to MLIR's generic form, so MLIR's own parser reads it.

No public wheel registers the `sdy` dialect, so `%0 = sdy.constant dense<1.0> : tensor<4xf32>`
does not parse; `%0 = "sdy.constant"() {value = dense<1.0>} : () -> tensor<4xf32>` does, and means
the same. Each op is rewritten on its own line, so every op keeps the line it was written on.
`sdy.mesh` declarations are read here and blanked. Attributes MLIR has no syntax for (axis lists)
become strings; shardings stay `#sdy.sharding...` attributes, which MLIR keeps as opaque text.

One pass over the lines; each line is scanned a bounded number of times (linear in the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tilescope.compiler.errors import ModelLoadError, clip
from tilescope.compiler.frontend.shardy_syntax import MeshSpec, parse_mesh

_OP = re.compile(r"([ \t]*+)((?:%[\w#:$.-]++(?:[ \t]*+,[ \t]*+%[\w#:$.-]++)*+[ \t]*+=[ \t]*+)?)sdy\.([a-z_]++)\b")
_MESH = re.compile(r"[ \t]*+sdy\.mesh[ \t]++@([\w.$-]++)[ \t]*+=[ \t]*+(.*)$")
_VALUE = re.compile(r"%[\w#:$.-]++")
_KEYWORD = re.compile(r"([a-z_]++)[ \t]*+=[ \t]*+")
_BRACES = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"?|//[^\n]*+|[{}]')
_OPENERS = {"<": ">", "[": "]", "(": ")", "{": "}"}
# the op's own axis list, by op, as the generic form names it
_AXES_KEY = {
    "all_gather": "gathering_axes",
    "all_slice": "slicing_axes",
    "reduce_scatter": "scattering_axes",
    "all_reduce": "reduction_axes",
    "all_to_all": "params",
    "collective_permute": None,
}


@dataclass
class Declared:
    """What the rewriting read and removed: meshes by name (with their line) and warnings."""

    meshes: dict[str, tuple[MeshSpec, int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Open:
    depth: int  # brace depth before the region's `{`
    attrs: str  # what goes after the region: `{in_shardings = ..., ...}`


def rewrite(text: str, ref: str = "<input>") -> tuple[str, Declared]:
    """`text` with Shardy's custom-syntax ops in generic form, line for line."""
    declared = Declared()
    if "sdy." not in text:
        return text, declared
    lines = text.split("\n")
    regions: list[_Open] = []  # manual_computation bodies being read
    depth = 0
    for number, line in enumerate(lines, start=1):
        if regions and line.lstrip().startswith("}") and depth - 1 == regions[-1].depth:
            cut = line.index("}") + 1
            lines[number - 1] = f"{line[:cut]}) {regions.pop().attrs}{line[cut:]}"
        elif "sdy." in line:
            if _MESH.match(line):
                lines[number - 1] = _read_mesh(line, number, ref, declared)
                continue
            lines[number - 1], opened = _rewrite_op(line)
            if opened is not None:
                regions.append(_Open(depth, opened))
        if regions:
            depth += _net_braces(line)
        else:
            depth = 0
    return "\n".join(lines), declared


def _read_mesh(line: str, number: int, ref: str, declared: Declared) -> str:
    match = _MESH.match(line)
    name, body = match.group(1), match.group(2)
    try:  # the mesh is the `<...>`; attributes or a loc may follow it
        spec = parse_mesh(body[: _group_end(body, 0)] if body.startswith("<") else body)
    except ValueError as err:
        raise ModelLoadError(f"{ref}:{number}: malformed mesh @{clip(name)}: {err}") from None
    if name in declared.meshes:
        raise ModelLoadError(f"{ref}:{number}: mesh @{clip(name)} declared twice")
    declared.meshes[name] = (spec, number)
    return ""


def _net_braces(line: str) -> int:
    net = 0
    for token in _BRACES.finditer(line):
        net += {"{": 1, "}": -1}.get(token.group(), 0)
    return net


def _group_end(s: str, i: int) -> int:
    """The index just past the bracket group opening at s[i]; strings and `->` skipped."""
    closers = [_OPENERS[s[i]]]
    i += 1
    while i < len(s):
        ch = s[i]
        if ch == '"':
            end = _BRACES.match(s, i)
            i = end.end() if end else i + 1
            continue
        if ch == "-" and s.startswith("->", i):
            i += 2
            continue
        if ch in _OPENERS:
            closers.append(_OPENERS[ch])
        elif ch == closers[-1]:
            closers.pop()
            if not closers:
                return i + 1
        i += 1
    raise ValueError("unbalanced brackets")


class _Reader:
    """A cursor over the text of one op after its name."""

    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def skip(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def at(self, ch: str) -> bool:
        self.skip()
        return self.s.startswith(ch, self.i)

    def group(self, opener: str) -> str:
        if not self.at(opener):
            raise ValueError(f"expected {opener!r}")
        start, self.i = self.i, _group_end(self.s, self.i)
        return self.s[start : self.i]

    def value(self) -> str:
        self.skip()
        match = _VALUE.match(self.s, self.i)
        if match is None:
            raise ValueError("expected an operand")
        self.i = match.end()
        return match.group()

    def keyword(self, name: str) -> None:
        self.skip()
        match = _KEYWORD.match(self.s, self.i)
        if match is None or match.group(1) != name:
            raise ValueError(f"expected {name}=")
        self.i = match.end()

    def optional_attrs(self) -> str:
        return self.group("{")[1:-1].strip() if self.at("{") else ""

    def until_colon(self) -> str:
        """The text up to the `:` before the type, at the top level."""
        self.skip()
        start = self.i
        while self.i < len(self.s) and self.s[self.i] != ":":
            self.i = _group_end(self.s, self.i) if self.s[self.i] in _OPENERS else self.i + 1
        text = self.s[start : self.i]
        self.i += 1
        return text.strip()

    def type_and_loc(self) -> tuple[str, str]:
        """The rest: its type, and a trailing `loc(...)` kept as written."""
        self.skip()
        start = self.i
        while self.i < len(self.s):
            if self.s.startswith("loc(", self.i) and self.s[self.i - 1] in " \t":
                return self.s[start : self.i].strip(), " " + self.s[self.i :].strip()
            self.i = _group_end(self.s, self.i) if self.s[self.i] in _OPENERS else self.i + 1
        return self.s[start:].strip(), ""


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dict(*entries: str) -> str:
    return "{" + ", ".join(e for e in entries if e) + "}"


def _rewrite_op(line: str) -> tuple[str, str | None]:
    """(the line in generic form, the attributes a manual_computation's closing line takes);
    a line this cannot read is left as written, for MLIR's parser to report where."""
    match = _OP.match(line)
    if match is None:
        return line, None
    indent, results, kind = match.groups()
    reader = _Reader(line[match.end() :])
    try:
        if kind == "manual_computation":
            head, attrs = _manual_computation(reader)
            return f"{indent}{results}{head}", attrs
        body = _generic(kind, reader)
    except ValueError:
        return line, None
    return (f"{indent}{results}{body}", None) if body is not None else (line, None)


def _generic(kind: str, r: _Reader) -> str | None:
    if kind == "constant":
        attrs = r.optional_attrs()
        value = r.until_colon()
        result, loc = r.type_and_loc()
        return f'"sdy.constant"() {_dict(f"value = {value} : {result}", attrs)} : () -> {result}{loc}'
    if kind in ("sharding_constraint", "reshard"):
        operand, sharding = r.value(), r.group("<")
        attrs = r.optional_attrs()
        r.until_colon()
        result, loc = r.type_and_loc()
        entries = _dict(f"sharding = #sdy.sharding{sharding}", attrs)
        return f'"sdy.{kind}"({operand}) {entries} : ({result}) -> {result}{loc}'
    if kind in _AXES_KEY:
        key = _AXES_KEY[kind]
        axes = f"{key} = {_string(r.group('{' if kind == 'all_reduce' else '['))}" if key else ""
        operand = r.value()
        r.keyword("out_sharding")
        sharding = r.group("<")
        attrs = r.optional_attrs()
        r.until_colon()
        result, loc = r.type_and_loc()
        entries = _dict(axes, f"out_sharding = #sdy.sharding{sharding}", attrs)
        return f'"sdy.{kind}"({operand}) {entries} : ({result}) -> {result}{loc}'
    if kind == "return":
        operands = r.until_colon() if r.at("%") else ""
        types, loc = r.type_and_loc()
        types = types if operands else ""
        return f'"sdy.return"({operands}) : ({types}) -> (){loc}'
    return None


def _manual_computation(r: _Reader) -> tuple[str, str]:
    """`sdy.manual_computation(%a) in_shardings=[...] out_shardings=[...] manual_axes={...}
    (%x: tensor<...>) {` -> the generic op's head, and the attributes its closing line takes."""
    operands = r.group("(")
    entries = []
    for key in ("in_shardings", "out_shardings"):
        r.keyword(key)
        entries.append(f"{key} = #sdy.sharding_per_value<{r.group('[')}>")
    r.keyword("manual_axes")
    entries.append(f"manual_axes = {_string(r.group('{'))}")
    arguments = r.group("(")
    if not r.at("{"):
        raise ValueError("expected the body")
    r.i += 1
    label = f"^bb0{arguments}:" if arguments.strip("() \t") else ""
    return f'"sdy.manual_computation"{operands} ({{{label}{r.s[r.i :]}', _dict(*entries)
