"""A matmul's or a convolution's (an implicit GEMM's) work per core. The output tiles split in 2D
blocks over the grid, or in 1D along the longer side when the output is too thin for the grid, as
tt-metal's 2D and 1D multicast matmul programs do: in 2D the first core of each grid row fetches
the row's block of A and multicasts it along the row, and the first core of each column does the
same for B down the column; in 1D one core fetches the operand every core needs and multicasts it
to all. ttnn's minimal matmul instead gives every core an even share and passes each operand's
blocks core to core down a chain. Each core computes its share in passes whose buffers fit beside
the L1 live then."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace

from tilescope.compiler.analysis import l1_stores
from tilescope.compiler.analysis.core_cycles import fidelity_of, vector_cycles
from tilescope.compiler.analysis.core_shares import clamp, grid_cores
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.analysis.matmul_blocking import (
    fit_blocks,
    inner_block,
    matmul_split,
    subblock,
    unpacked_per_multiply,
)
from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.analysis.matmul_program import CONFIG_PROGRAMS, configured, covered, padded_blocks
from tilescope.compiler.ir import attributes, opset
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.ir.dtypes import BYTES_PER_ELEMENT
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import ceil_div, face_rows, num_tiles, tile_bytes
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class _Share:
    """What a group of cores with the same share computes: output tile rows and columns, the
    blocking of its passes (rows, columns, K step) and its reads."""

    m: int
    n: int
    blocks: tuple[int, int, int]
    reads: tuple[Transfer, ...]


def gemm_kernel(graph: Graph, op: Op, target: Target, budget: L1Budget | None = None) -> Kernel:
    """The op's kernel: cores grouped by their share of the output, each group's work once; its
    buffers sized in `budget` (by default, what the op's L1 live leaves), which keeps what it asked."""
    gemm = _Gemm(graph, op, target, budget or L1Budget.of(op, target))
    program, axis, bm, bn = _split(gemm, target)
    groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    work: dict[tuple, _Share] = {}
    keyed: dict[tuple, tuple] = {}  # a core's share -> its group's key: most cores share one
    for core, share_of_core in gemm.shares(axis, bm, bn).items():
        m, n, sends_a, sends_b = share_of_core
        if not (m and n):
            continue
        if share_of_core not in keyed:
            pm, pn, kb = gemm.blocks_of(m, n)
            reads = gemm.reads(m, n, pm, pn, sends_a, sends_b)
            keyed[share_of_core] = key = (m, n, tuple((t.tensor, t.path, t.bytes, t.hops, t.by_writer) for t in reads))
            work[key] = _Share(m, n, (pm, pn, kb), reads)
        groups[keyed[share_of_core]].append(core)
    widest = max(groups, key=lambda key: len(groups[key]), default=None)
    blocking = (bm, bn, 1)
    # the cores that hold slices of one block of A: each tilizes its own slice (a convolution's)
    sharers = {"2d": gemm.grid[1], "n": gemm.grid[0] * gemm.grid[1]}.get(axis, 1)
    result = []
    for key, members in groups.items():
        if key == widest:  # the op's blocking as most of its cores run it
            blocking = (bm, bn, work[key].blocks[2])
        result.append(gemm.core_work(tuple(members), work[key], sharers))
    return Kernel(gemm.grid, tuple(result), program, blocking, op.attrs.get("subblock"))


def _split(gemm: _Gemm, target: Target) -> tuple[str, str, int, int]:
    """(program, axis, output tile rows per core, columns per core): the program config the op
    was given, else as tt-metal's matmul picks one."""
    if gemm.padded:  # every core an even share of the padded output, in blocks
        m_cores, n_cores = gemm.chain_cores
        return "matmul_chain", "chain", gemm.mt // m_cores, gemm.nt // n_cores
    if gemm.config:  # per core M x N tiles, split along the axis the config names
        return CONFIG_PROGRAMS[gemm.config.split], gemm.config.split, gemm.config.block[0], gemm.config.block[1]
    return matmul_split(gemm.mt, gemm.nt, gemm.grid, target.noc_multicast)


class _Gemm:
    """One matmul's sizes in tiles, what each tile costs, and how a share of it is read, blocked
    and computed."""

    def __init__(self, graph: Graph, op: Op, target: Target, budget: L1Budget) -> None:
        self.graph, self.op, self.target = graph, op, target
        self.transfers = CoreTransfers(target)
        self.grid = op.attrs["grid"]
        self.a, self.b = (graph.tensors[t] for t in op.inputs[:2])
        self.out = graph.tensors[op.outputs[0]]
        tile = self.out.layout.tile  # short (tiny) tiles of A and the output cut M's padding
        rows, k, cols = gemm_dims(graph, op)
        self.mt, self.kt, self.nt = ceil_div(rows, tile[0]), ceil_div(k, tile[1]), ceil_div(cols, tile[1])
        # K not a whole number of tiles: the padding columns of A's last K tile, which a matmul's
        # reader zeroes itself once the tile lands (they may hold anything, a softmax's output
        # say), a 16-bit store per element (tt-metal reader_bmm_tile_layout_in0_sender_padding,
        # pad_last_ktile in pad_tile.hpp)
        self.k_pad = (-k) % tile[1] if op.kind == "matmul" else 0
        out_batches = math.prod(self.out.shape[:-2]) if op.kind == "matmul" and len(self.out.shape) > 2 else 1
        if out_batches > 1:  # each matrix of a batch padded to whole tiles on its own
            self.mt = out_batches * ceil_div(self.out.shape[-2], tile[0])
        # A convolution reads input pixels, not the im2col matrix: K / window channels per row.
        b_shape = self.b.shape
        window = math.prod(b_shape[2:]) if op.kind == "conv2d" and len(b_shape) == 4 else 1
        self.a_kt = ceil_div(ceil_div(k, window), tile[1])
        # a convolution's im2col row holds kh runs of kw pixels' channels, each contiguous
        # (a 1x1 window is a matmul over the pixels as they lie: nothing to gather)
        self.window_run = b_shape[1] * b_shape[3] if op.kind == "conv2d" and window > 1 else 0
        self.act_block = attributes.ints(op.attrs.get("act_block")) if op.kind == "conv2d" else ()
        # a batched matmul whose B has a matrix per batch (not one broadcast to all): each batch
        # is a matmul of its own, so a pass never spans two batches and reads its batch's B
        batches = math.prod(self.b.shape[:-2]) if op.kind == "matmul" and len(self.b.shape) > 2 else 1
        self.batch_mt = self.mt // out_batches if batches > 1 and batches == out_batches else self.mt
        # a program config's blocks, or a padded-block program's (matmul_program.py)
        dest = target.pipeline.dest_tiles // (2 if BYTES_PER_ELEMENT[self.out.layout.dtype] >= 4 else 1)
        tiles = (self.mt, self.kt, self.nt)
        self.config = configured(op, tiles, self.grid, max(1, dest))
        self.padded = padded_blocks(op, tiles) if op.kind == "matmul" else None
        # ttnn's minimal matmul pads M and N to a whole share for every core of the grid's two
        # sides (M down the rows, N across the columns; the other way round for a tall output)
        # and K to whole blocks, and computes the padding (minimal_matmul_program_factory.cpp)
        self.tall = self.mt > self.nt
        self.chain_cores = self.grid[::-1] if self.tall else self.grid
        if self.padded:
            m_cores, n_cores = self.chain_cores
            self.mt, self.nt = covered(self.mt, m_cores), covered(self.nt, n_cores)
            self.kt = covered(self.kt, self.padded[2])
            self.a_kt = self.kt
            self.batch_mt = self.mt
        self.fidelity = fidelity_of(op, self.a.layout.dtype, target)
        self.compute_dtype = target.compute_dtype(self.a.layout.dtype)
        self.cycles_per_tile = target.tile_cycles(self.compute_dtype, self.fidelity, rows=tile[0], tile=tile)
        fused = sum(opset.op_class(k).flops_per_element for k in op.attrs.get("fused_kinds", ()))
        self.fused_cycles = vector_cycles(target, 1, fused, tile)
        # what one step reads of each operand: an output tile's rows by a K step of A, a K step by
        # an output tile's columns of B, whatever tiles they are stored in (a CPU's row vectors, or
        # a packed operand's inner tiles, are smaller than a step)
        self.a_tile = tile_bytes(self.a.layout.dtype, (tile[0], tile[1]))
        self.b_tile = tile_bytes(self.b.layout.dtype, (tile[1], tile[1]))
        self.out_tile = tile_bytes(self.out.layout.dtype, self.out.layout.tile)
        self.extra_tiles = [
            tile_bytes(graph.tensors[t].layout.dtype, graph.tensors[t].layout.tile) for t in op.inputs[2:]
        ]
        self.copies = 2 if op.attrs.get("double_buffer", True) else 1
        self.budget = budget

    def shares(self, axis: str, bm: int, bn: int) -> dict[tuple[int, int], tuple]:
        """Per core, the rows and columns of output tiles it computes, and whether it fetches A
        and B for the others (in a chain, its place in A's chain and in B's: `_place`)."""
        mt, nt, cores = self.mt, self.nt, grid_cores(self.grid)
        if axis == "chain":  # A passed along its cores' row, B down their column (swapped when tall)
            a_axis, b_axis = (0, 1) if self.tall else (1, 0)  # which index of a core is its place
            return {
                core: (bm, bn, _place(core[a_axis], self.grid[a_axis]), _place(core[b_axis], self.grid[b_axis]))
                for core in cores
            }
        if axis == "2d":  # blocks down and across the grid
            return {(r, c): (clamp(mt - r * bm, bm), clamp(nt - c * bn, bn), c == 0, r == 0) for r, c in cores}
        if axis == "n":  # the first core fetches A for all
            return {core: (mt, clamp(nt - i * bn, bn), i == 0, True) for i, core in enumerate(cores)}
        return {core: (clamp(mt - i * bm, bm), nt, True, i == 0) for i, core in enumerate(cores)}  # B for all

    def step_bytes(self, pm: int, pn: int, kb: int) -> float:
        """One K step of A and B (twice when double-buffered), the pass's extra operands and output."""
        ab = self.copies * (pm * kb * self.a_tile + kb * pn * self.b_tile)
        return ab + pn * sum(self.extra_tiles) + pm * pn * self.out_tile

    def blocks_of(self, m: int, n: int) -> tuple[int, int, int]:
        """A core computes its share in passes of pm x pn output tiles, each looping over K in
        steps of kb tiles, with buffers sized to fit next to the tensors live in L1."""
        if self.padded:  # a pass is a block, its K looped a block at a time
            return min(self.padded[0], m), min(self.padded[1], n), self.padded[2]
        if self.config:  # the config's blocks, its K step as given
            return min(self.config.block[0], m), min(self.config.block[1], n), self.config.block[2]
        if "block" in self.op.attrs:  # asked for by an override, checked by the layout pass
            asked = self.op.attrs["block"]
            return min(asked[0], m, self.batch_mt), min(asked[1], n), asked[2]
        pm, pn, kb = fit_blocks(min(m, self.batch_mt), n, self.kt, self.step_bytes, self.budget)
        # a batched matmul with a B per batch and no program config runs ttnn's batched program,
        # whose reader fetches a K tile of A and of B and waits for them before the next
        # (tt-metal matmul reader_bmm_8bank_output_tiles_partitioned): a step a K tile
        return (pm, pn, 1) if self.batch_mt != self.mt else (pm, pn, kb)

    def reads(
        self, m: int, n: int, pm: int, pn: int, sends_a: bool | tuple[int, bool], sends_b: bool | tuple[int, bool]
    ) -> tuple[Transfer, ...]:
        """Each pass reads its rows of A and its columns of B again: A once per column pass, B
        once per row pass; and the core's columns of any operand past them. `sends_a` and
        `sends_b`: whether the core fetches the operand for the others, or in a chain its place."""
        grid = self.grid
        a_bytes, b_bytes = m * self.a_kt * ceil_div(n, pn) * self.a_tile, self.kt * n * ceil_div(m, pm) * self.b_tile
        if self.padded:  # the output's writer passes on the smaller operand (A unless tall)
            return (
                self.transfers.chained(self.a, a_bytes, grid, *sends_a, by_writer=not self.tall)
                + self.transfers.chained(self.b, b_bytes, grid, *sends_b, by_writer=self.tall)
                + self._extra_reads(n)
            )
        return (
            self.transfers.operand(self.a, a_bytes, grid, sends_a)
            + self.transfers.operand(self.b, b_bytes, grid, sends_b)
            + self._extra_reads(n)
        )

    def _extra_reads(self, n: int) -> tuple[Transfer, ...]:
        """Operands past A and B (a fused bias, say): the core's columns of them."""
        extra: tuple[Transfer, ...] = ()
        for name in self.op.inputs[2:]:
            t = self.graph.tensors[name]
            share = num_tiles(t.shape, t.layout.tile) * n / max(1, self.nt)
            extra += self.transfers.moves(t, max(1.0, share) * tile_bytes(t.layout.dtype, t.layout.tile), self.grid)
        return extra

    def core_work(self, members: tuple[tuple[int, int], ...], share: _Share, sharers: int = 1) -> CoreWork:
        """The work of each core of a group: its reads, its passes' compute, its writes and buffers;
        `sharers` cores hold slices of each block of A."""
        m, n, kt, (pm, pn, kb) = share.m, share.n, self.kt, share.blocks
        a, b, out, copies = self.a, self.b, self.out, self.copies
        # 32-bit results halve the destination registers' tiles
        dest = self.target.pipeline.dest_tiles // (2 if BYTES_PER_ELEMENT[out.layout.dtype] >= 4 else 1)
        config_sub = self.config.subblock if self.config else None
        sub = self.op.attrs.get("subblock") or config_sub or subblock(pm, pn, max(1, dest))
        # the writer waits for each sub-block's tiles to land before freeing their buffer (a write
        # barrier per sub-block, tt-metal's matmul writers); into the core's own L1 nothing is waited
        blocks_written = ceil_div(m, sub[0]) * ceil_div(n, sub[1])
        writes = self.transfers.moves(out, m * n * self.out_tile, self.grid, pages=blocks_written)
        writes = tuple(replace(t, pages=0) if not self._shared(t.path) else t for t in writes)
        compute = Compute(
            "matrix",
            m * n * kt,
            m * n * (kt * self.cycles_per_tile + self.fused_cycles),
            self.fidelity,
            self.compute_dtype,
            unpack_bytes=m * n * kt * unpacked_per_multiply(self.a_tile, self.b_tile, sub),
            pack_bytes=m * n * self.out_tile,
            tilize_cycles=self._tilized(m, n, pn) / sharers,
        )
        passes = ceil_div(m, pm) * ceil_div(n, pn)
        cbs = (
            CircularBuffer("in0", a.name, copies * pm * kb, copies * pm * kb * self.a_tile),
            CircularBuffer("in1", b.name, copies * kb * pn, copies * kb * pn * self.b_tile),
            *(
                CircularBuffer(f"in{i + 2}", t, pn, pn * size)
                for i, (t, size) in enumerate(zip(self.op.inputs[2:], self.extra_tiles))
            ),
            CircularBuffer("out", out.name, pm * pn, pm * pn * self.out_tile),
        )
        steps = passes * (kt // kb)
        # the reader issues a step's blocks of A and B from a shared memory (DRAM), then waits for
        # them once before pushing them: one round trip a step (a bias, once a pass, does not wait)
        # (in a chain each operand's first core fetches it on a RISC-V of its own, each waiting)
        operands = (a.name, b.name)
        waited = [id(t) for t in share.reads if self._shared(t.path) and t.tensor in operands]
        waited = waited[: 2 if self.padded else 1]
        reads = tuple(replace(t, pages=steps) if id(t) in waited else t for t in share.reads)
        reads = self._padded(reads, m * ceil_div(n, pn))
        if self.window_run:
            reads = self._gathered(reads, m, n, pm, pn, kb)
        return CoreWork(members, reads, compute, writes, steps, cbs, copies == 2)

    def _tilized(self, m: int, n: int, pn: int) -> float:
        """A convolution's im2col block is gathered as row-major sticks and tilized by the compute
        kernel before it multiplies, again for each block of output columns (tt-metal
        conv_bmm_tilize: tilize_in inside the loop over in1's blocks): a face row a cycle; where
        the cores of a row (block sharded) or all of them (width sharded) hold slices of the
        channels, each tilizes its slice and multicasts it (`in0_nblocks_w_tilize`). (A 1x1
        convolution's row-major input is tilized by the layout conversion before it, an op of
        its own.)"""
        if not self.window_run:
            return 0.0
        return ceil_div(n, pn) * m * self.kt * face_rows(self.out.layout.tile)

    def _gathered(self, reads: tuple[Transfer, ...], m: int, n: int, pm: int, pn: int, kb: int) -> tuple[Transfer, ...]:
        """`reads` with a convolution's input read as its reader builds the im2col blocks (the act
        block the conv ran with, else the pass's rows and K step): a NoC read per row per run of
        the window's contiguous channels the block's K slice touches, issued one by one, then
        waited on once a block (tt-metal's conv2d activation readers)."""
        rows, cols = self.out.layout.tile
        if len(self.act_block) == 2 and min(self.act_block) > 0:
            pm, kb = min(self.act_block[0], m), inner_block(self.kt, self.act_block[1])
        runs = ceil_div(kb * cols, self.window_run)
        blocks = ceil_div(m, pm) * ceil_div(n, pn) * ceil_div(self.kt, kb)
        commands = blocks * pm * rows * runs
        first = next((i for i, t in enumerate(reads) if t.tensor == self.a.name), None)
        if first is None:
            return (*reads, Transfer(self.a.name, self.a.layout.memory, 0.0, blocks, commands, stateful=True))
        read = reads[first]
        gathered = replace(read, pages=max(read.pages, blocks), commands=commands, stateful=True)
        return (*reads[:first], gathered, *reads[first + 1 :])

    def _padded(self, reads: tuple[Transfer, ...], last_tiles: int) -> tuple[Transfer, ...]:
        """`reads` with the stores zeroing the padding of each of A's `last_tiles` last K tiles
        the core fetches itself (a multicast's receivers get them zeroed)."""
        if not self.k_pad:
            return reads
        element = max(1, int(BYTES_PER_ELEMENT[self.a.layout.dtype]))  # a store an element
        cycles = last_tiles * l1_stores.padded_columns_cycles(self.target, self.a.layout.tile, self.k_pad, element)
        first = next((i for i, t in enumerate(reads) if t.tensor == self.a.name and self._shared(t.path)), None)
        if first is None:
            return reads
        return (*reads[:first], replace(reads[first], store_cycles=cycles), *reads[first + 1 :])

    def _shared(self, path: str) -> bool:
        memory = self.target.memories.get(path)
        return memory is not None and memory.shared


def _place(i: int, length: int) -> tuple[int, bool]:
    """A core's place in a chain of `length` cores as it is `i`-th: how many cores up the chain
    its first one is (the chain's middle as its deepest, whose time bounds the others'), and
    whether it passes the blocks on."""
    if i == 0:
        return 0, length > 1
    return (length - 1, False) if i == length - 1 else (length - 2, True)
