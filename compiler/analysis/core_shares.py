"""How an op's work divides over the cores of its grid: units in even shares in row-major core
order, the last cores taking what is left."""

from __future__ import annotations

from collections import defaultdict

from tilescope.compiler.ir.tiles import ceil_div


def grid_cores(grid: tuple[int, int]) -> list[tuple[int, int]]:
    """The cores of a grid in row-major order."""
    return [(r, c) for r in range(grid[0]) for c in range(grid[1])]


def spread(units: int, cores: list[tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
    """`units` of work in even shares over the cores in row-major order: share -> the cores with it."""
    per_core = ceil_div(units, len(cores))
    counts: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for i, core in enumerate(cores):
        n = clamp(units - i * per_core, per_core)
        if n:
            counts[n].append(core)
    return counts


def clamp(remaining: int, block: int) -> int:
    """A share of `block` units where `remaining` are left (none when none are)."""
    return max(0, min(block, remaining))


def shard_shares(height: int, ct: int, memory_layout: str, grid: tuple[int, int]) -> dict[int, list[tuple[int, int]]]:
    """The tiles of a `height` x `ct` tile tensor each core of `grid` holds when sharded so: a
    full shard of ceil(tiles / cores) along the sharded dimension, the last cores what is left
    (share -> the cores with it). Block shards split rows over the grid's rows and columns over
    its columns; height and width shards go over the cores in row-major order."""
    cores = grid_cores(grid)
    if memory_layout == "height_sharded":
        return {n * ct: members for n, members in spread(height, cores).items()}
    if memory_layout == "width_sharded":
        return {n * height: members for n, members in spread(ct, cores).items()}
    if memory_layout != "block_sharded":
        return spread(height * ct, cores)
    rows = spread(height, [(r, 0) for r in range(grid[0])])
    cols = spread(ct, [(0, c) for c in range(grid[1])])
    counts: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for n_rows, row_cores in rows.items():
        for n_cols, col_cores in cols.items():
            counts[n_rows * n_cols].extend((r, c) for r, _ in row_cores for _, c in col_cores)
    return {n: sorted(members) for n, members in counts.items()}
