"""How a tensor shards over a grid of cores, as ttnn shards it: each core holds a shard of
ceil(tiles / cores) along the sharded dimension, the last one partial when the cores do not divide
the tensor (5,280 tile rows over 64 cores: 83 rows a core, 49 on the last). A layout is refused
only where ttnn refuses it: a grid with more cores along a dimension than the tensor has tiles
there. The layout pass places and checks tensors with these; the override form offers the grids
they allow; the greedy policy still picks grids that cut equal shards."""

from __future__ import annotations

from functools import lru_cache

from tilescope.compiler.ir.graph import Layout, Tensor
from tilescope.compiler.ir.tiles import tile_grid


def even_shards(tensor: Tensor, memory_layout: str, grid: tuple[int, int], tile: tuple[int, int]) -> bool:
    """Whether `memory_layout` over `grid` cuts `tensor` into equal whole-tile shards."""
    batch, rt, ct = tile_grid(tensor.shape, tile)
    return even_split(batch * rt, ct, memory_layout, grid)


def even_split(height: int, ct: int, memory_layout: str, grid: tuple[int, int]) -> bool:
    """Whether `memory_layout` over `grid` cuts `height` x `ct` tiles into equal shards."""
    rows, cols = grid
    if memory_layout == "height_sharded":
        return height % (rows * cols) == 0
    if memory_layout == "width_sharded":
        return ct % (rows * cols) == 0
    if memory_layout == "block_sharded":
        return height % rows == 0 and ct % cols == 0
    return True


def shardable(tensor: Tensor, memory_layout: str, grid: tuple[int, int], tile: tuple[int, int]) -> bool:
    """Whether `memory_layout` over `grid` gives every core of it a shard of `tensor`."""
    batch, rt, ct = tile_grid(tensor.shape, tile)
    return fits_split(batch * rt, ct, memory_layout, grid)


def fits_split(height: int, ct: int, memory_layout: str, grid: tuple[int, int]) -> bool:
    """Whether `memory_layout` over `grid` gives each core some of `height` x `ct` tiles: no more
    cores along the sharded dimension than it has tiles (ttnn refuses more shards than rows)."""
    rows, cols = grid
    if memory_layout == "height_sharded":
        return rows * cols <= height
    if memory_layout == "width_sharded":
        return rows * cols <= ct
    if memory_layout == "block_sharded":
        return rows <= height and cols <= ct
    return True


@lru_cache(maxsize=256)  # a batch of overrides may ask of one tensor 100,000 times
def fitting_grids(height: int, ct: int, memory_layout: str, grid: tuple[int, int]) -> str:
    """The six largest grids within `grid` that give each core a shard of `height` x `ct` tiles."""
    grids = [(r, c) for r in range(1, grid[0] + 1) for c in range(1, grid[1] + 1)]
    good = [g for g in grids if fits_split(height, ct, memory_layout, g)]
    return ", ".join(f"{r}x{c}" for r, c in sorted(good, key=lambda g: (-g[0] * g[1], g))[:6])


def l1_layout_for(tensor: Tensor, grid: tuple[int, int], memory: str, tile: tuple[int, int]) -> Layout:
    """How a tensor shards over `grid` in L1: in blocks, else by rows, else by columns, whichever
    cuts it into equal shards first; else interleaved across the cores."""
    memory_layout = "interleaved"
    if grid[0] * grid[1] > 1:
        for candidate in ("block_sharded", "height_sharded", "width_sharded"):
            if even_shards(tensor, candidate, grid, tile):
                memory_layout = candidate
                break
    return Layout(
        memory=memory, memory_layout=memory_layout, grid=grid, dtype=tensor.layout.dtype, layout="tile", tile=tile
    )


def unshardable(tensor: Tensor, layout: Layout, said: str, target_grid: tuple[int, int], target_name: str) -> str:
    """Why `layout` cannot give each core of its grid a shard of `tensor` (`said` so), naming
    grids of the target's that could, or ''. Uneven shards are fine: ttnn pads the last core's."""
    if not layout.sharded:
        return ""
    batch, rt, ct = tile_grid(tensor.shape, layout.tile)
    if fits_split(batch * rt, ct, layout.memory_layout, layout.grid):
        return ""
    would = fitting_grids(batch * rt, ct, layout.memory_layout, target_grid)
    rows, cols = layout.grid
    return (
        f"{layout.memory_layout} over {rows}x{cols} cores needs a shard on each core, more than "
        f"{said} has ({batch * rt}x{ct} tiles of {layout.tile[0]}x{layout.tile[1]}); "
        f"grids that would: {would or 'none on ' + target_name}"
    )
