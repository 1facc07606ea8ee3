"""Override files in the three formats users exchange, read and written both ways.

- tt-mlir compiler options: `override-output-layout=op1=1x1:dram:interleaved,op2=4x4:l1:block_sharded
  tensor-l1-usage-cap=0.8`; our extensions are read as `key#value` tokens among an op's
  parameters, but not written: tt-mlir does not read them;
- TT-Explorer's JSON export: `{"loc(\\"op\\")": {"named_location": "op", "full_location": ...,
  "attributes": [{"key": "grid_shape", "value": "4x4"}, ...]}}`;
- tilescope's JSON: `{"version": 1, "overrides": [{"op": ..., "grid": [4, 4], "sharding": "{},{model}",
  ...}], ...}`, checked against the JSON Schema shipped beside this module (overrides.schema.json).

`load_file` tells them apart by content. Any file, however malformed or hostile, is read in bounded
work and gives OverrideSet or one OverrideError line: at most MAX_FILE_BYTES, MAX_ITEMS overrides
and JSON nested at most MAX_DEPTH levels deep.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

import jsonschema

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import DEFAULT_POLICY
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH
from tilescope.compiler.targets.data_file import shown

from tilescope.overrides.spec import format_item, parse_item

SCHEMA_PATH = Path(__file__).parent / "overrides.schema.json"
VERSION = 1
OUTPUT_LAYOUT = "override-output-layout"
L1_USAGE_CAP = "tensor-l1-usage-cap"
MAX_FILE_BYTES = 4 << 20  # 4 MiB: tens of thousands of overrides
MAX_ITEMS = 100_000  # overrides in one file: more than a large model has ops
MAX_DEPTH = 16  # JSON nesting


def _count(count: int, what: str) -> None:
    if count > MAX_ITEMS:
        raise OverrideError(f"{what}: {count:,} overrides: at most {MAX_ITEMS:,} in one file")


def _attempt(errors: list[str] | None, parse, *args):
    """parse(*args); with an error list, a bad piece is recorded there (None returned) so that
    every problem of a file is reported at once."""
    if errors is None:
        return parse(*args)
    try:
        return parse(*args)
    except OverrideError as err:
        errors.append(str(err))
        return None


def unique_items(items: list[OpOverride], errors: list[str] | None) -> list[OpOverride]:
    """Items with one override per op (or operand); repeats are errors."""
    if errors is None:
        return items
    kept: dict[tuple, OpOverride] = {}
    for ov in items:
        if ov.key in kept:
            errors.append(f"override for {shown(ov.target)} given twice; give each op one override")
        else:
            kept[ov.key] = ov
    return list(kept.values())


@dataclass
class OverrideSet:
    """Per-op overrides plus the globals a run is compiled with (None: the default)."""

    items: list[OpOverride] = field(default_factory=list)
    policy: str | None = None
    dispatch: str | None = None
    l1_usage_cap: float | None = None

    def __post_init__(self) -> None:
        seen: set[tuple] = set()
        for ov in self.items:
            if ov.key in seen:
                raise OverrideError(f"override for {shown(ov.target)} given twice; give each op one override")
            seen.add(ov.key)

    def canonical(self) -> OverrideSet:
        """Without the as-written text of each item, for comparisons across formats."""
        return replace(self, items=[replace(o, spec="") for o in self.items])


# --- tt-mlir option string -------------------------------------------------------------------


_OPTION = re.compile(r"[a-z][a-z0-9-]*=")


def parse_ttmlir(text: str, errors: list[str] | None = None, source: str = "overrides") -> OverrideSet:
    """`override-output-layout=...` and `tensor-l1-usage-cap=...` options, separated by spaces
    (or newlines); items of one option separated by commas. Text without a word like an option
    (`name-of-it=...`) is not read as options at all: one error, even with an `errors` list, where
    an MLIR file given by mistake would make a problem of every word."""
    options = text.split()
    if options and not any(_OPTION.match(option) for option in options):
        raise OverrideError(
            f"{source}: not an overrides file (tilescope JSON, TT-Explorer JSON, or tt-mlir options: "
            f"{OUTPUT_LAYOUT}=...)"
        )
    items: list[OpOverride] = []
    cap = None
    seen: set[str] = set()

    def option_of(option: str) -> tuple[str, str]:
        key, sep, value = option.partition("=")
        if not sep:
            raise OverrideError(f"option {shown(option)}: expected NAME=VALUE")
        if key in seen:
            raise OverrideError(f"option {key!r} given twice")
        if key not in (OUTPUT_LAYOUT, L1_USAGE_CAP):
            raise OverrideError(f"unknown option {shown(key)} (expected {OUTPUT_LAYOUT}=... or {L1_USAGE_CAP}=...)")
        seen.add(key)
        return key, value

    for option in options:
        parsed = _attempt(errors, option_of, option)
        if parsed is None:
            continue
        key, value = parsed
        if key == OUTPUT_LAYOUT:
            pieces = [item for item in _items(value) if item.strip()]
            _count(len(pieces), source)
            found = (_attempt(errors, parse_item, item) for item in pieces)
            items.extend(ov for ov in found if ov is not None)
        else:
            cap = _attempt(errors, _cap, value, _cut(option, 120))
    return OverrideSet(unique_items(items, errors), l1_usage_cap=cap)


# What tt-mlir's override-output-layout and TT-Explorer read of an override: an op's output layout.
# Fidelity, blocking, sub-blocks, double buffering, tile shapes and per-operand or per-result
# layouts are tilescope's; written in those formats they would be misread or refused.
PORTABLE = ("grid", "memory", "memory_layout", "layout", "dtype")
TOOL_FORMATS = ("tt-mlir", "tt-explorer")


def portable(ov: OpOverride) -> OpOverride | None:
    """What tt-mlir and TT-Explorer read of `ov`, or None when that is nothing."""
    if ov.operand is not None or ov.result is not None:
        return None
    kept = OpOverride(ov.op, **{name: getattr(ov, name) for name in PORTABLE})
    return kept if any(getattr(kept, name) is not None for name in PORTABLE) else None


def left_out(overrides: OverrideSet, fmt: str) -> list[str]:
    """What a tool's format (TOOL_FORMATS) cannot carry of `overrides`, as tilescope writes it:
    per item the whole item or the `key#value` tokens the tool does not read, then the globals
    (the policy and dispatch are tilescope's; TT-Explorer's file has no L1 usage cap either)."""
    if fmt not in TOOL_FORMATS:
        return []
    found = []
    for name, value, default in (
        ("policy", overrides.policy, DEFAULT_POLICY),
        ("dispatch", overrides.dispatch, DEFAULT_DISPATCH),
    ):
        if value not in (None, default):  # the default needs no carrying
            found.append(f"{name}={value}")
    if fmt == "tt-explorer" and overrides.l1_usage_cap is not None:
        found.append(f"{L1_USAGE_CAP}={overrides.l1_usage_cap:g}")
    for ov in overrides.items:
        kept = portable(ov)
        if kept is None:
            found.append(format_item(ov))
        elif kept != replace(ov, spec=""):
            tokens = format_item(ov).partition("=")[2].split(":")
            found.append(f"{ov.op}=" + ":".join(t for t in tokens if "#" in t))
    return found


def _items(value: str) -> list[str]:
    """The items of an option, split at commas, but not at a sharding's (`sharding#{},{batch,model}`).
    Linear in the text: a file may hold 4 MiB of one option."""
    items: list[str] = []
    current: list[str] = []
    depth = 0  # braces open in the current item
    for piece in value.split(","):
        joined = current and (depth > 0 or (current[-1].rstrip().endswith("}") and piece.lstrip().startswith("{")))
        if current and not joined:
            items.append(",".join(current))
            current, depth = [], 0
        current.append(piece)
        depth += piece.count("{") - piece.count("}")
    if current:
        items.append(",".join(current))
    return items


def format_ttmlir(overrides: OverrideSet) -> str:
    """The options tt-mlir takes: the portable part of each override (left_out names the rest)."""
    options = []
    items = [kept for kept in map(portable, overrides.items) if kept is not None]
    if items:
        options.append(f"{OUTPUT_LAYOUT}=" + ",".join(format_item(o) for o in items))
    if overrides.l1_usage_cap is not None:
        options.append(f"{L1_USAGE_CAP}={overrides.l1_usage_cap:g}")
    return " ".join(options)


def _cap(value: str, where: str) -> float:
    try:
        cap = float(value)
    except ValueError:
        raise OverrideError(f"{where}: L1 usage cap must be a number in (0, 1], got {shown(value)}") from None
    if not 0 < cap <= 1:  # NaN too
        raise OverrideError(f"{where}: L1 usage cap must be in (0, 1], got {cap:g}")
    return cap


# --- TT-Explorer JSON ------------------------------------------------------------------------

# TT-Explorer attribute key -> the category our parser reads its value as
_EXPLORER_KEYS = {
    "grid_shape": "grid",
    "buffer_type": "memory",
    "tensor_memory_layout": "memory_layout",
    "memory_layout": "layout",
    "data_type": "dtype",
}
_LOC_NAME = re.compile(r'loc\("((?:[^"\\]|\\.)*)"')


def _explorer_value(key: str, value: str) -> str:
    """TT-Explorer's spelling of one parameter -> ours (grid "[4, 4]" -> "4x4")."""
    value = str(value).strip()
    if key == "grid_shape":
        dims = re.findall(r"\d+", value)
        if len(dims) != 2:
            raise OverrideError(f"TT-Explorer grid_shape {shown(value)}: expected two dimensions like 4x4")
        return f"{dims[0]}x{dims[1]}"
    return value.lower()


def parse_explorer(data: dict, errors: list[str] | None = None) -> OverrideSet:
    if not isinstance(data, dict):
        raise OverrideError("TT-Explorer overrides: expected a JSON object keyed by op location")
    _count(len(data), "TT-Explorer overrides")
    found = (_attempt(errors, _explorer_entry, op_id, entry) for op_id, entry in data.items())
    return OverrideSet(unique_items([ov for ov in found if ov is not None], errors))


def _explorer_entry(op_id: str, entry) -> OpOverride | None:
    where = f"TT-Explorer override {shown(op_id)}"
    if not isinstance(entry, dict) or not isinstance(entry.get("attributes", []), list):
        raise OverrideError(f"{where}: expected {{named_location, attributes: [{{key, value}}, ...]}}")
    name = entry.get("named_location")
    if name is not None and not isinstance(name, str):
        raise OverrideError(f"{where}: named_location must be a string, got {shown(name)}")
    name = name or (_LOC_NAME.search(op_id) or [None, None])[1]
    if not name:
        raise OverrideError(f"{where}: no named_location")
    params = []
    for attribute in entry.get("attributes", []):
        # TT-Explorer writes every attribute as {"key": "...", "value": "..."}; anything else would
        # reach the item parser as Python's spelling of a list or None
        if not (isinstance(attribute, dict) and all(isinstance(attribute.get(k), str) for k in ("key", "value"))):
            raise OverrideError(f'{where}: attribute {shown(attribute)}: expected {{"key": string, "value": string}}')
        key, value = attribute["key"], attribute["value"]
        if key in _EXPLORER_KEYS:
            params.append(_explorer_value(key, value))
        elif "#" not in key:
            raise OverrideError(f"TT-Explorer override {shown(name)}: unknown attribute key {shown(key)}")
        else:  # tilescope's extensions, as files it wrote before it left them out, carry them
            params.append(f"{key}{value}")
    return parse_item(f"{name}={':'.join(params)}") if params else None


def format_explorer(overrides: OverrideSet) -> dict:
    """TT-Explorer's overrides JSON: the portable part of each override (left_out names the rest)."""
    data = {}
    for ov in filter(None, map(portable, overrides.items)):
        attributes = []
        if ov.grid is not None:
            attributes.append({"key": "grid_shape", "value": f"{ov.grid[0]}x{ov.grid[1]}"})
        for key, value in (
            ("buffer_type", ov.memory),
            ("tensor_memory_layout", ov.memory_layout),
            ("memory_layout", ov.layout),
            ("data_type", ov.dtype),
        ):
            if value is not None:
                attributes.append({"key": key, "value": value})
        location = f"loc({json.dumps(ov.op)})"
        data[location] = {"named_location": ov.op, "full_location": location, "attributes": attributes}
    return data


# --- tilescope JSON ----------------------------------------------------------------------------

_FIELDS = [f.name for f in fields(OpOverride) if f.name not in ("op", "spec")]


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def parse_json(data: dict, errors: list[str] | None = None) -> OverrideSet:
    if isinstance(data, dict) and isinstance(data.get("overrides"), list):
        _count(len(data["overrides"]), "overrides file")
    # (path, message) only: an error object holds kilobytes, and a bad file may have an error an item;
    # jsonschema quotes the offending value whole, which may be megabytes
    problems = sorted(
        (list(err.absolute_path), _cut(err.message))
        for err in jsonschema.Draft202012Validator(schema()).iter_errors(data)
    )
    messages = [
        f"overrides file: {'/'.join(str(p) for p in path) or '(top level)'}: {message}" for path, message in problems
    ]
    if messages and errors is None:
        raise OverrideError(messages[0])
    if messages:
        errors.extend(messages)
    bad = {path[1] for path, _ in problems if len(path) > 1 and path[0] == "overrides"}
    entries = data.get("overrides", []) if isinstance(data, dict) and isinstance(data.get("overrides"), list) else []
    items = []
    for index, entry in enumerate(entries):
        if index in bad:
            continue
        params = {k: entry[k] for k in _FIELDS if k in entry and k != "sharding"}
        for key in ("grid", "block", "subblock", "tile"):
            if key in params:
                params[key] = tuple(params[key])
        # through the item parser, so every format obeys the same rules (a sharding as written)
        text = format_item(OpOverride(op=entry["op"], **params))
        if "sharding" in entry:
            text += f"{':' if text[-1] != '=' else ''}sharding#{entry['sharding']}"
        ov = _attempt(errors, parse_item, text)
        if ov is not None:
            items.append(ov)
    if messages:  # globals from an invalid file are not trusted
        return OverrideSet(unique_items(items, errors))
    return OverrideSet(unique_items(items, errors), data.get("policy"), data.get("dispatch"), data.get("l1_usage_cap"))


def format_json(overrides: OverrideSet) -> dict:
    entries = []
    for ov in overrides.items:
        entry: dict = {"op": ov.op}
        for name in _FIELDS:
            value = getattr(ov, name)
            if isinstance(value, Sharding):
                entry[name] = value.spec()  # as an item spells it: "{},{model}"
            elif value is not None:
                entry[name] = list(value) if isinstance(value, tuple) else value
        entries.append(entry)
    data: dict = {"version": VERSION, "overrides": entries}
    for key in ("policy", "dispatch", "l1_usage_cap"):
        if getattr(overrides, key) is not None:
            data[key] = getattr(overrides, key)
    return data


def _cut(message: str, limit: int = 300) -> str:
    """The message with the middle of a long one left out: jsonschema's start with the offending
    value (cut there) and end with the reason (kept)."""
    return message if len(message) <= limit else f"{message[: limit // 2]}...{message[-limit // 2 :]}"


# --- files ---------------------------------------------------------------------------------------


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
