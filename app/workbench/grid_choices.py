"""The grids the override form offers for an op part: a sharded layout must give each core of its
grid a shard of every tensor it lays out (the last one may be partial, as ttnn's are), so a grid
with more cores than that is marked, with why, before it can be added rather than rejected after;
a grid the form holds that does not fit moves to the nearest one that does."""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.graph import Tensor
from tilescope.compiler.analysis.shard_layouts import shardable
from tilescope.compiler.ir.tiles import tile_grid

from tilescope.app.workbench.override_form import DEFAULT_CHOICE, layout_op, part_of
from tilescope.app.workbench.run_view import RunView


@dataclass(frozen=True)
class GridOption:
    value: int
    why_not: str = ""  # why no grid with this many rows (or columns) shards the tensors; '' if one does


@dataclass(frozen=True)
class GridChoice:
    rows: tuple[GridOption, ...]
    cols: tuple[GridOption, ...]
    grid: tuple[int, int]  # the form's grid, or the nearest one that fits when it does not
    moved: str = ""  # why the grid moved, '' when it did not


def grid_choice(
    run: RunView,
    op_name: str | None,
    applies_to,
    memory_layout: str | None,
    tile: str | None,
    grid: tuple[int, int],
    kept: str | None = None,
) -> GridChoice:
    """The grids up to the run's target's that `memory_layout` over them gives a shard of each of
    the op part's tensors (in the form's tile, else their own) on every core. `kept`: "rows" or "cols", the dimension
    the user just chose, which a move keeps when it can."""
    most = run.compiled.target.grid
    tensors = _tensors(run, op_name, applies_to)
    shape = _tile_shape(tile)
    good = {
        (r, c)
        for r in range(1, most[0] + 1)
        for c in range(1, most[1] + 1)
        if all(shardable(t, memory_layout or "", (r, c), shape or t.layout.tile) for t in tensors)
    }
    named = _named(tensors, shape)
    cut = f"gives each core a shard of {named} {memory_layout}"

    def option(value: int, dim: int) -> GridOption:
        fits = any(g[dim] == value for g in good)
        return GridOption(value, "" if fits else f"no grid of {value} {('rows', 'columns')[dim]} {cut}")

    rows = tuple(option(r, 0) for r in range(1, most[0] + 1))
    cols = tuple(option(c, 1) for c in range(1, most[1] + 1))
    if grid in good or not good:
        return GridChoice(rows, cols, grid)
    index = {"rows": 0, "cols": 1}.get(kept or "")

    def distance(g: tuple[int, int]) -> tuple:
        lost = index is not None and g[index] != grid[index]  # the dimension just chosen, changed
        return (lost, abs(g[0] - grid[0]) + abs(g[1] - grid[1]), -g[0] * g[1], g)

    near = min(good, key=distance)
    moved = (
        f"{memory_layout} over {grid[0]}x{grid[1]} cores has more cores than {named} has shards: "
        f"grid set to {near[0]}x{near[1]}"
    )
    return GridChoice(rows, cols, near, moved)


def _tensors(run: RunView, op_name: str | None, applies_to) -> list[Tensor]:
    """The tensors the op part's override lays out: an operand, one result, or every output."""
    graph, op = run.compiled.levels["layout"], layout_op(run, op_name)
    if op is None:
        return []
    operand, result = part_of(op, applies_to)
    if operand is not None:
        names = [op.inputs[operand]]
    else:
        names = list(op.outputs) if result is None else [op.outputs[result]]
    return [graph.tensors[n] for n in names]


def _tile_shape(tile: str | None) -> tuple[int, int] | None:
    if not tile or tile == DEFAULT_CHOICE:
        return None
    try:
        rows, cols = (int(v) for v in str(tile).split("x"))
    except ValueError:
        return None  # a value the menu does not offer: the tensor's own (Add names it)
    return (rows, cols) if rows > 0 and cols > 0 else None


def _named(tensors: list[Tensor], tile: tuple[int, int] | None) -> str:
    """The first tensor and its tiles, "mlp.layer.0.gelu (4x128 tiles of 32x32)"."""
    if not tensors:
        return ""
    t = tensors[0]
    shape = tile or t.layout.tile
    batch, rt, ct = tile_grid(t.shape, shape)
    return f"{t.name} ({batch * rt}x{ct} tiles of {shape[0]}x{shape[1]})"
