"""layout: a liveness-based L1 planner. Every tensor placed in a per-core memory gets an address,
the same on every core holding a piece of it (as tt-metal allocates sharded buffers in lockstep),
from the op that produces it until the last op that reads it. First fit from the bottom of L1.

Results, for the views and the simulator:
- each L1 tensor's `layout.address`;
- `graph.meta[L1_PEAK]`: the fullest core, its peak bytes, the op at which it peaks and the
  tensors that make the peak there (an `L1Peak`, compiler/analysis/l1_usage.py);
- `graph.meta[L1_PER_CORE]`: peak bytes per core as "r,c" -> bytes;
- `op.meta[L1_LIVE]`: tensor bytes on the fullest core while the op runs (the kernel level adds
  the op's circular buffers to it), and `op.meta[L1_LIVE_PER_CORE]` the same for every core;
- a reshape that keeps its input's bytes (a view: only size-1 dims, or whole tile rows regrouped)
  is given its input's address, not a buffer of its own, and keeps the input live as long as it
  is read, so no kernel copies it (ttnn returns a view);
- a tensor that does not fit (no free range large enough, keeping room for the smallest circular
  buffers of every op) goes back to DRAM: the override that placed it becomes a rejection naming
  the op, the tensor and the bytes needed vs free; otherwise it is a diagnostic. No layout
  overflows L1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tilescope.compiler.ir.meta import (
    DIAGNOSTICS,
    KERNEL,
    L1_BYTES,
    L1_LIVE,
    L1_LIVE_PER_CORE,
    L1_PEAK,
    L1_PER_CORE,
    OPERAND_OF,
    OVERRIDES,
)
from tilescope.compiler.analysis.l1_allocator import FirstFit, last_uses
from tilescope.compiler.analysis.l1_usage import L1Peak, L1Tensor, bytes_per_core, cores_of, in_core_memory, on_core
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.ir.rewrite import producers
from tilescope.compiler.ir.tiles import at_address, same_bytes_as, tile_bytes
from tilescope.compiler.analysis.l1_views import views
from tilescope.compiler.pipeline.op_override import REJECTED, OverrideOutcome, short_name
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class PlanMemory:
    name = "plan-memory"
    target: Target

    def run(self, graph: Graph) -> Graph:
        planner = _Planner(self.target, graph)
        for name in graph.inputs:
            if in_core_memory(graph.tensors[name], self.target):
                planner.place(graph.tensors[name], "the inputs")
        for i, op in enumerate(graph.ops):
            for t in op.outputs:
                if not in_core_memory(graph.tensors[t], self.target):
                    continue
                if not planner.aliased(graph.tensors[t]):
                    planner.place(graph.tensors[t], op.name)
            planner.runs(op)
            planner.release(i)
        peak = planner.peak
        graph.meta[L1_PEAK] = planner.top
        graph.meta[L1_PER_CORE] = {
            f"{r},{c}": float(peak[r, c]) for r in range(peak.shape[0]) for c in range(peak.shape[1])
        }
        graph.meta[DIAGNOSTICS] = planner.diagnostics
        graph.warnings.extend(d for d in planner.diagnostics if d not in graph.warnings)
        return graph


class _Planner:
    """One sweep of a level's ops by liveness: the allocator, each core's usage now and at its
    most, the tensors live, and what the sweep found (the fullest moment, tensors sent back to
    DRAM)."""

    def __init__(self, target: Target, graph: Graph) -> None:
        self.target, self.graph = target, graph
        self.allocator = FirstFit(int(target.core_memory.capacity_bytes - _reserve(graph)))
        self.producer = producers(graph)
        self.outcomes = graph.meta.get(OVERRIDES, [])
        self.usage = np.zeros(target.grid, dtype=np.float64)
        self.peak = np.zeros(target.grid, dtype=np.float64)
        self.views = views(graph)
        self.last = last_uses(graph)
        self.freed_at: dict[str, int] = {}  # tensor -> the op index it is freed after
        self.frees: dict[int, list[str]] = {}  # op index -> the tensors it reads last
        self.diagnostics: list[str] = list(graph.meta.get(DIAGNOSTICS, []))
        self.top = L1Peak(capacity=target.core_memory.capacity_bytes)
        self.live: dict[str, Tensor] = {}  # placed and not yet freed
        self.changed = True  # usage changed since the last op's was read
        self.per_core: np.ndarray | None = None  # the ops since the last change share one copy (read only)
        self.fullest = 0.0

    def place(self, tensor: Tensor, op_name: str) -> None:
        need = bytes_per_core(tensor, self.target)
        address = self.allocator.allocate(int(need), tensor.name)
        if address is None:
            self._overflow(tensor, op_name, need)
            return
        self.changed = True
        tensor.layout = at_address(tensor.layout, address)
        self.live[tensor.name] = tensor
        rows, cols = cores_of(tensor, self.target)
        self.usage[rows, cols] += need
        self._free_after(tensor.name, self.last[tensor.name])

    def _free_after(self, name: str, index: int) -> None:
        """Free `name` after op `index` (instead of when it was due)."""
        if name in self.freed_at:
            self.frees[self.freed_at[name]].remove(name)
        self.freed_at[name] = index
        self.frees.setdefault(index, []).append(name)

    def aliased(self, tensor: Tensor) -> bool:
        """Whether `tensor` is a view of a tensor in L1 now: it takes that tensor's address."""
        source = self.live.get(self.views.get(tensor.name, ""))
        if source is None:
            return False
        layout = at_address(tensor.layout, source.layout.address)
        if not same_bytes_as(source.shape, source.layout, tensor.shape, layout):
            return False
        tensor.layout = layout
        # the source's bytes are live while the view is read
        self._free_after(source.name, max(self.freed_at[source.name], self.last[tensor.name]))
        return True

    def _overflow(self, tensor: Tensor, op_name: str, need: float) -> None:
        """No room for the tensor: it stays in DRAM (no layout overflows L1), and the override that
        placed it is rejected, else a diagnostic says so."""
        allocator, dram = self.allocator, self.target.dram.name
        at = "" if op_name == tensor.name else f" at {short_name(op_name)}"  # a tensor takes its producer's name
        reason = (  # beside the override, which names the op: "it" is what the override lays out
            f"L1 overflow{at}: it needs {need / 1024:.1f} KiB per core, "
            f"largest free range {allocator.largest_free() / 1024:.1f} KiB of "
            f"{allocator.capacity / 1024:.0f} KiB left beside circular buffers"
        )
        if not _reject_override(self.outcomes, self.producer.get(tensor.name), reason):
            self.diagnostics.append(
                f"{tensor.name} kept in {dram}{at}: needs {need / 1024:.1f} KiB "
                f"of L1 per core, largest free range {allocator.largest_free() / 1024:.1f} KiB"
            )
        tensor.layout = replace(tensor.layout, memory=dram, memory_layout="interleaved", address=None)

    def runs(self, op: Op) -> None:
        """`op` runs with what is placed now: its L1 live per core, and the peak if it is the fullest yet."""
        if self.changed:
            self.changed = False
            np.maximum(self.peak, self.usage, out=self.peak)
            self.fullest = float(self.usage.max())
            self.per_core = self.usage.copy()
        op.meta[L1_LIVE] = self.fullest
        op.meta[L1_LIVE_PER_CORE] = self.per_core if self.fullest else None  # None: nothing in L1
        if self.fullest > self.top.bytes:
            core = tuple(int(i) for i in np.unravel_index(int(self.usage.argmax()), self.usage.shape))
            there = [
                L1Tensor(t.name, bytes_per_core(t, self.target), t.layout.address)
                for t in self.live.values()
                if on_core(t, self.target, core)
            ]
            tensors = tuple(sorted(there, key=lambda t: t.address))
            self.top = replace(self.top, bytes=self.fullest, core=core, op=op.name, tensors=tensors)

    def release(self, index: int) -> None:
        """Free the tensors op `index` reads last."""
        for name in self.frees.pop(index, []):
            self.freed_at.pop(name, None)
            self.changed = True
            tensor = self.graph.tensors[name]
            self.allocator.free(name)
            del self.live[name]
            rows, cols = cores_of(tensor, self.target)
            self.usage[rows, cols] -= bytes_per_core(tensor, self.target)


def _reserve(graph: Graph) -> float:
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


def _reject_override(outcomes: list, op: Op | None, reason: str) -> bool:
    """Turn the override that put an op's output in L1 into a rejection; False if none did."""
    if op is None:
        return False
    of = op.meta.get(OPERAND_OF)
    for index, outcome in enumerate(outcomes):
        if outcome.status == REJECTED:
            continue
        if of is not None:
            ours = outcome.operand == of.index and outcome.op == of.op
        else:
            ours = outcome.operand is None and (outcome.op == op.name or outcome.op in op.source)
        if ours:
            outcomes[index] = OverrideOutcome(outcome.op, outcome.spec, REJECTED, reason, outcome.operand)
            return True
    return False


@dataclass(frozen=True)
class CheckL1:
    """kernel: each op's circular buffers must fit next to the tensors live while it runs."""

    name = "check-l1"
    target: Target

    def run(self, graph: Graph) -> Graph:
        capacity = self.target.core_memory.capacity_bytes
        for op in graph.ops:
            kernel = op.meta.get(KERNEL)
            cbs = kernel.cb_bytes_per_core if kernel else 0.0
            live = op.meta.get(L1_LIVE, 0.0)
            op.meta[L1_BYTES] = live + cbs
            if live + cbs > capacity:
                message = (
                    f"L1 overflow at {op.name}: circular buffers {cbs / 1024:.1f} KiB + live tensors "
                    f"{live / 1024:.1f} KiB per core > {capacity / 1024:.0f} KiB"
                )
                # the level's own list: the one copied from the layout level is that level's
                graph.meta[DIAGNOSTICS] = [*graph.meta.get(DIAGNOSTICS, []), message]
                graph.warnings.append(message)
        return graph
