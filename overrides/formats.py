"""Override files in the three formats users exchange, read and written both ways.

- tt-mlir compiler options: `override-output-layout=op1=1x1:dram:interleaved,op2=4x4:l1:block_sharded
  tensor-l1-usage-cap=0.8`, our extensions as `key#value` tokens among an op's parameters;
- TT-Explorer's JSON export: `{"loc(\\"op\\")": {"named_location": "op", "full_location": ...,
  "attributes": [{"key": "grid_shape", "value": "4x4"}, ...]}}`;
- tilescope's JSON: `{"version": 1, "overrides": [{"op": ..., "grid": [4, 4], ...}], ...}`, checked
  against the JSON Schema shipped beside this module (overrides.schema.json).

`load_file` tells them apart by content.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

import jsonschema

from compiler.errors import OverrideError
from compiler.override import OpOverride

from .spec import format_item, parse_item

SCHEMA_PATH = Path(__file__).parent / "overrides.schema.json"
VERSION = 1
OUTPUT_LAYOUT = "override-output-layout"
L1_USAGE_CAP = "tensor-l1-usage-cap"


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
            errors.append(f"override for {ov.target!r} given twice; give each op one override")
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
                raise OverrideError(f"override for {ov.target!r} given twice; give each op one override")
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
            raise OverrideError(f"option {option!r}: expected NAME=VALUE")
        if key in seen:
            raise OverrideError(f"option {key!r} given twice")
        if key not in (OUTPUT_LAYOUT, L1_USAGE_CAP):
            raise OverrideError(f"unknown option {key!r} (expected {OUTPUT_LAYOUT}=... or {L1_USAGE_CAP}=...)")
        seen.add(key)
        return key, value

    for option in options:
        parsed = _attempt(errors, option_of, option)
        if parsed is None:
            continue
        key, value = parsed
        if key == OUTPUT_LAYOUT:
            found = (_attempt(errors, parse_item, item) for item in value.split(",") if item.strip())
            items.extend(ov for ov in found if ov is not None)
        else:
            cap = _attempt(errors, _cap, value, option)
    return OverrideSet(unique_items(items, errors), l1_usage_cap=cap)


def format_ttmlir(overrides: OverrideSet) -> str:
    options = []
    if overrides.items:
        options.append(f"{OUTPUT_LAYOUT}=" + ",".join(format_item(o) for o in overrides.items))
    if overrides.l1_usage_cap is not None:
        options.append(f"{L1_USAGE_CAP}={overrides.l1_usage_cap:g}")
    return " ".join(options)


def _cap(value: str, where: str) -> float:
    try:
        cap = float(value)
    except ValueError:
        raise OverrideError(f"{where}: L1 usage cap must be a number in (0, 1], got {value!r}") from None
    if not 0 < cap <= 1:
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
            raise OverrideError(f"TT-Explorer grid_shape {value!r}: expected two dimensions like 4x4")
        return f"{dims[0]}x{dims[1]}"
    return value.lower()


def parse_explorer(data: dict, errors: list[str] | None = None) -> OverrideSet:
    if not isinstance(data, dict):
        raise OverrideError("TT-Explorer overrides: expected a JSON object keyed by op location")
    found = (_attempt(errors, _explorer_entry, op_id, entry) for op_id, entry in data.items())
    return OverrideSet(unique_items([ov for ov in found if ov is not None], errors))


def _explorer_entry(op_id: str, entry) -> OpOverride | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("attributes", []), list):
        raise OverrideError(f"TT-Explorer override {op_id!r}: expected {{named_location, attributes: [...]}}")
    name = entry.get("named_location") or (_LOC_NAME.search(op_id) or [None, None])[1]
    if not name:
        raise OverrideError(f"TT-Explorer override {op_id!r}: no named_location")
    params = []
    for attribute in entry.get("attributes", []):
        key = attribute.get("key") if isinstance(attribute, dict) else None
        if key in _EXPLORER_KEYS:
            params.append(_explorer_value(key, attribute.get("value", "")))
        elif key is not None and "#" not in key:
            raise OverrideError(f"TT-Explorer override {name!r}: unknown attribute key {key!r}")
        elif key is not None:  # our extensions travel as "fidelity#" keys
            params.append(f"{key}{attribute.get('value', '')}")
    return parse_item(f"{name}={':'.join(params)}") if params else None


def format_explorer(overrides: OverrideSet) -> dict:
    data = {}
    for ov in overrides.items:
        attributes = []
        if ov.grid is not None:
            attributes.append({"key": "grid_shape", "value": f"{ov.grid[0]}x{ov.grid[1]}"})
        for key, value in (
            ("buffer_type", ov.memory), ("tensor_memory_layout", ov.memory_layout),
            ("memory_layout", ov.layout), ("data_type", ov.dtype),
        ):
            if value is not None:
                attributes.append({"key": key, "value": value})
        # our extensions travel as "key#" attributes, with the token's value
        for token in format_item(ov).partition("=")[2].split(":"):
            if "#" in token:
                key, _, value = token.partition("#")
                attributes.append({"key": f"{key}#", "value": value})
        location = f"loc({json.dumps(ov.op)})"
        # one entry per op in TT-Explorer; an operand's or result's override needs a key of its own
        key = location + "".join(f"#{port}{n}" for port, n in (("operand", ov.operand), ("result", ov.result)) if n is not None)
        data[key] = {"named_location": ov.op, "full_location": location, "attributes": attributes}
    return data


# --- tilescope JSON ----------------------------------------------------------------------------

_FIELDS = [f.name for f in fields(OpOverride) if f.name not in ("op", "spec")]


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def parse_json(data: dict, errors: list[str] | None = None) -> OverrideSet:
    problems = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(data), key=lambda e: list(e.absolute_path))
    messages = [
        f"overrides file: {'/'.join(str(p) for p in err.absolute_path) or '(top level)'}: {err.message}" for err in problems
    ]
    if messages and errors is None:
        raise OverrideError(messages[0])
    if messages:
        errors.extend(messages)
    bad = {err.absolute_path[1] for err in problems if len(err.absolute_path) > 1 and err.absolute_path[0] == "overrides"}
    entries = data.get("overrides", []) if isinstance(data, dict) and isinstance(data.get("overrides"), list) else []
    items = []
    for index, entry in enumerate(entries):
        if index in bad:
            continue
        params = {k: entry[k] for k in _FIELDS if k in entry}
        for key in ("grid", "block", "subblock", "tile"):
            if key in params:
                params[key] = tuple(params[key])
        # through the item parser, so every format obeys the same rules
        ov = _attempt(errors, parse_item, format_item(OpOverride(op=entry["op"], **params)))
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
            if value is not None:
                entry[name] = list(value) if isinstance(value, tuple) else value
        entries.append(entry)
    data: dict = {"version": VERSION, "overrides": entries}
    for key in ("policy", "dispatch", "l1_usage_cap"):
        if getattr(overrides, key) is not None:
            data[key] = getattr(overrides, key)
    return data


# --- files ---------------------------------------------------------------------------------------

def parse_text(text: str, source: str = "overrides", errors: list[str] | None = None) -> OverrideSet:
    """Any of the three formats, told apart by content. With an `errors` list, every problem is
    recorded there and the good items are returned; without, the first problem raises."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return parse_ttmlir(stripped, errors, source)
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as err:
        raise OverrideError(f"{source}:{err.lineno}:{err.colno}: not valid JSON: {err.msg}") from None
    if isinstance(data, dict) and "version" in data:
        return parse_json(data, errors)
    return parse_explorer(data, errors)


def load_file(path: str, errors: list[str] | None = None) -> OverrideSet:
    try:
        text = Path(path).expanduser().read_text()
    except FileNotFoundError:
        raise OverrideError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise OverrideError(f"{path}: cannot read: {err}") from None
    return parse_text(text, path, errors)


def dump(overrides: OverrideSet, fmt: str) -> str:
    if fmt == "tt-mlir":
        return format_ttmlir(overrides) + "\n"
    data = format_explorer(overrides) if fmt == "tt-explorer" else format_json(overrides)
    return json.dumps(data, indent=2) + "\n"
