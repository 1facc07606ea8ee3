"""graph -> layout: give every tensor a layout and every op a grid, then apply user overrides.

The default policy keeps every tensor interleaved in DRAM and runs every op on the whole compute
grid, as tt-mlir does without its optimizer. An override sets one op's output layout (and so the
grid it runs on); each override comes back applied or rejected with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import opset
from ..dtypes import BYTES_PER_ELEMENT
from ..ir import MEMORY_LAYOUTS, TENSOR_LAYOUTS, Graph, Layout
from ..override import ADJUSTED, APPLIED, REJECTED, OpOverride, OverrideOutcome
from ..target import Target
from ..tiles import shard_bytes

DEFAULT_POLICY = "dram-interleaved"
POLICIES = (DEFAULT_POLICY,)


@dataclass(frozen=True)
class AssignLayouts:
    name = "assign-layouts"
    target: Target
    overrides: tuple[OpOverride, ...] = ()
    policy: str = DEFAULT_POLICY

    def run(self, graph: Graph) -> Graph:
        out = graph
        dram = Layout(memory="dram", memory_layout="interleaved", grid=(1, 1))
        for tensor in out.tensors.values():
            tensor.layout = replace(dram, dtype=tensor.dtype)
        for op in out.ops:
            engine = opset.op_class(op.kind).engine
            grid = (1, 1) if engine == "none" else self.target.grid
            op.attrs["grid"] = grid
            for t in op.outputs:
                out.tensors[t].layout = replace(out.tensors[t].layout, grid=grid)
        out.meta["overrides"] = [self._apply(out, override) for override in self.overrides]
        return out

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

        tensor = graph.tensors[op.outputs[0]]
        current = tensor.layout
        memory = ov.memory or current.memory
        memory_layout = ov.memory_layout or current.memory_layout
        if memory_layout != "interleaved" and target.memories[memory].scope != "core":
            return rejected(f"{memory_layout} needs a per-core memory, not {memory}")
        grid = ov.grid or op.attrs["grid"]
        layout = Layout(
            memory=memory,
            memory_layout=memory_layout,
            grid=grid,
            dtype=ov.dtype or current.dtype,
            layout=ov.layout or current.layout,
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
        return OverrideOutcome(ov.op, ov.spec, ADJUSTED, note) if note else OverrideOutcome(ov.op, ov.spec, APPLIED)
