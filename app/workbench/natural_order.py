"""Names in the order a person reads them: the numbers in a name compared as numbers, so
`layer.2` comes before `layer.10` (as text, `layer.10` and `layer.11` come between 1 and 2)."""

from __future__ import annotations

import re

_NUMBERS = re.compile(r"(\d+)")
# the same order in an AG Grid column: its comparator, named (assets/grid_functions.js)
GRID_COMPARATOR = {"function": "naturalOrder"}


def natural_key(text: str) -> tuple:
    """A sort key: the text between numbers as text, each number as a number, then the text itself
    (`01` and `1` are told apart). Splitting on numbers puts text at the even places and numbers at
    the odd ones in every key, so keys never compare a number with text."""
    parts = _NUMBERS.split(text)
    return (*(int(p) if i % 2 else p for i, p in enumerate(parts)), text)
