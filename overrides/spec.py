"""tt-mlir `override-output-layout` syntax: `op=<p>[:<p>...]`, parameters in any order, any subset.

    matmul_1=2x2:l1:block_sharded
    add_0=1x1:dram:interleaved:tile:f32

Each parameter belongs to one category (grid, memory, memory layout, layout, dtype); naming a
category twice in one item is an error, as in tt-mlir. Our extensions are `key#value` tokens in the
same list: `fidelity#hifi2`, `block#4x2x2`, `subblock#2x2`, `double_buffer#false`, `tile#1x32`,
`inner_tiles#16x16x1` (a data-tiled matmul's inner tiles, M0 x N0 x K0), `fuse#true|false`
(whether the graph's fusions take the op: a head split or merge, say), and
`operand#N` / `result#N` to lay out one input (as the op reads it) or one output of the op:

    matmul_1=operand#1:l1:width_sharded:8x1

Over several devices, `sharding#` gives per tensor dimension the mesh axes splitting it (major to
minor), or `replicated` for whole on every device; with `operand#N` it is how the op reads input
N, else what its result(s) end in. Axis names keep their case:

    lm_head.matmul=operand#1:sharding#{},{model}
    attn.matmul=sharding#{batch,model},{}
"""

from __future__ import annotations

import re

from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.errors import OverrideError
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.compiler.targets.chip import FIDELITIES
from tilescope.compiler.targets.data_file import shown

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


MAX_INNER_TILE = 1024  # elements along each of an inner tile's dims, as a target file allows


def _bounded(parse, most: int):
    def bounded(value: str):
        found = parse(value)
        if max(found) > most:
            raise ValueError(value)
        return found

    return bounded


def _index(value: str) -> int:
    if not value.isdigit():
        raise ValueError(value)
    return int(value)


_SHARDING = re.compile(r"\{[^{}]*\}(\s*,\s*\{[^{}]*\})*")
_AXIS = re.compile(r'"?([A-Za-z_][A-Za-z0-9_]*)"?')
SHARDING_EXAMPLE = "e.g. sharding#{},{model}, or sharding#replicated"


def parse_sharding(value: str) -> Sharding:
    """`{},{model}` (Shardy's `[{}, {"model"}]` too) or `replicated`; ValueError says what is wrong."""
    text = value.strip()
    if text.lower() == "replicated":
        return Sharding(())
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if not _SHARDING.fullmatch(text):
        raise ValueError(f"expected {{mesh axes}} per tensor dimension, {SHARDING_EXAMPLE}")
    dims = []
    for body in re.findall(r"\{([^{}]*)\}", text):
        axes = [a.strip() for a in body.split(",")] if body.strip() else []
        names = [_AXIS.fullmatch(a) for a in axes]
        bad = next((a for a, found in zip(axes, names) if found is None), None)
        if bad is not None:
            raise ValueError(f"{shown(bad)} is not a mesh axis name; {SHARDING_EXAMPLE}")
        dims.append(tuple(found.group(1) for found in names if found))
    return Sharding(tuple(dims))


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
    "tile": _dims(2),  # RxC elements
    "operand": _index,  # the override lays out the op's input N as the op reads it
    "result": _index,  # the override lays out the op's output N only
    "sharding": parse_sharding,  # over the devices: per dimension, the mesh axes splitting it
    "inner_tiles": _bounded(_dims(3), MAX_INNER_TILE),  # a data-tiled matmul's M0xN0xK0 elements
    "fuse": lambda value: {"true": True, "false": False}[value],  # the graph's fusions take the op, or not
}
# Extensions that describe the op's kernel, not a tensor: they cannot name an operand.
OP_ONLY = ("fidelity", "block", "subblock", "double_buffer", "inner_tiles", "fuse")


def _category(token: str) -> tuple[str, object]:
    if "#" in token:
        key, _, value = token.partition("#")
        if key not in EXTENSIONS:
            raise ValueError(token)
        if key == "sharding":  # its own error says what is wrong
            return key, parse_sharding(value)
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
    "grid RxC, memory "
    + "|".join(sorted(set(MEMORY_ALIASES)))
    + ", memory layout "
    + "|".join(MEMORY_LAYOUTS)
    + ", layout "
    + "|".join(TENSOR_LAYOUTS)
    + ", a dtype, fidelity#"
    + "|".join(FIDELITIES)
    + ", block#MxNxK, subblock#HxW, double_buffer#true|false, tile#RxC, inner_tiles#M0xN0xK0 (at most 1024 each),"
    + " fuse#true|false,"
    + " sharding#{axes},{axes}..."
    + " or sharding#replicated, operand#N or result#N"
)


def parse_item(item: str) -> OpOverride:
    """One `op=params` item; errors name the item, the token and the reason."""
    text = item.strip()
    quoted = shown(text)  # cut: an item may be a whole file's worth of text
    op, sep, params = text.partition("=")
    op = op.strip()
    if not sep or not op:
        raise OverrideError(f"override {quoted}: expected OP=PARAMS, e.g. matmul_1=2x2:l1:block_sharded")
    if not params.strip():
        raise OverrideError(f"override {quoted}: no parameters after '='")
    fields: dict[str, object] = {}
    for raw in params.split(":"):
        token = raw.strip().lower()
        if token.startswith("sharding#"):  # mesh axes keep the case the model names them in
            token = "sharding#" + raw.strip()[len("sharding#") :]
        try:
            category, value = _category(token)
        except ValueError as err:
            if token.startswith("sharding#"):
                raise OverrideError(f"override {quoted}: {shown(token)}: {err}") from None
            raise OverrideError(f"override {quoted}: unknown token {shown(token)} (expected {EXPECTED})") from None
        if category in fields:
            raise OverrideError(f"override {quoted}: {category.replace('_', ' ')} given twice ({shown(token)})")
        fields[category] = value
    if "grid" in fields and min(fields["grid"]) < 1:  # type: ignore[arg-type]
        raise OverrideError(f"override {quoted}: grid dimensions must be at least 1")
    if "operand" in fields and "result" in fields:
        raise OverrideError(f"override {quoted}: give operand# or result#, not both")
    if "operand" in fields:
        per_op = [key for key in OP_ONLY if key in fields]
        if per_op:
            raise OverrideError(f"override {quoted}: {per_op[0]}# applies to the op, not to one operand")
    if "result" in fields and "fuse" in fields:
        raise OverrideError(f"override {quoted}: fuse# applies to the op, not to one result")
    if set(fields) <= {"operand", "result"}:  # (a sharding is a parameter)
        raise OverrideError(f"override {quoted}: no layout parameters besides {'/'.join(fields)}#")
    return OpOverride(op=op, spec=text, **fields)  # type: ignore[arg-type]


def format_item(ov: OpOverride) -> str:
    """The tt-mlir spelling of an override; parse_item(format_item(x)) == x up to `spec`."""
    parts = []
    if ov.grid is not None:
        parts.append(format_value(ov.grid))
    for value in (ov.memory, ov.memory_layout, ov.layout, ov.dtype):
        if value is not None:
            parts.append(value)
    for key in EXTENSIONS:  # in the order they are declared
        value = getattr(ov, key)
        if value is not None:
            parts.append(f"{key}#{format_value(value)}")
    return f"{ov.op}={':'.join(parts)}"


def format_value(value: object) -> str:
    """One parameter's value as an item spells it: `2x2x4`, `true`, `lofi`."""
    if isinstance(value, Sharding):
        return value.spec()
    if isinstance(value, tuple):
        return "x".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
