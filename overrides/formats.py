"""Override files in the three formats users exchange, read and written both ways:

- tt-mlir compiler options (ttmlir_options.py), e.g. `override-output-layout=op1=1x1:dram:interleaved`;
- TT-Explorer's JSON export (explorer_json.py);
- tilescope's JSON (tilescope_json.py), checked against the JSON Schema shipped beside it.

`load_file` tells them apart by content. Any file, however malformed or hostile, is read in bounded
work and gives OverrideSet or one OverrideError line: at most MAX_FILE_BYTES, MAX_ITEMS overrides
(override_set.py) and JSON nested at most MAX_DEPTH levels deep.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.options import DEFAULT_POLICY
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH
from tilescope.overrides.explorer_json import format_explorer, parse_explorer
from tilescope.overrides.override_set import OverrideSet
from tilescope.overrides.portable import portable
from tilescope.overrides.spec import format_item
from tilescope.overrides.tilescope_json import format_json, parse_json
from tilescope.overrides.ttmlir_options import L1_USAGE_CAP, format_ttmlir, parse_ttmlir

MAX_FILE_BYTES = 4 << 20  # 4 MiB: tens of thousands of overrides
MAX_DEPTH = 16  # JSON nesting
TOOL_FORMATS = ("tt-mlir", "tt-explorer")
# what tt-mlir offers for a fusion an override asks or refuses: options for the whole model only
TTMLIR_FUSION = {
    True: "tt-mlir splits heads only with enable-op-constraints=true, every split at once",
    False: "tt-mlir has no per-op option; enable-fusing-pass=false turns off all its fusions",
}


def parse_text(text: str, source: str = "overrides", errors: list[str] | None = None) -> OverrideSet:
    """Any of the three formats, told apart by content. With an `errors` list, every problem is
    recorded there and the good items are returned; without, the first problem raises."""
    if len(text) > MAX_FILE_BYTES:  # a character is at least a byte
        raise OverrideError(_too_large(source))
    stripped = text.removeprefix("\ufeff").strip()  # a byte order mark, as some editors save
    if not stripped.startswith("{"):
        return parse_ttmlir(stripped, errors, source)
    data = _json(stripped, source)
    if isinstance(data, dict) and "version" in data:
        return parse_json(data, errors)
    return parse_explorer(data, errors)


def _json(text: str, source: str):
    """The JSON value of `text`, at most MAX_DEPTH deep; only what RFC 8259 allows (Python's
    parser also takes NaN and Infinity, which pass a schema's range checks)."""

    def constant(name: str):
        raise OverrideError(f"{source}: not valid JSON: {name} is not a number JSON allows")

    try:
        data = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as err:
        raise OverrideError(f"{source}:{err.lineno}:{err.colno}: not valid JSON: {err.msg}") from None
    except ValueError:  # an integer of thousands of digits, which Python refuses to convert
        raise OverrideError(f"{source}: not valid JSON: a number with too many digits") from None
    except RecursionError:  # the parser recurses once per level
        raise OverrideError(_too_deep(source)) from None
    # the parser stops near a thousand levels; the schema validator recurses several frames a level
    level, deepest = [data], 1
    while level:
        level = [child for node in level if isinstance(node, (dict, list)) for child in _children(node)]
        deepest += bool(level)
        if deepest > MAX_DEPTH:
            raise OverrideError(_too_deep(source))
    return data


def _children(node: dict | list):
    return node.values() if isinstance(node, dict) else node


def _too_deep(source: str) -> str:
    return f"{source}: JSON nested more than {MAX_DEPTH} levels deep: not an overrides file"


def _too_large(source: str) -> str:
    return f"{source}: more than {MAX_FILE_BYTES >> 20} MiB: not an overrides file"


def load_file(path: str, errors: list[str] | None = None) -> OverrideSet:
    try:
        with Path(path).expanduser().open("rb") as file:  # at most the limit, should it be a device or a pipe
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise OverrideError(f"{path}: no such file") from None
    except OSError as err:  # its reason alone: the error's text names the path again
        raise OverrideError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(data) > MAX_FILE_BYTES:
        raise OverrideError(_too_large(path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise OverrideError(f"{path}: cannot read: {err}") from None
    return parse_text(text, path, errors)


def dump(overrides: OverrideSet, fmt: str) -> str:
    if fmt == "tt-mlir":
        return format_ttmlir(overrides) + "\n"
    data = format_explorer(overrides) if fmt == "tt-explorer" else format_json(overrides)
    return json.dumps(data, indent=2) + "\n"


def left_out(overrides: OverrideSet, fmt: str) -> list[str]:
    """What a tool's format (TOOL_FORMATS) cannot carry of `overrides`, as tilescope writes it:
    per item the whole item or the `key#value` tokens the tool does not read, then the globals
    (the policy, dispatch and data-tiling are tilescope's; TT-Explorer's file has no L1 usage cap
    either)."""
    if fmt not in TOOL_FORMATS:
        return []
    found = []
    for name, value, default in (
        ("policy", overrides.policy, DEFAULT_POLICY),
        ("dispatch", overrides.dispatch, DEFAULT_DISPATCH),
    ):
        if value not in (None, default):  # the default needs no carrying
            found.append(f"{name}={value}")
    if overrides.data_tiling:  # IREE's flag: no tt-mlir option does it
        found.append("data_tiling=true")
    if fmt == "tt-explorer" and overrides.l1_usage_cap is not None:
        found.append(f"{L1_USAGE_CAP}={overrides.l1_usage_cap:g}")
    for ov in overrides.items:
        kept = portable(ov)
        if kept is None:
            found.append(format_item(ov))
        elif kept != replace(ov, spec=""):
            tokens = format_item(ov).partition("=")[2].split(":")
            found.append(f"{ov.op}=" + ":".join(t for t in tokens if "#" in t))
        if ov.fuse is not None:
            found[-1] += f" ({TTMLIR_FUSION[ov.fuse]})"
    return found
