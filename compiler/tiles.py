"""Tile arithmetic: how a tensor pads into tiles and how many bytes it occupies."""

from __future__ import annotations

import math

from .dtypes import bytes_per_element
from .ir import Layout, Tensor


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def matrix_dims(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, rows, cols): leading dims fold into batch; rank 0/1 are one row."""
    if not shape:
        return 1, 1, 1
    if len(shape) == 1:
        return 1, 1, shape[0]
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def tile_grid(shape: tuple[int, ...], tile: tuple[int, int]) -> tuple[int, int, int]:
    """(batch, row tiles, col tiles) after padding to whole tiles."""
    batch, rows, cols = matrix_dims(shape)
    return batch, ceil_div(rows, tile[0]), ceil_div(cols, tile[1])


def num_tiles(shape: tuple[int, ...], tile: tuple[int, int]) -> int:
    batch, rt, ct = tile_grid(shape, tile)
    return batch * rt * ct


def tile_bytes(dtype: str, tile: tuple[int, int]) -> float:
    return tile[0] * tile[1] * bytes_per_element(dtype)


def shard_bytes(tensor: Tensor, layout: Layout) -> float:
    """Bytes one core holds: the largest shard for sharded layouts, an even share when interleaved."""
    tile = layout.tile
    rows_g, cols_g = layout.grid
    batch, rt, ct = tile_grid(tensor.shape, tile)
    per_tile = tile_bytes(layout.dtype, tile)
    height = batch * rt
    if layout.memory_layout == "height_sharded":
        return ceil_div(height, rows_g * cols_g) * ct * per_tile
    if layout.memory_layout == "width_sharded":
        return height * ceil_div(ct, rows_g * cols_g) * per_tile
    if layout.memory_layout == "block_sharded":
        return ceil_div(height, rows_g) * ceil_div(ct, cols_g) * per_tile
    return ceil_div(height * ct, rows_g * cols_g) * per_tile
