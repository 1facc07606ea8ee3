"""Reading a data file a user may write (targets, systems): TOML parsed and each key checked, any
fault one line naming the file and the key.

Every number must lie in its inclusive range (the caller's table of limits), so that no file,
however hostile, makes a caller allocate without end or compute infinite times.
"""

from __future__ import annotations

import re
import reprlib
import tomllib
from pathlib import Path
from typing import Any

from tilescope.compiler.errors import TargetError

MAX_FILE_BYTES = 1 << 20  # a target or system file; the built-in ones are about 4 KiB
MISSING = object()
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 100


def shown(value: object) -> str:
    """repr(value), cut to a readable length: messages quote what a user wrote, which may be huge."""
    return _SHOWN.repr(value)


def too_large(where: object) -> str:
    return f"{where}: more than {MAX_FILE_BYTES >> 10} KiB: not a target file"


def read_text(path: Path) -> str:
    """A UTF-8 file of at most MAX_FILE_BYTES; no more is read, should the path be a device or a pipe."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise TargetError(too_large(path))
        return data.decode("utf-8")  # TOML files are UTF-8
    except (OSError, UnicodeDecodeError) as err:
        raise TargetError(f"{path}: cannot read: {err}") from None


# tomllib's work on a dotted key grows with the square of its parts (20,000 of them, 40 KB, took
# 11 s; in a table header or an inline table as much); the built-in files use at most 3
MAX_KEY_PARTS = 32
# a TOML text as tokens, in one pass: strings and comments as TOML reads them (a string ends at
# its first closing quotes, a multi-line one takes up to two more), so the dots in them are not
# counted; the dots between a key's parts, which are; and the rest
_TOML_TOKENS = re.compile(
    r'''(?P<text>"""(?:[^"\\]|\\.|"(?!""))*+"""(?:""?)?+|'''
    r"""'''(?:[^']|'(?!''))*+'''(?:''?)?+|\#[^\n]*+)"""
    "|(?P<unended>'''|\"\"\")"  # a multi-line string with no end: where TOML stops too
    r"""|(?P<part>"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+'|[A-Za-z0-9_\- \t]++)"""
    r"""|(?P<dot>\.)|(?P<lone>["'])|(?P<other>[^"'#.A-Za-z0-9_\- \t]++)""",
    re.DOTALL,
)


def deepest_key(text: str, most: int = MAX_KEY_PARTS) -> int:
    """The parts of the deepest dotted key in a TOML text, counted up to `most` + 1: a pass before
    tomllib reads it. The count stops at a string that never ends, where TOML stops too."""
    deepest = dots = 0
    for token in _TOML_TOKENS.finditer(text):
        kind = token.lastgroup
        if kind == "dot":
            dots += 1
            deepest = max(deepest, dots + 1)
            if deepest > most:
                break
        elif kind in ("unended", "lone"):  # a quote that starts no whole string: TOML stops here
            break
        elif kind != "part":
            dots = 0
    return max(deepest, 1)


def parse_toml(text: str, where: str) -> dict:
    if len(text) > MAX_FILE_BYTES:  # a character is at least a byte
        raise TargetError(too_large(where))
    if deepest_key(text) > MAX_KEY_PARTS:
        raise TargetError(f"{where}: a key of more than {MAX_KEY_PARTS} dotted parts: not a target file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TargetError(f"{where}: not valid TOML: {err}") from None
    except ValueError:  # an integer of thousands of digits, which Python refuses to convert
        raise TargetError(f"{where}: not valid TOML: a number with too many digits") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise TargetError(f"{where}: not valid TOML: arrays or tables nested too deeply") from None


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else "\\" + c if c in '"\\' else c for c in text)
    return '"' + "".join(escaped) + '"'


def assumed_keys(text: str) -> tuple[str, ...]:
    """Keys whose comment starts with 'ASSUMED': values no public document gives."""
    assumed, table, flagged = [], "", False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            table, flagged = stripped.strip("[]"), False
        elif stripped.startswith("#"):
            flagged = flagged or stripped.lstrip("# ").startswith("ASSUMED")
        elif "=" in stripped:
            if flagged or "# ASSUMED" in stripped:
                key = stripped.split("=", 1)[0].strip()
                assumed.append(f"{table}.{key}" if table else key)
            flagged = False
    return tuple(assumed)


def checked(
    data: dict,
    key: str,
    kind: type,
    where: str,
    ranges: dict[str, tuple[float, float]],
    default: Any = MISSING,
    limits: str = "",
) -> Any:
    """data[key] (dotted) of type `kind`; a number must lie in its range, ranges[limits or key]."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not MISSING:
                return default
            raise TargetError(f"{where}: missing key {key!r}")
        node = node[part]
    is_number = isinstance(node, (int, float)) and not isinstance(node, bool)
    if not (isinstance(node, kind) or kind is float and is_number) or isinstance(node, bool) != (kind is bool):
        raise TargetError(f"{where}: key {key!r} must be {kind.__name__}, got {shown(node)}")
    if kind not in (int, float):
        return node
    low, high = ranges[limits or key]
    # compared before any conversion (float() of a 400-digit integer overflows); NaN is in no range
    if low > 0 and node <= 0:
        raise TargetError(f"{where}: key {key!r} must be positive, got {shown(node)}")
    if not low <= node <= high:
        raise TargetError(f"{where}: key {key!r} must be between {_number(low)} and {_number(high)}, got {shown(node)}")
    return float(node) if kind is float else node


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"
