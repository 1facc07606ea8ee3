"""The overrides a file holds, and what the readers of every format share: the limit on items,
and the collecting of every problem of a file at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.targets.data_file import shown

MAX_ITEMS = 100_000  # overrides in one file: more than a large model has ops


@dataclass
class OverrideSet:
    """Per-op overrides plus the globals a run is compiled with (None: the default)."""

    items: list[OpOverride] = field(default_factory=list)
    policy: str | None = None
    dispatch: str | None = None
    l1_usage_cap: float | None = None
    data_tiling: bool | None = None  # compiled with data-tiling (IREE's flag); None: not said (off)

    def __post_init__(self) -> None:
        seen: set[tuple] = set()
        for ov in self.items:
            if ov.key in seen:
                raise OverrideError(_given_twice(ov))
            seen.add(ov.key)

    def canonical(self) -> OverrideSet:
        """Without the as-written text of each item, for comparisons across formats."""
        return replace(self, items=[replace(o, spec="") for o in self.items])


def check_count(count: int, what: str) -> None:
    if count > MAX_ITEMS:
        raise OverrideError(f"{what}: {count:,} overrides: at most {MAX_ITEMS:,} in one file")


def attempt(errors: list[str] | None, parse, *args):
    """parse(*args); with an error list, a bad piece is recorded there (None returned) so that
    every problem of a file is reported at once."""
    if errors is None:
        return parse(*args)
    try:
        return parse(*args)
    except OverrideError as err:
        errors.append(str(err))
        return None


def cut_message(message: str, limit: int = 300) -> str:
    """The message with the middle of a long one left out: jsonschema's start with the offending
    value (cut there) and end with the reason (kept)."""
    return message if len(message) <= limit else f"{message[: limit // 2]}...{message[-limit // 2 :]}"


def unique_items(items: list[OpOverride], errors: list[str] | None) -> list[OpOverride]:
    """Items with one override per op (or operand); repeats are errors."""
    if errors is None:
        return items
    kept: dict[tuple, OpOverride] = {}
    for ov in items:
        if ov.key in kept:
            errors.append(_given_twice(ov))
        else:
            kept[ov.key] = ov
    return list(kept.values())


def _given_twice(ov: OpOverride) -> str:
    return f"override for {shown(ov.target)} given twice; give each op one override"
