"""How ttnn's binary element-wise program (binary_ng) moves its operands, beyond streaming tiles:
the second operand is read by the writer kernel, a scalar is written into a tile word by word
before anything is computed, and operands sharded unevenly are not worked where they lie but
handed tile by tile through the reader and writer, as interleaved ones are (tt-metal
ttnn/operations/eltwise/binary_ng: reader_interleaved_no_bcast, writer_interleaved_no_bcast,
writer_interleaved_scalar, fill_tile_utils.hpp; native L1 sharding only for even shards)."""

from __future__ import annotations

import math
from dataclasses import replace

from tilescope.compiler.analysis import l1_stores
from tilescope.compiler.analysis.shard_layouts import even_shards
from tilescope.compiler.ir.core_work import Transfer
from tilescope.compiler.ir.dtypes import bytes_per_element
from tilescope.compiler.ir.graph import Tensor
from tilescope.compiler.ir.tiles import tile_bytes
from tilescope.compiler.targets.chip import Target


def by_writer(operand: int, reads: tuple[Transfer, ...]) -> tuple[Transfer, ...]:
    """A core's reads of a binary op's operand at position `operand`: the second's made by the
    writer kernel (by position: `x * x` reads its one tensor once in each)."""
    return tuple(replace(m, by_writer=True) for m in reads) if operand == 1 else reads


def native_shards(ins: list[Tensor], outs: list[Tensor]) -> bool:
    """Whether binary_ng works on the operands' shards where they lie: not when any is sharded
    unevenly (a last partial shard), which it reaches tile by tile as if interleaved."""
    return not any(_uneven(t) for t in ins + outs)


def tile_by_tile(reads: tuple[Transfer, ...], ins: list[Tensor], outs: list[Tensor]) -> tuple[Transfer, ...]:
    """`reads` as binary_ng makes them of unevenly sharded operands: through the tensor's accessor
    a tile at a time, each waited on (the reader's and the writer's reads beside each other), as
    of interleaved ones; evenly sharded ones are read where they lie, nothing waited on."""
    if native_shards(ins, outs):
        return reads
    tile = {t.name: tile_bytes(t.layout.dtype, t.layout.tile) for t in ins}
    return tuple(
        replace(m, pages=m.pages or max(1, round(m.bytes / tile[m.tensor]))) if m.tensor in tile else m for m in reads
    )


def _uneven(t: Tensor) -> bool:
    layout = t.layout
    return layout.sharded and not even_shards(t, layout.memory_layout, layout.grid, layout.tile)


def scalar_fill(ins: list[Tensor], outs: list[Tensor], target: Target) -> float:
    """Cycles the writer spends filling a tile with the scalar of a binary op with one tensor
    operand, a 32-bit word per store, before the first result can be computed."""
    if len(ins) != 1 or not outs:
        return 0.0
    layout = outs[0].layout
    words = math.ceil(layout.tile[0] * layout.tile[1] * bytes_per_element(layout.dtype) / 4)
    return l1_stores.run_cycles(target, 0, words * 4, 4)
