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


@dataclass
class OverrideSet:
    """Per-op overrides plus the globals a run is compiled with (None: the default)."""

    items: list[OpOverride] = field(default_factory=list)
    policy: str | None = None
    dispatch: str | None = None
    l1_usage_cap: float | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for ov in self.items:
            if ov.op in seen:
                raise OverrideError(f"override for {ov.op!r} given twice; give each op one override")
            seen.add(ov.op)

    def canonical(self) -> OverrideSet:
        """Without the as-written text of each item, for comparisons across formats."""
        return replace(self, items=[replace(o, spec="") for o in self.items])


# --- tt-mlir option string -------------------------------------------------------------------


def parse_ttmlir(text: str) -> OverrideSet:
    """`override-output-layout=...` and `tensor-l1-usage-cap=...` options, separated by spaces
    (or newlines); items of one option separated by commas."""
    items: list[OpOverride] = []
    cap = None
    seen: set[str] = set()
    for option in text.split():
        key, sep, value = option.partition("=")
        if not sep:
            raise OverrideError(f"option {option!r}: expected NAME=VALUE")
        if key in seen:
            raise OverrideError(f"option {key!r} given twice")
        seen.add(key)
        if key == OUTPUT_LAYOUT:
            items.extend(parse_item(item) for item in value.split(",") if item.strip())
        elif key == L1_USAGE_CAP:
            cap = _cap(value, option)
        else:
            raise OverrideError(f"unknown option {key!r} (expected {OUTPUT_LAYOUT}=... or {L1_USAGE_CAP}=...)")
    return OverrideSet(items, l1_usage_cap=cap)


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


def parse_explorer(data: dict) -> OverrideSet:
    if not isinstance(data, dict):
        raise OverrideError("TT-Explorer overrides: expected a JSON object keyed by op location")
    items: list[OpOverride] = []
    for op_id, entry in data.items():
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
        if params:
            items.append(parse_item(f"{name}={':'.join(params)}"))
    return OverrideSet(items)


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
        data[location] = {"named_location": ov.op, "full_location": location, "attributes": attributes}
    return data


# --- tilescope JSON ----------------------------------------------------------------------------

_FIELDS = [f.name for f in fields(OpOverride) if f.name not in ("op", "spec")]


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def parse_json(data: dict) -> OverrideSet:
    try:
        jsonschema.validate(data, schema())
    except jsonschema.ValidationError as err:
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise OverrideError(f"overrides file: {where}: {err.message}") from None
    items = []
    for entry in data.get("overrides", []):
        params = {k: entry[k] for k in _FIELDS if k in entry}
        for key in ("grid", "block", "subblock"):
            if key in params:
                params[key] = tuple(params[key])
        ov = OpOverride(op=entry["op"], **params)
        items.append(replace(ov, spec=format_item(ov)))
    cap = data.get("l1_usage_cap")
    return OverrideSet(items, data.get("policy"), data.get("dispatch"), cap)


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

def parse_text(text: str, source: str = "overrides") -> OverrideSet:
    """Any of the three formats, told apart by content."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return parse_ttmlir(stripped)
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as err:
        raise OverrideError(f"{source}:{err.lineno}:{err.colno}: not valid JSON: {err.msg}") from None
    if isinstance(data, dict) and "version" in data:
        return parse_json(data)
    return parse_explorer(data)


def load_file(path: str) -> OverrideSet:
    try:
        text = Path(path).expanduser().read_text()
    except FileNotFoundError:
        raise OverrideError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise OverrideError(f"{path}: cannot read: {err}") from None
    return parse_text(text, path)


def dump(overrides: OverrideSet, fmt: str) -> str:
    if fmt == "tt-mlir":
        return format_ttmlir(overrides) + "\n"
    data = format_explorer(overrides) if fmt == "tt-explorer" else format_json(overrides)
    return json.dumps(data, indent=2) + "\n"
