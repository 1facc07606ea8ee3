"""How a replayed op is laid out: the overrides that give its result and each operand the memory,
memory layout, tensor layout and dtype the report recorded, the op the grid it ran on, and matrix
ops their math fidelity; and, when the compiler refuses one, a weaker one to try instead.

A report's nd_sharded tensors are laid out interleaved (tilescope has no N-dimensional shards) and
said so in a note; a block-sharded result takes the grid its shard spec cuts it over.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.profiles.replay_target import config_grid, grid_of
from tilescope.compiler.profiles.report import ReportOp, ReportTensor
from tilescope.compiler.targets.chip import Target

OP = "op"  # the name of the replayed op in the one-op model it is built as


@dataclass(frozen=True)
class Placement:
    """A replayed op's overrides, and what could not be said in them."""

    overrides: tuple[OpOverride, ...]
    notes: tuple[str, ...] = ()


def placement(
    op: ReportOp, kind: str, operands: tuple[int, ...], target: Target, results: tuple[int, ...] | None = None
) -> Placement:
    """The overrides of the op built from `op` whose operands are the report's inputs `operands`
    and whose results its outputs `results` (by index; by default every non-empty output: an
    empty one, with a zero dimension, is left out of the build)."""
    notes: list[str] = []
    grid = _op_grid(op, target, notes)
    if results is None:
        results = tuple(i for i, t in enumerate(op.outputs) if t.elements)
    matrix = opset.op_class(kind).engine == "matrix"
    fidelity = op.fidelity if matrix and op.fidelity and target.fidelities else None
    overrides = []
    for position, index in enumerate(results):
        part = {"result": position} if len(results) > 1 else {}
        overrides.append(
            OpOverride(OP, grid=grid, fidelity=fidelity, **_stored(op.outputs[index], notes), **part, spec=_spec(part))
        )
    if not results:  # no result to lay out (an in-place write): the grid and fidelity alone
        overrides.append(OpOverride(OP, grid=grid, fidelity=fidelity))
    for position, index in enumerate(operands):
        tensor = op.inputs[index]
        overrides.append(OpOverride(OP, operand=position, **_stored(tensor, notes), spec=f"operand {position}"))
    return Placement(tuple(overrides), tuple(dict.fromkeys(notes)))


def _spec(part: dict) -> str:
    return f"result {part['result']}" if part else "result"


def _stored(tensor: ReportTensor, notes: list[str]) -> dict:
    """The override fields that store `tensor` as the report says it was."""
    memory_layout = tensor.memory_layout or None
    if memory_layout == "nd_sharded":
        notes.append("an nd_sharded tensor laid out interleaved (tilescope shards in two dimensions)")
        memory_layout = "interleaved"
    if memory_layout is not None and memory_layout not in MEMORY_LAYOUTS:
        notes.append(f"memory layout {memory_layout!r} unknown; laid out interleaved")
        memory_layout = "interleaved"
    fields = {
        "memory": tensor.memory if tensor.memory in ("l1", "dram") else None,
        "memory_layout": memory_layout,
        "layout": tensor.layout if tensor.layout in TENSOR_LAYOUTS else None,
        "dtype": tensor.dtype or None,
    }
    if fields["memory"] is None and memory_layout and memory_layout != "interleaved":
        fields["memory"] = "l1"  # only per-core memory holds shards
    return fields


def _op_grid(op: ReportOp, target: Target, notes: list[str]) -> tuple[int, int]:
    """The grid the op ran on: its sharded result's, else the one its program config names, else
    a rectangle of its CORE COUNT (the whole grid when the report gives none)."""
    shard = op.output_shard
    result = op.outputs[0] if op.outputs else None
    if shard is not None and result is not None and result.memory_layout == "block_sharded":
        grid = _block_grid(result, shard.shape, target)
        if grid is not None:
            return grid
        notes.append(f"block shards of {shard.shape[0]}x{shard.shape[1]} do not fit {target.name}'s grid")
    cores = _holding(result, shard) if shard is not None and result is not None else op.cores
    if cores is None:
        return target.grid
    grid = config_grid(op.program_config, cores, target.grid) or grid_of(cores, target.grid)
    if grid[0] * grid[1] != cores:
        notes.append(f"{cores} cores run as {grid[0]}x{grid[1]} ({grid[0] * grid[1]}), the nearest rectangle")
    return grid


def _holding(tensor: ReportTensor, shard) -> int:
    """The cores of a shard spec that hold a shard of `tensor`: its grid may have more than the
    tensor has shards of the spec's shape (ttnn leaves the rest empty)."""
    width = tensor.shape[-1] if tensor.shape else 1
    height = tensor.elements // max(1, width)
    needed = {
        "height_sharded": -(-height // max(1, shard.shape[0])),
        "width_sharded": -(-width // max(1, shard.shape[1])),
    }.get(tensor.memory_layout)
    return min(shard.cores, needed) if needed else shard.cores


def _block_grid(tensor: ReportTensor, shard: tuple[int, int], target: Target) -> tuple[int, int] | None:
    """The grid block shards of `shard` (rows, columns) cut `tensor` over, when it fits the target."""
    width = tensor.shape[-1] if tensor.shape else 1
    height = tensor.elements // max(1, width)
    rows, cols = -(-height // max(1, shard[0])), -(-width // max(1, shard[1]))
    if 1 <= rows <= target.grid[0] and 1 <= cols <= target.grid[1]:
        return rows, cols
    return None


def weaker(override: OpOverride) -> OpOverride | None:
    """What to ask instead when the compiler refuses `override`: a row-major operand in tiles, then
    in DRAM interleaved; a result in the memory the compiler picks, keeping the grid, dtype and
    fidelity; then only the grid. None when nothing weaker is left."""
    if override.operand is not None:
        if override.layout == "row_major":
            return replace(override, layout="tile")
        if override.memory != "dram" or override.memory_layout not in (None, "interleaved"):
            return replace(override, memory="dram", memory_layout="interleaved", grid=None)
        return None
    if override.memory is not None or override.memory_layout is not None or override.layout is not None:
        return replace(override, memory=None, memory_layout=None, layout=None)
    if override.dtype is not None or override.fidelity is not None:
        return replace(override, dtype=None, fidelity=None)
    return None
