"""layout: a liveness-based L1 planner. Every tensor placed in a per-core memory gets an address,
the same on every core holding a piece of it (as tt-metal allocates sharded buffers in lockstep),
from the op that produces it until the last op that reads it. First fit from the bottom of L1.

Results, for the views and the simulator:
- each L1 tensor's `layout.address`;
- `graph.meta["l1_peak"]`: the fullest core, its peak bytes, the op at which it peaks and the
  tensors that make the peak there (name, bytes on that core, address);
- `graph.meta["l1_per_core"]`: peak bytes per core as "r,c" -> bytes;
- `op.meta["l1_live"]`: tensor bytes on the fullest core while the op runs (the kernel level adds
  the op's circular buffers to it), and `op.meta["l1_live_per_core"]` the same for every core;
- a tensor that does not fit (no free range large enough, keeping room for the smallest circular
  buffers of every op) goes back to DRAM: the override that placed it becomes a rejection naming
  the op, the tensor and the bytes needed vs free; otherwise it is a diagnostic. No layout
  overflows L1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tilescope.compiler.ir.graph import Graph, Tensor
from tilescope.compiler.analysis.l1_allocator import FirstFit, last_uses
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.pipeline.op_override import REJECTED, OverrideOutcome, short_name
from tilescope.compiler.ir.rewrite import producers
from tilescope.compiler.ir.tiles import shard_bytes, tile_bytes


@dataclass(frozen=True)
class PlanMemory:
    name = "plan-memory"
    target: Target

    def _cores_of(self, tensor: Tensor) -> tuple[slice, slice]:
        """The cores holding pieces of an L1 tensor: its grid's rectangle from core (0, 0);
        interleaved pages spread over the whole compute grid."""
        rows, cols = tensor.layout.grid if tensor.layout.sharded else self.target.grid
        return slice(0, rows), slice(0, cols)

    def _bytes(self, tensor: Tensor) -> float:
        layout = tensor.layout
        if not layout.sharded:  # interleaved: pages round-robin over every core of the grid
            layout = replace(layout, grid=self.target.grid)
        return shard_bytes(tensor, layout)

    def _reserve(self, graph: Graph) -> float:
        """L1 kept free for circular buffers: the most any op needs at the least (two tiles for each
        of its inputs and outputs), so a placed tensor never leaves an op without buffers."""
        return max(
            (
                sum(
                    2 * tile_bytes(graph.tensors[t].layout.dtype, graph.tensors[t].layout.tile)
                    for t in op.inputs + op.outputs
                )
                for op in graph.ops
            ),
            default=0.0,
        )

    def run(self, graph: Graph) -> Graph:
        memory = self.target.core_memory
        allocator = FirstFit(int(memory.capacity_bytes - self._reserve(graph)))
        producer = producers(graph)
        outcomes = graph.meta.get("overrides", [])
        usage = np.zeros(self.target.grid, dtype=np.float64)
        peak = np.zeros(self.target.grid, dtype=np.float64)
        last = last_uses(graph)
        frees: dict[int, list[str]] = {}
        diagnostics: list[str] = list(graph.meta.get("diagnostics", []))
        top: tuple = (0.0, (0, 0), "", [])
        live: dict[str, Tensor] = {}  # placed and not yet freed
        changed = True  # usage changed since the last op's was read

        def place(tensor: Tensor, op_name: str) -> None:
            nonlocal changed
            need = self._bytes(tensor)
            address = allocator.allocate(int(need), tensor.name)
            if address is None:
                at = (
                    "" if op_name == tensor.name else f" at {short_name(op_name)}"
                )  # a tensor takes its producer's name
                reason = (  # beside the override, which names the op: "it" is what the override lays out
                    f"L1 overflow{at}: it needs {need / 1024:.1f} KiB per core, "
                    f"largest free range {allocator.largest_free() / 1024:.1f} KiB of "
                    f"{allocator.capacity / 1024:.0f} KiB left beside circular buffers"
                )
                if not self._reject_override(outcomes, producer.get(tensor.name), reason):
                    diagnostics.append(
                        f"{tensor.name} kept in {self.target.dram.name}{at}: "
                        f"needs {need / 1024:.1f} KiB "
                        f"of L1 per core, largest free range {allocator.largest_free() / 1024:.1f} KiB"
                    )
                # it stays in DRAM: no layout overflows L1
                tensor.layout = replace(
                    tensor.layout, memory=self.target.dram.name, memory_layout="interleaved", address=None
                )
                return
            changed = True
            tensor.layout = replace(tensor.layout, address=address)
            live[tensor.name] = tensor
            rows, cols = self._cores_of(tensor)
            usage[rows, cols] += need
            frees.setdefault(last[tensor.name], []).append(tensor.name)

        def release(index: int) -> None:
            nonlocal changed
            for name in frees.pop(index, []):
                changed = True
                tensor = graph.tensors[name]
                allocator.free(name)
                del live[name]
                rows, cols = self._cores_of(tensor)
                usage[rows, cols] -= self._bytes(tensor)

        for name in graph.inputs:
            tensor = graph.tensors[name]
            if self._in_core_memory(tensor):
                place(tensor, "the inputs")
        per_core, fullest = None, 0.0  # the ops since the last change share one copy (read only)
        for i, op in enumerate(graph.ops):
            for t in op.outputs:
                if self._in_core_memory(graph.tensors[t]):
                    place(graph.tensors[t], op.name)
            if changed:
                changed = False
                np.maximum(peak, usage, out=peak)
                fullest = float(usage.max())
                per_core = usage.copy()
            op.meta["l1_live"] = fullest
            op.meta["l1_live_per_core"] = per_core if fullest else None  # None: nothing in L1
            if fullest > top[0]:
                r, c = (int(i) for i in np.unravel_index(int(usage.argmax()), usage.shape))
                on_core = [
                    (t.name, self._bytes(t), t.layout.address)
                    for t in live.values()
                    if self._cores_of(t)[0].stop > r and self._cores_of(t)[1].stop > c
                ]
                top = (fullest, (r, c), op.name, sorted(on_core, key=lambda t: t[2]))
            release(i)
        graph.meta["l1_peak"] = {
            "bytes": top[0],
            "core": top[1],
            "op": top[2],
            "capacity": memory.capacity_bytes,
            "tensors": top[3],
        }
        graph.meta["l1_per_core"] = {
            f"{r},{c}": float(peak[r, c]) for r in range(peak.shape[0]) for c in range(peak.shape[1])
        }
        graph.meta["diagnostics"] = diagnostics
        graph.warnings.extend(d for d in diagnostics if d not in graph.warnings)
        return graph

    @staticmethod
    def _reject_override(outcomes: list, op, reason: str) -> bool:
        """Turn the override that put an op's output in L1 into a rejection; False if none did."""
        if op is None:
            return False
        consumer, operand = op.meta.get("operand_of", (None, None))
        for index, outcome in enumerate(outcomes):
            if outcome.status == REJECTED:
                continue
            if operand is not None:
                ours = outcome.operand == operand and outcome.op == consumer
            else:
                ours = outcome.operand is None and (outcome.op == op.name or outcome.op in op.source)
            if ours:
                outcomes[index] = OverrideOutcome(outcome.op, outcome.spec, REJECTED, reason, outcome.operand)
                return True
        return False

    def _in_core_memory(self, tensor: Tensor) -> bool:
        memory = self.target.memories.get(tensor.layout.memory) if tensor.layout else None
        return memory is not None and memory.scope == "core"


@dataclass(frozen=True)
class CheckL1:
    """kernel: each op's circular buffers must fit next to the tensors live while it runs."""

    name = "check-l1"
    target: Target

    def run(self, graph: Graph) -> Graph:
        capacity = self.target.core_memory.capacity_bytes
        for op in graph.ops:
            kernel = op.meta.get("kernel")
            cbs = kernel.cb_bytes_per_core if kernel else 0.0
            live = op.meta.get("l1_live", 0.0)
            op.meta["l1_bytes"] = live + cbs
            if live + cbs > capacity:
                message = (
                    f"L1 overflow at {op.name}: circular buffers {cbs / 1024:.1f} KiB + live tensors "
                    f"{live / 1024:.1f} KiB per core > {capacity / 1024:.0f} KiB"
                )
                # the level's own list: the one copied from the layout level is that level's
                graph.meta["diagnostics"] = [*graph.meta.get("diagnostics", []), message]
                graph.warnings.append(message)
        return graph


def l1_live_at(
    graph: Graph, target: Target, op_name: str, core: tuple[int, int]
) -> list[tuple[str, float, int | None]]:
    """The tensors in a core's own memory on `core` while `op_name` runs, as the planner placed
    them: (name, bytes on that core, address), by address. For the memory view's "what makes the
    peak"; a planned graph (the layout or kernel level) is expected."""
    planner = PlanMemory(target)
    index = next(i for i, op in enumerate(graph.ops) if op.name == op_name)
    born = {t: i for i, op in enumerate(graph.ops) for t in op.outputs}
    last = last_uses(graph)
    found = []
    for tensor in graph.tensors.values():
        if not planner._in_core_memory(tensor) or tensor.layout.address is None:
            continue
        if not born.get(tensor.name, -1) <= index <= last.get(tensor.name, -1):
            continue
        rows, cols = planner._cores_of(tensor)
        if core[0] < rows.stop and core[1] < cols.stop:
            found.append((tensor.name, planner._bytes(tensor), tensor.layout.address))
    return sorted(found, key=lambda t: t[2])
