"""A RISC-V's loops of stores to L1: five cycles a store on Wormhole; on Blackhole, the stores of
an aligned 16-byte block merged, one a cycle where they fill it, one store of five cycles where not."""

from __future__ import annotations

from tilescope.compiler.analysis.l1_stores import padded_columns_cycles, run_cycles
from tilescope.compiler.targets.catalog import load_target

WORMHOLE = load_target("wormhole_n150")
BLACKHOLE = load_target("blackhole_p150")


def test_wormhole_stores_one_every_five_cycles_however_they_line_up():
    assert run_cycles(WORMHOLE, 0, 2048, 2) == 1024 * 5
    assert run_cycles(WORMHOLE, 6, 26, 2) == 13 * 5
    assert padded_columns_cycles(WORMHOLE, (32, 32), 13, 2) == 32 * 13 * 5


def test_blackhole_merges_the_stores_of_each_aligned_block():
    assert run_cycles(BLACKHOLE, 0, 2048, 2) == 1024  # a tile zeroed from its start: whole blocks
    assert run_cycles(BLACKHOLE, 0, 2048, 4) == 512
    # bytes 6-16: 5 stores merged into one store of their block, its five cycles; 16-32 whole
    assert run_cycles(BLACKHOLE, 6, 26, 2) == 5 + 8
    assert run_cycles(BLACKHOLE, 2, 6, 2) == 5  # three stores inside one block: one merged store
    assert run_cycles(BLACKHOLE, 0, 26, 2) == 8 + 5  # a whole block, then five stores of the next
    assert run_cycles(BLACKHOLE, 16, 0, 2) == 0


def test_a_tile_s_padded_columns_end_each_row_s_face_rows():
    # 13 padded of 32: the right face row's last 13 elements, bytes 6 to 32
    assert padded_columns_cycles(BLACKHOLE, (32, 32), 13, 2) == 32 * (5 + 8)
    # 20 padded: the left face row's last 4 (bytes 24 to 32, one merged store) and the right's 16
    assert padded_columns_cycles(BLACKHOLE, (32, 32), 20, 2) == 32 * (5 + 16)
    assert padded_columns_cycles(BLACKHOLE, (32, 32), 0, 2) == 0
