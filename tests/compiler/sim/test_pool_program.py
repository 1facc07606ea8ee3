"""Pooling as ttnn's pool2d program runs it: a core's output pixels one at a time, each pixel's
window gathered by two readers a window row a read, tilized and reduced by the compute kernel."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.compiler.analysis.pool_kernel import pool_kernel
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.profiles.attributes import parse_attributes
from tilescope.compiler.profiles.op_codes import kind_of

from tests.compiler.profiles.replay_reports import op, shard_config, t, window
from tests.compiler.sim.replayed import BLACKHOLE, kernel_of, ns


def _max_pool(channels: int = 64) -> dict:
    """OFT's stem max pool: 3x3, stride 2, over 192 x 640 pixels (after its halo) on 20 cores."""
    return op(
        "Pool2D",
        [t(1, 1, 151540, channels, layout="row_major", memory="l1_height_sharded")],
        [t(1, 1, 30720, channels, layout="row_major", memory="l1_height_sharded")],
        cores=20,
        arch="blackhole",
        sliding_window_config=window((192, 640), 3, 2, 1),
        memory_config_=shard_config("height_sharded", (5, 4), (1536, channels)),
        pool_type_="Pool2DType::MAX_POOL2D",
    )


def test_a_core_pools_its_output_pixels_one_at_a_time():
    kernel = kernel_of(_max_pool(), "max_pool2d")
    assert kernel.program == "pool2d"
    # 96 x 320 output pixels, 1,536 a core on 20 cores, each pixel a step of the pipeline
    (group,) = kernel.groups
    assert len(group.cores) == 20 and group.blocks == 1536
    # its two channel tiles tilized a face row a cycle: the window's 9 rows in each of 2 faces
    assert group.compute.tiles == 1536 * 2 and group.compute.tilize_cycles == 1536 * 2 * 9 * 2
    # a read per window row, the two readers taking every other pixel
    reader = [m for m in group.reads if not m.by_writer]
    writer = [m for m in group.reads if m.by_writer]
    assert sum(m.commands for m in reader) == 768 * 3 and sum(m.commands for m in writer) == 768 * 3
    assert sum(m.bytes for m in group.reads) == 1536 * 9 * 64 * 2  # from the core's own halo'd shard
    assert {m.path for m in group.reads} == {"l1"}


def test_a_pool_s_pixels_cost_their_steps_and_their_channel_tiles():
    # Blackhole's step handshakes: each of a core's 1,536 pixels waits on them
    base = ns(_max_pool(), "max_pool2d")
    pipeline = replace(BLACKHOLE.pipeline, step_sync_cycles=BLACKHOLE.pipeline.step_sync_cycles + 100)
    slower = ns(_max_pool(), "max_pool2d", replace(BLACKHOLE, pipeline=pipeline))
    assert slower - base == pytest.approx(1536 * 100 / BLACKHOLE.clock_hz * 1e9, rel=0.02)
    # twice the channels, twice the tiles tilized
    wide = kernel_of(_max_pool(128), "max_pool2d").groups[0]
    assert wide.compute.tilize_cycles == 2 * kernel_of(_max_pool(), "max_pool2d").groups[0].compute.tilize_cycles


def test_a_global_average_pool_over_width_sharded_channels_pools_each_core_s_channels():
    # DeepLabV3's: 2,048 channels of one 32 x 64 image width-sharded over 64 cores, 32 each; one
    # output pixel, its 2,048-stick window reduced a tile's rows (32) at a time
    grid = "MemoryConfig(memory_layout=TensorMemoryLayout::WIDTH_SHARDED;buffer_type=BufferType::L1;shard_spec="
    row = op(
        "Pool2D",
        [t(1, 1, 2048, 2048, layout="row_major", memory="l1_width_sharded")],
        [t(1, 1, 1, 2048, layout="row_major", memory="l1_width_sharded")],
        cores=64,
        arch="blackhole",
        sliding_window_config=window((32, 64), 1, 1, 0).replace("window_hw=(1;1)", "window_hw=(32;64)"),
        memory_config_=grid
        + "ShardSpec(grid={[(x=0;y=0) - (x=7;y=7)]};shape={1; 32};orientation=ShardOrientation::ROW_MAJOR))",
        pool_type_="Pool2DType::AVG_POOL2D",
    )
    kernel = kernel_of(row, "avg_pool2d")
    assert kernel.cores_used == 64
    (group,) = kernel.groups
    assert group.blocks == 2048 // 32 and group.compute.tiles == 64  # one channel tile a core


def test_the_compiler_s_pools_take_the_pool_program():
    # ResNet-50's stem max pool, 112 x 112 x 64 to 56 x 56, in a compiled model
    compilation = compile_model(load_model("zoo:resnet50?batch=1"), BLACKHOLE, CompileOptions())
    (pool,) = [o for o in compilation.kernel.ops if o.kind == "max_pool2d"]
    assert pool.meta[KERNEL].program == "pool2d"
    assert sum(g.blocks * len(g.cores) for g in pool.meta[KERNEL].groups) >= 56 * 56
    graph = compilation.kernel
    assert pool_kernel(graph, pool, BLACKHOLE) is not None


def _compiled_pool(props: str, image=(1, 16, 16, 64), out=(1, 8, 8, 64), operand: str = ""):
    """A one-op TTIR module pooling `image` to `out` with the attributes `props`, compiled."""
    shape = "x".join(map(str, image))
    result = "x".join(map(str, out))
    extra = ", %w" if operand else ""
    types = f"tensor<{shape}xbf16>" + (f", {operand}" if operand else "")
    args = f"%x: tensor<{shape}xbf16>" + (f", %w: {operand}" if operand else "")
    text = f"""func.func @main({args}) -> tensor<{result}xbf16> {{
  %0 = "ttir.max_pool2d"(%x{extra}) <{{{props}}}> : ({types}) -> tensor<{result}xbf16>
  return %0 : tensor<{result}xbf16>
}}"""
    compilation = compile_model(import_mlir(text, "pool.mlir"), BLACKHOLE, CompileOptions())
    (pool,) = [o for o in compilation.kernel.ops if o.kind == "max_pool2d"]
    return pool.meta[KERNEL]


@pytest.mark.parametrize(
    "props",
    [
        "kernel = array<i32: 2, 2>, stride = array<i32: 2, 2>, dilation = array<i32: 1, 1>",
        "kernel_height = 2 : si32, kernel_width = 2 : si32, stride_height = 2 : si32, stride_width = 2 : si32",
        "kernel_size = array<i32: 2, 2>, stride = array<i32: 2, 2>",
    ],
)
def test_a_pool_s_window_is_read_however_the_import_spells_it(props):
    # a 2 x 2 window: its 4 rows tilized in each of a channel tile's two faces, a read per window row
    (group,) = {g.compute.tilize_cycles // g.compute.tiles: g for g in _compiled_pool(props).groups}.values()
    assert group.compute.tilize_cycles == group.compute.tiles * 4 * 2
    pixels = group.compute.tiles // 2  # two channel tiles
    assert sum(m.commands for m in group.reads) == pixels * 2


def test_a_pool_without_a_window_it_can_read_streams_its_tiles():
    kernel = _compiled_pool("stride = array<i32: 2, 2>")
    assert kernel.program != "pool2d"


def test_a_window_read_stick_by_stick_where_its_rows_are_not_whole():
    whole = "kernel = array<i32: 3, 3>, stride = array<i32: 1, 1>, padding = array<i32: 1, 1, 1, 1>"
    per_row = _compiled_pool(whole, out=(1, 16, 16, 64)).groups[0]
    dilated = _compiled_pool(whole + ", dilation = array<i32: 1, 2>", out=(1, 16, 14, 64)).groups[0]
    # 40 channels: the last channel tile partial, each stick read on its own
    partial = _compiled_pool(whole, image=(1, 16, 16, 40), out=(1, 16, 16, 40)).groups[0]

    assert sum(m.commands for m in per_row.reads) == per_row.blocks * 3
    assert sum(m.commands for m in dilated.reads) == dilated.blocks * 9
    assert sum(m.commands for m in partial.reads) == partial.blocks * 9


def test_a_window_of_more_than_a_face_s_rows_tilizes_whole_tiles():
    # 5 x 5: 25 rows, more than a face's 16: all 32 rows of each of the two faces across
    kernel = _compiled_pool("kernel = array<i32: 5, 5>, stride = array<i32: 1, 1>", out=(1, 12, 12, 64))
    group = kernel.groups[0]
    assert group.compute.tilize_cycles == group.compute.tiles * 32 * 2


def test_a_report_s_average_pool_is_an_average_pool():
    row = _max_pool()
    row["ATTRIBUTES"] = row["ATTRIBUTES"].replace("MAX_POOL2D", "AVG_POOL2D")
    assert kernel_of(row, "avg_pool2d").program == "pool2d"
    assert kind_of("Pool2D", parse_attributes(row["ATTRIBUTES"])) == "avg_pool2d"
    assert kind_of("Pool2D", parse_attributes(_max_pool()["ATTRIBUTES"])) == "max_pool2d"
