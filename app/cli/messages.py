"""What the command line says on standard error: one line per message, whatever the user typed into
it. Errors echo what was typed (a path, a knob, an override), which may be a hundred thousand
characters, hold a line break, or be bytes that are not UTF-8; each echo is cut to a readable
length and every character is shown printable."""

from __future__ import annotations

import re
import sys

LONGEST_WORD = 120  # characters of one word (a path, a value) a line shows whole
WORD_HEAD, WORD_TAIL = 80, 20  # of a longer word: its start, and its end (a suffix, a closing quote)
LONGEST_LINE = 1000  # characters of a whole line, however many words it has
_WORD = re.compile(rf"\S{{{LONGEST_WORD + 1},}}")


def one_line(text: str) -> str:
    """`text` as one printable line: characters a terminal would act on escaped, long words cut."""
    line = _WORD.sub(lambda word: _cut(word.group(), WORD_HEAD, WORD_TAIL), printable(text))
    return line if len(line) <= LONGEST_LINE else _cut(line, LONGEST_LINE * 3 // 4, LONGEST_LINE // 5)


def printable(text: str) -> str:
    """Line breaks, control characters and undecodable bytes as backslash escapes: a byte of an
    argument that was not UTF-8 (which Python keeps as a lone surrogate) as the byte it was."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escaped(char) for char in text)


def _escaped(char: str) -> str:
    if "\udc80" <= char <= "\udcff":
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char.encode("unicode_escape").decode("ascii")


def _cut(text: str, head: int, tail: int) -> str:
    return f"{text[:head]}...({len(text) - head - tail:,} characters)...{text[-tail:]}"


def undecodable(argv: list[str]) -> str | None:
    """The first argument that is not valid UTF-8, as the user typed it, or None. Runs store their
    model, label and paths as text, and print them."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return one_line(arg)
    return None


def error(text: str) -> None:
    note(f"error: {text}")


def warning(text: str) -> None:
    note(f"warning: {text}")


def note(text: str) -> None:
    print(f"tilescope: {one_line(text)}", file=sys.stderr)
