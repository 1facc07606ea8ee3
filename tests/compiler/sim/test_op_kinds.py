"""Per-kind mechanisms of ttnn's kernels, each checked on one op replayed from a report row: what
the kernel skips or repeats, so the prediction moves as the measured time does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.compiler.analysis.reshape_kernel import TileMap, permute_map, tile_map
from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.profiles.ops_report import read_ops_report
from tilescope.compiler.profiles.replay import compiled_op, op_timing
from tilescope.compiler.targets.catalog import load_target

from tests.compiler.profiles.replay_reports import op, report_text, shard_config, t, window

BLACKHOLE = load_target("blackhole_p150")


def _ns(row: dict, kind: str, target=BLACKHOLE) -> float:
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    built = compiled_op(measured, kind, target)
    assert not isinstance(built, str), built
    return op_timing(built[0], target)[0].duration_ns


def _sdpa(q_len: int, kv_len: int, **attributes) -> dict:
    q, kv = t(1, 8, q_len, 128), t(1, 8, kv_len, 128)
    return op("SDPAOperation", [q, kv, kv], [t(1, 8, q_len, 128)], cores=64, arch="blackhole", **attributes)


def test_causal_attention_skips_the_key_chunks_past_the_diagonal():
    full = _ns(_sdpa(4096, 4096), "scaled_dot_product_attention")
    causal = _ns(_sdpa(4096, 4096, is_causal="true"), "scaled_dot_product_attention")
    # 16 query chunks of 256 read 1..16 key chunks: 8.5 of 16 on average
    assert causal / full == pytest.approx(8.5 / 16, rel=0.1)


def test_a_prompt_after_a_cache_reads_the_cache_whole_and_its_own_keys_causally():
    full = _ns(_sdpa(1024, 4096), "scaled_dot_product_attention")
    causal = _ns(_sdpa(1024, 4096, is_causal="true"), "scaled_dot_product_attention")
    # queries at 3072..4095: their chunks read 13..16 of 16 key chunks
    assert causal / full == pytest.approx(14.5 / 16, rel=0.1)


def test_causal_ring_attention_costs_the_ring_s_mean_device():
    full = _ns(_sdpa(2048, 4096, ring_size="2"), "scaled_dot_product_attention")
    causal = _ns(_sdpa(2048, 4096, ring_size="2", is_causal="true"), "scaled_dot_product_attention")
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
    many, few = (_ns(_group_norm(g, cores=16), "groupnorm") for g in (16, 2))
    assert many / few == pytest.approx(8, rel=0.2)


def test_a_sharded_group_norm_waits_on_every_core_s_partial_sums_twice_a_group():
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    row = _group_norm(16, memory="l1_height_sharded", cores=20, output_mem_config=sharded)
    base = _ns(row, "groupnorm")
    slower = _ns(row, "groupnorm", replace(BLACKHOLE, noc_round_trip_cycles=2 * BLACKHOLE.noc_round_trip_cycles))
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
    base = _ns(row, "reshape")
    dearer = _ns(row, "reshape", replace(BLACKHOLE, pipeline=replace(BLACKHOLE.pipeline, segment_copy_cycles=160)))
    # 19 x 2 output tiles on 38 cores: one each, 40 pieces at 100 cycles more
    assert dearer - base == pytest.approx(40 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.02)
    loads = 40 + 1  # and the tile written, each waited on
    assert base >= loads * BLACKHOLE.noc_round_trip_cycles / BLACKHOLE.clock_hz * 1e9


def _conv(act_block: str = "") -> dict:
    """A 3x3 convolution of 64 to 64 channels over 96 x 320 pixels on 20 cores, height-sharded."""
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    attributes = {}
    if act_block:
        attributes["block_config"] = f"Conv2dBlockConfig({act_block};out_subblock_h_ntiles=1;out_subblock_w_ntiles=2)"
    return op(
        "Conv2dDeviceOperation",
        [t(1, 1, 43840, 64, layout="row_major", memory="l1_height_sharded"), t(1, 1, 576, 64, dtype="bfp8")],
        [t(1, 1, 30720, 64, memory="l1_height_sharded")],
        cores=20,
        arch="blackhole",
        fidelity="HiFi2",
        sliding_window_config=window((96, 320), 3, 1, 1),
        input_tensor_shape="{1; 96; 320; 64}",
        output_channels="64",
        groups="1",
        memory_config=sharded,
        **attributes,
    )


def test_a_convolution_s_reader_issues_a_read_per_im2col_row_and_run():
    row = _conv("act_block_h_ntiles=1;act_block_w_ntiles=6")
    base = _ns(row, "conv2d")
    slower = _ns(row, "conv2d", replace(BLACKHOLE, noc_issue_cycles=BLACKHOLE.noc_issue_cycles + 18))
    # 48 tile rows a core in blocks of one, K of 18 tiles in steps of 6: 144 blocks of 32 rows,
    # each row's 6 tiles (192 channels) one run of the window's 3 x 64 contiguous channels
    commands = 144 * 32 * 1
    assert slower - base == pytest.approx(commands * 18 / BLACKHOLE.clock_hz * 1e9, rel=0.05)


def test_a_batched_matmul_pads_each_batch_s_rows_and_reads_each_batch_s_b():
    a, b = t(1, 20, 19, 64), t(1, 20, 64, 32)
    row = op("MatmulDeviceOperation", [a, b], [t(1, 20, 19, 32)], cores=1, arch="blackhole")
    (measured,) = read_ops_report(report_text(row), "r.csv").ops
    kernel, _ = compiled_op(measured, "matmul", BLACKHOLE)
    (work,) = next(o for o in kernel.ops if o.kind == "matmul").meta[KERNEL].groups
    assert work.compute.tiles == 20 * 1 * 2  # 20 batches of one 19-row tile, K of two tiles
    b_bytes = sum(x.bytes for x in work.reads if x.tensor == kernel.ops[-1].inputs[1])
    assert b_bytes == 20 * 2 * 2048  # each batch's own B, once


def test_an_element_wise_kernel_hands_each_tile_through_the_pipeline_on_its_own():
    # 96 tiles a core in L1, nothing waited on: the relu's compute takes the destination
    # registers for one tile at a time, so each tile pays the pipeline's handshakes
    sharded = shard_config("height_sharded", (5, 4), (1536, 64))
    x = t(1, 1, 30720, 64, memory="l1_height_sharded")
    row = op("UnaryDeviceOperation", [x], [x], cores=20, arch="blackhole", output_mem_config=sharded)
    base = _ns(row, "relu")
    pipeline = replace(BLACKHOLE.pipeline, step_sync_cycles=BLACKHOLE.pipeline.step_sync_cycles + 100)
    slower = _ns(row, "relu", replace(BLACKHOLE, pipeline=pipeline))
    assert slower - base == pytest.approx(96 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.05)
