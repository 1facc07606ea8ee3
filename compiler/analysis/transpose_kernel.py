"""A tiled transpose of the row dim with a leading one (ttnn's transpose HC, tiled and interleaved:
tt-metal ttnn/operations/data_movement/transpose, reader_unary_transpose_hc_interleaved_tiled_
padding_aware and its writer): the input tiles split evenly over the grid; the reader loads each
whole, and the writer sends every face line of it (a face's row, 16 elements) to the output tile
it lands in, one NoC write each, then waits for the tile's writes before taking the next. Its
cost is the writes issued one by one, not the bytes."""

from __future__ import annotations

from dataclasses import replace

from tilescope.compiler.analysis.core_shares import grid_cores, spread
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import ceil_div, tile_bytes
from tilescope.compiler.targets.chip import Target

FACE = 16  # a tile's faces are 16 x 16 elements (tt-metal tech_reports/tensor_layouts)


def swaps_rows_with_leading_dim(shape: tuple[int, ...], op: Op) -> bool:
    """Whether the transpose `op` of a tensor of `shape` swaps its row dim with a leading dim."""
    rank = len(shape)
    dims = attributes.ints(op.attrs.get("dim0")) + attributes.ints(op.attrs.get("dim1"))
    if rank < 3 or len(dims) != 2 or not all(-rank <= d < rank for d in dims):
        return False
    low, high = sorted(d % rank for d in dims)
    return high == rank - 2 and low < rank - 2


def transpose_kernel(graph: Graph, op: Op, target: Target) -> Kernel | None:
    """The kernel of a tiled transpose of the rows with a leading dim; None for any other."""
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if src.layout.layout != "tile" or dst.layout.layout != "tile" or not swaps_rows_with_leading_dim(src.shape, op):
        return None
    tile = src.layout.tile
    rows, cols = src.shape[-2], src.shape[-1]
    matrices = max(1, src.numel // max(1, rows * cols))
    across = ceil_div(cols, tile[1])
    tiles = matrices * ceil_div(rows, tile[0]) * across
    # a face line per real row per face across each tile
    lines = matrices * rows * across * max(1, tile[1] // FACE)
    grid = op.attrs["grid"]
    transfers = CoreTransfers(target)
    in_tile, out_tile = tile_bytes(src.layout.dtype, tile), tile_bytes(dst.layout.dtype, tile)
    cbs = (CircularBuffer("in0", src.name, 2, 2 * in_tile),)
    work = []
    for n, members in spread(tiles, grid_cores(grid)).items():
        reads = transfers.moves(src, n * in_tile, grid, pages=n)
        issued = round(lines * n / tiles)
        writes = tuple(replace(m, commands=issued) for m in transfers.moves(dst, n * out_tile, grid, pages=n))
        work.append(CoreWork(tuple(members), reads, Compute("data", n, 0.0), writes, n, cbs, True))
    return Kernel(grid, tuple(work), "data_movement")
