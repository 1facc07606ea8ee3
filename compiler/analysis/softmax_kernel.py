"""Softmax over the last dimension as ttnn's softmax program runs it, a row of tiles at a time
(tt-metal ttnn/operations/normalization/softmax, kernels/attention): the compute kernel takes
each row's max and sum on the matrix engine, runs exp on every tile and a reciprocal on the row's
sum on the vector unit, and scales the row; where the row is padded to the tile, the writer first
builds a mask tile in L1 with the RISC-V's own stores (writer_unary_interleaved_start_id_blocked_sm:
the tile zeroed a 16-bit element at a time, then its padded columns set to -inf, pad_tile.hpp).
A row's stages run one after another (compute/softmax.cpp, numerically stable as ttnn runs it by
default): the mask added where the row is padded, the max, exp(x - max), the sum and its
reciprocal, the scale. Each reprograms the engines and hands its result to the next through a
buffer in L1, so a row of few tiles is mostly those hand-offs."""

from __future__ import annotations

from tilescope.compiler.analysis import l1_stores
from tilescope.compiler.analysis.core_cycles import vector_cycles
from tilescope.compiler.ir.graph import Tensor
from tilescope.compiler.ir.tiles import ceil_div, tile_bytes
from tilescope.compiler.targets.chip import Target

KINDS = ("softmax",)
MASK_BYTES = 2  # a bf16 element of the mask tile, a store each


def row_tiles(t: Tensor) -> int:
    """Tiles across a row of `t`: the softmax's reduction runs over them."""
    return ceil_div(t.shape[-1], t.layout.tile[1]) if t.shape else 1


def compute_cycles(target: Target, t: Tensor, tiles: int, passes: float) -> float:
    """The compute kernel's cycles for a core's `tiles` of `t`: the matrix engine's `passes` over
    each (max, subtract, sum, scale), exp on each tile, a reciprocal on each row's sum, and each
    row's stages begun and handed on."""
    rows = ceil_div(tiles, row_tiles(t))
    exp = target.sfpu_tile_cycles("exp") or 0.0
    reciprocal = target.sfpu_tile_cycles("reciprocal") or 0.0
    work = vector_cycles(target, tiles, passes, t.layout.tile) + tiles * exp + rows * reciprocal
    return work + rows * stage_cycles(target, t)


def stages(t: Tensor) -> int:
    """The stages of each row: max, exp(x - max), sum and reciprocal, scale; first the mask added
    where the row is padded to the tile."""
    return 5 if _padded_columns(t) else 4


def stage_cycles(target: Target, t: Tensor) -> float:
    """A row's stages begun and handed on: each reprograms the unpacker, math and packer for its
    operation, and all but the last pack a result the next waits on in L1 (a buffer's handshake,
    the first tile packed, then unpacked again), which no other work of the row overlaps."""
    pipe = target.pipeline
    tile = tile_bytes(t.layout.dtype, t.layout.tile)
    unpack = tile / pipe.unpack_bytes_per_cycle if pipe.unpack_bytes_per_cycle else 0.0
    pack = tile / pipe.pack_bytes_per_cycle if pipe.pack_bytes_per_cycle else 0.0
    n = stages(t)
    return n * pipe.stage_init_cycles + (n - 1) * (pipe.step_sync_cycles + unpack + pack)


def mask_cycles(target: Target, t: Tensor) -> float:
    """The writer's cycles building the padding mask before the first row can finish: a store per
    element of the tile, then one per padded element of the row's last tile (none when the row
    fills its tiles)."""
    padded = _padded_columns(t)
    if not padded:
        return 0.0
    # the mask is a full tile of bf16 (its -inf is 0xFF80) whatever the input's tile (the writer's
    # loops run over TILE_HEIGHT x TILE_WIDTH), stored an element at a time: zeroed from its start,
    # then each row's padded columns
    rows, cols = target.tile
    zeroed = l1_stores.run_cycles(target, 0, rows * cols * MASK_BYTES, MASK_BYTES)
    return zeroed + l1_stores.padded_columns_cycles(target, (rows, cols), padded, MASK_BYTES)


def _padded_columns(t: Tensor) -> int:
    """Columns of the row's last tile past the end of the row."""
    return (-t.shape[-1]) % t.layout.tile[1] if t.shape else 0
