"""A measured matmul's program config, as the one-op model's attributes: per core M x N output tiles
and the K step (`core_block`), how the cores split the output (`core_split`: both ways, or along M
or N with the other operand multicast to all) and the output sub-block (`out_subblock`), read from
tt-metal's MatmulMultiCoreReuseMultiCastProgramConfig (2D) and ...1DProgramConfig (1D: `mcast_in0`
true splits N, false splits M). A config missing a field, holding a value out of range or with
its multicasts transposed gives none: the compiler then blocks the matmul as tt-metal's defaults
would; compiler/analysis/matmul_program.py takes a config only where it blocks the matmul whole."""

from __future__ import annotations

import re

_FIELD = re.compile(
    r"\b(per_core_M|per_core_N|in0_block_w|out_subblock_h|out_subblock_w|mcast_in0|transpose_mcast)=(\w{1,8})"
)
MAX_TILES = 1024  # per core along a side: a report's larger block is not taken
CONFIGS_2D = "MatmulMultiCoreReuseMultiCastProgramConfig"
CONFIGS_1D = "MatmulMultiCoreReuseMultiCast1DProgramConfig"


def program_blocks(config: str) -> list[str]:
    """The MLIR attributes (`name = value`) of `config`'s blocking, or [] when it gives none."""
    text = config[:4096]
    name = text.split("(", 1)[0].strip()
    if name not in (CONFIGS_2D, CONFIGS_1D):
        return []
    fields = dict(_FIELD.findall(text))
    sizes = [fields.get(key, "") for key in ("per_core_M", "per_core_N", "in0_block_w")]
    sub = [fields.get(key, "") for key in ("out_subblock_h", "out_subblock_w")]
    if not all(_whole(v) for v in sizes + sub):
        return []
    if fields.get("transpose_mcast", "").lower() in ("1", "true"):
        return []  # a 2D config with its grid's rows and columns swapped: not modelled, not taken
    split = "2d" if name == CONFIGS_2D else ("n" if fields.get("mcast_in0", "").lower() in ("1", "true") else "m")
    return [
        f"core_block = array<i64: {', '.join(sizes)}>",
        f'core_split = "{split}"',
        f"out_subblock = array<i64: {', '.join(sub)}>",
    ]


_CONV_FIELD = re.compile(
    r"\b(per_core_out_matrix_height_ntile|per_core_out_matrix_width_ntile|act_block_w_ntiles"
    r"|out_subblock_h_ntiles|out_subblock_w_ntiles)=(\w{1,8})"
)
# a convolution's sharding -> how its cores split the output: rows (the weights multicast to
# all), both ways, or columns (tt-metal conv2d's height, block and width sharded programs)
_CONV_SPLITS = {"HEIGHT_SHARDED": "m", "BLOCK_SHARDED": "2d", "WIDTH_SHARDED": "n"}
_LAYOUT = re.compile(r"TensorMemoryLayout::(\w{1,20})")


def conv_blocks(attributes) -> list[str]:
    """The MLIR attributes of a measured convolution's blocking, as `program_blocks` gives a
    matmul's: per core output tiles (its parallelization config), the K step (its activation
    block's width) and the sub-block, split as its sharding splits it; [] when one is missing."""
    text = " ".join(attributes.get(key, "")[:4096] for key in ("parallelization_config", "block_config"))
    fields = dict(_CONV_FIELD.findall(text))
    keys = ("per_core_out_matrix_height_ntile", "per_core_out_matrix_width_ntile", "act_block_w_ntiles")
    sizes = [fields.get(key, "") for key in keys]
    sub = [fields.get(key, "") for key in ("out_subblock_h_ntiles", "out_subblock_w_ntiles")]
    layout = _LAYOUT.search(attributes.get("memory_config", "")[:4096])
    split = _CONV_SPLITS.get(layout[1]) if layout else None
    if split is None or not all(_whole(v) for v in sizes + sub):
        return []
    return [
        f"core_block = array<i64: {', '.join(sizes)}>",
        f'core_split = "{split}"',
        f"out_subblock = array<i64: {', '.join(sub)}>",
    ]


def _whole(value: str) -> bool:
    """Whether a config's field is a count of tiles we take: ASCII digits, 1 to MAX_TILES."""
    return value.isascii() and value.isdigit() and 0 < int(value) <= MAX_TILES
