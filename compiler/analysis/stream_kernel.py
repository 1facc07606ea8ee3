"""The work per core of every op that streams tiles (element-wise, reductions, data movement):
its tiles in even shares over the grid in row-major core order (or, when its largest tensor is
sharded over the op's grid, each core its shard: a full one, the last cores' partial), each core
stepping through its share a block of tiles at a time through double-buffered circular buffers."""

from __future__ import annotations

import math
from dataclasses import replace

from tilescope.compiler.analysis.l1_budget import L1Budget
from tilescope.compiler.analysis import softmax_kernel
from tilescope.compiler.analysis.binary_moves import by_writer, native_shards, scalar_fill, tile_by_tile
from tilescope.compiler.analysis.core_cycles import vector_cycles
from tilescope.compiler.analysis.core_shares import grid_cores, shard_shares, spread
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel, Transfer
from tilescope.compiler.ir.dtypes import bytes_per_element
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.ir.tiles import ceil_div, face_rows, num_tiles, tile_bytes, tile_grid
from tilescope.compiler.targets.chip import Target

MAX_ELTWISE_BLOCK = 8  # tiles per step of a streaming (eltwise, data movement) kernel
LOOKUPS = ("embedding", "gather")
# input elements a sampling op reads per output element: bilinear interpolation weighs the 4 pixels
# around each sample point (torch.nn.functional.grid_sample, mode="bilinear"; ttnn.grid_sample)
SAMPLED_READS = {"grid_sample": 4}
CACHE_WRITES = ("update_cache", "fill_cache")
SLICES = ("slice",)
# ops that tilize or untilize on the way: a layout change; a halo of a tiled input untilizes it
# first (ttnn's halo compute kernel, pack_untilize)
RETILERS = ("to_layout", "halo")


def stream_kernel(graph: Graph, op: Op, cls: opset.OpClass, target: Target, budget: L1Budget | None = None) -> Kernel:
    """The op's kernel: a group of cores per share of its tiles, reading and writing their share
    of every operand and result where it lives."""
    grid = op.attrs["grid"]
    transfers = CoreTransfers(target)
    ins, outs, looked_up = _operands(graph, op)
    reads_per_output = SAMPLED_READS.get(op.kind, 1)
    sized = [t for t in ins + outs if t.name != looked_up]
    total = max([num_tiles(t.shape, t.layout.tile) for t in sized] + [1])
    # a softmax's cores take whole rows (ttnn splits its tile rows over the grid)
    counts = _shares(
        sized, total, grid, softmax_kernel.row_tiles(ins[0]) if op.kind in softmax_kernel.KINDS and ins else 1
    )
    passes = cls.flops_per_element + sum(opset.op_class(k).flops_per_element for k in op.attrs.get("fused_kinds", ()))
    engine = "vector" if cls.engine == "vector" else "data"
    page_bytes = sum(tile_bytes(t.layout.dtype, t.layout.tile) for t in ins + outs)
    tile = outs[0].layout.tile if outs else target.tile
    budget = budget or L1Budget.of(op, target)  # what it asks of it is kept (l1_budget.py)
    copies = 2 if op.attrs.get("double_buffer", True) else 1
    # a compute kernel's reader and writer wait on every tile they move (ttnn's eltwise, norm and
    # reduction readers: one tile, then a barrier); a data-movement kernel keeps blocks in flight
    waits = engine == "vector"
    # ttnn's element-wise compute kernels take the destination registers for one tile at a time
    # (acquire, unpack, math, pack, release): each tile is a step of the pipeline's handshakes
    per_tile = engine == "vector" and cls.kind_class in opset.ELTWISE_CLASSES
    work = []
    for n, members in counts.items():
        frac = n / total
        # tiles per step: up to MAX_ELTWISE_BLOCK, fewer when two steps of every buffer do not fit
        block = min(n, MAX_ELTWISE_BLOCK)
        while block > 1 and not budget.fits(copies * block * page_bytes):
            block //= 2

        def reads_of(t: Tensor, frac: float = frac) -> tuple[Transfer, ...]:
            if t.name == looked_up:  # the rows gathered: the output's share, each sampled so often
                nbytes, pages = _gathered(t, outs[0], frac, waits, reads_per_output)
                return _streamed(transfers.moves(t, nbytes, grid, pages=pages), op.kind in SLICES)
            nbytes, pages = _amount(t, frac, waits)
            return _streamed(transfers.moves(t, nbytes, grid, pages=pages), _row_major(t) and _streams(op, t, tile))

        def writes_of(t: Tensor, frac: float = frac) -> tuple[Transfer, ...]:
            # a cache write's pieces are the new rows' pages as its cores hold them
            pieces = _page_width(ins[0]) if op.kind in CACHE_WRITES and ins else None
            nbytes, pages = _amount(t, frac, waits, pieces)
            return _streamed(transfers.moves(t, nbytes, grid, pages=pages), _row_major(t) and _streams(op, t, tile))

        binary = cls.kind_class == opset.ELTWISE_BINARY
        reads = tuple(m for i, t in enumerate(ins) for m in (by_writer(i, reads_of(t)) if binary else reads_of(t)))
        reads = tile_by_tile(reads, ins, outs) if binary else reads
        writes = tuple(m for t in outs for m in writes_of(t))
        cycles = _vector_cycles(op, cls, target, n, passes, tile, ins) if engine == "vector" else 0.0
        # the vector engine works on registers: its operands are unpacked in, its results packed out
        unpacked = sum(t.bytes for t in reads) if engine == "vector" else 0.0
        packed = sum(t.bytes for t in writes) if engine == "vector" else 0.0
        cbs = _buffers(ins, outs, copies * block)
        compute = Compute(engine, n, cycles, unpack_bytes=unpacked, pack_bytes=packed)
        steps = n if per_tile else ceil_div(n, block)
        retiled = _retiled(op, ins, outs, frac)
        if retiled is not None:
            compute, steps = retiled
        work.append(
            CoreWork(
                tuple(members),
                reads,
                compute,
                writes,
                steps,
                cbs,
                copies == 2,
                _setup_cycles(op, ins, outs, target, binary),
                _handshakes(per_tile and not any(t.pages for t in reads + writes), binary, ins, outs),
            )
        )
    return Kernel(grid, tuple(work), "eltwise" if engine == "vector" else "data_movement")


def _operands(graph: Graph, op: Op) -> tuple[list[Tensor], list[Tensor], str | None]:
    """The tensors the op reads and writes, and the one it looks rows up in, if any."""
    ins = [graph.tensors[t] for t in op.inputs]
    outs = [graph.tensors[t] for t in op.outputs]
    if op.kind in CACHE_WRITES and len(ins) >= 2:
        # the cache is written in place where the new rows go: as many tiles as they have,
        # stored in the cache's layout; the rest of the cache is not touched
        cache, ins = ins[0], ins[1:]
        outs = [Tensor(cache.name, ins[0].shape, cache.dtype, cache.layout)]
    # A lookup (embedding, gather) reads only the rows it gathers from its table: as many
    # bytes as it writes, not the whole table; a slice, only the part it keeps; a sampling op,
    # its input (operand 0) so many times.
    looked_up = max(ins, key=lambda t: t.numel).name if op.kind in LOOKUPS and ins and outs else None
    if (SAMPLED_READS.get(op.kind, 1) > 1 or op.kind in SLICES) and ins and outs:
        looked_up = ins[0].name
    return ins, outs, looked_up


def _retiled(op: Op, ins: list[Tensor], outs: list[Tensor], frac: float) -> tuple[Compute, int] | None:
    """A tilize or untilize of a core's `frac` of the tiled operand: its compute and steps, or None
    for another op (a halo's output, its input with the neighbours' rows and padding, is larger).
    The unpacker (tilize) or the packer (untilize) moves a tile's row-major data a face row at a
    time, 16 elements apart from the next in L1, an access each (tt-metal's tilize and untilize
    compute kernels: unpack_tilize, pack_untilize); each row of tiles across the core is a step."""
    if op.kind not in RETILERS or not ins or not outs:
        return None
    src, dst = ins[0], outs[0]
    if _row_major(src) == _row_major(dst):
        return None
    tiled = src if _row_major(dst) else dst
    tiles = max(1, round(num_tiles(tiled.shape, tiled.layout.tile) * frac))
    across = max(1, min(tiles, ceil_div(_page_width(tiled), tiled.layout.tile[1])))
    return Compute("vector", tiles, tiles * face_rows(tiled.layout.tile)), ceil_div(tiles, across)


def _setup_cycles(op: Op, ins: list[Tensor], outs: list[Tensor], target: Target, binary: bool) -> float:
    """What the writer does before the first result: a binary op's scalar tile, a softmax's mask."""
    if binary:
        return scalar_fill(ins, outs, target)
    if op.kind in softmax_kernel.KINDS and ins:
        return softmax_kernel.mask_cycles(target, ins[0])
    return 0.0


def _handshakes(straight_on: bool, binary: bool, ins: list[Tensor], outs: list[Tensor]) -> bool:
    """Whether each step waits on the pipeline's handshakes: not for element-wise engines handing
    tiles straight on, none waiting on a transaction (a binary op only on even shards)."""
    return not (straight_on and (not binary or native_shards(ins, outs)))


def _buffers(ins: list[Tensor], outs: list[Tensor], pages: int) -> tuple[CircularBuffer, ...]:
    """A circular buffer of `pages` tiles per operand and result."""
    return tuple(
        CircularBuffer(
            f"in{i}" if i < len(ins) else "out", t.name, pages, pages * tile_bytes(t.layout.dtype, t.layout.tile)
        )
        for i, t in enumerate(ins + outs)
    )


def _vector_cycles(
    op: Op, cls: opset.OpClass, target: Target, tiles: int, passes: float, tile: tuple[int, int], ins: list[Tensor]
) -> float:
    """The compute engine's cycles: a softmax's as its program runs; a unary function (and those
    fused into the op) at its measured cost per tile on the vector unit, where the target knows it;
    else `passes` element-wise passes."""
    if op.kind in softmax_kernel.KINDS and ins:
        return softmax_kernel.compute_cycles(target, ins[0], tiles, passes)
    kinds = (op.kind, *op.attrs.get("fused_kinds", ()))
    costs = [target.sfpu_tile_cycles(k) for k in kinds if opset.op_class(k).kind_class == opset.ELTWISE_UNARY]
    if cls.kind_class != opset.ELTWISE_UNARY or None in costs or not costs:
        return vector_cycles(target, tiles, max(1.0, passes), tile)
    share = tile[0] * tile[1] / (target.tile[0] * target.tile[1])  # a tiny tile has fewer rows
    return tiles * share * sum(costs)


def _row_major(t: Tensor) -> bool:
    return t.layout is not None and t.layout.layout == "row_major"


def _gathered(t: Tensor, out: Tensor, frac: float, waits: bool, reads: int) -> tuple[float, int]:
    """A core's bytes of `t` for its `frac` of `out`, each output element read `reads` times, and
    the lookups it waits on: a row of `t` each, a sampling op's once per sample point (its
    neighbours read together), so an output row of several samples side by side waits for each."""
    nbytes, pages = _amount(out, frac, waits)
    if reads > 1:
        pages = round(pages * _width(out) / _width(t))
    return nbytes * reads, pages if _row_major(t) else 0


def _width(t: Tensor) -> int:
    return max(1, t.shape[-1]) if t.shape else 1


def _amount(t: Tensor, frac: float, tile_waits: bool, width: int | None = None) -> tuple[float, int]:
    """A core's bytes of its `frac` of `t`, and the transactions it waits on for them. A tiled
    tensor moves whole tiles, many in flight; a row-major one its true bytes, a transaction per
    row (stick), as ttnn's row-major readers and writers move them, each waited on before its
    buffer is used (tt-metal ttnn/operations/data_movement kernels)."""
    if not _row_major(t):
        tiles = max(1, round(num_tiles(t.shape, t.layout.tile) * frac))
        return tiles * tile_bytes(t.layout.dtype, t.layout.tile), tiles if tile_waits else 0
    full = t.shape[-1] if t.shape else 1
    width = width or _page_width(t)  # a row's pieces, each a page
    sticks = max(1, math.ceil(t.numel // max(1, full) * math.ceil(full / max(1, width)) * frac))
    return t.numel * bytes_per_element(t.layout.dtype) * frac, sticks


def _page_width(t: Tensor) -> int:
    """Elements of a row-major page: a row, or where the tensor is sharded across its width (width
    or block sharded), the part of a row one core holds."""
    width = t.shape[-1] if t.shape else 1
    splits = {"width_sharded": t.layout.grid[0] * t.layout.grid[1], "block_sharded": t.layout.grid[1]}
    return max(1, math.ceil(width / splits.get(t.layout.memory_layout, 1)))


def _streams(op: Op, t: Tensor, tile: tuple[int, int]) -> bool:
    """Whether `op` moves the sticks of row-major `t` back to back, waiting once a block: a slice,
    a cache write, a tilize or untilize of whole tiles (ttnn's tilize reader and untilize writer
    move a tile row's sticks, then wait; with padding to add or drop they wait on each stick)."""
    if op.kind in SLICES or op.kind in CACHE_WRITES:
        return True
    if op.kind != "to_layout" or len(t.shape) < 2:
        return False
    return t.shape[-2] % tile[0] == 0 and t.shape[-1] % tile[1] == 0


def _streamed(moves: tuple[Transfer, ...], streams: bool) -> tuple[Transfer, ...]:
    """`moves` with their waited transactions kept in flight instead, when the op streams them."""
    if not streams:
        return moves
    return tuple(replace(m, pages=0, streamed=m.pages) if m.pages else m for m in moves)


def _shares(sized: list[Tensor], total: int, grid: tuple[int, int], row: int = 1) -> dict[int, list[tuple[int, int]]]:
    """Tiles per core: the shards of the largest tensor when it is sharded over the op's grid (a
    core works on the shard it holds, so with uneven shards the busiest does a full one), else
    `total` in even shares of whole rows of `row` tiles."""
    largest = max(sized, key=lambda t: num_tiles(t.shape, t.layout.tile), default=None)
    if largest is not None and largest.layout.sharded and largest.layout.grid == grid:
        batch, rt, ct = tile_grid(largest.shape, largest.layout.tile)
        if batch * rt * ct == total:
            return shard_shares(batch * rt, ct, largest.layout.memory_layout, grid)
    if row > 1 and total % row == 0:
        return {n * row: members for n, members in spread(total // row, grid_cores(grid)).items()}
    return spread(total, grid_cores(grid))
