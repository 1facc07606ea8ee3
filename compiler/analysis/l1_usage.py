"""What a tensor placed in a core's own memory (L1) takes there: the cores holding its pieces, its
bytes on each, and which tensors are live on a core while an op runs. The memory planner places
tensors by these; the memory view shows what makes a level's peak."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from tilescope.compiler.analysis.l1_views import aliases, live_until
from tilescope.compiler.ir.graph import Graph, Layout, Tensor
from tilescope.compiler.ir.tiles import CACHED, at_address, layout_bytes
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class L1Tensor:
    """A tensor in L1 as one core holding a piece of it sees it."""

    name: str
    bytes: float  # on that core
    address: int | None


@dataclass(frozen=True)
class L1Peak:
    """The fullest core of a planned level (`graph.meta[L1_PEAK]`): its bytes in use at their
    most, which core, the op running then, a core's capacity, and the tensors that fill it then,
    by address. Zero bytes when nothing is placed in L1."""

    bytes: float = 0.0
    core: tuple[int, int] = (0, 0)
    op: str = ""
    capacity: float = 0.0
    tensors: tuple[L1Tensor, ...] = ()


def in_core_memory(tensor: Tensor, target: Target) -> bool:
    """Whether the tensor lives in a memory of each core's own (L1 or an on-chip scratch)."""
    memory = target.memories.get(tensor.layout.memory) if tensor.layout else None
    return memory is not None and memory.scope == "core"


def cores_of(tensor: Tensor, target: Target) -> tuple[slice, slice]:
    """The cores holding pieces of an L1 tensor: its grid's rectangle from core (0, 0);
    interleaved pages spread over the whole compute grid."""
    rows, cols = tensor.layout.grid if tensor.layout.sharded else target.grid
    return slice(0, rows), slice(0, cols)


def bytes_per_core(tensor: Tensor, target: Target) -> float:
    """What the tensor takes on each core holding a piece of it."""
    return _bytes_per_core(tensor.shape, at_address(tensor.layout, None), target.grid)  # one entry, wherever it lies


@lru_cache(maxsize=CACHED)  # the planner asks for every L1 tensor's, as it places and frees it
def _bytes_per_core(shape: tuple[int, ...], layout: Layout, grid: tuple[int, int]) -> float:
    if not layout.sharded:  # interleaved: pages round-robin over every core of the grid
        layout = replace(layout, grid=grid)
    return layout_bytes(shape, layout)


def on_core(tensor: Tensor, target: Target, core: tuple[int, int]) -> bool:
    """Whether `core` holds a piece of the L1 tensor."""
    rows, cols = cores_of(tensor, target)
    return core[0] < rows.stop and core[1] < cols.stop


def l1_live_at(graph: Graph, target: Target, op_name: str, core: tuple[int, int]) -> tuple[L1Tensor, ...]:
    """The tensors in a core's own memory on `core` while `op_name` runs, as the planner placed
    them, by address. A planned graph (the layout or kernel level) is expected."""
    index = next(i for i, op in enumerate(graph.ops) if op.name == op_name)
    born = {t: i for i, op in enumerate(graph.ops) for t in op.outputs}
    aliased = aliases(graph)
    last = live_until(graph, aliased)
    found = []
    for tensor in graph.tensors.values():
        if not in_core_memory(tensor, target) or tensor.layout.address is None or tensor.name in aliased:
            continue
        if not born.get(tensor.name, -1) <= index <= last.get(tensor.name, -1):
            continue
        if on_core(tensor, target, core):
            found.append(L1Tensor(tensor.name, bytes_per_core(tensor, target), tensor.layout.address))
    return tuple(sorted(found, key=lambda t: t.address))
