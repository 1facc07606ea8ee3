"""Per-kind mechanisms of ttnn's kernels, each checked on one op replayed from a report row: what
the kernel skips or repeats, so the prediction moves as the measured time does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.compiler.analysis.reshape_kernel import TileMap, permute_map, tile_map
from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import compiled_op

from tests.compiler.profiles.replay_reports import op, report_text, shard_config, t
from tests.compiler.sim.replayed import BLACKHOLE, WORMHOLE, changed, kernel_of, ns


def _oft_matmul(**attributes) -> dict:
    """OFT's 2112 x 1792 by 1792 x 256 matmul on 17 Blackhole cores."""
    a, w = t(1, 1, 2112, 1792), t(1, 1, 1792, 256)
    return op("Matmul", [a, w], [t(1, 1, 2112, 256)], cores=17, arch="blackhole", **attributes)


def _sdpa(q_len: int, kv_len: int, **attributes) -> dict:
    q, kv = t(1, 8, q_len, 128), t(1, 8, kv_len, 128)
    return op("SDPAOperation", [q, kv, kv], [t(1, 8, q_len, 128)], cores=64, arch="blackhole", **attributes)


def test_causal_attention_skips_the_key_chunks_past_the_diagonal():
    full = ns(_sdpa(4096, 4096), "scaled_dot_product_attention")
    causal = ns(_sdpa(4096, 4096, is_causal="true"), "scaled_dot_product_attention")
    # 16 query chunks of 256 read 1..16 key chunks: 8.5 of 16 on average
    assert causal / full == pytest.approx(8.5 / 16, rel=0.1)


def test_a_prompt_after_a_cache_reads_the_cache_whole_and_its_own_keys_causally():
    full = ns(_sdpa(1024, 4096), "scaled_dot_product_attention")
    causal = ns(_sdpa(1024, 4096, is_causal="true"), "scaled_dot_product_attention")
    # queries at 3072..4095: their chunks read 13..16 of 16 key chunks
    assert causal / full == pytest.approx(14.5 / 16, rel=0.1)


def test_causal_ring_attention_costs_the_ring_s_mean_device():
    full = ns(_sdpa(2048, 4096, ring_size="2"), "scaled_dot_product_attention")
    causal = ns(_sdpa(2048, 4096, ring_size="2", is_causal="true"), "scaled_dot_product_attention")
    # queries at 1024..3071 on average: chunks read 5..12 of 16, 8.5 on average
    assert causal / full == pytest.approx(8.5 / 16, rel=0.1)


def _group_norm(groups: int, channels: int = 64, rows: int = 30720, memory: str = "dram_interleaved", **kw) -> dict:
    x = t(1, 1, rows, channels, memory=memory)
    return op(
        "GroupNorm", [x], [t(1, 1, rows, channels, memory=memory)], arch="blackhole", num_groups=str(groups), **kw
    )


def test_a_group_norm_works_on_each_group_over_the_tiles_it_spans():
    # 64 channels: 16 groups put 8 groups in each tile column, 2 groups one; each group's tiles
    # are read three times, read back and written, one after the other
    many, few = (ns(_group_norm(g, cores=16), "groupnorm") for g in (16, 2))
    assert many / few == pytest.approx(8, rel=0.2)


def test_a_sharded_group_norm_waits_on_every_core_s_partial_sums_twice_a_group():
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    row = _group_norm(16, memory="l1_height_sharded", cores=20, output_mem_config=sharded)
    base = ns(row, "groupnorm")
    slower = ns(row, "groupnorm", replace(BLACKHOLE, noc_round_trip_cycles=2 * BLACKHOLE.noc_round_trip_cycles))
    exchanges = 2 * 16 * 20 * BLACKHOLE.noc_round_trip_cycles / BLACKHOLE.clock_hz * 1e9
    assert slower - base == pytest.approx(exchanges, rel=0.05)


def test_a_tiled_reshape_splitting_heads_loads_an_input_tile_for_every_piece():
    # [19, 1280] -> [19, 20, 64]: an output tile's 20 rows each come from another input tile,
    # face row by face row (two faces across), so 40 pieces and 40 loads
    assert tile_map((19, 1280), (19, 20, 64), (32, 32)) == TileMap(40.0, 40.0)


def test_a_reshape_keeping_tile_rows_moves_whole_tiles():
    assert tile_map((64, 256), (2, 32, 256), (32, 32)).moves_whole_tiles
    assert not tile_map((25281, 256), (159, 159, 256), (32, 32)).moves_whole_tiles


def test_a_permute_of_leading_dims_gathers_rows_and_one_of_the_last_dim_is_not_a_gather():
    # batch and rows swapped: each output tile holds one row of one input tile (two face rows)
    assert permute_map((1, 48, 160, 256), (2, 1, 0, 3), (32, 32)) == TileMap(1.0, 2.0)
    # and back: each of its 32 rows from another input tile, in each of the four faces
    assert permute_map((160, 48, 1, 256), (2, 1, 0, 3), (32, 32)) == TileMap(64.0, 64.0)
    assert permute_map((1, 3, 160, 160), (0, 2, 3, 1), (32, 32)) is None


def test_a_tiled_reshape_costs_its_loads_writes_and_pieces_one_after_another():
    x, y = t(1, 1, 19, 1280), t(1, 19, 20, 64)
    row = op("ReshapeDeviceOperation", [x], [y], cores=38, arch="blackhole")
    base = ns(row, "reshape")
    dearer = ns(row, "reshape", replace(BLACKHOLE, pipeline=replace(BLACKHOLE.pipeline, segment_copy_cycles=160)))
    # 19 x 2 output tiles on 38 cores: one each, 40 pieces at 100 cycles more
    assert dearer - base == pytest.approx(40 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.02)
    loads = 40 + 1  # and the tile written, each waited on
    assert base >= loads * BLACKHOLE.noc_round_trip_cycles / BLACKHOLE.clock_hz * 1e9


def test_a_batched_matmul_pads_each_batch_s_rows_and_reads_each_batch_s_b():
    a, b = t(1, 20, 19, 64), t(1, 20, 64, 32)
    row = op("MatmulDeviceOperation", [a, b], [t(1, 20, 19, 32)], cores=1, arch="blackhole")
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    kernel, _ = compiled_op(measured, "matmul", BLACKHOLE)
    (work,) = next(o for o in kernel.ops if o.kind == "matmul").meta[KERNEL].groups
    assert work.compute.tiles == 20 * 1 * 2  # 20 batches of one 19-row tile, K of two tiles
    b_bytes = sum(x.bytes for x in work.reads if x.tensor == kernel.ops[-1].inputs[1])
    assert b_bytes == 20 * 2 * 2048  # each batch's own B, once


def _relu(memory: str, **attributes) -> dict:
    """A unary op over 30,720 x 64 on 20 cores: 96 tiles a core, sharded in L1 or from DRAM."""
    if memory == "dram":
        x = t(1, 1, 30720, 64)
        return op("UnaryDeviceOperation", [x], [x], cores=20, arch="blackhole", **attributes)
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    x = t(1, 1, 30720, 64, memory="l1_height_sharded")
    return op("UnaryDeviceOperation", [x], [x], cores=20, arch="blackhole", output_mem_config=sharded, **attributes)


def test_a_unary_op_costs_its_function_on_the_vector_unit_for_every_tile():
    # sharded, nothing waited on: the engines hand tiles straight on, the function's cost sets the pace
    row = _relu("l1")
    base = ns(row, "relu")
    dearer = ns(row, "relu", changed(sfpu={"relu": BLACKHOLE.sfpu_cycles["relu"] + 100}))
    assert dearer - base == pytest.approx(96 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.05)
    # and no handshake is paid a step
    assert ns(row, "relu", changed(step_sync_cycles=1000)) == pytest.approx(base)


def test_an_element_wise_kernel_waiting_on_each_tile_pays_a_handshake_a_tile():
    # from DRAM the reader waits for each tile and the writer for each write: a step a tile
    row = _relu("dram")
    base = ns(row, "relu")
    slower = ns(row, "relu", changed(step_sync_cycles=BLACKHOLE.pipeline.step_sync_cycles + 100))
    assert slower - base == pytest.approx(96 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.05)


def test_a_unary_chain_costs_every_function_of_it():
    chain = "{UnaryWithParam(op_type=UnaryOpType::NEG);UnaryWithParam(op_type=UnaryOpType::EXP)}"
    alone, both = _relu("l1", op_chain="{UnaryOpType::NEG}"), _relu("l1", op_chain=chain)
    # sharded, nothing waited on: the exp's cycles for each of the 96 tiles beside the neg's
    added = ns(both, "neg") - ns(alone, "neg")
    assert added == pytest.approx(96 * BLACKHOLE.sfpu_cycles["exp"] / BLACKHOLE.clock_hz * 1e9, rel=0.02)


def test_a_binary_op_with_a_scalar_fills_a_tile_with_it_first():
    x = t(1, 1, 32, 32)
    scalar = op("BinaryNgDeviceOperation", [x], [x], cores=1, arch="blackhole", scalar="0.125")
    base = ns(scalar, "multiply")
    # a bf16 tile is 512 words, each one store, from the tile's start: on Blackhole all merge in
    # whole 16-byte blocks, each store a cycle
    dearer = ns(scalar, "multiply", changed(coalesced_store_cycles=BLACKHOLE.pipeline.coalesced_store_cycles + 1))
    assert dearer - base == pytest.approx(512 / BLACKHOLE.clock_hz * 1e9, rel=0.02)
    assert ns(scalar, "multiply", changed(word_store_cycles=BLACKHOLE.pipeline.word_store_cycles + 1)) == base


def test_a_binary_op_reads_its_second_operand_in_its_writer():
    a, b = t(1, 1, 32, 32 * 64), t(1, 1, 32, 32 * 64)
    built = compiled_op(
        read_ops_report(report_text(op("BinaryNgDeviceOperation", [a, b], [a], cores=64)), "r.csv").ops[0],
        "add",
        BLACKHOLE,
    )
    kernel = next(o.meta[KERNEL] for o in built[0].ops if o.kind == "add")
    reads = kernel.groups[0].reads
    assert [m.by_writer for m in reads] == [False, True]


def test_an_op_on_many_cores_waits_for_its_last_core_to_start():
    x = t(1, 1, 32, 32 * 64)
    many = op("UnaryDeviceOperation", [x], [x], cores=64, arch="blackhole")
    one = op("UnaryDeviceOperation", [x], [x], cores=1, arch="blackhole")
    skewed = changed(start_skew_ns=BLACKHOLE.pipeline.start_skew_ns + 1000)
    assert ns(many, "relu", skewed) - ns(many, "relu") == pytest.approx(1000)
    assert ns(one, "relu", skewed) == pytest.approx(ns(one, "relu"))  # one core: no skew


def test_a_transpose_of_rows_with_channels_writes_each_face_line_on_its_own():
    # 1 x 12 x 19 x 64 -> 1 x 19 x 12 x 64 (ttnn's transpose HC): 24 input tiles of 19 real rows,
    # each row two face lines wide, every line a NoC write issued by the writer, and the output's
    # 20 padding rows of each of its 19 x 2 tiles written the same way
    x, y = t(1, 12, 19, 64), t(1, 19, 12, 64)
    row = op("TransposeDeviceOperation", [x], [y], cores=24, arch="blackhole", dim="TransposeOpDim::HC")
    base = ns(row, "transpose")
    dearer = ns(row, "transpose", replace(BLACKHOLE, noc_issue_cycles=BLACKHOLE.noc_issue_cycles + 10))
    # one input tile a core: its 19 rows x 2 face lines, and its share of the output's padding
    # lines (20 rows of each of 19 x 2 tiles, 2 face lines a row, over 24 cores), 10 cycles more each
    lines = 19 * 2 + (32 - 12) * 19 * 2 * 2 / 24
    assert dearer - base == pytest.approx(round(lines) * 10 / BLACKHOLE.clock_hz * 1e9, rel=0.05)


@pytest.mark.parametrize("rows, streamed", [(30720, True), (30700, False)])
def test_a_tilize_of_whole_tiles_streams_its_sticks_one_with_padding_waits_on_each(rows, streamed):
    x = t(1, 1, rows, 64, layout="row_major")
    row = op("TilizeDeviceOperation", [x], [t(1, 1, rows, 64)], cores=20, arch="blackhole")
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    built = compiled_op(measured, "to_layout", BLACKHOLE)
    kernel = built[0].ops[-1].meta[KERNEL]  # the report's op, after its input is laid out
    (read,) = kernel.groups[0].reads
    assert (read.streamed > 0, read.pages > 0) == (streamed, not streamed)


def test_a_tiled_permute_moving_rows_writes_every_face_line_and_every_padding_line():
    # 1 x 12 x 40 x 256 -> 40 x 12 x 1 x 256: each output matrix holds one real row, its tile 31
    # padding rows; every line of 16 elements is a write of its own
    x, y = t(1, 12, 40, 256), t(40, 12, 1, 256)
    row = op("PermuteDeviceOperation", [x], [y], cores=1, arch="blackhole", dims="SmallVector([2; 1; 0; 3])")
    kernel = kernel_of(row, "permute")
    (write,) = kernel.groups[0].writes
    real = 12 * 40 * 16  # rows x face lines across 256 columns
    padding = 40 * 12 * 31 * 16
    assert write.commands == real + padding


def test_a_streamed_stick_costs_the_risc_v_s_work_for_it_where_that_is_longer():
    # 30,720 rows on 20 cores: 1,536 sticks a core, each with its address worked out and issued
    x = t(1, 1, 30720, 64, layout="row_major")
    row = op("TilizeDeviceOperation", [x], [t(1, 1, 30720, 64)], cores=20, arch="blackhole")
    base = ns(row, "to_layout")
    dearer = ns(row, "to_layout", replace(BLACKHOLE, noc_page_cycles=BLACKHOLE.noc_page_cycles + 100))
    assert dearer - base == pytest.approx(1536 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.05)


def test_a_cache_write_reads_its_rows_from_the_shards_they_lie_in():
    # ttnn's slice_write: each core writes the rows of its own shard into the DRAM tensor
    rows = t(1, 1, 6400, 256, layout="row_major", memory="l1_height_sharded")
    cache = t(1, 160, 80, 256, layout="row_major")
    sharded = shard_config("height_sharded", (5, 4), (320, 256))
    row = op("SliceWriteDeviceOperation", [rows, cache], [cache], cores=20, arch="blackhole", input_mem_config=sharded)
    kernel = kernel_of(row, "update_cache")
    assert {m.path for g in kernel.groups for m in g.reads} == {"l1"}


def test_a_tilize_moves_every_tile_a_face_row_at_a_time_a_row_of_tiles_a_step():
    # sharded 1,536 x 64 a core: 48 rows of 2 tiles; each tile's 64 face rows an access each
    x = t(1, 1, 30720, 64, layout="row_major", memory="l1_height_sharded")
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    row = op(
        "TilizeDeviceOperation",
        [x],
        [t(1, 1, 30720, 64, memory="l1_height_sharded")],
        cores=20,
        arch="blackhole",
        output_mem_config=sharded,
    )
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    built = compiled_op(measured, "to_layout", BLACKHOLE)
    (group,) = built[0].ops[-1].meta[KERNEL].groups
    assert group.compute.cycles == 96 * 64 and group.blocks == 48


def test_a_matmul_runs_as_its_program_config_splits_and_blocks_it():
    # ttnn's 1D program with in1 multicast: each core per_core_M = 4 tile rows of all 8 columns,
    # K in steps of 8 tiles, sub-blocks of 1 x 8 (OFT's 2112 x 1792 by 1792 x 256)
    config = (
        "MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size=(x=5;y=4);in0_block_w=8;"
        "out_subblock_h=1;out_subblock_w=8;out_block_h=4;out_block_w=8;per_core_M=4;per_core_N=8;fuse_batch=1;"
        "mcast_in0=0;gather_in0=0)"
    )
    row = _oft_matmul(program_config=config)
    kernel = kernel_of(row, "matmul")
    assert kernel.program == "matmul_1d_mcast_in1" and kernel.block == (4, 8, 8)
    assert kernel.cores_used == 17 and {g.compute.tiles for g in kernel.groups} == {4 * 8 * 56, 2 * 8 * 56}


def test_a_program_config_that_is_not_one_is_not_taken():
    own = kernel_of(_oft_matmul(), "matmul")
    for config in ("MatmulMultiCoreReuseMultiCast1DProgramConfig(per_core_M=0;per_core_N=8)", "x" * 9000):
        found = kernel_of(_oft_matmul(program_config=config), "matmul")
        assert (found.program, found.block) == (own.program, own.block)


def test_a_scalar_tile_is_filled_while_the_reader_fetches():
    # one tile on Wormhole: the reader's wait (a round trip) is shorter than the writer's fill (512
    # stores of 5 cycles), so a longer round trip shows only in the write that follows the compute
    x = t(1, 1, 32, 32)
    scalar = op("BinaryNgDeviceOperation", [x], [x], cores=1, scalar="0.125")
    base = ns(scalar, "multiply", WORMHOLE)
    slower = ns(scalar, "multiply", replace(WORMHOLE, noc_round_trip_cycles=WORMHOLE.noc_round_trip_cycles + 1000))
    assert slower - base == pytest.approx(1000 / WORMHOLE.clock_hz * 1e9, rel=0.05)


@pytest.mark.parametrize("padded", ["output", "input"])
def test_a_permute_listed_with_a_padded_side_is_built_from_the_other(padded):
    # a trace lists tiles' padded dims: 1 x 12 x 40 x 256 permuted (2, 1, 0, 3) is 40 x 12 x 1 x 256,
    # listed 40 x 12 x 32 x 256; a permute adds no elements
    small, large = t(1, 12, 40, 256), t(40, 12, 32, 256)
    dims = "SmallVector([2; 1; 0; 3])"
    if padded == "output":
        row = op("PermuteDeviceOperation", [small], [large], cores=20, arch="blackhole", dims=dims)
    else:  # the reverse: its input listed padded
        row = op("PermuteDeviceOperation", [large], [small], cores=20, arch="blackhole", dims=dims)
    want = (40, 12, 1, 256)
    built = compiled_op(read_ops_report(report_text(row), "r.csv").ops[0], "permute", BLACKHOLE)
    graph = built[0]
    permute = graph.ops[-1]
    shapes = {graph.tensors[permute.inputs[0]].shape, graph.tensors[permute.outputs[0]].shape}
    assert want in shapes and (40, 12, 32, 256) not in shapes


def test_a_binary_op_of_one_tensor_twice_reads_it_once_in_each_kernel():
    # x * x: its first operand read by the reader, its second by the writer, by position
    x = t(1, 1, 32, 32 * 64)
    row = op("BinaryNgDeviceOperation", [x, x], [x], cores=64, binary_op_type="BinaryOpType::MUL")
    built = compiled_op(read_ops_report(report_text(row), "r.csv").ops[0], "multiply", BLACKHOLE)
    kernel = next(o.meta[KERNEL] for o in built[0].ops if o.kind == "multiply")
    assert sorted(m.by_writer for m in kernel.groups[0].reads) == [False, True]


def test_a_program_config_whose_blocks_do_not_cover_the_output_is_not_taken():
    # per_core_M = 1 on 17 cores covers 17 of 66 tile rows: not this matmul's config
    config = (
        "MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size=(x=5;y=4);in0_block_w=8;"
        "out_subblock_h=1;out_subblock_w=8;per_core_M=1;per_core_N=8;mcast_in0=0)"
    )
    row = _oft_matmul(program_config=config)
    kernel = kernel_of(row, "matmul")
    # every output tile computed: 66 x 8 tiles, each over 56 K tiles
    assert sum(g.compute.tiles * len(g.cores) for g in kernel.groups) == 66 * 8 * 56


def test_a_batched_matmul_without_a_config_steps_k_a_tile_at_a_time():
    # 20 heads of 19 x 64 by 64 x 19 (CLIP's scores): ttnn's batched program reads a K tile of A
    # and of B and waits before the next, so each of a head's 2 K tiles is a step
    q, k = t(1, 20, 19, 64), t(1, 20, 64, 19)
    kernel = kernel_of(op("Matmul", [q, k], [t(1, 20, 19, 19)], cores=1, arch="blackhole"), "matmul")
    assert kernel.block[2] == 1 and sum(g.blocks for g in kernel.groups) == 20 * 2


def test_a_matmul_reader_zeroes_the_padding_of_a_s_last_k_tile():
    # CLIP's P V: 20 heads of 19 x 19 by 19 x 64, K = 19: each head's one A tile has 13 padding
    # columns, zeroed by the reader a store an element, 32 x 13 a tile
    p, v = t(1, 20, 19, 19), t(1, 20, 19, 64)
    row = op("Matmul", [p, v], [t(1, 20, 19, 64)], cores=1, arch="blackhole")
    (read,) = [m for g in kernel_of(row, "matmul").groups for m in g.reads if m.store_cycles]
    # each head's A tile read once, its block spanning N; a row's 13 padding columns end its right
    # face row (bytes 6 to 32): in Blackhole's store queue the 8 stores of the whole 16-byte block
    # go one a cycle, the 5 before it make one merged store of 5 cycles
    assert read.store_cycles == 20 * 32 * (8 + 5)
    slower = ns(row, "matmul", changed(word_store_cycles=BLACKHOLE.pipeline.word_store_cycles + 1))
    assert slower - ns(row, "matmul") == pytest.approx(20 * 32 / BLACKHOLE.clock_hz * 1e9, rel=0.05)
    # K a whole number of tiles: nothing to zero
    q = t(1, 20, 19, 64)
    whole = op("Matmul", [q, t(1, 20, 64, 19)], [t(1, 20, 19, 19)], cores=1, arch="blackhole")
    assert not any(m.store_cycles for g in kernel_of(whole, "matmul").groups for m in g.reads)


def test_a_halo_of_a_tiled_input_untilizes_its_input_s_share_first():
    # OFT's 3x3 halo: 30,720 x 64 tiled over 20 cores, 96 input tiles a core, out 43,840 rows
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    out = t(1, 1, 43840, 64, layout="row_major", memory="l1_height_sharded")
    for layout, engine in (("tile", "vector"), ("row_major", "data")):
        x = t(1, 1, 30720, 64, layout=layout, memory="l1_height_sharded")
        row = op("HaloDeviceOperation", [x], [out], cores=20, arch="blackhole", output_mem_config=sharded)
        busiest = max(kernel_of(row, "halo").groups, key=lambda g: g.compute.tiles)
        assert busiest.compute.engine == engine
        if engine == "vector":  # the packer's 64 face-row accesses a tile, for the input's tiles
            assert busiest.compute.tiles == pytest.approx(96, abs=1)
            assert busiest.compute.cycles == busiest.compute.tiles * 64


@pytest.mark.parametrize("rows, waited", [(2304, False), (2112, True)])
def test_a_binary_op_reads_uneven_shards_a_tile_at_a_time_and_waits_on_each(rows, waited):
    # OFT's subtracts in shards of 128 rows: 2,304 fill 18 shards (worked where they lie), 2,112
    # leave the last half full (binary_ng then reads each tile through the accessor and waits)
    sharded = shard_config("height_sharded", (4, 5), (128, 1792))
    x = t(1, 1, rows, 1792, memory="l1_height_sharded")
    row = op("BinaryNgDeviceOperation", [x, x, x], [x], cores=20, arch="blackhole", output_mem_config=sharded)
    group = max(kernel_of(row, "subtract").groups, key=lambda g: g.compute.tiles)
    operands = [m for m in group.reads if m.tensor.startswith("op.in")]
    assert len(operands) == 2 and all((m.pages == group.compute.tiles) == waited for m in operands)
