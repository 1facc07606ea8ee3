"""A data-movement RISC-V's own stores to L1, in loops: filling a tile with a binary op's scalar,
a softmax's padding mask, the zeroed padding of a matmul's last K tile.

Each store to L1 takes the core's load/store unit `word_store_cycles` (Wormhole: at most one store
every five cycles, tt-isa-documentation WormholeB0/TensixTile/BabyRISCV). Where the store queue
merges consecutive stores into one write of their aligned 16-byte block (Blackhole: stores to the
same aligned 16 bytes, tt-isa-documentation BlackholeA0/TensixTile/BabyRISCV), the stores that fill
a whole block go one a cycle (`coalesced_store_cycles`: "the constituent stores have a throughput
of one store every cycle"), and those of a block they do not fill make one merged store, which
takes the five ("otherwise the throughput is one coalesced store every five cycles").
"""

from __future__ import annotations

from tilescope.compiler.ir.tiles import FACE
from tilescope.compiler.targets.chip import Target

BLOCK_BYTES = 16  # the store queue's aligned block (128 bits)


def run_cycles(target: Target, first_byte: int, nbytes: int, store_bytes: int) -> float:
    """Cycles to store `nbytes` from `first_byte` (an address's offset into its 16-byte block, or
    any multiple of 16 past it) in consecutive stores of `store_bytes` each."""
    pipe = target.pipeline
    stores = nbytes // store_bytes
    if not pipe.coalesced_store_cycles:
        return stores * pipe.word_store_cycles
    # the bytes before the run's first block boundary, its whole blocks, the bytes after the last
    head = min(nbytes, -first_byte % BLOCK_BYTES)
    whole, tail = divmod(nbytes - head, BLOCK_BYTES)
    cycles = whole * (BLOCK_BYTES // store_bytes) * pipe.coalesced_store_cycles
    for partial in (head, tail):  # one merged store each, one a cycle if more
        if partial:
            cycles += max(partial // store_bytes * pipe.coalesced_store_cycles, pipe.word_store_cycles)
    return cycles


def padded_columns_cycles(target: Target, tile: tuple[int, int], padded: int, element_bytes: int) -> float:
    """Cycles to store the last `padded` columns of every row of a tile laid out in faces (FACE
    elements wide, their rows contiguous), an element a store: a row's padding ends its last face
    row and, past a face's width, fills the face rows before it (tt-metal pad_tile.hpp)."""
    rows, cols = tile
    padded = min(padded, cols)
    width = min(FACE, cols)
    cycles = 0.0
    left = padded
    while left > 0:
        in_face = min(left, width)
        cycles += run_cycles(target, (width - in_face) * element_bytes, in_face * element_bytes, element_bytes)
        left -= in_face
    return rows * cycles
