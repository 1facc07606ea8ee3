"""tilescope's own overrides JSON: `{"version": 1, "overrides": [{"op": ..., "grid": [4, 4],
"sharding": "{},{model}", ...}], ...}`, checked against the JSON Schema shipped beside this module
(overrides.schema.json). It carries every field of an override and the globals of a run.
"""

from __future__ import annotations

import json
from dataclasses import fields
from functools import lru_cache
from pathlib import Path

import jsonschema

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.overrides.override_set import OverrideSet, attempt, check_count, cut_message, unique_items
from tilescope.overrides.spec import format_item, parse_item

SCHEMA_PATH = Path(__file__).parent / "overrides.schema.json"
VERSION = 1

_FIELDS = [f.name for f in fields(OpOverride) if f.name not in ("op", "spec")]


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def parse_json(data: dict, errors: list[str] | None = None) -> OverrideSet:
    if isinstance(data, dict) and isinstance(data.get("overrides"), list):
        check_count(len(data["overrides"]), "overrides file")
    # (path, message) only: an error object holds kilobytes, and a bad file may have an error an item;
    # jsonschema quotes the offending value whole, which may be megabytes
    problems = sorted(
        (list(err.absolute_path), cut_message(err.message))
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
        for key in ("grid", "block", "subblock", "tile", "inner_tiles"):
            if key in params:
                params[key] = tuple(params[key])
        # through the item parser, so every format obeys the same rules (a sharding as written)
        text = format_item(OpOverride(op=entry["op"], **params))
        if "sharding" in entry:
            text += f"{':' if text[-1] != '=' else ''}sharding#{entry['sharding']}"
        ov = attempt(errors, parse_item, text)
        if ov is not None:
            items.append(ov)
    if messages:  # globals from an invalid file are not trusted
        return OverrideSet(unique_items(items, errors))
    return OverrideSet(
        unique_items(items, errors),
        data.get("policy"),
        data.get("dispatch"),
        data.get("l1_usage_cap"),
        data.get("data_tiling"),
    )


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
    for key in ("policy", "dispatch", "l1_usage_cap", "data_tiling"):
        if getattr(overrides, key) is not None:
            data[key] = getattr(overrides, key)
    return data
