"""layout -> kernel: split each op's work over its grid into reads, compute and writes per core.

Matmuls split their output tiles in 2D blocks over the grid (each core reads a row block of A and
a column block of B), or in 1D along the longer side when the output is too thin for the grid, as
tt-metal's 2D and 1D matmul programs do. Every other op splits its tiles evenly in row-major core
order. Where a tensor lives decides the path of each read and write.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from .. import opset
from ..ir import Graph, Layout, Op, Tensor
from ..kernel import Compute, CoreWork, Kernel, Transfer
from ..target import Target
from ..tiles import ceil_div, num_tiles, shard_bytes, tile_bytes, tile_grid

# Math fidelity the compiler picks per dtype when none is asked for, as tt-metal's defaults do:
# full precision for f32, HiFi2 for bf16, LoFi for block formats.
DEFAULT_FIDELITY = {"f32": "hifi4", "bf16": "hifi2", "f16": "hifi2", "bfp8": "lofi", "bfp4": "lofi"}


@dataclass(frozen=True)
class SplitKernels:
    name = "split-kernels"
    target: Target

    def run(self, graph: Graph) -> Graph:
        out = graph.with_level("kernel")
        for op in out.ops:
            cls = opset.op_class(op.kind)
            if cls.engine == "none":
                op.meta["kernel"] = None
            elif cls.kind_class == opset.MATMUL and len(op.inputs) >= 2:
                op.meta["kernel"] = self._matmul(out, op)
            else:
                op.meta["kernel"] = self._tiled(out, op, cls)
        return out

    def _path(self, layout: Layout, grid: tuple[int, int]) -> str:
        memory = self.target.memories[layout.memory]
        if memory.scope == "core":
            return memory.name if layout.sharded and layout.grid == grid else "noc"
        return memory.name

    def _moves(self, tensor: Tensor, nbytes: float, grid: tuple[int, int]) -> tuple[Transfer, ...]:
        """A core's reads (or writes) of `nbytes` of `tensor`. From a shard on the op's own grid, a
        core reaches at most its own shard locally; the rest comes from other cores over the NoC."""
        path = self._path(tensor.layout, grid)
        if path == "noc" or self.target.memories.get(path) is None or self.target.memories[path].scope != "core":
            return (Transfer(tensor.name, path, nbytes),)
        local = min(nbytes, shard_bytes(tensor, tensor.layout, self.target.tile))
        moves = [Transfer(tensor.name, path, local)]
        if nbytes > local:
            moves.append(Transfer(tensor.name, "noc", nbytes - local))
        return tuple(moves)

    def _cores(self, grid: tuple[int, int]) -> list[tuple[int, int]]:
        return [(r, c) for r in range(grid[0]) for c in range(grid[1])]

    def _matmul(self, graph: Graph, op: Op) -> Kernel:
        tile = self.target.tile
        grid = op.attrs["grid"]
        a, b = (graph.tensors[t] for t in op.inputs[:2])
        out = graph.tensors[op.outputs[0]]
        batch, mt, nt = tile_grid(out.shape, tile)
        kt = tile_grid(a.shape, tile)[2]
        rows = batch * mt
        fidelity = DEFAULT_FIDELITY.get(a.layout.dtype, "hifi4")
        cores = self._cores(grid)
        share: dict[tuple[int, int], tuple[int, int]] = {}
        if rows >= grid[0] and nt >= grid[1]:  # 2D: row blocks down the grid, column blocks across
            bm, bn = ceil_div(rows, grid[0]), ceil_div(nt, grid[1])
            for r, c in cores:
                share[(r, c)] = (_clamp(rows - r * bm, bm), _clamp(nt - c * bn, bn))
        elif nt >= rows:  # 1D along N: every core takes all rows and a slice of columns
            bn = ceil_div(nt, len(cores))
            for i, core in enumerate(cores):
                share[core] = (rows, _clamp(nt - i * bn, bn))
        else:  # 1D along M
            bm = ceil_div(rows, len(cores))
            for i, core in enumerate(cores):
                share[core] = (_clamp(rows - i * bm, bm), nt)

        groups: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for core, (m, n) in share.items():
            if m and n:
                groups[(m, n)].append(core)
        cycles_per_tile = self.target.cycles_per_tile[fidelity]
        work = []
        for (m, n), members in groups.items():
            reads = (
                self._moves(a, m * kt * tile_bytes(a.layout.dtype, tile), grid)
                + self._moves(b, kt * n * tile_bytes(b.layout.dtype, tile), grid)
                + self._extra_reads(graph, op, m * n, rows * nt, grid)
            )
            writes = self._moves(out, m * n * tile_bytes(out.layout.dtype, tile), grid)
            compute = Compute("matrix", m * n * kt, m * n * kt * cycles_per_tile, fidelity)
            work.append(CoreWork(tuple(members), reads, compute, writes, blocks=kt))
        return Kernel(grid, tuple(work))

    def _extra_reads(self, graph: Graph, op: Op, tiles: int, total: int, grid) -> tuple[Transfer, ...]:
        """Operands past A and B (a fused bias, say), read in proportion to the core's share."""
        tile = self.target.tile
        extra: tuple[Transfer, ...] = ()
        for name in op.inputs[2:]:
            t = graph.tensors[name]
            share = num_tiles(t.shape, tile) * tiles / total
            extra += self._moves(t, share * tile_bytes(t.layout.dtype, tile), grid)
        return extra

    def _tiled(self, graph: Graph, op: Op, cls: opset.OpClass) -> Kernel:
        tile = self.target.tile
        grid = op.attrs["grid"]
        cores = self._cores(grid)
        ins = [graph.tensors[t] for t in op.inputs]
        outs = [graph.tensors[t] for t in op.outputs]
        total = max([num_tiles(t.shape, tile) for t in ins + outs] + [1])
        per_core = ceil_div(total, len(cores))
        counts: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for i, core in enumerate(cores):
            n = _clamp(total - i * per_core, per_core)
            if n:
                counts[n].append(core)
        tile_elems = tile[0] * tile[1]
        work = []
        for n, members in counts.items():
            frac = n / total

            def moved(tensors) -> tuple[Transfer, ...]:
                return tuple(
                    move
                    for t in tensors
                    for move in self._moves(
                        t, max(1, round(num_tiles(t.shape, tile) * frac)) * tile_bytes(t.layout.dtype, tile), grid
                    )
                )

            if cls.engine == "vector":
                passes = max(1.0, cls.flops_per_element)
                cycles = n * math.ceil(tile_elems * passes / self.target.vector_elements_per_cycle)
                compute = Compute("vector", n, cycles)
            else:  # data movement and opaque ops only move bytes
                compute = Compute("data", n, 0)
            work.append(CoreWork(tuple(members), moved(ins), compute, moved(outs), blocks=n))
        return Kernel(grid, tuple(work))


def _clamp(remaining: int, block: int) -> int:
    return max(0, min(block, remaining))
