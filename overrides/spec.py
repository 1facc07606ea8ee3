"""tt-mlir `override-output-layout` syntax: `op=<p>[:<p>...]`, parameters in any order, any subset.

    matmul_1=2x2:l1:block_sharded
    add_0=1x1:dram:interleaved:tile:f32

Each parameter belongs to one category (grid, memory, memory layout, layout, dtype); naming a
category twice in one item is an error, as in tt-mlir.
"""

from __future__ import annotations

import re

from compiler.dtypes import BYTES_PER_ELEMENT
from compiler.errors import OverrideError
from compiler.ir import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from compiler.override import OpOverride
from compiler.target import FIDELITIES

# Memory names as users write them; tt-mlir spells host memory `system_memory`.
MEMORY_ALIASES = {"dram": "dram", "l1": "l1", "lls": "lls", "system": "system", "system_memory": "system"}
# tt-mlir / ttnn data type spellings
DTYPE_ALIASES = {"bfp_bf8": "bfp8", "bfp_bf4": "bfp4", "float32": "f32", "bfloat16": "bf16", "uint8": "ui8"}
_GRID = re.compile(r"^(\d+)x(\d+)$")


def _dims(count: int):
    pattern = re.compile(r"^" + r"x".join([r"(\d+)"] * count) + r"$")

    def parse(value: str):
        match = pattern.match(value)
        if not match or min(int(g) for g in match.groups()) < 1:
            raise ValueError(value)
        return tuple(int(g) for g in match.groups())

    return parse


def _choice(choices):
    def parse(value: str):
        if value not in choices:
            raise ValueError(value)
        return value

    return parse


# Our extensions, written `key#value` among the tt-mlir parameters.
EXTENSIONS = {
    "fidelity": _choice(FIDELITIES),
    "block": _dims(3),  # MxNxK tiles
    "subblock": _dims(2),  # hxw tiles
    "double_buffer": lambda value: {"true": True, "false": False}[value],
}


def _category(token: str) -> tuple[str, object]:
    if "#" in token:
        key, _, value = token.partition("#")
        if key not in EXTENSIONS:
            raise ValueError(token)
        try:
            return key, EXTENSIONS[key](value)
        except (ValueError, KeyError):
            raise ValueError(token) from None
    grid = _GRID.match(token)
    if grid:
        return "grid", (int(grid.group(1)), int(grid.group(2)))
    if token in MEMORY_ALIASES:
        return "memory", MEMORY_ALIASES[token]
    if token in MEMORY_LAYOUTS:
        return "memory_layout", token
    if token in TENSOR_LAYOUTS:
        return "layout", token
    dtype = DTYPE_ALIASES.get(token, token)
    if dtype in BYTES_PER_ELEMENT:
        return "dtype", dtype
    raise ValueError(token)


EXPECTED = (
    "grid RxC, memory " + "|".join(sorted(set(MEMORY_ALIASES))) + ", memory layout "
    + "|".join(MEMORY_LAYOUTS) + ", layout " + "|".join(TENSOR_LAYOUTS) + ", a dtype, fidelity#"
    + "|".join(FIDELITIES) + ", block#MxNxK, subblock#HxW or double_buffer#true|false"
)


def parse_item(item: str) -> OpOverride:
    """One `op=params` item; errors name the item, the token and the reason."""
    text = item.strip()
    op, sep, params = text.partition("=")
    op = op.strip()
    if not sep or not op:
        raise OverrideError(f"override {text!r}: expected OP=PARAMS, e.g. matmul_1=2x2:l1:block_sharded")
    if not params.strip():
        raise OverrideError(f"override {text!r}: no parameters after '='")
    fields: dict[str, object] = {}
    for token in params.split(":"):
        token = token.strip().lower()
        try:
            category, value = _category(token)
        except ValueError:
            raise OverrideError(f"override {text!r}: unknown token {token!r} (expected {EXPECTED})") from None
        if category in fields:
            raise OverrideError(f"override {text!r}: {category.replace('_', ' ')} given twice ({token!r})")
        fields[category] = value
    if "grid" in fields and min(fields["grid"]) < 1:  # type: ignore[arg-type]
        raise OverrideError(f"override {text!r}: grid dimensions must be at least 1")
    return OpOverride(op=op, spec=text, **fields)  # type: ignore[arg-type]


def format_item(ov: OpOverride) -> str:
    """The tt-mlir spelling of an override; parse_item(format_item(x)) == x up to `spec`."""
    parts = []
    if ov.grid is not None:
        parts.append(f"{ov.grid[0]}x{ov.grid[1]}")
    for value in (ov.memory, ov.memory_layout, ov.layout, ov.dtype):
        if value is not None:
            parts.append(value)
    if ov.fidelity is not None:
        parts.append(f"fidelity#{ov.fidelity}")
    if ov.block is not None:
        parts.append(f"block#{'x'.join(map(str, ov.block))}")
    if ov.subblock is not None:
        parts.append(f"subblock#{'x'.join(map(str, ov.subblock))}")
    if ov.double_buffer is not None:
        parts.append(f"double_buffer#{str(ov.double_buffer).lower()}")
    return f"{ov.op}={':'.join(parts)}"
