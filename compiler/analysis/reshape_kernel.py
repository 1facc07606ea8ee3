"""A reshape of a tiled tensor that moves data, as ttnn's tiled reshape runs it (tt-metal
ttnn/operations/data_movement/reshape_view, reshape_tiled_program_factory and its reader and
writer): the output tiles split evenly over the grid; for each, in the tile's memory order (face by
face, row by row), the reader loads the input tile each piece comes from into a one-tile buffer (a
piece from the tile loaded last is not loaded again), and the writer copies the piece, a run of
elements contiguous in both tensors and at most a face row, into a scratch tile, then writes the
tile out. With one-tile buffers every load and write is waited on and the two take turns.

A reshape whose output rows fall on the input's tile rows moves whole tiles (a copy) and is left
to the stream kernel."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from tilescope.compiler.analysis.core_shares import grid_cores, spread
from tilescope.compiler.analysis.core_transfers import CoreTransfers
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.core_work import CircularBuffer, Compute, CoreWork, Kernel
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import FACE, ceil_div, tile_bytes
from tilescope.compiler.targets.chip import Target

SAMPLED_TILES = 128  # output tiles whose pieces are counted; the rest are like them on average


@dataclass(frozen=True)
class TileMap:
    """Per output tile, on average: the input tiles loaded for it and the pieces copied."""

    loads: float
    pieces: float

    @property
    def moves_whole_tiles(self) -> bool:
        return self.loads <= 1.0 and self.pieces <= 0.0


WHOLE_TILES = TileMap(1.0, 0.0)


def tile_map(src: tuple[int, ...], dst: tuple[int, ...], tile: tuple[int, int]) -> TileMap:
    """The loads and pieces of reshaping `src` to `dst` (logical shapes)."""
    _, h_in, w_in = _rank3(src)
    _, h_out, w_out = _rank3(dst)
    if not w_in or not h_in or not w_out:
        return TileMap(0.0, 0.0)
    if w_in == w_out and (h_in == h_out or (h_in % tile[0] == 0 and h_out % tile[0] == 0)):
        return WHOLE_TILES  # every output tile row is an input tile row

    def locate(c: int, r: int, col: int) -> tuple[tuple[int, ...], int, int, int]:
        row_in, col_in = divmod((c * h_out + r) * w_out + col, w_in)
        return (row_in // h_in, (row_in % h_in) // tile[0], col_in // tile[1]), row_in % h_in, col_in, w_in - col_in

    return _counted(_rank3(dst), tile, locate)


def permute_map(src: tuple[int, ...], permutation: tuple[int, ...], tile: tuple[int, int]) -> TileMap | None:
    """The loads and pieces of permuting `src`'s dims by `permutation`, when its last dim stays
    last (runs along it stay contiguous); None otherwise (a transpose within tiles)."""
    rank = len(src)
    if rank < 2 or sorted(permutation) != list(range(rank)) or permutation[-1] != rank - 1:
        return None
    if permutation[-2] == rank - 2:
        return WHOLE_TILES  # only the matrices are reordered
    dst = tuple(src[p] for p in permutation)
    lead = dst[:-2]

    def locate(c: int, r: int, col: int) -> tuple[tuple[int, ...], int, int, int]:
        index = [0] * rank
        for axis in reversed(range(len(lead))):  # the output's leading dims from c, last fastest
            c, index[permutation[axis]] = divmod(c, lead[axis])
        index[permutation[-2]], index[rank - 1] = r, col
        page = (*index[:-2], index[-2] // tile[0], col // tile[1])
        return page, index[-2], col, src[-1] - col

    return _counted(_rank3(dst), tile, locate)


def _counted(dst: tuple[int, int, int], tile: tuple[int, int], locate) -> TileMap:
    """Loads and pieces per output tile of `dst` (matrices, rows, columns), counted on up to
    SAMPLED_TILES output tiles spread evenly over it. `locate(c, r, col)` gives where output
    element (c, r, col) comes from: its input tile, its input row and column, and how many
    elements follow it in that input row."""
    c_out, h_out, w_out = dst
    rows, cols = tile
    across = ceil_div(w_out, cols)
    per_matrix = ceil_div(h_out, rows) * across
    total = c_out * per_matrix
    if not total:
        return TileMap(0.0, 0.0)
    # a fixed pseudo-random sample: an even stride could fall in step with the tiles' pattern
    sampled = range(total) if total <= SAMPLED_TILES else random.Random(total).sample(range(total), SAMPLED_TILES)
    loads = pieces = 0
    for index in sampled:
        c, rest = divmod(index, per_matrix)
        tr, tc = divmod(rest, across)
        last = None
        for r0, c0 in _faces(tr * rows, tc * cols, rows, cols):
            for r in range(r0, min(h_out, r0 + min(FACE, rows))):
                left, done = max(0, min(FACE, w_out - c0)), 0
                while left > 0:
                    page, row_in, col_in, in_row = locate(c, r, c0 + done)
                    take = min(left, FACE - col_in % FACE, in_row, FACE - done % FACE)
                    loads += page != last
                    last = page
                    pieces += 1
                    left, done = left - take, done + take
    n = len(sampled)
    return TileMap(loads / n, pieces / n)


def reshape_kernel(graph: Graph, op: Op, target: Target) -> Kernel | None:
    """The kernel of a reshape or permute that rearranges pieces of tiles; None when it moves
    whole tiles, or (a permute of the last dim) transposes within them."""
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if src.layout.layout != "tile" or dst.layout.layout != "tile" or src.layout.tile != dst.layout.tile:
        return None
    tile = dst.layout.tile
    if op.kind == "permute":
        mapped = permute_map(src.shape, attributes.ints(op.attrs.get("permutation")), tile)
    else:
        mapped = tile_map(src.shape, dst.shape, tile)
    if mapped is None or mapped.moves_whole_tiles:
        return None
    grid = op.attrs["grid"]
    transfers = CoreTransfers(target)
    (c_out, h_out, w_out) = _rank3(dst.shape)
    total = c_out * ceil_div(h_out, tile[0]) * ceil_div(w_out, tile[1])
    in_tile, out_tile = tile_bytes(src.layout.dtype, tile), tile_bytes(dst.layout.dtype, tile)
    cbs = (CircularBuffer("in0", src.name, 1, in_tile), CircularBuffer("out", dst.name, 1, out_tile))
    work = []
    for n, members in spread(total, grid_cores(grid)).items():
        loads = max(1, round(n * mapped.loads))
        reads = transfers.moves(src, loads * in_tile, grid, pages=loads)
        writes = transfers.moves(dst, n * out_tile, grid, pages=n)
        copies = Compute("data", n, 0.0, pieces=n * mapped.pieces)
        work.append(CoreWork(tuple(members), reads, copies, writes, n, cbs, False))
    return Kernel(grid, tuple(work), "data_movement")


def _faces(row: int, col: int, rows: int, cols: int) -> list[tuple[int, int]]:
    """The top-left element of each face of the tile at (row, col), in memory order."""
    return [(row + fr, col + fc) for fr in range(0, rows, FACE) for fc in range(0, cols, FACE)]


def _rank3(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(matrices, rows, columns): leading dims folded, as ttnn's tiled reshape sees a tensor, its
    size-1 dims kept (tiles.matrix_dims drops them: tilescope's own layout)."""
    if not shape:
        return 1, 1, 1
    if len(shape) == 1:
        return 1, 1, shape[0]
    return math.prod(shape[:-2]), shape[-2], shape[-1]
