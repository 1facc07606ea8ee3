"""A tiled transpose or permute that moves the rows among the leading dims, the last dim staying
last, as ttnn runs it (tt-metal ttnn/operations/data_movement: transpose HC's reader_unary_
transpose_hc_interleaved_tiled_padding_aware and its writer; permute's tiled generic reader and
writer): the input tiles split evenly over the grid; each is loaded whole, and the writer sends
every face line of it (a face's row, 16 elements) to the output tile it lands in, one NoC write
each, then waits for the tile's writes before taking the next. Where the output's rows do not fill
its last tile row, every padding line of those tiles is written the same way. Its cost is the
writes issued one by one, not the bytes."""

from __future__ import annotations

import math
from dataclasses import replace

from tilescope.compiler.analysis.core_shares import grid_cores, spread
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import FACE, ceil_div, tile_bytes
from tilescope.compiler.targets.chip import Target


def moves_rows(shape: tuple[int, ...], op: Op) -> bool:
    """Whether the transpose or permute `op` of a tensor of `shape` moves its rows among the
    leading dims while its last dim stays last."""
    rank = len(shape)
    if rank < 3:
        return False
    if op.kind == "permute":
        perm = attributes.ints(op.attrs.get("permutation"))
        return sorted(perm) == list(range(rank)) and perm[-1] == rank - 1 and perm[-2] != rank - 2
    dims = attributes.ints(op.attrs.get("dim0")) + attributes.ints(op.attrs.get("dim1"))
    if len(dims) != 2 or not all(-rank <= d < rank for d in dims):
        return False
    low, high = sorted(d % rank for d in dims)
    return high == rank - 2 and low < rank - 2


def face_line_kernel(graph: Graph, op: Op, target: Target) -> Kernel | None:
    """The kernel of a tiled transpose or permute moving the rows; None for any other."""
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if src.layout.layout != "tile" or dst.layout.layout != "tile" or not moves_rows(src.shape, op):
        return None
    tile = src.layout.tile
    faces = max(1, tile[1] // FACE)
    in_rows, cols = src.shape[-2], src.shape[-1]
    out_rows = dst.shape[-2]
    across = ceil_div(cols, tile[1])
    tiles = math.prod(src.shape[:-2]) * ceil_div(in_rows, tile[0]) * across
    # a face line per real row of the input, and per padding row of the output's last tile row
    lines = math.prod(src.shape[:-1]) * across * faces
    padding = ceil_div(out_rows, tile[0]) * tile[0] - out_rows
    lines += math.prod(dst.shape[:-2]) * across * padding * faces
    grid = op.attrs["grid"]
    transfers = CoreTransfers(target)
    in_tile, out_tile = tile_bytes(src.layout.dtype, tile), tile_bytes(dst.layout.dtype, tile)
    out_tiles = math.prod(dst.shape[:-2]) * ceil_div(out_rows, tile[0]) * across
    cbs = (CircularBuffer("in0", src.name, 2, 2 * in_tile),)
    work = []
    for n, members in spread(tiles, grid_cores(grid)).items():
        share = n / tiles
        reads = transfers.moves(src, n * in_tile, grid, pages=n)
        written = transfers.moves(dst, max(1.0, out_tiles * share) * out_tile, grid, pages=n)
        writes = tuple(replace(m, commands=round(lines * share)) for m in written)
        work.append(CoreWork(tuple(members), reads, Compute("data", n, 0.0), writes, n, cbs, True))
    return Kernel(grid, tuple(work), "data_movement")
