"""The layout pass applies overrides or rejects them with a reason; applied ones change the level."""

from __future__ import annotations

import re

import pytest

from tilescope.compiler.ir.meta import KERNEL, OVERRIDES
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.ir.tiles import shard_bytes
from tilescope.compiler.pipeline.op_override import APPLIED, REJECTED, OpOverride
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import parse_item

from .golden import printed, through


def _outcome(compilation):
    (outcome,) = compilation.override_outcomes
    return outcome


def _compile(ref, target, *items):
    return compile_model(load_model(ref), target, CompileOptions([parse_item(i) for i in items]))


def test_applied_override_sets_layout_and_grid(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "matmul_1=1x2:l1:block_sharded")
    outcome = _outcome(c)
    assert (outcome.op, outcome.status, outcome.reason) == ("matmul_1", APPLIED, "")
    assert outcome.spec == "matmul_1=1x2:l1:block_sharded"
    layout = c.levels["layout"]
    out = layout.tensors["matmul_1"].layout
    assert (out.memory, out.memory_layout, out.grid, out.dtype, out.layout) == (
        "l1",
        "block_sharded",
        (1, 2),
        "f32",
        "tile",
    )
    assert layout.op("matmul_1").attrs["grid"] == (1, 2)
    assert c.kernel.op("matmul_1").meta[KERNEL].grid == (1, 2)
    # other ops keep the defaults; the graph level is untouched
    assert layout.tensors["relu_0"].layout.memory == "dram"  # matmul_0's output (relu_0 fused)
    assert c.levels["graph"].tensors["matmul_1"].layout is None


def test_dtype_and_layout_override(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "matmul_0=bf16:row_major")
    assert _outcome(c).status == APPLIED
    out = c.levels["layout"].tensors["relu_0"].layout
    assert (out.dtype, out.layout, out.memory) == ("bf16", "row_major", "dram")


def test_override_of_a_fused_op_is_adjusted_to_its_host(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "add_0=1x4:l1:block_sharded")
    outcome = _outcome(c)
    assert (outcome.op, outcome.status) == ("add_0", "adjusted")
    assert outcome.reason == "fused into matmul_0; applied there"
    assert c.levels["layout"].tensors["relu_0"].layout.memory == "l1"


def test_memory_not_on_target_is_rejected(tiny_path, wormhole):
    c = _compile(tiny_path, wormhole, "matmul_1=2x2:lls")
    outcome = _outcome(c)
    assert outcome.status == REJECTED
    assert "'lls' not on wormhole_n150" in outcome.reason
    assert "l1" in outcome.reason and "dram" in outcome.reason
    # a rejected override leaves the default layout
    layout = c.levels["layout"]
    assert layout.tensors["matmul_1"].layout.memory == "dram"
    assert layout.op("matmul_1").attrs["grid"] == (8, 8)


@pytest.mark.parametrize("grid", ["9x9", "8x9", "16x1"])
def test_grid_larger_than_target_is_rejected(tiny_path, wormhole, grid):
    outcome = _outcome(_compile(tiny_path, wormhole, f"matmul_1={grid}"))
    assert outcome.status == REJECTED
    assert f"grid {grid} outside wormhole_n150's 8x8 grid" == outcome.reason


def test_sharding_in_dram_is_rejected(tiny_path, wormhole):
    outcome = _outcome(_compile(tiny_path, wormhole, "add_0=dram:block_sharded"))
    assert outcome.status == REJECTED
    assert "block_sharded needs a per-core memory" in outcome.reason


def test_l1_overflow_is_rejected_with_kib_needed_and_available(wormhole):
    # 2048x2048 bf16 on one core: 64x64 tiles x 2 KiB = 8192 KiB > 1464 KiB of L1
    outcome = _outcome(_compile("zoo:matmul:2048x2048x2048", wormhole, "matmul=1x1:l1:block_sharded"))
    assert outcome.status == REJECTED
    assert outcome.reason == "the result needs 8192 KiB per core in l1, 1464 KiB available"


def test_l1_shard_that_fits_is_applied(wormhole):
    # the same tensor over 8x8 cores: 128 KiB per core
    outcome = _outcome(_compile("zoo:matmul:2048x2048x2048", wormhole, "matmul=8x8:l1:block_sharded"))
    assert outcome.status == APPLIED


def test_override_for_a_missing_op_is_rejected_by_the_pass(tiny_path, wormhole):
    c = compile_model(
        load_model(tiny_path), wormhole, CompileOptions([OpOverride("nope", memory="l1", spec="nope=l1")])
    )
    assert _outcome(c).status == REJECTED
    assert re.search("no such op in the graph", _outcome(c).reason)


def test_outcome_as_dict(tiny_path, wormhole):
    d = _outcome(_compile(tiny_path, wormhole, "matmul_1=2x2:lls")).as_dict()
    assert set(d) == {"op", "spec", "status", "reason"}
    assert d["status"] == "rejected" and d["op"] == "matmul_1"


# --- even shards ---------------------------------------------------------------------------------


def test_more_cores_than_shards_are_rejected_with_the_grids_that_would_fit(tiny_path, wormhole):
    outcome = _outcome(_compile(tiny_path, wormhole, "matmul_1=2x4:l1:block_sharded"))  # 1x2 tiles
    assert outcome.status == REJECTED
    assert outcome.reason == (
        "block_sharded over 2x4 cores needs a shard on each core, more than the result has "
        "(1x2 tiles of 32x32); grids that would: 1x2, 1x1"
    )
    height = _outcome(_compile("zoo:matmul:96x64x64", wormhole, "matmul=8x8:l1:height_sharded"))  # 3 tile rows
    assert height.status == REJECTED and height.reason.endswith("grids that would: 1x3, 3x1, 1x2, 2x1, 1x1")


def test_uneven_shards_are_accepted_as_ttnn_pads_them(wormhole):
    """5,280 tile rows over 64 cores: 83 rows a core (L1 holds a full shard each), the last 51."""
    rows = 5280 * 32
    c = compile_model(
        load_model(f"zoo:matmul:{rows}x32x32"), wormhole, CompileOptions([parse_item("matmul=8x8:l1:height_sharded")])
    )
    assert _outcome(c).status == APPLIED
    out = c.levels["layout"].tensors["matmul"]
    assert out.layout.memory_layout == "height_sharded" and out.layout.grid == (8, 8)
    assert shard_bytes(out, out.layout) == 83 * 32 * 32 * 2  # a full shard of bf16 tiles on every core
    block = compile_model(
        load_model("zoo:matmul:160x32x96"), wormhole, CompileOptions([parse_item("matmul=2x2:l1:block_sharded")])
    )
    assert _outcome(block).status == APPLIED  # 5x3 tiles over 2x2: shards of 3x2, the last 2x1


def test_an_eltwise_op_on_uneven_shards_gives_its_busiest_core_a_full_shard(wormhole):
    text = """
func.func @forward(%x: tensor<168960x64xbf16> {ttir.name = "x"}) -> tensor<168960x64xbf16> {
  %0 = "ttir.relu"(%x) : (tensor<168960x64xbf16>) -> tensor<168960x64xbf16> loc("r")
  return %0 : tensor<168960x64xbf16>
}
"""
    overrides = [parse_item("r=8x8:l1:height_sharded"), parse_item("r=operand#0:8x8:l1:height_sharded")]
    c = compile_model(import_mlir(text, "uneven"), wormhole, CompileOptions(overrides))
    assert [o.status for o in c.override_outcomes] == [APPLIED, APPLIED]
    kernel = c.kernel.op("r").meta[KERNEL]
    shares = {g.compute.tiles: len(g.cores) for g in kernel.groups}
    assert shares == {83 * 2: 63, 51 * 2: 1}  # 5,280 tile rows of 2 tiles over 64 cores


def test_greedy_l1_only_makes_even_shards(wormhole):
    from tilescope.compiler.analysis.shard_layouts import even_shards

    # 100 positions: 4 tile rows a user, which divide a grid for 8 users but not for one
    c = compile_model(
        load_model("zoo:bert-base?layers=1&seq=100&batch=8"), wormhole, CompileOptions(policy="greedy-l1")
    )
    sharded = [t for t in c.levels["layout"].tensors.values() if t.layout.sharded]
    assert sharded
    assert any(t.layout.memory == "l1" and not t.layout.sharded for t in c.levels["layout"].tensors.values())
    for t in sharded:
        assert even_shards(t, t.layout.memory_layout, t.layout.grid, t.layout.tile), (t.name, t.shape, t.layout)


# --- tile shape ----------------------------------------------------------------------------------


def test_a_short_tile_on_a_one_row_matmul_reads_less_and_computes_less(wormhole, build):
    base_c, base = build("zoo:matmul:1x4096x2048", dispatch="trace")
    tuned_c, tuned = build("zoo:matmul:1x4096x2048", "matmul=tile#1x32", dispatch="trace")
    assert _outcome(tuned_c).status == APPLIED
    layout = tuned_c.levels["layout"]
    assert layout.tensors["matmul"].layout.tile == (1, 32)
    # A is retiled to the output's short tiles before the matmul; B stays in full tiles
    assert layout.op("matmul.in0.to_layout").kind == "to_layout"
    assert layout.tensors["matmul.in0.to_layout"].layout.tile == (1, 32)
    assert "b" in layout.op("matmul").inputs
    before, after = base.ops[0], {o.name: o for o in tuned.ops}["matmul"]
    assert after.bytes["dram"] < before.bytes["dram"]  # A and the output unpadded: 1 row, not 32
    kernel_before = base_c.kernel.op("matmul").meta[KERNEL]
    kernel_after = tuned_c.kernel.op("matmul").meta[KERNEL]
    cycles = lambda k: max(g.compute.cycles for g in k.groups)  # noqa: E731
    # 8 rows is the engine's least pass: a 1-row tile costs 8/32 of a full one
    assert cycles(kernel_after) == pytest.approx(cycles(kernel_before) * 8 / 32)
    assert after.duration_ns < before.duration_ns
    assert "tile 1x32" in tuned_c.mlir("layout")


@pytest.mark.parametrize(
    "spec, reason",
    [
        ("matmul=tile#3x32", "tile 3x32 not supported on wormhole_n150; tiles: 1x32, 2x32, 4x32, 8x32, 16x32, 32x32"),
        ("matmul=tile#32x16", "tile 32x16 not supported"),
        ("matmul=tile#1x32:row_major", "tile 1x32 needs the tile layout, not row_major"),
    ],
)
def test_unsupported_tiles_are_rejected(wormhole, spec, reason):
    outcome = _outcome(_compile("zoo:matmul:1x256x256", wormhole, spec))
    assert outcome.status == REJECTED and reason in outcome.reason


@pytest.mark.parametrize(
    "target, spec, reason",
    [
        ("mtia_v1", "matmul=tile#16x32", "tile 16x32 not supported on mtia_v1; tiles: 32x32"),
        ("corsair", "matmul=tile#32x64", "tile 32x64 not supported on corsair; tiles: 64x64"),
        ("mtia_v1", "matmul=fidelity#hifi4", "mtia_v1 has no math fidelity setting"),
    ],
)
def test_tenstorrent_tiles_and_fidelities_are_refused_where_the_engine_has_none(target, spec, reason):
    outcome = _outcome(_compile("zoo:matmul:64x256x256", load_target(target), spec))
    assert outcome.status == REJECTED and reason in outcome.reason


# --- operands and results ------------------------------------------------------------------------


def test_an_operand_override_converts_that_input_before_the_op(wormhole, build):
    spec = "matmul=operand#1:l1:width_sharded"  # B: 64 tile columns over the op's 8x8 cores
    base_c, base = build("zoo:matmul:32x1024x2048", dispatch="trace")
    tuned_c, tuned = build("zoo:matmul:32x1024x2048", spec, dispatch="trace")
    outcome = _outcome(tuned_c)
    assert (outcome.status, outcome.operand, outcome.spec) == (APPLIED, 1, spec)
    layout = tuned_c.levels["layout"]
    convert = layout.op("matmul.in1.to_layout")
    assert convert.inputs == ["b"] and layout.op("matmul").inputs == ["a", "matmul.in1.to_layout"]
    converted = layout.tensors["matmul.in1.to_layout"].layout
    assert (converted.memory, converted.memory_layout, converted.grid) == ("l1", "width_sharded", (8, 8))
    assert layout.tensors["b"].layout.memory == "dram"  # the operand itself is where its producer put it
    assert layout.tensors["matmul"].layout == base_c.levels["layout"].tensors["matmul"].layout  # output untouched
    # the matmul now reads B from L1 (its own piece) and the NoC, not from DRAM
    before, after = base.ops[0], {o.name: o for o in tuned.ops}["matmul"]
    assert after.bytes["dram"] < before.bytes["dram"]
    assert after.bytes.get("l1", 0) > 0


@pytest.mark.parametrize(
    "spec, reason",
    [
        ("matmul=operand#2:l1", "the op has 2 operand(s); operand#2 is not one"),
        ("matmul=result#1:l1", "the op has 1 result(s); result#1 is not one"),
        ("matmul=operand#0:8x8:l1:height_sharded", "more than operand 0 has (1x32 tiles of 32x32)"),
        ("matmul=operand#1:lls", "memory 'lls' not on wormhole_n150"),
    ],
)
def test_bad_operand_and_result_overrides_are_rejected(wormhole, spec, reason):
    outcome = _outcome(_compile("zoo:matmul:32x1024x1024", wormhole, spec))
    assert outcome.status == REJECTED and reason in outcome.reason, outcome.reason


def test_an_op_that_cannot_read_the_operand_layout_rejects_it(wormhole):
    permute = """
func.func @forward(%x: tensor<256x256xbf16> {ttir.name = "x"}) -> tensor<256x256xbf16> {
  %0 = "ttir.permute"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("p")
  return %0 : tensor<256x256xbf16>
}
"""
    from tilescope.compiler.frontend.mlir_import import import_mlir

    c = compile_model(
        import_mlir(permute, "p.mlir"), wormhole, CompileOptions([parse_item("p=operand#0:8x8:l1:block_sharded")])
    )
    outcome = _outcome(c)
    assert outcome.status == REJECTED
    assert "permute cannot read operand 0 as l1 block_sharded 8x8; it reads dram interleaved 1x1" in outcome.reason


def test_result_override_lays_out_that_output(wormhole, tiny_path):
    c = _compile(tiny_path, wormhole, "matmul_1=result#0:1x2:l1:block_sharded")
    assert _outcome(c).status == APPLIED
    assert c.levels["layout"].tensors["matmul_1"].layout.memory == "l1"


MATMUL_ADD = """
func.func @f(%x: tensor<256x256xbf16> {ttir.name = "x"},
             %w: tensor<256x256xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w"}) -> tensor<256x256xbf16> {
  %y = "ttir.matmul"(%x, %w) : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("mm")
  %z = "ttir.add"(%y, %x) : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("residual")
  return %z : tensor<256x256xbf16>
}
"""


GOLDEN_DRAM_INTERLEAVED = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}, %arg1: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "w"}) -> (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.matmul"(%arg0, %arg1) {grid = array<i64: 8, 8>, ts.from = ["mm"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>, tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("mm")
    %1 = "ts.add"(%0, %arg0) {grid = array<i64: 8, 8>, ts.from = ["residual"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>, tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("residual")
    return %1 : tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_by_default_every_tensor_is_interleaved_in_dram_and_every_op_runs_on_the_whole_grid(wormhole):
    given, graph = through(MATMUL_ADD, wormhole, "assign-layouts")
    assert all(t.layout is None for t in given.tensors.values())
    assert printed(graph) == GOLDEN_DRAM_INTERLEAVED


GOLDEN_GREEDY_L1 = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}, %arg1: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "w"}) -> (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.matmul"(%arg0, %arg1) {grid = array<i64: 8, 8>, ts.from = ["mm"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>, tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32>> loc("mm")
    %1 = "ts.add"(%0, %arg0) {grid = array<i64: 8, 8>, ts.from = ["residual"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32>>, tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("residual")
    return %1 : tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_greedy_l1_keeps_each_result_in_l1_sharded_evenly_over_its_ops_grid(wormhole):
    _, graph = through(MATMUL_ADD, wormhole, "assign-layouts", policy="greedy-l1")
    # 8 x 8 tiles each: mm's result block-sharded a tile per core of its 8x8 grid; the returned
    # result, the input and the weight stay in DRAM
    assert printed(graph) == GOLDEN_GREEDY_L1


GOLDEN_OVERRIDDEN = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}, %arg1: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "w"}) -> (tensor<256x256xbf16, #ts.layout<l1, width_sharded, grid 1x4, bf16, tile 32x32>>) {
    %0 = "ts.matmul"(%arg0, %arg1) {grid = array<i64: 8, 8>, ts.from = ["mm"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>, tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("mm")
    %1 = "ts.add"(%0, %arg0) {grid = array<i64: 1, 4>, ts.from = ["residual"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>, tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<l1, width_sharded, grid 1x4, bf16, tile 32x32>> loc("residual")
    return %1 : tensor<256x256xbf16, #ts.layout<l1, width_sharded, grid 1x4, bf16, tile 32x32>>
  }
}
"""


def test_an_override_lays_out_its_ops_result_and_sets_its_grid(wormhole):
    overrides = [parse_item("residual=1x4:l1:width_sharded:bf16")]
    _, graph = through(MATMUL_ADD, wormhole, "assign-layouts", overrides=overrides)
    assert [(o.op, o.status) for o in graph.meta[OVERRIDES]] == [("residual", APPLIED)]
    assert printed(graph) == GOLDEN_OVERRIDDEN
