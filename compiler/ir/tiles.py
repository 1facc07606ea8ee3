"""Tile arithmetic: how a tensor pads into tiles and how many bytes it occupies."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

from tilescope.compiler.ir.attributes import ints
from tilescope.compiler.ir.dtypes import bytes_per_element
from tilescope.compiler.ir.graph import Graph, Layout, Op, Tensor


FACE = 16  # a tile's faces are 16 x 16 elements (tt-metal tech_reports/tensor_layouts)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# Shapes and layouts are few and immutable, and a compile asks about each many times (a search's
# trial, hundreds of thousands of times): the arithmetic on them is cached by value.
CACHED = 1 << 16


@lru_cache(maxsize=CACHED)
def stored_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape a tensor is laid out in: its size-1 dims hold no data, so the compiler lays it
    out without them and [32, 1, 2048] pads into tiles like [32, 2048], not 32 tiles high per
    row. Reshapes that only add or drop size-1 dims are then views of the same bytes."""
    return tuple(d for d in shape if d != 1)


def same_bytes(src: Tensor, dst: Tensor) -> bool:
    """Whether `dst` is `src` under another shape, so a reshape between them is a view (ttnn
    returns one; no kernel runs): laid out the same way, and either only size-1 dims differ or,
    in tiles, the same rows of the same width with every batch starting on a tile boundary
    ([8, 384, 3072] and [3072, 3072] are the same 96 x 96 tiles)."""
    return same_bytes_as(src.shape, src.layout, dst.shape, dst.layout)


@lru_cache(maxsize=CACHED)
def same_bytes_as(
    src_shape: tuple[int, ...], src: Layout | None, dst_shape: tuple[int, ...], dst: Layout | None
) -> bool:
    """same_bytes of tensors of these shapes and layouts."""
    if src != dst:
        return False
    if stored_shape(src_shape) == stored_shape(dst_shape):
        return True
    if src is None or src.layout != "tile":
        return False
    (b1, r1, c1), (b2, r2, c2) = matrix_dims(src_shape), matrix_dims(dst_shape)
    height = src.tile[0]
    return c1 == c2 and b1 * r1 == b2 * r2 and r1 % height == 0 and r2 % height == 0


@lru_cache(maxsize=CACHED)
def at_address(layout: Layout, address: int | None) -> Layout:
    """`layout` at L1 address `address` (None: not placed): the layout itself if it is there."""
    return layout if layout.address == address else replace(layout, address=address)


def is_view(graph: Graph, op: Op) -> bool:
    """Whether `op` runs no kernel, its result the same bytes as its operand: a reshape that only
    adds or drops size-1 dims (or keeps whole tile rows) of a tensor laid out the same way (ttnn
    returns a view), or a pack into the tiles a matrix is already stored in, tile after tile along
    its rows (a Tensix tensor packed into 32x32 inner tiles), and the unpack of one. Only an RHS
    pack moves data there: it transposes the tiles."""
    if len(op.inputs) < 1 or len(op.outputs) != 1:
        return False
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if op.kind in ("pack", "unpack") and op.attrs.get("operand") != "rhs" and _keeps_order(op):
        return _stored_alike(src.layout, dst.layout)
    return op.kind == "reshape" and len(op.inputs) == 1 and same_bytes(src, dst)


def _keeps_order(op: Op) -> bool:
    """A pack (or unpack) that keeps its dims in order: no permutation of its outer dims, its
    inner tiles the last dims, in order (linalg.pack's attributes, where it was imported)."""
    perm = ints(op.attrs.get("outer_dims_perm"))
    inner = ints(op.attrs.get("inner_dims_pos"))
    rank = len(perm)
    return perm == tuple(range(rank)) and inner == tuple(range(rank - len(inner), rank))


def _stored_alike(a: Layout | None, b: Layout | None) -> bool:
    """Two tile layouts holding the same tiles in the same places: where an interleaved tensor
    lies does not depend on the grid of the op that made it."""
    if a is None or b is None or a.layout != "tile":
        return False
    if not a.sharded and not b.sharded:
        a, b = replace(a, grid=b.grid), b
    return replace(a, address=None) == replace(b, address=None)


@lru_cache(maxsize=CACHED)
def matrix_dims(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, rows, cols) of the stored shape: leading dims fold into batch; rank 0/1 are one row."""
    shape = stored_shape(shape)
    if not shape:
        return 1, 1, 1
    if len(shape) == 1:
        return 1, 1, shape[0]
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def tile_grid(shape: tuple[int, ...], tile: tuple[int, int]) -> tuple[int, int, int]:
    """(batch, row tiles, col tiles) after padding to whole tiles."""
    batch, rows, cols = matrix_dims(shape)
    return batch, ceil_div(rows, tile[0]), ceil_div(cols, tile[1])


def num_tiles(shape: tuple[int, ...], tile: tuple[int, int]) -> int:
    batch, rt, ct = tile_grid(shape, tile)
    return batch * rt * ct


def face_rows(tile: tuple[int, int]) -> int:
    """A tile's face rows: each of its rows split into faces FACE elements wide (a short tile's
    one face), what a tilize or untilize moves an access at a time."""
    return tile[0] * max(1, tile[1] // FACE)


def tile_bytes(dtype: str, tile: tuple[int, int]) -> float:
    return tile[0] * tile[1] * bytes_per_element(dtype)


def tensor_bytes(tensor: Tensor) -> float:
    """The bytes a tensor holds as laid out: whole tiles, in its layout's dtype (its own where it has none)."""
    if tensor.layout is None:
        return tensor.numel * bytes_per_element(tensor.dtype)
    batch, rt, ct = tile_grid(tensor.shape, tensor.layout.tile)
    return batch * rt * ct * tile_bytes(tensor.layout.dtype, tensor.layout.tile)


def shard_bytes(tensor: Tensor, layout: Layout) -> float:
    """Bytes one core holds: the largest shard for sharded layouts, an even share when interleaved."""
    return layout_bytes(tensor.shape, layout)


@lru_cache(maxsize=CACHED)
def layout_bytes(shape: tuple[int, ...], layout: Layout) -> float:
    """shard_bytes of a tensor of `shape`."""
    tile = layout.tile
    rows_g, cols_g = layout.grid
    batch, rt, ct = tile_grid(shape, tile)
    per_tile = tile_bytes(layout.dtype, tile)
    height = batch * rt
    if layout.memory_layout == "height_sharded":
        return ceil_div(height, rows_g * cols_g) * ct * per_tile
    if layout.memory_layout == "width_sharded":
        return height * ceil_div(ct, rows_g * cols_g) * per_tile
    if layout.memory_layout == "block_sharded":
        return ceil_div(height, rows_g) * ceil_div(ct, cols_g) * per_tile
    return ceil_div(height * ct, rows_g * cols_g) * per_tile
