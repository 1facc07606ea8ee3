"""The text MLIR's parser is given: checked first against what would crash it, then made
parsable: wrappers of unregistered dialects unwrapped, Shardy's custom syntax rewritten to generic
form (compiler/frontend/shardy_text.py). Every line stays where it was, so errors and ops keep their lines."""

from __future__ import annotations

import re

import numpy as np

from tilescope.compiler.frontend import shardy_text
from tilescope.compiler.errors import ModelLoadError

# MLIR's parser recurses per nesting level and segfaults with the C++ stack exhausted: about 2,000
# nested regions or 6,000 nested arrays with an 8 MB stack, from a 15 KB file. Real models nest
# up to 7 levels (the corpus); 256 leaves room for any real model and keeps the parser's stack
# under about 1 MB, so a thread of a server parses it as safely as the main thread.
MAX_NESTING = 256

# An MLIR string's body (strings never span lines), unrolled so that Python's re keeps no state per
# character: `(?:[^"\\]|\\.)*` costs about 100 bytes a character, gigabytes on a long loc name.
STRING_BODY = r'[^"\\\n]*+(?:\\.[^"\\\n]*+)*+'
# What the depth scan steps over: strings (which never span lines), comments, arrows (`->`) and
# the `>=` of integer sets.
_SKIPPED = re.compile(rf'"{STRING_BODY}"?|//[^\n]*|->|>=')
# per character code, the byte of its int8 step: 1 opens a level, 255 (-1) closes one
_DEPTH_STEP = bytes(1 if chr(code) in "{[(<" else 255 if chr(code) in "}])>" else 0 for code in range(256))
_DEPTH_CHUNK = 1 << 22  # characters whose depths are held at once (int32: the sum never overflows)
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
    too_deep = _too_deep(text)
    # a string whose \XX escapes are not UTF-8 aborts the process when the bindings read it as a
    # name (nanobind's conversion error is not catchable), so no string may be one
    for token in _SKIPPED.finditer(text) if "\\" in text else ():
        if too_deep is not None and token.start() > too_deep:
            break
        if token.group()[0] == '"' and "\\" in token.group() and not _is_utf8(token.group()):
            raise ModelLoadError(f"{ref}:{_position(text, token.start())}: string escapes are not UTF-8 text")
    if too_deep is not None:
        raise ModelLoadError(
            f"{ref}:{_position(text, too_deep)}: nesting deeper than {MAX_NESTING} levels (brackets, braces, regions)"
        )


def _too_deep(text: str) -> int | None:
    """Index of the first bracket outside strings, comments, `->` and `>=` that opens level
    MAX_NESTING + 1, or None. Vectorised: a Python step per bracket took a tenth of an import."""
    if _first_too_deep(_steps(_SKIPPED.sub("", text))) is None:
        return None  # the usual case, in C throughout: dropping what is skipped changes no depth outside it
    # too deep: find where, the skipped spans' steps zeroed in place
    steps = _steps(text)
    spans = np.array([token.span() for token in _SKIPPED.finditer(text)], np.int64).reshape(-1, 2)
    inside = np.zeros(len(text) + 1, np.int8)
    inside[spans[:, 0]] += 1  # spans are apart: no index repeats among the starts, nor the ends
    inside[spans[:, 1]] -= 1
    steps *= 1 - np.cumsum(inside[:-1], dtype=np.int8)
    return _first_too_deep(steps)


def _steps(text: str) -> np.ndarray:
    """Each character's step in depth: 1 opens a level, -1 closes one."""
    # one byte per character, so that indexes stay character indexes; brackets are ASCII
    return np.frombuffer(bytearray(text.encode("latin-1", "replace").translate(_DEPTH_STEP)), np.int8)


def _first_too_deep(steps: np.ndarray) -> int | None:
    """Index of the first step to a depth past MAX_NESTING. A stray closer (a `>` of a custom
    syntax) never makes the depth negative."""
    depth = 0
    for start in range(0, len(steps), _DEPTH_CHUNK):
        levels = np.cumsum(steps[start : start + _DEPTH_CHUNK], dtype=np.int32)
        levels += depth
        if levels.min() < 0:  # floored at zero: the running sum less the lowest it fell below zero
            levels -= np.minimum(np.minimum.accumulate(levels), 0)
        if levels.max() > MAX_NESTING:
            return start + int(np.argmax(levels > MAX_NESTING))
        depth = int(levels[-1])
    return None


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


# Ops in the custom syntax of dialects no public wheel registers, which MLIR cannot parse.
# Wrappers are unwrapped (their body kept).
_WRAPPERS = re.compile(r"^[ \t]*(ttcore\.(?:device|cpu)_module)[ \t]*\{", re.M)
_TRAILING_LOC = re.compile(r"[ \t]*loc\((?:[^()\n]|\([^()\n]*\))*\)")
_BRACES = re.compile(rf'"{STRING_BODY}"|//[^\n]*|[{{}}]')


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace each (start, end) span of text, in order and apart, with spaces (newlines kept) so
    every line:col stays where it was. One copy of the text however many spans."""
    parts, pos = [], 0
    for start, end in spans:
        parts += [text[pos:start], re.sub(r"[^\n]", " ", text[start:end])]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _unwrap(text: str) -> tuple[str, list[str]]:
    """Remove custom-syntax wrappers of unregistered dialects, with warnings.
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
    return text, warnings


def make_parsable(text: str, ref: str = "<input>") -> tuple[str, list[str], shardy_text.Declared]:
    """`text` as MLIR's parser can read it, the warnings that says, and the meshes it removed."""
    text, warnings = _unwrap(text)
    text, declared = shardy_text.rewrite(text, ref)
    return text, warnings + declared.warnings, declared


def strip_unparsable(text: str) -> tuple[str, list[str]]:
    """`text` as MLIR's parser can read it, and warnings."""
    return make_parsable(text)[:2]
