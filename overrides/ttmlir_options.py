"""tt-mlir's compiler options as an override file: `override-output-layout=op1=1x1:dram:interleaved,
op2=4x4:l1:block_sharded tensor-l1-usage-cap=0.8`. Our extensions are read as `key#value` tokens
among an op's parameters, but not written: tt-mlir does not read them.
"""

from __future__ import annotations

import re

from tilescope.compiler.errors import OverrideError
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.targets.data_file import shown
from tilescope.overrides.override_set import OverrideSet, attempt, check_count, cut_message, unique_items
from tilescope.overrides.portable import portable
from tilescope.overrides.spec import format_item, parse_item

OUTPUT_LAYOUT = "override-output-layout"
L1_USAGE_CAP = "tensor-l1-usage-cap"
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
        parsed = attempt(errors, option_of, option)
        if parsed is None:
            continue
        key, value = parsed
        if key == OUTPUT_LAYOUT:
            pieces = [item for item in _items(value) if item.strip()]
            check_count(len(pieces), source)
            found = (attempt(errors, parse_item, item) for item in pieces)
            items.extend(ov for ov in found if ov is not None)
        else:
            cap = attempt(errors, _cap, value, cut_message(option, 120))
    return OverrideSet(unique_items(items, errors), l1_usage_cap=cap)


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
