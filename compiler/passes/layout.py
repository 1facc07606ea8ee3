"""graph -> layout: give every tensor a layout and every op a grid, then apply user overrides.

Policies:
- `dram-interleaved` (default) keeps every tensor interleaved in DRAM and runs every op on the
  whole compute grid, as tt-mlir does without its optimizer;
- `greedy-l1` walks the ops in order and keeps each op's output in L1, sharded over the op's grid,
  while everything live at the same time still fits under the L1 usage cap (as tt-mlir's greedy
  optimizer does); what does not fit stays in DRAM.

An override sets one op's output layout (and so the grid it runs on); each override comes back
applied, adjusted (e.g. it named an op fused into another) or rejected, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import opset
from ..dtypes import BYTES_PER_ELEMENT
from ..ir import MEMORY_LAYOUTS, TENSOR_LAYOUTS, Graph, Layout, Tensor
from ..l1_allocator import FirstFit, last_uses
from ..override import ADJUSTED, APPLIED, REJECTED, OpOverride, OverrideOutcome
from ..target import Target
from ..tiles import shard_bytes, tile_grid

DEFAULT_POLICY = "dram-interleaved"
GREEDY_L1 = "greedy-l1"
POLICIES = (DEFAULT_POLICY, GREEDY_L1)
# Share of each core's L1 that tensors may take; the rest is left for circular buffers.
# tt-mlir calls this tensor-l1-usage-cap.
DEFAULT_L1_USAGE_CAP = 0.8
# Block floating-point formats are specific to an engine: another vendor's cannot be converted to.
BLOCK_FORMATS = ("bfp8", "bfp4", "mxint8", "mxint4", "mxint16")


def l1_layout_for(tensor: Tensor, grid: tuple[int, int], memory: str, tile: tuple[int, int]) -> Layout:
    """How a tensor shards over `grid` in L1: in blocks when it is at least as many tiles tall and
    wide as the grid, by rows when tall, by columns when wide, else interleaved across the cores."""
    batch, rt, ct = tile_grid(tensor.shape, tile)
    rows, cols = grid
    height = batch * rt
    if height >= rows and ct >= cols and rows * cols > 1:
        memory_layout = "block_sharded"
    elif height >= rows * cols:
        memory_layout = "height_sharded"
    elif ct >= rows * cols:
        memory_layout = "width_sharded"
    else:
        memory_layout = "interleaved"
    return Layout(memory=memory, memory_layout=memory_layout, grid=grid, dtype=tensor.layout.dtype, layout="tile", tile=tile)


@dataclass(frozen=True)
class AssignLayouts:
    name = "assign-layouts"
    target: Target
    overrides: tuple[OpOverride, ...] = ()
    policy: str = DEFAULT_POLICY
    l1_usage_cap: float = DEFAULT_L1_USAGE_CAP

    def run(self, graph: Graph) -> Graph:
        dram = Layout(memory="dram", memory_layout="interleaved", grid=(1, 1), tile=self.target.tile)
        for tensor in graph.tensors.values():
            tensor.layout = replace(dram, dtype=tensor.dtype)
        for op in graph.ops:
            engine = opset.op_class(op.kind).engine
            grid = (1, 1) if engine == "none" else self.target.grid
            op.attrs["grid"] = grid
            for t in op.outputs:
                graph.tensors[t].layout = replace(graph.tensors[t].layout, grid=grid)
        if self.policy == GREEDY_L1:
            self._greedy_l1(graph)
        graph.meta["policy"] = self.policy
        graph.meta["overrides"] = [self._apply(graph, override) for override in self.overrides]
        return graph

    def _greedy_l1(self, graph: Graph) -> None:
        """Keep each output in L1 if the planner's allocator, run over the ops in order with the
        capped capacity, finds room for it from its producer to its last reader."""
        core_memory = self.target.core_memory
        allocator = FirstFit(int(self.l1_usage_cap * core_memory.capacity_bytes))
        last = last_uses(graph)
        frees: dict[int, list[str]] = {}
        for i, op in enumerate(graph.ops):
            if len(op.outputs) == 1 and opset.op_class(op.kind).engine != "none":
                tensor = graph.tensors[op.outputs[0]]
                if tensor.name not in graph.outputs and not tensor.is_constant:
                    layout = l1_layout_for(tensor, op.attrs["grid"], core_memory.name, self.target.tile)
                    need = shard_bytes(tensor, layout, self.target.tile)
                    if allocator.allocate(int(need), tensor.name) is not None:
                        tensor.layout = layout
                        frees.setdefault(last[tensor.name], []).append(tensor.name)
            for name in frees.pop(i, []):
                allocator.free(name)

    def _apply(self, graph: Graph, ov: OpOverride) -> OverrideOutcome:
        def rejected(reason: str) -> OverrideOutcome:
            return OverrideOutcome(ov.op, ov.spec, REJECTED, reason)

        note = ""
        if graph.has_op(ov.op):
            op = graph.op(ov.op)
        else:
            host = next((o for o in graph.ops if ov.op in o.source), None)
            if host is None:
                return rejected(f"no op named {ov.op!r} in the graph")
            op = host
            note = f"{ov.op} was fused into {host.name}; applied to {host.name}"
        if not op.outputs:
            return rejected(f"op {ov.op!r} has no output to lay out")
        target = self.target
        if ov.memory is not None and ov.memory not in target.memories:
            return rejected(f"memory {ov.memory!r} not on {target.name} (has {', '.join(target.memories)})")
        if ov.grid is not None:
            rows, cols = ov.grid
            if rows < 1 or cols < 1 or rows > target.grid[0] or cols > target.grid[1]:
                return rejected(
                    f"grid {rows}x{cols} outside {target.name}'s {target.grid[0]}x{target.grid[1]} grid"
                )
        if ov.memory_layout is not None and ov.memory_layout not in MEMORY_LAYOUTS:
            return rejected(f"memory layout {ov.memory_layout!r} unknown")
        if ov.layout is not None and ov.layout not in TENSOR_LAYOUTS:
            return rejected(f"layout {ov.layout!r} unknown")
        if ov.dtype is not None and ov.dtype not in BYTES_PER_ELEMENT:
            return rejected(f"dtype {ov.dtype!r} unknown")

        if ov.fidelity is not None and opset.op_class(op.kind).engine != "matrix":
            return rejected(f"fidelity applies to matrix ops; {op.name} is {op.kind}")
        if ov.dtype in BLOCK_FORMATS and ov.dtype not in target.matrix.flops_per_cycle:
            computes = ", ".join(sorted(target.matrix.flops_per_cycle))
            return rejected(f"{target.name} cannot compute in {ov.dtype} (its matrix engine takes {computes})")
        tensor = graph.tensors[op.outputs[0]]
        current = tensor.layout
        memory = ov.memory or current.memory
        memory_layout = ov.memory_layout or current.memory_layout
        if ov.memory_layout is None and target.memories[memory].shared:
            memory_layout = "interleaved"  # moving a sharded tensor (greedy-l1) to DRAM unshards it
        if memory_layout != "interleaved" and target.memories[memory].scope != "core":
            return rejected(f"{memory_layout} needs a per-core memory, not {memory}")
        grid = ov.grid or op.attrs["grid"]
        layout = Layout(
            memory=memory,
            memory_layout=memory_layout,
            grid=grid,
            dtype=ov.dtype or current.dtype,
            layout=ov.layout or current.layout,
            tile=current.tile,
        )
        core_memory = target.memories[memory]
        if core_memory.scope == "core":
            need = shard_bytes(tensor, layout, target.tile)
            if need > core_memory.capacity_bytes:
                return rejected(
                    f"{tensor.name} needs {need / 1024:.0f} KiB per core in {memory}, "
                    f"{core_memory.capacity_bytes / 1024:.0f} KiB available"
                )
        for t in op.outputs:
            graph.tensors[t].layout = layout
        op.attrs["grid"] = grid
        if ov.fidelity is not None:
            op.attrs["math_fidelity"] = ov.fidelity
        return OverrideOutcome(ov.op, ov.spec, ADJUSTED, note) if note else OverrideOutcome(ov.op, ov.spec, APPLIED)
