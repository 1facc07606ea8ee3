"""Softmax over the last dimension as ttnn's softmax program runs it, a row of tiles at a time
(tt-metal ttnn/operations/normalization/softmax, kernels/attention): the compute kernel takes
each row's max and sum on the matrix engine, runs exp on every tile and a reciprocal on the row's
sum on the vector unit, and scales the row; where the row is padded to the tile, the writer first
builds a mask tile in L1 with the RISC-V's own stores (writer_unary_interleaved_start_id_blocked_sm:
the tile zeroed a 16-bit element at a time, then its padded columns set to -inf, pad_tile.hpp)."""

from __future__ import annotations

from tilescope.compiler.analysis import l1_stores
from tilescope.compiler.analysis.core_cycles import vector_cycles
from tilescope.compiler.ir.graph import Tensor
from tilescope.compiler.ir.tiles import ceil_div
from tilescope.compiler.targets.chip import Target

KINDS = ("softmax",)
MASK_BYTES = 2  # a bf16 element of the mask tile, a store each


def row_tiles(t: Tensor) -> int:
    """Tiles across a row of `t`: the softmax's reduction runs over them."""
    return ceil_div(t.shape[-1], t.layout.tile[1]) if t.shape else 1


def compute_cycles(target: Target, t: Tensor, tiles: int, passes: float) -> float:
    """The compute kernel's cycles for a core's `tiles` of `t`: the matrix engine's `passes` over
    each (max, subtract, sum, scale), exp on each tile, a reciprocal on each row's sum."""
    rows = ceil_div(tiles, row_tiles(t))
    exp = target.sfpu_tile_cycles("exp") or 0.0
    reciprocal = target.sfpu_tile_cycles("reciprocal") or 0.0
    return vector_cycles(target, tiles, passes, t.layout.tile) + tiles * exp + rows * reciprocal


def mask_cycles(target: Target, t: Tensor) -> float:
    """The writer's cycles building the padding mask before the first row can finish: a store per
    element of the tile, then one per padded element of the row's last tile (none when the row
    fills its tiles)."""
    padded = (-t.shape[-1]) % t.layout.tile[1] if t.shape else 0
    if not padded:
        return 0.0
    # the mask is a full tile of bf16 (its -inf is 0xFF80) whatever the input's tile (the writer's
    # loops run over TILE_HEIGHT x TILE_WIDTH), stored an element at a time: zeroed from its start,
    # then each row's padded columns
    rows, cols = target.tile
    zeroed = l1_stores.run_cycles(target, 0, rows * cols * MASK_BYTES, MASK_BYTES)
    return zeroed + l1_stores.padded_columns_cycles(target, (rows, cols), padded, MASK_BYTES)
