"""MLIR text split into the tokens a viewer colours: SSA values, op names, types, attributes,
locations, symbols, strings, numbers and comments, line by line.

No MLIR lexer ships with Pygments, and MLIR's own (in LLVM's tree) is not a package; this one
reads the textual forms the levels print (generic `"ttir.matmul"(...)` and pretty
`stablehlo.add ...`). A bracketed type or attribute (`tensor<8x384xbf16, #ts.layout<...>>`,
`array<i64: 0, 1, ...>`) is one token, bracket to bracket: a kernel level's core lists are tens of
thousands of numbers, and one page element per number would make the page slow to draw.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# the token kinds, as the page's CSS classes name them (assets/style.css, `.mlir .t-...`)
KINDS = ("ssa", "op", "type", "attr", "loc", "sym", "str", "num", "cmt")

# a string, unrolled so that Python's re keeps no state per character (as compiler/frontend/mlir_import.py
# reads them: `(?:[^"\\]|\\.)*` costs about 100 bytes a character)
_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
_TOKEN = re.compile(
    "|".join(
        (
            r"(?P<cmt>//.*)",
            rf"(?P<str>{_STRING})",
            r"(?P<ssa>[%^][\w$.\-]+(?:#\d+)?)",
            rf"(?P<sym>@(?:[\w$.\-]+|{_STRING}))",
            r"(?P<attr>\#[\w$.\-]+<?|\b(?:array|dense|dense_resource|sparse|affine_map|affine_set|strided|distinct)<)",
            r"(?P<type>![\w$.\-]+<?|\b(?:tensor|memref|vector|complex|tuple)<"
            r"|\b(?:[su]?i\d+|bf16|tf32|f\d+|f[468]E\w+|index|none)\b)",
            r"(?P<loc>\bloc\()",
            r"(?P<num>\b0x[0-9A-Fa-f]+\b|-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b|\b(?:true|false|unit)\b)",
        )
    )
)
# where a line's op name stands: after its results, if any (`%0, %1 = `, `%2:2 = `)
_OP_AT = re.compile(r"\s*+(?:%[\w$.\-]++(?::\d+)?(?:\s*,\s*%[\w$.\-]++(?::\d+)?)*+\s*=\s*)?")
_RESULT = re.compile(r"%[\w$.\-]++")
# a generic op's quoted name, or a pretty op's dotted name (`func.func`, `return`), but not the
# first key of an attribute dictionary that goes on from the line before (`ttir.name = ...`)
_OP_NAME = re.compile(rf"{_STRING}(?=\()|(?>[A-Za-z_][\w$]*(?:\.[\w$]+)*)(?!\s*[=:])")
# brackets, with what must not count as one: strings, `->`, `<=`, `>=`
_BRACKET = re.compile(rf"{_STRING}|->|[<>]=|[<>()\[\]{{}}]")
_PAIRS = {">": "<", ")": "(", "]": "[", "}": "{"}

Token = tuple[int, int, str]  # start, end (offsets in the line), kind


def line_tokens(line: str) -> list[Token]:
    """The coloured tokens of one line of MLIR, in order and not overlapping; the text between
    them is plain."""
    at = _OP_AT.match(line).end()
    head = None if line.startswith(("%", "^"), at) else _OP_NAME.match(line, at)
    tokens: list[Token] = []
    if head:  # the op's results, then its name
        tokens = [(m.start(), m.end(), "ssa") for m in _RESULT.finditer(line, 0, at)]
        tokens.append((at, head.end(), "op"))
    pos = head.end() if head else 0
    closers: dict[int, int] | None = None  # an opening bracket's offset -> its closer's end
    while found := _TOKEN.search(line, pos):
        kind, start, end = found.lastgroup, found.start(), found.end()
        if kind in ("attr", "type", "loc") and line[end - 1] in "<(":
            if closers is None:
                closers = _closers(line)
            end = closers.get(end - 1, end - 1)  # unclosed: the head alone
        if end > start:
            tokens.append((start, end, kind))
        pos = max(end, start + 1)
    return tokens


def page_tokens(lines: Iterable[str], max_tokens: int, max_chars: int) -> Iterator[list[Token]]:
    """Each line's tokens, until `max_tokens` tokens are found or `max_chars` characters read; the
    rest is plain, so a page of pathological lines (a 64 MiB model can be one line) costs a
    bounded time and the page a bounded number of elements."""
    for line in lines:
        tokens = line_tokens(line[:max_chars])[: max(max_tokens, 0)] if max_tokens > 0 and max_chars > 0 else []
        max_tokens, max_chars = max_tokens - len(tokens), max_chars - len(line)
        yield tokens


def _closers(line: str) -> dict[int, int]:
    """For each opening bracket of `line` that is closed, where its closer ends: one pass, so a
    line of a thousand unclosed `tensor<` costs no more than reading it."""
    found: dict[int, int] = {}
    stack: list[tuple[str, int]] = []
    for m in _BRACKET.finditer(line):
        mark = m.group()
        if mark in "<([{":
            stack.append((mark, m.start()))
        elif mark in _PAIRS:
            if stack and stack[-1][0] == _PAIRS[mark]:
                found[stack.pop()[1]] = m.end()
    return found
