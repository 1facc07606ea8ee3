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
    if not all(v.isdigit() and 0 < int(v) <= MAX_TILES for v in sizes + sub):
        return []
    if fields.get("transpose_mcast", "").lower() in ("1", "true"):
        return []  # a 2D config with its grid's rows and columns swapped: not modelled, not taken
    split = "2d" if name == CONFIGS_2D else ("n" if fields.get("mcast_in0", "").lower() in ("1", "true") else "m")
    return [
        f"core_block = array<i64: {', '.join(sizes)}>",
        f'core_split = "{split}"',
        f"out_subblock = array<i64: {', '.join(sub)}>",
    ]
