"""A data-tiled matmul's inner tiles on a CPU target: costed as its vector unit runs them, and held
in its register file."""

from __future__ import annotations

from tilescope.compiler.targets.catalog import load_target


def test_an_inner_tile_narrower_than_a_vector_fills_that_share_of_its_lanes():
    """On AVX-512 a bf16 row is 16 lanes: a 16x8 inner tile does a quarter of a 16x16 one's
    multiply-adds in half its cycles (half the lanes idle), not a quarter."""
    cpu = load_target("x86_avx512")
    full, half = cpu.tile_cycles("bf16", "hifi4", tile=(16, 16)), cpu.tile_cycles("bf16", "hifi4", tile=(16, 8))
    assert full == 2 * 16 * 16 * 16 / 64 and half == full / 2


def test_inner_tiles_must_fit_the_register_file_with_a_row_of_b_and_an_element_of_a():
    cpu = load_target("x86_avx512")
    assert cpu.inner_tile_problem((16, 16, 2)) == ""  # IREE's own: 16 accumulators, B, A
    assert cpu.inner_tile_problem((32, 16, 2)) == "inner tiles 32x16 need 34 vector registers; x86_avx512 has 32"
    assert load_target("aarch64_sve").inner_tile_problem((8, 32, 1)) == (
        "inner tiles 8x32 need 37 vector registers; aarch64_sve has 32"
    )
    assert load_target("wormhole_n150").inner_tile_problem((64, 64, 32)) == ""  # its own accumulator memory
