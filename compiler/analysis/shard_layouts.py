"""How a tensor shards over a grid of cores: whether a memory layout cuts it into equal whole-tile
shards, the grids that would, and the L1 layout a policy gives an op's output on its grid. The
layout pass places and checks tensors with these; the override form offers the grids they allow."""

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


@lru_cache(maxsize=256)  # a batch of overrides may ask of one tensor 100,000 times
def dividing_grids(height: int, ct: int, memory_layout: str, grid: tuple[int, int]) -> str:
    """The six largest grids within `grid` that cut `height` x `ct` tiles evenly, as a list."""
    grids = [(r, c) for r in range(1, grid[0] + 1) for c in range(1, grid[1] + 1)]
    good = [g for g in grids if even_split(height, ct, memory_layout, g)]
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
