"""Convolutions as ttnn's conv2d program runs them: the cores and blocks its parallelization config
gives, the im2col rows its reader gathers and the compute kernel's tilize of each gathered block."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.compiler.profiles.matmul_configs import conv_blocks

from tests.compiler.profiles.replay_reports import op, shard_config, t, window
from tests.compiler.sim.replayed import BLACKHOLE, kernel_of, ns

PARALLEL = (
    "Conv2dParallelizationConfig(grid_size=(x=5;y=4);num_cores_nhw=20;num_cores_c_in=1;num_cores_c_out=1;"
    "per_core_out_matrix_height_ntile=48;per_core_out_matrix_width_ntile=2)"
)


def _conv(act_block: str = "", **more) -> dict:
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
        **more,
    )


def test_a_convolution_s_reader_issues_a_read_per_im2col_row_and_run():
    row = _conv("act_block_h_ntiles=1;act_block_w_ntiles=6")
    base = ns(row, "conv2d")
    # issued with the command buffer's state kept (read_with_state): the stateful issue cost
    slower = ns(row, "conv2d", replace(BLACKHOLE, noc_stateful_issue_cycles=BLACKHOLE.noc_stateful_issue_cycles + 18))
    # 48 tile rows a core in blocks of one, K of 18 tiles in steps of 6: 144 blocks of 32 rows,
    # each row's 6 tiles (192 channels) one run of the window's 3 x 64 contiguous channels
    commands = 144 * 32 * 1
    assert slower - base == pytest.approx(commands * 18 / BLACKHOLE.clock_hz * 1e9, rel=0.05)
    # and not the full command's, which a transpose's face-line writes pay
    same = ns(row, "conv2d", replace(BLACKHOLE, noc_issue_cycles=BLACKHOLE.noc_issue_cycles + 18))
    assert same == pytest.approx(base)


def test_a_convolution_runs_on_the_cores_and_blocks_its_parallelization_config_gives():
    # height-sharded: 960 output tile rows, 48 a core on 20 cores, each with all 2 output columns
    row = _conv("act_block_h_ntiles=1;act_block_w_ntiles=6", parallelization_config=PARALLEL)
    kernel = kernel_of(row, "conv2d")
    assert kernel.program == "matmul_1d_mcast_in1" and kernel.cores_used == 20
    assert kernel.block == (48, 2, 6)  # the K step the act block's width gives
    assert {g.compute.tiles for g in kernel.groups} == {48 * 2 * 18}


def test_a_convolution_s_sharding_names_how_its_cores_split_the_output():
    def attributes(layout: str) -> dict:
        config = (
            "Conv2dBlockConfig(act_block_h_ntiles=4;act_block_w_ntiles=6;out_subblock_h_ntiles=1;"
            "out_subblock_w_ntiles=2)"
        )
        return {
            "parallelization_config": PARALLEL,
            "block_config": config,
            "memory_config": f"MemoryConfig(memory_layout=TensorMemoryLayout::{layout};buffer_type=BufferType::L1)",
        }

    assert conv_blocks(attributes("HEIGHT_SHARDED")) == [
        "core_block = array<i64: 48, 2, 6>",
        'core_split = "m"',
        "out_subblock = array<i64: 1, 2>",
    ]
    assert 'core_split = "2d"' in conv_blocks(attributes("BLOCK_SHARDED"))
    assert 'core_split = "n"' in conv_blocks(attributes("WIDTH_SHARDED"))
    assert conv_blocks(attributes("INTERLEAVED")) == []
    assert conv_blocks({**attributes("HEIGHT_SHARDED"), "block_config": ""}) == []  # no K step
    for bad in ("0", "99999999", "\u00b2", "-4", "x"):  # zero, huge, a superscript digit, garbage
        hostile = {**attributes("HEIGHT_SHARDED"), "parallelization_config": PARALLEL.replace("=48;", f"={bad};")}
        assert conv_blocks(hostile) == []


def test_the_compute_kernel_tilizes_each_gathered_im2col_block():
    row = _conv("act_block_h_ntiles=1;act_block_w_ntiles=6", parallelization_config=PARALLEL)
    groups = kernel_of(row, "conv2d").groups
    # 48 tile rows of 18 K tiles, one block of output columns: a face row (32 x 2 a tile) a cycle
    assert {g.compute.tilize_cycles for g in groups} == {48 * 18 * 64}


def test_a_one_by_one_convolution_reads_its_tiles_as_they_lie():
    x = t(1, 1, 7680, 128, memory="l1_height_sharded")
    row = op(
        "Conv2dDeviceOperation",
        [x, t(1, 1, 128, 256, dtype="bfp8")],
        [t(1, 1, 7680, 256, memory="l1_height_sharded")],
        cores=20,
        arch="blackhole",
        sliding_window_config=window((96, 80), 1, 1, 0),
        input_tensor_shape="{1; 96; 80; 128}",
        output_channels="256",
        groups="1",
    )
    assert {g.compute.tilize_cycles for g in kernel_of(row, "conv2d").groups} == {0.0}
