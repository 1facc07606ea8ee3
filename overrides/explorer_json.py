"""TT-Explorer's overrides JSON: `{"loc(\\"op\\")": {"named_location": "op", "full_location": ...,
"attributes": [{"key": "grid_shape", "value": "4x4"}, ...]}}`.
"""

from __future__ import annotations

import json
import re

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.targets.data_file import shown
from tilescope.overrides.override_set import OverrideSet, attempt, check_count, unique_items
from tilescope.overrides.portable import portable
from tilescope.overrides.spec import parse_item

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
    check_count(len(data), "TT-Explorer overrides")
    found = (attempt(errors, _explorer_entry, op_id, entry) for op_id, entry in data.items())
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
