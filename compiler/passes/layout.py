"""graph -> layout: give every tensor a layout and every op a grid, then apply user overrides.

Policies:
- `dram-interleaved` (default) keeps every tensor interleaved in DRAM and runs every op on the
  whole compute grid, as tt-mlir does without its optimizer;
- `greedy-l1` walks the ops in order and keeps each op's output in L1, sharded over the op's grid,
  while everything live at the same time still fits under the L1 usage cap (as tt-mlir's greedy
  optimizer does); what does not fit stays in DRAM.

An override sets one op's output layout (and so the grid it runs on), or with `operand#N` the layout
the op reads input N in; each override comes back applied, adjusted (e.g. it named an op fused into
another) or rejected, with the reason. Sharded layouts may cut the tensor unevenly, as ttnn's do
(the last core's shard partial, every core's L1 holding a full one), but must give every core of
the grid a shard. An override's
sharding over the devices is the partition pass's to apply: its outcome, kept on the level, is
the override's, or the layout part's when it has one and the sharding applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tilescope.compiler.ir.meta import (
    FUSIONS,
    PACKED_TILES,
    OPERAND_LAYOUTS,
    OVERRIDES,
    PLACED,
    SHARDING_OUTCOMES,
    SHARDING_OVERRIDES,
    Placement,
)
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.ir.graph import MEMORY_LAYOUTS, TENSOR_LAYOUTS, Graph, Layout, Op, Tensor
from tilescope.compiler.analysis.heads import gone_result
from tilescope.compiler.analysis.l1_allocator import FirstFit, last_uses
from tilescope.compiler.analysis.matmul_blocking import matmul_split
from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.analysis.matmul_encoding import tiles_attr
from tilescope.compiler.analysis.operand_layout import required_layout
from tilescope.compiler.analysis.shard_layouts import l1_layout_for
from tilescope.compiler.analysis.shard_layouts import unshardable as unshardable_as
from tilescope.compiler.pipeline.op_override import (
    ADJUSTED,
    APPLIED,
    REJECTED,
    OpOverride,
    OverrideOutcome,
    short_name,
)
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.pipeline.options import DEFAULT_OPTIONS, GREEDY_L1, OPTIMIZER, CompileOptions
from tilescope.compiler.ir.tiles import ceil_div, shard_bytes, tile_bytes

# Output tiles a matmul sub-block may hold: tt-metal's destination registers take 8 tiles of 16-bit
# data (matmul program configs require out_subblock_h * out_subblock_w <= 8)
MAX_SUBBLOCK_TILES = 8
NO_OP = "no such op in the graph"
# Block floating-point formats are specific to an engine: another vendor's cannot be converted to.
BLOCK_FORMATS = ("bfp8", "bfp4", "mxint8", "mxint4", "mxint16")
# 8-bit block formats weights are stored in under the optimizer policy, per target that has one
WEIGHT_BLOCK_FORMATS = ("bfp8", "mxint8")
FLOAT_WEIGHTS = ("f32", "bf16", "f16")


def _placed(layout: Layout, other: Layout) -> str:
    """Where and how a layout stores a tensor, as a rejection comparing it with `other` says it:
    `l1 height_sharded 8x8`, then `row_major` or its tile shape where the two differ in that."""
    said = f"{layout.memory} {layout.memory_layout} {layout.grid[0]}x{layout.grid[1]}"
    if (layout.layout, layout.tile) == (other.layout, other.tile):
        return said
    form = "row_major" if layout.layout == "row_major" else f"tiles of {layout.tile[0]}x{layout.tile[1]}"
    return f"{said} {form}"


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


@dataclass(frozen=True)
class AssignLayouts:
    name = "assign-layouts"
    target: Target
    options: CompileOptions = DEFAULT_OPTIONS  # its overrides, policy and L1 usage cap
    # an earlier compile's placement of the same `partition` level, taken rather than made again
    placed: Placement | None = field(default=None, compare=False)

    def run(self, graph: Graph) -> Graph:
        made_by = (self.options.policy, self.options.l1_usage_cap)
        if self.placed is not None and self.placed.made_by == made_by:
            self.placed.restore(graph)
            placed = self.placed
        else:
            self._place(graph)
            placed = Placement.of(graph, made_by)
        graph.meta[PLACED] = placed
        overrides = self.options.overrides
        # operand overrides after the output ones: whether an op can read an operand depends on
        # the grid and layout its own output ended up with
        order = sorted(range(len(overrides)), key=lambda i: overrides[i].operand is not None)
        hosts: dict[str, Op] = {}  # a fused-away op's name -> the first op it was fused into
        for op in graph.ops:
            for name in op.source:
                hosts.setdefault(name, op)
        partitioned = self._partition_outcomes(graph)
        outcomes: dict[int, OverrideOutcome] = {}
        for i in order:
            ov, sharded = overrides[i], partitioned.get(i)
            if sharded is not None and (sharded.status == REJECTED or not ov.lays_out):
                outcomes[i] = replace(sharded, spec=ov.spec)  # nothing (more) to lay out
                continue
            refused = graph.meta.get(FUSIONS, {}).get(ov.op) if ov.fuses else None
            if refused is not None:
                outcomes[i] = OverrideOutcome(ov.op, ov.spec, REJECTED, refused)
                continue
            if ov.fuses and not ov.lays_out:  # the graph's fusions did what it asked
                found = graph.has_op(ov.op) or ov.op in hosts
                outcomes[i] = self._done(ov, "") if found else OverrideOutcome(ov.op, ov.spec, REJECTED, NO_OP)
                continue
            outcomes[i] = self._apply(graph, ov, hosts)
            if sharded is not None and sharded.status == ADJUSTED and outcomes[i].status == APPLIED:
                outcomes[i] = replace(sharded, spec=ov.spec)
        graph.meta[OVERRIDES] = [outcomes[i] for i in range(len(overrides))]
        return graph

    def _place(self, graph: Graph) -> None:
        """The policy's layout of every tensor and grid of every op, before any override."""
        dram = Layout(memory="dram", memory_layout="interleaved", grid=(1, 1), tile=self.target.tile)
        by_dtype: dict[str, Layout] = {}  # layouts are immutable: tensors of a dtype share one
        packed = graph.meta.get(PACKED_TILES, {})
        for tensor in graph.tensors.values():
            if tensor.dtype not in by_dtype:
                by_dtype[tensor.dtype] = replace(dram, dtype=tensor.dtype)
            tensor.layout = by_dtype[tensor.dtype]
            if tensor.name in packed:  # stored as its inner tiles, tile by tile
                tensor.layout = replace(tensor.layout, tile=packed[tensor.name])
        on_grid: dict[tuple[Layout, tuple[int, int]], Layout] = {}
        for op in graph.ops:
            engine = opset.op_class(op.kind).engine
            grid = (1, 1) if engine == "none" else self.target.grid
            op.attrs["grid"] = grid
            for t in op.outputs:
                layout = graph.tensors[t].layout
                if (layout, grid) not in on_grid:
                    on_grid[(layout, grid)] = replace(layout, grid=grid)
                graph.tensors[t].layout = on_grid[(layout, grid)]
        if self.options.policy in (GREEDY_L1, OPTIMIZER):
            self._greedy_l1(graph)
        if self.options.policy == OPTIMIZER:
            self._block_float_weights(graph)

    def _partition_outcomes(self, graph: Graph) -> dict[int, OverrideOutcome]:
        """The partition pass's outcome of each override with a sharding, by the override's index."""
        made = graph.meta.get(SHARDING_OVERRIDES, ())
        if made != self.options.sharding_requests:
            raise ValueError(f"{graph.name}: partitioned with other sharding overrides than the layout pass was given")
        indices = [i for i, ov in enumerate(self.options.overrides) if ov.sharding is not None]
        return dict(zip(indices, graph.meta.get(SHARDING_OUTCOMES, ())))

    def _greedy_l1(self, graph: Graph) -> None:
        """Keep each output in L1 if the planner's allocator, run over the ops in order with the
        capped capacity, finds room for it from its producer to its last reader."""
        core_memory = self.target.core_memory
        allocator = FirstFit(int(self.options.l1_usage_cap * core_memory.capacity_bytes))
        last = last_uses(graph)
        frees: dict[int, list[str]] = {}
        for i, op in enumerate(graph.ops):
            if len(op.outputs) == 1 and opset.op_class(op.kind).engine != "none":
                tensor = graph.tensors[op.outputs[0]]
                if tensor.name not in graph.outputs and not (tensor.is_constant or tensor.is_parameter):
                    layout = l1_layout_for(tensor, op.attrs["grid"], core_memory.name, tensor.layout.tile)
                    need = shard_bytes(tensor, layout)
                    if allocator.allocate(int(need), tensor.name) is not None:
                        tensor.layout = layout
                        frees.setdefault(last[tensor.name], []).append(tensor.name)
            for name in frees.pop(i, []):
                allocator.free(name)

    def _block_float_weights(self, graph: Graph) -> None:
        """Weights a matmul or convolution reads (its B operand, loaded once) stored in the
        target's 8-bit block floating point, as tt-mlir's experimental-bfp8-weights does: half
        the bytes of bf16 for a mantissa per element. Targets without one keep their weights."""
        block = next((d for d in WEIGHT_BLOCK_FORMATS if d in self.target.matrix.flops_per_cycle), None)
        if block is None:
            return
        for op in graph.ops:
            if opset.op_class(op.kind).kind_class not in opset.MATRIX_CLASSES or len(op.inputs) < 2:
                continue
            weight = graph.tensors[op.inputs[1]]
            if weight.is_parameter and weight.layout.dtype in FLOAT_WEIGHTS:
                weight.layout = replace(weight.layout, dtype=block)

    def _check_tiling(self, graph: Graph, op, ov: OpOverride) -> str:
        """Why a block or sub-block cannot tile this op's work, or '' when it can."""
        if ov.block is None and ov.subblock is None:
            return ""
        if opset.op_class(op.kind).kind_class not in opset.MATRIX_CLASSES or len(op.inputs) < 2:
            return f"block and subblock apply to matmuls and convolutions, not {op.kind}"
        tile = self.target.tile
        rows, k, cols = gemm_dims(graph, op)
        mt, kt, nt = ceil_div(rows, tile[0]), ceil_div(k, tile[1]), ceil_div(cols, tile[1])
        grid = ov.grid or op.attrs["grid"]
        _, _, bm, bn = matmul_split(mt, nt, grid, self.target.noc_multicast)
        pm, pn = bm, bn
        if ov.block is not None:
            pm, pn, kb = ov.block
            if kt % kb:
                return f"block K {kb} does not divide K = {kt} tiles; would: {_divisors(kt)}"
            if bm % pm or bn % pn:
                return (
                    f"block {pm}x{pn} does not divide the {bm}x{bn} output tiles per core; "
                    f"would: rows {_divisors(bm)}, columns {_divisors(bn)}"
                )
            a, b = (graph.tensors[t] for t in op.inputs[:2])
            out = graph.tensors[op.outputs[0]]
            copies = 1 if ov.double_buffer is False else 2
            need = copies * (pm * kb * tile_bytes(a.layout.dtype, tile) + kb * pn * tile_bytes(b.layout.dtype, tile))
            need += pm * pn * tile_bytes((ov.dtype or out.layout.dtype), tile)
            capacity = self.target.core_memory.capacity_bytes
            if need > capacity:
                return (
                    f"block {pm}x{pn}x{kb} needs {need / 1024:.0f} KiB of circular buffers per core, "
                    f"{capacity / 1024:.0f} KiB available"
                )
        if ov.subblock is not None:
            h, w = ov.subblock
            if h * w > MAX_SUBBLOCK_TILES:
                return f"subblock {h}x{w} holds {h * w} tiles; the destination registers hold {MAX_SUBBLOCK_TILES}"
            if pm % h or pn % w:
                return (
                    f"subblock {h}x{w} does not divide the {pm}x{pn} block; would: h {_divisors(pm)}, w {_divisors(pn)}"
                )
        return ""

    def _check_tile(self, ov: OpOverride) -> str:
        """Why the tile shape cannot be used, or ''. The target names its shapes: short tiles keep
        the engine's row pitch (fewer rows of full width), as Tenstorrent's tiny tiles do."""
        if ov.tile is None:
            return ""
        rows, cols = ov.tile
        if ov.layout == "row_major":
            return f"tile {rows}x{cols} needs the tile layout, not row_major"
        if ov.tile not in self.target.tile_shapes:
            shapes = ", ".join(f"{r}x{c}" for r, c in sorted(self.target.tile_shapes))
            return f"tile {rows}x{cols} not supported on {self.target.name}; tiles: {shapes}"
        return ""

    def _layout_for(self, ov: OpOverride, tensor: Tensor, grid: tuple[int, int]) -> Layout:
        """The layout `ov` asks for, starting from the tensor's current one."""
        current = tensor.layout
        memory = ov.memory or current.memory
        memory_layout = ov.memory_layout or current.memory_layout
        if ov.memory_layout is None and self.target.memories[memory].shared:
            memory_layout = "interleaved"  # moving a sharded tensor (greedy-l1) to DRAM unshards it
        return Layout(
            memory=memory,
            memory_layout=memory_layout,
            grid=grid,
            dtype=ov.dtype or current.dtype,
            layout=ov.layout or current.layout,
            tile=ov.tile or current.tile,
        )

    def _placement_problem(self, tensor: Tensor, layout: Layout, said: str) -> str:
        """Why `tensor` cannot be stored as `layout`, or ''. The override's op is named beside its
        outcome, so the tensor is `said` as its part ("the result", "operand 0")."""
        memory = self.target.memories[layout.memory]
        if layout.sharded and memory.scope != "core":
            return f"{layout.memory_layout} needs a per-core memory, not {layout.memory}"
        unshardable = unshardable_as(tensor, layout, said, self.target.grid, self.target.name)
        if unshardable:
            return unshardable
        if memory.scope == "core":
            need = shard_bytes(tensor, layout)
            if need > memory.capacity_bytes:
                return (
                    f"{said} needs {need / 1024:.0f} KiB per core in {layout.memory}, "
                    f"{memory.capacity_bytes / 1024:.0f} KiB available"
                )
        return ""

    def _apply(self, graph: Graph, ov: OpOverride, hosts: dict[str, Op]) -> OverrideOutcome:
        def rejected(reason: str) -> OverrideOutcome:
            return OverrideOutcome(ov.op, ov.spec, REJECTED, reason, ov.operand)

        note = ""
        if graph.has_op(ov.op):
            op = graph.op(ov.op)
        else:
            host = hosts.get(ov.op)  # indexed once: a batch may name 100,000 ops
            if host is None:
                return rejected(NO_OP)
            op = host
            note = f"fused into {short_name(host.name)}; applied there"
            gone = gone_result(host, ov.op) if ov.operand is None else ""
            if gone:
                return rejected(gone)
        target = self.target
        if ov.memory is not None and ov.memory not in target.memories:
            return rejected(f"memory {ov.memory!r} not on {target.name} (has {', '.join(target.memories)})")
        if ov.grid is not None:
            rows, cols = ov.grid
            if rows < 1 or cols < 1 or rows > target.grid[0] or cols > target.grid[1]:
                return rejected(f"grid {rows}x{cols} outside {target.name}'s {target.grid[0]}x{target.grid[1]} grid")
        if ov.memory_layout is not None and ov.memory_layout not in MEMORY_LAYOUTS:
            return rejected(f"memory layout {ov.memory_layout!r} unknown")
        if ov.layout is not None and ov.layout not in TENSOR_LAYOUTS:
            return rejected(f"layout {ov.layout!r} unknown")
        if ov.dtype is not None and ov.dtype not in BYTES_PER_ELEMENT:
            return rejected(f"dtype {ov.dtype!r} unknown")
        if ov.dtype in BLOCK_FORMATS and ov.dtype not in target.matrix.flops_per_cycle:
            computes = ", ".join(sorted(target.matrix.flops_per_cycle))
            return rejected(f"{target.name} cannot compute in {ov.dtype} (its matrix engine takes {computes})")
        tile = self._check_tile(ov)
        if tile:
            return rejected(tile)
        if ov.inner_tiles is not None and op.attrs.get("inner_tiles") != tiles_attr(ov.inner_tiles):
            return rejected(f"inner tiles apply to a data-tiled matmul, not {op.kind} (compile with data-tiling)")
        too_large = target.inner_tile_problem(ov.inner_tiles) if ov.inner_tiles is not None else ""
        if too_large:
            return rejected(too_large)
        if ov.operand is not None:
            reason = self._apply_operand(graph, op, ov)
            return rejected(reason) if reason else self._done(ov, note)

        if ov.fidelity is not None and opset.op_class(op.kind).engine != "matrix":
            return rejected(f"fidelity applies to matrix ops, not {op.kind}")
        if ov.fidelity is not None and not self.target.fidelities:
            return rejected(f"{self.target.name} has no math fidelity setting (its engine costs the same at each)")
        tiling = self._check_tiling(graph, op, ov)
        if tiling:
            return rejected(tiling)
        if ov.result is not None and ov.result >= len(op.outputs):
            return rejected(f"the op has {len(op.outputs)} result(s); result#{ov.result} is not one")
        outputs = [op.outputs[ov.result]] if ov.result is not None else list(op.outputs)
        if not outputs:
            return rejected("the op has no output to lay out")
        grid = ov.grid or op.attrs["grid"]
        layouts = {t: self._layout_for(ov, graph.tensors[t], grid) for t in outputs}
        for t, layout in layouts.items():
            said = f"result {op.outputs.index(t)}" if len(op.outputs) > 1 else "the result"
            problem = self._placement_problem(graph.tensors[t], layout, said)
            if problem:
                return rejected(problem)
        for t, layout in layouts.items():
            graph.tensors[t].layout = layout
        op.attrs["grid"] = grid
        if ov.fidelity is not None:
            op.attrs["math_fidelity"] = ov.fidelity
        for key in ("block", "subblock", "double_buffer"):
            if getattr(ov, key) is not None:
                op.attrs[key] = getattr(ov, key)
        return self._done(ov, note)

    @staticmethod
    def _done(ov: OpOverride, note: str) -> OverrideOutcome:
        return OverrideOutcome(ov.op, ov.spec, ADJUSTED if note else APPLIED, note, ov.operand)

    def _apply_operand(self, graph: Graph, op, ov: OpOverride) -> str:
        """Lay out input `ov.operand` as the op should read it; a to_layout inserted before the
        op converts it (insert-to-layout). Returns why not, or ''."""
        index = ov.operand
        if index >= len(op.inputs):
            return f"the op has {len(op.inputs)} operand(s); operand#{index} is not one"
        tensor = graph.tensors[op.inputs[index]]
        layout = self._layout_for(ov, tensor, ov.grid or op.attrs["grid"])
        if layout.grid != op.attrs["grid"] and layout.sharded and not ov.grid:
            layout = replace(layout, grid=op.attrs["grid"])
        problem = self._placement_problem(tensor, layout, f"operand {index}")
        if problem:
            return problem
        readable = required_layout(self.target, graph, op, replace(tensor, layout=layout))
        if readable != layout:
            return (
                f"{op.kind} cannot read operand {index} as {_placed(layout, readable)}; "
                f"it reads {_placed(readable, layout)}"
            )
        op.meta.setdefault(OPERAND_LAYOUTS, {})[index] = layout
        return ""
