"""What the MLIR view shows of a level's text: the window of lines sent to the page, a text
search over the whole level, and which op each line of the window belongs to (a click on a
line selects that op)."""

from __future__ import annotations

import string
from dataclasses import dataclass

from tilescope.compiler.errors import TilescopeError

MAX_QUERY = 200  # characters of a search
MAX_MATCHES = 10_000  # matches counted; past that the count says "10,000+"

# ASCII letters fold to lower case, nothing else: a fold that keeps every character's offset
# (str.lower turns "İ" into two characters), so offsets in the folded text are the text's
_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@dataclass(frozen=True)
class Matches:
    """Where a search matches a level's text, in order: each match as its line (0-based) and its
    place among that line's matches (0 for the first), the first MAX_MATCHES of them."""

    at: tuple[tuple[int, int], ...]
    capped: bool  # more matches than MAX_MATCHES

    def count_text(self, current: int | None) -> str:
        """ "3 of 57 matches", "no matches"."""
        if not self.at:
            return "no matches"
        total = f"{len(self.at):,}{'+' * self.capped}"
        plural = "es" if len(self.at) > 1 or self.capped else ""
        return f"{current + 1:,} of {total} match{plural}" if current is not None else f"{total} match{plural}"


NO_MATCHES = Matches((), False)


def checked_query(query: str | None) -> str:
    """The search as typed, or '' for none; one too long or over lines raises TilescopeError."""
    if not query or not query.strip():
        return ""
    if len(query) > MAX_QUERY:
        raise TilescopeError(f"search: at most {MAX_QUERY} characters (this one has {len(query):,})")
    if "\n" in query or "\r" in query:
        raise TilescopeError("search: one line of text (the search matches within a line)")
    return query


def find_matches(text: str, query: str) -> Matches:
    """The non-overlapping places `query` occurs in `text`, ignoring ASCII case. A plain text
    search: str.find takes time linear in the text whatever the query, and the counting stops at
    MAX_MATCHES, so a request costs one pass over the level at most."""
    if not query:
        return NO_MATCHES
    folded, needle = text.translate(_FOLD), query.translate(_FOLD)
    at: list[tuple[int, int]] = []
    line, nth, counted_to, pos = 0, 0, 0, 0
    while (found := folded.find(needle, pos)) >= 0:
        if len(at) == MAX_MATCHES:
            return Matches(tuple(at), True)
        newlines = folded.count("\n", counted_to, found)
        line, nth = (line + newlines, 0) if newlines else (line, nth + 1 if at else 0)
        at.append((line, nth))
        counted_to, pos = found, found + len(needle)
    return Matches(tuple(at), False)


def line_matches(line: str, query: str, limit: int = MAX_MATCHES) -> list[tuple[int, int]]:
    """Where `query` occurs in one line (start, end), as find_matches counts them; the first
    `limit` of them."""
    if not query:
        return []
    folded, needle = line.translate(_FOLD), query.translate(_FOLD)
    spans: list[tuple[int, int]] = []
    pos = 0
    while len(spans) < limit and (found := folded.find(needle, pos)) >= 0:
        spans.append((found, found + len(needle)))
        pos = found + len(needle)
    return spans


def window(n_lines: int, focus: int | None, shown: tuple[int, int] | None, page: int) -> tuple[int, int]:
    """The lines [lo, hi) (0-based) to send of a text of `n_lines`: all of a short text; else the
    window `shown` now while it holds the line to show (`focus`), so a click on a line does not
    move the text under the pointer; else `page` lines with `focus` a third of the way down."""
    if n_lines <= page:
        return 0, n_lines
    if shown and shown[1] - shown[0] == page and 0 <= shown[0] and shown[1] <= n_lines:
        if focus is None or shown[0] <= focus < shown[1]:
            return shown
    lo = max(0, min((focus or 0) - page // 3, n_lines - page))
    return lo, lo + page


def line_ops(spans: dict[str, tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int, str]]:
    """Which op each line of the window [lo, hi) belongs to, as runs of lines (first, last,
    1-based as the spans are) of the innermost op whose lines hold them; lines of no op are in no
    run. The work is the window's lines per op that reaches into it."""
    held: list[str | None] = [None] * (hi - lo)
    reaching = [(first, last, name) for name, (first, last) in spans.items() if first <= hi and last > lo]
    for first, last, name in sorted(reaching, key=lambda s: s[0] - s[1]):  # outermost first
        for i in range(max(first - 1, lo), min(last, hi)):
            held[i - lo] = name
    runs: list[tuple[int, int, str]] = []
    for i, name in enumerate(held):
        if name is None:
            continue
        if runs and runs[-1][2] == name and runs[-1][1] == lo + i:
            runs[-1] = (runs[-1][0], lo + i + 1, name)
        else:
            runs.append((lo + i + 1, lo + i + 1, name))
    return runs
