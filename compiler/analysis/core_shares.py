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
