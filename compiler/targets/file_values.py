"""A target file with some of its values changed, the rest (its comments, the sources they cite)
kept as written: how `tilescope calibrate` writes a chip's file with its fitted constants.

Target files are flat TOML: top-level keys, then [table] headers each followed by its keys, one
per line. A dotted key (`pipeline.launch_ns`) names the table and the key; a value is replaced on
its line, or added at the end of its table (the table added when the file has none). A table
written whole ([error_bands]) replaces the file's table of that name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tilescope.compiler.targets.data_file import toml_string

_HEADER = re.compile(r"^\s*\[([A-Za-z0-9_.\-]+)\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")


def value_text(value: float | str) -> str:
    """A value as TOML writes it: a string quoted, a number in its shortest exact form."""
    if isinstance(value, str):
        return toml_string(value)
    return repr(round(value, 6)) if isinstance(value, float) else str(value)


def with_values(text: str, values: Mapping[str, float | str], why: str = "") -> str:
    """`text` with each dotted key's value replaced (or added), `why` said beside each."""
    lines = text.splitlines()
    for dotted, value in values.items():
        table, _, key = dotted.rpartition(".")
        lines = _set(lines, table, key, f"{key} = {value_text(value)}" + (f"  # {why}" if why else ""))
    return "\n".join(lines) + "\n"


def with_table(text: str, table: str, entries: Mapping[str, float], comment: str = "") -> str:
    """`text` with [table] holding `entries` alone, in place of any [table] it had, at its end."""
    lines = text.splitlines()
    start, end = _span(lines, table)
    if start is not None:  # the table goes, and the comment right above its header with it
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        lines = lines[:start] + lines[end:]
    while lines and not lines[-1].strip():
        lines.pop()
    block = ["", *(f"# {line}" for line in comment.splitlines()), f"[{table}]"]
    block += [f"{_key(kind)} = {value_text(v)}" for kind, v in entries.items()]
    return "\n".join(lines + block) + "\n"


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_\-]+", name) else toml_string(name)


def _span(lines: list[str], table: str) -> tuple[int | None, int]:
    """The lines of [table]: its header's index and the index past its last line (None: absent).
    The top level ("") runs from the start to the first header."""
    start = 0 if table == "" else None
    for i, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is None:
            continue
        if start is not None:
            return start, i
        if header.group(1) == table:
            start = i
    return start, len(lines)


def _set(lines: list[str], table: str, key: str, assignment: str) -> list[str]:
    start, end = _span(lines, table)
    if start is None:  # no such table: a new one at the end
        return [*lines, "", f"[{table}]", assignment]
    body = range(start if table == "" else start + 1, end)
    for i in body:
        found = _KEY.match(lines[i])
        if found and found.group(1) == key:
            return [*lines[:i], assignment, *lines[i + 1 :]]
    last = max((i for i in body if _KEY.match(lines[i])), default=start if table else -1)
    return [*lines[: last + 1], assignment, *lines[last + 1 :]]
