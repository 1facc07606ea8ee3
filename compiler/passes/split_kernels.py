"""layout -> kernel: split each op's work over its grid into reads, compute and writes per core.

Matmuls and convolutions (as implicit GEMMs) split their output tiles in 2D blocks over the grid,
or in 1D along the longer side when the output is too thin for the grid, as tt-metal's 2D and 1D
multicast matmul programs do: in 2D the first core of each grid row fetches the row's block of A
and multicasts it along the row, and the first core of each column does the same for B down the
column; in 1D one core fetches the operand every core needs and multicasts it to all. Every other
op splits its tiles evenly over the grid in row-major core order. Where a tensor lives decides the
path of each read and write. Each core gets circular buffers sized for double buffering.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from tilescope.compiler.ir import opset
from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.ir.graph import Graph, Layout, Op, Tensor
from tilescope.compiler.ir.core_work import MCAST, NOC, CircularBuffer, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.analysis.matmul_blocking import fit_blocks, matmul_split, subblock, unpacked_per_multiply
from tilescope.compiler.analysis.matrix_dims import attention_dims, gemm_dims
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.ir.tiles import ceil_div, num_tiles, same_bytes, shard_bytes, tile_bytes

MAX_ELTWISE_BLOCK = 8  # tiles per step of a streaming (eltwise, data movement) kernel
# query rows and key rows per step of flash attention: tt-transformers' SDPA program configs use
# chunks of 256 for long prompts (models/tt_transformers/tt/model_config.py, q/k_chunk_size)
Q_CHUNK_ROWS = K_CHUNK_ROWS = 256
LOOKUPS = ("embedding", "gather")
CACHE_WRITES = ("update_cache", "fill_cache")


def fidelity_of(op: Op, dtype: str, target: Target) -> str:
    """The op's math fidelity: asked for by an override, else the target's default for the dtype."""
    return op.attrs.get("math_fidelity") or target.default_fidelity(dtype)


def kernel_key(graph: Graph, op: Op) -> tuple | None:
    """Everything an op's kernel depends on besides the target: its kind and attributes, its
    operands' and results' names, shapes and layouts, and the L1 live beside it. None when an
    attribute cannot be compared (the op is split afresh)."""
    tensors = tuple((t, graph.tensors[t].shape, graph.tensors[t].layout) for t in (*op.inputs, *op.outputs))
    key = (op.kind, tuple(sorted(op.attrs.items())), tensors, op.meta.get("l1_live", 0.0))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _by_position(key: tuple) -> tuple:
    """A kernel key with each tensor's name replaced by where the op first names it: ops of the
    same shapes, layouts and attributes (every layer of a transformer) split the same way, and a
    kernel made for one serves the others with their tensors' names."""
    kind, attrs, tensors, live = key
    names = [name for name, _, _ in tensors]
    return kind, attrs, tuple((names.index(n), shape, layout) for n, shape, layout in tensors), live


def _renamed(kernel: Kernel, names: dict[str, str]) -> Kernel:
    """`kernel` reading and writing the tensors `names` maps its own to."""

    def moves(transfers: tuple[Transfer, ...]) -> tuple[Transfer, ...]:
        return tuple(Transfer(names[t.tensor], t.path, t.bytes) for t in transfers)

    groups = tuple(
        CoreWork(
            g.cores,
            moves(g.reads),
            g.compute,
            moves(g.writes),
            g.blocks,
            tuple(CircularBuffer(cb.name, names[cb.tensor], cb.pages, cb.bytes) for cb in g.cbs),
            g.double_buffered,
        )
        for g in kernel.groups
    )
    return Kernel(kernel.grid, groups, kernel.program, kernel.block, kernel.subblock, kernel.like or kernel)


@dataclass(frozen=True)
class SplitKernels:
    """Splits every op; an op whose kernel key is in `known` (a previous compilation's kernels,
    graph.meta["kernels"] of its kernel level) reuses that kernel, so a re-run after an override
    splits only the ops the override changed. Within a compile, an op shaped like one split
    before takes that op's kernel renamed (a 1,000-layer model splits each layer's ops once)."""

    name = "split-kernels"
    target: Target
    known: Mapping[tuple, Kernel | None] = field(default_factory=dict, compare=False)

    def run(self, graph: Graph) -> Graph:
        out = graph
        split: dict[tuple, Kernel | None] = {}
        alike: dict[tuple, tuple[tuple[str, ...], Kernel | None]] = {}  # by position -> names, kernel
        for op in out.ops:
            key = kernel_key(out, op)
            if key is None:
                kernel = self._split(out, op)
            elif key in self.known:
                kernel = self.known[key]
            else:
                names = (*op.inputs, *op.outputs)
                pattern = _by_position(key)
                if pattern in alike:
                    first, kernel = alike[pattern]
                    if kernel is not None and first != names:
                        kernel = _renamed(kernel, dict(zip(first, names)))
                else:
                    kernel = self._split(out, op)
                    alike[pattern] = (names, kernel)
            op.meta["kernel"] = kernel
            if key is not None:
                split[key] = kernel
        out.meta["kernels"] = split
        return out

    def _split(self, graph: Graph, op: Op) -> Kernel | None:
        cls = opset.op_class(op.kind)
        if cls.engine == "none" or _is_view(graph, op):
            return None
        if cls.kind_class in opset.MATRIX_CLASSES and len(op.inputs) >= 2:
            return self._gemm(graph, op)
        if cls.kind_class == opset.ATTENTION and len(op.inputs) >= 3:
            return self._attention(graph, op, cls)
        return self._tiled(graph, op, cls)

    # --- paths ------------------------------------------------------------------------------

    def _path(self, layout: Layout, grid: tuple[int, int]) -> str:
        memory = self.target.memories[layout.memory]
        if memory.scope == "core":
            return memory.name if layout.sharded and layout.grid == grid else NOC
        return memory.name

    def _is_local(self, tensor: Tensor, grid: tuple[int, int]) -> bool:
        path = self._path(tensor.layout, grid)
        return path in self.target.memories and self.target.memories[path].scope == "core"

    def _moves(self, tensor: Tensor, nbytes: float, grid: tuple[int, int], rest: str = NOC) -> tuple[Transfer, ...]:
        """A core's reads (or writes) of `nbytes` of `tensor`. From a shard on the op's own grid, a
        core reaches at most its own shard locally; the rest comes from other cores via `rest`."""
        if not self._is_local(tensor, grid):
            return (Transfer(tensor.name, self._path(tensor.layout, grid), nbytes),)
        local = min(nbytes, shard_bytes(tensor, tensor.layout))
        moves = [Transfer(tensor.name, tensor.layout.memory, local)]
        if nbytes > local:
            moves.append(Transfer(tensor.name, rest, nbytes - local))
        return tuple(moves)

    def _operand(self, tensor: Tensor, nbytes: float, grid, sender: bool) -> tuple[Transfer, ...]:
        """A multicast operand: the sender fetches it from where it lives, receivers get it by
        multicast; from shards on the grid, every core has its piece and receives the rest. Without
        multicast on the target, every core fetches its own copy."""
        if not self.target.noc_multicast:
            return self._moves(tensor, nbytes, grid)
        if sender or self._is_local(tensor, grid):
            return self._moves(tensor, nbytes, grid, rest=MCAST)
        return (Transfer(tensor.name, MCAST, nbytes),)

    # --- matmul and convolution -------------------------------------------------------------

    def _gemm(self, graph: Graph, op: Op) -> Kernel:
        grid = op.attrs["grid"]
        a, b = (graph.tensors[t] for t in op.inputs[:2])
        out = graph.tensors[op.outputs[0]]
        tile = out.layout.tile  # short (tiny) tiles of A and the output cut M's padding
        rows, k, cols = gemm_dims(graph, op)
        mt, kt, nt = ceil_div(rows, tile[0]), ceil_div(k, tile[1]), ceil_div(cols, tile[1])
        # A convolution reads input pixels, not the im2col matrix: K / window channels per row.
        window = math.prod(b.shape[2:]) if op.kind == "conv2d" and len(b.shape) == 4 else 1
        a_kt = ceil_div(ceil_div(k, window), tile[1])
        fidelity = fidelity_of(op, a.layout.dtype, self.target)
        compute_dtype = self.target.compute_dtype(a.layout.dtype)
        cores = [(r, c) for r in range(grid[0]) for c in range(grid[1])]

        # (rows, cols) of output tiles per core, and whether it fetches A and B for others
        share: dict[tuple[int, int], tuple[int, int, bool, bool]] = {}
        program, axis, bm, bn = matmul_split(mt, nt, grid, self.target.noc_multicast)
        if axis == "2d":  # blocks down and across the grid
            for r, c in cores:
                share[(r, c)] = (_clamp(mt - r * bm, bm), _clamp(nt - c * bn, bn), c == 0, r == 0)
        elif axis == "n":  # the first core fetches A for all
            for i, core in enumerate(cores):
                share[core] = (mt, _clamp(nt - i * bn, bn), i == 0, True)
        else:  # the first core fetches B for all
            for i, core in enumerate(cores):
                share[core] = (_clamp(mt - i * bm, bm), nt, True, i == 0)

        cycles_per_tile = self.target.tile_cycles(compute_dtype, fidelity, rows=tile[0])
        fused_cycles = self._vector_cycles(
            1, sum(opset.op_class(k).flops_per_element for k in op.attrs.get("fused_kinds", ())), tile
        )
        a_tile, b_tile, out_tile = (tile_bytes(t.layout.dtype, t.layout.tile) for t in (a, b, out))
        extra_tiles = [tile_bytes(graph.tensors[t].layout.dtype, graph.tensors[t].layout.tile) for t in op.inputs[2:]]
        copies = 2 if op.attrs.get("double_buffer", True) else 1

        def step_bytes(pm: int, pn: int, kb: int) -> float:
            # one K step of A and B (twice when double-buffered), the pass's extra operands and output
            return copies * (pm * kb * a_tile + kb * pn * b_tile) + pn * sum(extra_tiles) + pm * pn * out_tile

        budget = self.target.core_memory.capacity_bytes - op.meta.get("l1_live", 0.0)

        def blocks_of(m: int, n: int) -> tuple[int, int, int]:
            """A core computes its share in passes of pm x pn output tiles, each looping over K in
            steps of kb tiles, with buffers sized to fit next to the tensors live in L1."""
            if "block" in op.attrs:  # asked for (and checked) by an override
                return min(op.attrs["block"][0], m), min(op.attrs["block"][1], n), op.attrs["block"][2]
            return fit_blocks(m, n, kt, step_bytes, budget)

        groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
        work: dict[tuple, tuple] = {}
        keyed: dict[tuple, tuple] = {}  # a core's share -> its group's key: most cores share one
        for core, share_of_core in share.items():
            m, n, sends_a, sends_b = share_of_core
            if not (m and n):
                continue
            if share_of_core not in keyed:
                pm, pn, kb = blocks_of(m, n)
                # each pass reads its rows of A and its columns of B again: A once per column
                # pass, B once per row pass
                reads = (
                    self._operand(a, m * a_kt * ceil_div(n, pn) * a_tile, grid, sends_a)
                    + self._operand(b, kt * n * ceil_div(m, pm) * b_tile, grid, sends_b)
                    + self._extra_reads(graph, op, n, nt, grid)
                )
                keyed[share_of_core] = key = (m, n, tuple((t.tensor, t.path, t.bytes) for t in reads))
                work[key] = (m, n, (pm, pn, kb), reads)
            groups[keyed[share_of_core]].append(core)
        result = []
        widest = max(groups, key=lambda key: len(groups[key]), default=None)
        blocking = (bm, bn, 1)
        for key, members in groups.items():
            m, n, (pm, pn, kb), reads = work[key]
            writes = self._moves(out, m * n * out_tile, grid)
            # 32-bit results halve the destination registers' tiles
            dest = self.target.pipeline.dest_tiles // (2 if BYTES_PER_ELEMENT[out.layout.dtype] >= 4 else 1)
            sub = op.attrs.get("subblock") or subblock(pm, pn, max(1, dest))
            compute = Compute(
                "matrix",
                m * n * kt,
                m * n * (kt * cycles_per_tile + fused_cycles),
                fidelity,
                compute_dtype,
                unpack_bytes=m * n * kt * unpacked_per_multiply(a_tile, b_tile, sub),
                pack_bytes=m * n * out_tile,
            )
            passes = ceil_div(m, pm) * ceil_div(n, pn)
            cbs = (
                CircularBuffer("in0", a.name, copies * pm * kb, copies * pm * kb * a_tile),
                CircularBuffer("in1", b.name, copies * kb * pn, copies * kb * pn * b_tile),
                *(
                    CircularBuffer(f"in{i + 2}", t, pn, pn * size)
                    for i, (t, size) in enumerate(zip(op.inputs[2:], extra_tiles))
                ),
                CircularBuffer("out", out.name, pm * pn, pm * pn * out_tile),
            )
            if key == widest:  # the op's blocking as most of its cores run it
                blocking = (bm, bn, kb)
            result.append(CoreWork(tuple(members), reads, compute, writes, passes * (kt // kb), cbs, copies == 2))
        return Kernel(grid, tuple(result), program, blocking, op.attrs.get("subblock"))

    def _extra_reads(self, graph: Graph, op: Op, n: int, nt: int, grid) -> tuple[Transfer, ...]:
        """Operands past A and B (a fused bias, say): the core's columns of them."""
        extra: tuple[Transfer, ...] = ()
        for name in op.inputs[2:]:
            t = graph.tensors[name]
            share = num_tiles(t.shape, t.layout.tile) * n / max(1, nt)
            extra += self._moves(t, max(1.0, share) * tile_bytes(t.layout.dtype, t.layout.tile), grid)
        return extra

    # --- attention ----------------------------------------------------------------------------

    def _attention(self, graph: Graph, op: Op, cls: opset.OpClass) -> Kernel:
        """Flash attention, as ttnn's SDPA kernels run it: each unit of work is one user's query
        head (for prefill, a chunk of its query rows; for decode, the query heads sharing one KV
        head, in one tile of rows), reading its keys and values once, chunk by chunk, keeping the
        scores in the core. Units spread evenly over the grid."""
        grid = op.attrs["grid"]
        cores = [(r, c) for r in range(grid[0]) for c in range(grid[1])]
        q, k, v = (graph.tensors[t] for t in op.inputs[:3])
        mask = graph.tensors[op.inputs[3]] if len(op.inputs) > 3 else None
        out = graph.tensors[op.outputs[0]]
        heads, kv_units, sq, sk, d = attention_dims(graph, op)
        rows, cols = self.target.tile
        decode = op.kind.endswith("_decode")
        kt, dt = ceil_div(sk, cols), ceil_div(d, cols)
        tiles = {
            name: tile_bytes(t.layout.dtype, t.layout.tile) for name, t in (("q", q), ("k", k), ("v", v), ("o", out))
        }
        score_tile = tile_bytes("f32", self.target.tile)
        budget = self.target.core_memory.capacity_bytes - op.meta.get("l1_live", 0.0)

        def buffers(q_rows: int, chunk: int) -> tuple[CircularBuffer, ...]:
            return (
                CircularBuffer("q", q.name, q_rows * dt, q_rows * dt * tiles["q"]),
                CircularBuffer("k", k.name, 2 * chunk * dt, 2 * chunk * dt * tiles["k"]),
                CircularBuffer("v", v.name, 2 * chunk * dt, 2 * chunk * dt * tiles["v"]),
                CircularBuffer("scores", out.name, q_rows * chunk, q_rows * chunk * score_tile),
                CircularBuffer("out", out.name, q_rows * dt, q_rows * dt * tiles["o"]),
            )

        # query and key rows per step: the chunks, halved (keys first) until the buffers fit in L1;
        # for decode the group's query heads are the rows of one tile
        q_chunk = rows if decode else min(sq, Q_CHUNK_ROWS)
        k_chunk = min(sk, K_CHUNK_ROWS)
        while sum(cb.bytes for cb in buffers(ceil_div(q_chunk, rows), ceil_div(k_chunk, rows))) > budget:
            if k_chunk > rows:
                k_chunk = max(rows, k_chunk // 2)
            elif q_chunk > rows:
                q_chunk = max(rows, q_chunk // 2)
            else:
                break  # the smallest steps: check-l1 reports what does not fit
        q_rows, chunk = ceil_div(q_chunk, rows), ceil_div(k_chunk, rows)
        units = kv_units if decode else heads * ceil_div(sq, q_chunk)
        cbs = buffers(q_rows, chunk)
        fidelity = fidelity_of(op, q.layout.dtype, self.target)
        compute_dtype = self.target.compute_dtype(q.layout.dtype)
        counts = _spread(units, cores)
        multiplies = 2 * q_rows * kt * dt  # Q K^T, then P V, per unit
        dest = max(1, self.target.pipeline.dest_tiles)
        work = []
        for n, members in counts.items():
            reads = (
                self._moves(q, n * q_rows * dt * tiles["q"], grid)
                + self._moves(k, n * kt * dt * tiles["k"], grid)
                + self._moves(v, n * kt * dt * tiles["v"], grid)
            )
            if mask is not None:
                reads += self._moves(mask, n * q_rows * kt * tile_bytes(mask.layout.dtype, mask.layout.tile), grid)
            writes = self._moves(out, n * q_rows * dt * tiles["o"], grid)
            cycles = n * multiplies * self.target.tile_cycles(compute_dtype, fidelity) + self._vector_cycles(
                n * q_rows * kt, cls.flops_per_element
            )
            compute = Compute(
                "matrix",
                n * multiplies,
                cycles,
                fidelity,
                compute_dtype,
                unpack_bytes=n * multiplies * unpacked_per_multiply(tiles["q"], tiles["k"], subblock(q_rows, kt, dest)),
                # the scores and probabilities go through the core's buffers, then the output
                pack_bytes=n * (2 * q_rows * kt * tile_bytes("bf16", self.target.tile) + q_rows * dt * tiles["o"]),
            )
            steps = n * ceil_div(sk, k_chunk)
            work.append(CoreWork(tuple(members), reads, compute, writes, steps, cbs, True))
        return Kernel(grid, tuple(work), "sdpa_decode" if op.kind.endswith("_decode") else "sdpa")

    # --- everything else: stream tiles --------------------------------------------------------

    def _vector_cycles(self, tiles: int, passes: float, tile: tuple[int, int] | None = None) -> float:
        """Vector-engine cycles for `passes` operations over each element of `tiles` tiles."""
        if passes <= 0:
            return 0.0
        rows, cols = tile or self.target.tile
        elems = rows * cols
        return tiles * math.ceil(elems * passes / self.target.vector_elements_per_cycle)

    def _tiled(self, graph: Graph, op: Op, cls: opset.OpClass) -> Kernel:
        grid = op.attrs["grid"]
        cores = [(r, c) for r in range(grid[0]) for c in range(grid[1])]
        ins = [graph.tensors[t] for t in op.inputs]
        outs = [graph.tensors[t] for t in op.outputs]
        if op.kind in CACHE_WRITES and len(ins) >= 2:
            # the cache is written in place where the new rows go: as many tiles as they have,
            # stored in the cache's layout; the rest of the cache is not touched
            cache, ins = ins[0], ins[1:]
            outs = [Tensor(cache.name, ins[0].shape, cache.dtype, cache.layout)]
        # A lookup (embedding, gather) reads only the rows it gathers from its table: as many
        # bytes as it writes, not the whole table.
        looked_up = max(ins, key=lambda t: t.numel).name if op.kind in LOOKUPS and ins and outs else None
        sized = [t for t in ins + outs if t.name != looked_up]
        total = max([num_tiles(t.shape, t.layout.tile) for t in sized] + [1])
        counts = _spread(total, cores)
        passes = cls.flops_per_element + sum(
            opset.op_class(k).flops_per_element for k in op.attrs.get("fused_kinds", ())
        )
        engine = "vector" if cls.engine == "vector" else "data"
        page_bytes = sum(tile_bytes(t.layout.dtype, t.layout.tile) for t in ins + outs)
        tile = outs[0].layout.tile if outs else self.target.tile
        budget = self.target.core_memory.capacity_bytes - op.meta.get("l1_live", 0.0)
        copies = 2 if op.attrs.get("double_buffer", True) else 1
        work = []
        for n, members in counts.items():
            frac = n / total
            # tiles per step: up to MAX_ELTWISE_BLOCK, fewer when two steps of every buffer do not fit
            block = min(n, MAX_ELTWISE_BLOCK)
            while block > 1 and copies * block * page_bytes > budget:
                block //= 2

            def tiles_of(t: Tensor, frac: float = frac) -> int:
                if t.name == looked_up:  # the rows gathered: as many tiles as the output's share
                    return max(1, round(num_tiles(outs[0].shape, outs[0].layout.tile) * frac))
                return max(1, round(num_tiles(t.shape, t.layout.tile) * frac))

            reads = tuple(
                m for t in ins for m in self._moves(t, tiles_of(t) * tile_bytes(t.layout.dtype, t.layout.tile), grid)
            )
            writes = tuple(
                m for t in outs for m in self._moves(t, tiles_of(t) * tile_bytes(t.layout.dtype, t.layout.tile), grid)
            )
            cycles = self._vector_cycles(n, max(1.0, passes), tile) if engine == "vector" else 0.0
            # the vector engine works on registers: its operands are unpacked in, its results packed out
            unpacked = sum(t.bytes for t in reads) if engine == "vector" else 0.0
            packed = sum(t.bytes for t in writes) if engine == "vector" else 0.0
            cbs = tuple(
                CircularBuffer(
                    f"in{i}" if i < len(ins) else "out",
                    t.name,
                    copies * block,
                    copies * block * tile_bytes(t.layout.dtype, t.layout.tile),
                )
                for i, t in enumerate(ins + outs)
            )
            work.append(
                CoreWork(
                    tuple(members),
                    reads,
                    Compute(engine, n, cycles, unpack_bytes=unpacked, pack_bytes=packed),
                    writes,
                    ceil_div(n, block),
                    cbs,
                    copies == 2,
                )
            )
        return Kernel(grid, tuple(work), "eltwise" if engine == "vector" else "data_movement")


def _is_view(graph: Graph, op: Op) -> bool:
    """A reshape that only adds or drops size-1 dims of a tensor laid out the same way: the same
    bytes under another shape, so no kernel runs (ttnn returns a view)."""
    if op.kind != "reshape" or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    return same_bytes(graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]])


def _spread(units: int, cores: list[tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
    """`units` of work in even shares over the cores in row-major order: share -> the cores with it."""
    per_core = ceil_div(units, len(cores))
    counts: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for i, core in enumerate(cores):
        n = _clamp(units - i * per_core, per_core)
        if n:
            counts[n].append(core)
    return counts


def _clamp(remaining: int, block: int) -> int:
    return max(0, min(block, remaining))
