"""Golden tests of the passes on small graphs: what each stage removes, fuses, inserts and places."""

from __future__ import annotations

import dataclasses

from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.analysis.l1_usage import L1Tensor, l1_live_at
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.overrides import parse_item

CANON = """
func.func @forward(%x: tensor<32x64xf32> {ttir.name = "x"}) -> tensor<32x64xf32> {
  %c = "ttir.constant"() <{value = dense<1.0> : tensor<1x64xf32>}> : () -> tensor<1x64xf32>
  %b = "ttir.broadcast"(%c) : (tensor<1x64xf32>) -> tensor<32x64xf32>
  %0 = "ttir.reshape"(%x) <{shape = [32 : i32, 64 : i32]}> : (tensor<32x64xf32>) -> tensor<32x64xf32>
  %1 = "ttir.permute"(%0) <{permutation = array<i64: 0, 1>}> : (tensor<32x64xf32>) -> tensor<32x64xf32>
  %2 = "ttir.add"(%1, %b) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %3 = "ttir.typecast"(%2) : (tensor<32x64xf32>) -> tensor<32x64xf32>
  return %3 : tensor<32x64xf32>
}
"""


def test_canonicalize_drops_no_ops_and_folds_constants(wormhole):
    graph = compile_model(import_mlir(CANON, "canon.mlir"), wormhole).levels["graph"]
    assert [(op.name, op.kind) for op in graph.ops] == [
        ("constant_0", "constant"),
        ("broadcast_0", "constant"),
        ("add_0", "add"),
    ]
    assert graph.op("broadcast_0").attrs == {"folded": "broadcast"}
    assert graph.op("add_0").inputs == ["x", "broadcast_0"]  # the reshape and permute are gone
    assert graph.outputs == ["add_0"]  # the no-op typecast's reader (the return) reads add_0
    assert dict(graph.meta["canonicalized"]) == {
        "reshape_0": "no-op reshape",
        "permute_0": "no-op permute",
        "typecast_0": "no-op typecast",
    }


FUSE = """
func.func @forward(%x: tensor<64x128xbf16> {ttir.name = "x"}, %w: tensor<128x256xbf16> {ttir.name = "w"},
                   %b: tensor<256xbf16> {ttir.name = "b"}) -> (tensor<64x256xbf16>, tensor<64x256xbf16>) {
  %0 = "ttir.matmul"(%x, %w) : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16> loc("mm")
  %1 = "ttir.add"(%0, %b) : (tensor<64x256xbf16>, tensor<256xbf16>) -> tensor<64x256xbf16> loc("bias")
  %2 = "ttir.gelu"(%1) : (tensor<64x256xbf16>) -> tensor<64x256xbf16> loc("act")
  %3 = "ttir.exp"(%2) : (tensor<64x256xbf16>) -> tensor<64x256xbf16> loc("exp")
  %4 = "ttir.exp"(%2) : (tensor<64x256xbf16>) -> tensor<64x256xbf16> loc("exp2")
  return %3, %4 : tensor<64x256xbf16>, tensor<64x256xbf16>
}
"""


def test_bias_and_activation_fuse_into_the_matmul_but_not_past_a_fork(wormhole):
    graph = compile_model(import_mlir(FUSE, "fuse.mlir"), wormhole).levels["graph"]
    # act has two readers, so neither exp can fuse into the matmul
    assert [op.name for op in graph.ops] == ["mm", "exp", "exp2"]
    mm = graph.op("mm")
    assert mm.attrs["fused"] == ("bias", "act") and mm.attrs["fused_kinds"] == ("add", "gelu")
    assert mm.source == ("mm", "bias", "act")
    assert mm.inputs == ["x", "w", "b"] and mm.outputs == ["act"]


def test_fusion_follows_the_target(wormhole):
    no_fusion = dataclasses.replace(wormhole, fusion={"activation": False, "bias": False})
    graph = compile_model(import_mlir(FUSE, "fuse.mlir"), no_fusion).levels["graph"]
    assert [op.name for op in graph.ops] == ["mm", "bias", "act", "exp", "exp2"]


PERMUTE = """
func.func @forward(%x: tensor<256x256xbf16> {ttir.name = "x"}) -> tensor<256x256xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e")
  %1 = "ttir.permute"(%0) <{permutation = array<i64: 1, 0>}> : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("p")
  %2 = "ttir.exp"(%1) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e2")
  return %2 : tensor<256x256xbf16>
}
"""


def test_a_sharded_input_of_a_data_movement_op_gets_a_to_layout(wormhole):
    c = compile_model(import_mlir(PERMUTE, "p.mlir"), wormhole, CompileOptions([parse_item("e=8x8:l1:block_sharded")]))
    layout = c.levels["layout"]
    assert [op.name for op in layout.ops] == ["e", "p.in0.to_layout", "p", "e2"]
    convert = layout.op("p.in0.to_layout")
    assert convert.kind == "to_layout" and convert.inputs == ["e"] and convert.source == ("p",)
    assert layout.tensors["p.in0.to_layout"].layout.memory == "dram"
    assert layout.op("p").inputs == ["p.in0.to_layout"]
    # the kernel level moves the tensor out of L1 for it
    kernel = c.kernel.op("p.in0.to_layout").meta["kernel"]
    assert {t.path for g in kernel.groups for t in g.writes} == {"dram"}


def test_planner_gives_live_tensors_disjoint_addresses_and_reports_the_peak(wormhole):
    c = compile_model(import_mlir(PERMUTE, "p.mlir"), wormhole, CompileOptions(policy="greedy-l1"))
    layout = c.levels["layout"]
    placed = {t.name: t.layout for t in layout.tensors.values() if t.layout.memory == "l1"}
    assert "e" in placed and placed["e"].address == 0
    peak = layout.meta["l1_peak"]
    # 256x256 bf16 = 8x8 tiles of 2 KiB, block-sharded over 8x8 cores: one tile per core. e's
    # output dies when it is copied out for the permute, before the permute's output is born
    assert peak.bytes == 2048 and peak.capacity == 1499136 and peak.op == "e"
    assert peak.tensors == (L1Tensor("e", 2048, 0),) and peak.core == (0, 0)  # what makes the peak
    assert l1_live_at(layout, wormhole, "e", (0, 0)) == peak.tensors
    assert "e" not in [t.name for t in l1_live_at(layout, wormhole, "p", (0, 0))]  # dead by then
    assert layout.meta["l1_per_core"]["0,0"] == peak.bytes
    assert all(c.kernel.op(op.name).meta["l1_bytes"] >= op.meta["l1_live"] for op in layout.ops)


OVERFLOW = """
func.func @forward(%x: tensor<1024x512xbf16> {ttir.name = "x"}) -> tensor<1024x512xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<1024x512xbf16>) -> tensor<1024x512xbf16> loc("e1")
  %1 = "ttir.exp"(%0) : (tensor<1024x512xbf16>) -> tensor<1024x512xbf16> loc("e2")
  %2 = "ttir.add"(%0, %1) : (tensor<1024x512xbf16>, tensor<1024x512xbf16>) -> tensor<1024x512xbf16> loc("sum")
  return %2 : tensor<1024x512xbf16>
}
"""


def test_overflow_says_how_many_bytes_and_where(wormhole):
    # each 1 MiB output fits one core's 1464 KiB alone; alive together they do not fit, so the
    # second override is rejected, saying where and by how much
    items = [parse_item("e1=1x1:l1:block_sharded"), parse_item("e2=1x1:l1:block_sharded")]
    c = compile_model(import_mlir(OVERFLOW, "o.mlir"), wormhole, CompileOptions(items))
    first, second = c.override_outcomes
    assert first.status == "applied"
    assert second.status == "rejected"
    assert second.reason == (
        "L1 overflow: it needs 1024.0 KiB per core, largest free range 428.0 KiB of 1452 KiB left beside "
        "circular buffers"
    )
    # nothing overflows: e2 went back to DRAM
    layout = c.levels["layout"]
    assert layout.tensors["e2"].layout.memory == "dram" and layout.tensors["e1"].layout.memory == "l1"
    assert layout.meta["diagnostics"] == [] and c.levels["kernel"].meta.get("diagnostics", []) == []


def test_a_tensor_the_policy_cannot_fit_stays_in_dram_with_one_line_saying_why():
    """greedy-l1 on MTIA (128 KiB of local memory per PE) leaves too little room for the value projection."""
    from tilescope.compiler.frontend.model_refs import load_model
    from tilescope.compiler.targets.catalog import load_target

    c = compile_model(
        load_model("zoo:bert-base?layers=1&batch=2"), load_target("mtia_v1"), CompileOptions(policy="greedy-l1")
    )
    name = "encoder.layer.0.attention.self.value.matmul"
    (line,) = [d for d in c.levels["layout"].meta["diagnostics"] if d.startswith(f"{name} ")]
    # placed at its producer, whose name it has: the op is not named twice
    assert line == f"{name} kept in dram: needs 18.0 KiB of L1 per core, largest free range 16.0 KiB"
    assert c.levels["layout"].tensors[name].layout.memory == "dram"


LATE_BIAS = """
func.func @forward(%x: tensor<64x128xbf16> {ttir.name = "x"}, %w: tensor<128x256xbf16> {ttir.name = "w"},
                   %b: tensor<256xbf16> {ttir.name = "b"}) -> tensor<64x256xbf16> {
  %0 = "ttir.matmul"(%x, %w) : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16> loc("mm")
  %1 = "ttir.reshape"(%b) <{shape = [1 : i32, 256 : i32]}> : (tensor<256xbf16>) -> tensor<1x256xbf16> loc("b2d")
  %2 = "ttir.add"(%0, %1) : (tensor<64x256xbf16>, tensor<1x256xbf16>) -> tensor<64x256xbf16> loc("bias")
  return %2 : tensor<64x256xbf16>
}
"""


def test_a_bias_produced_after_the_matmul_is_not_fused_into_it(wormhole):
    # fusing would make the matmul read b2d before b2d runs
    c = compile_model(import_mlir(LATE_BIAS, "late.mlir"), wormhole)
    assert [op.name for op in c.levels["graph"].ops] == ["mm", "b2d", "bias"]
    for level in ("graph", "layout", "kernel"):
        import_mlir(c.mlir(level), level)  # every value is defined before use


EMBED = """
func.func @forward(%ids: tensor<1x32xui32> {ttir.name = "ids"}, %table: tensor<128256x2048xbf16> {ttir.name = "table"}) -> tensor<1x32x2048xbf16> {
  %0 = "ttir.embedding"(%ids, %table) : (tensor<1x32xui32>, tensor<128256x2048xbf16>) -> tensor<1x32x2048xbf16> loc("embed")
  return %0 : tensor<1x32x2048xbf16>
}
"""


def test_a_lookup_reads_the_rows_it_gathers_not_its_whole_table(wormhole):
    kernel = compile_model(import_mlir(EMBED, "e.mlir"), wormhole).kernel.op("embed").meta["kernel"]
    table = sum(t.bytes * len(g.cores) for g in kernel.groups for t in g.reads if t.tensor == "table")
    written = sum(t.bytes * len(g.cores) for g in kernel.groups for t in g.writes)
    assert table == written == 64 * 2048  # 1x32x2048 bf16: 64 tiles of 2 KiB, not 500 MB of table


def test_moving_a_greedy_sharded_output_to_dram_unshards_it(wormhole):
    c = compile_model(import_mlir(PERMUTE, "p.mlir"), wormhole, CompileOptions([parse_item("e=dram")], "greedy-l1"))
    assert c.override_outcomes[0].status == "applied"
    layout = c.levels["layout"].tensors["e"].layout
    assert (layout.memory, layout.memory_layout) == ("dram", "interleaved")


def test_streaming_buffers_shrink_to_fit_a_small_local_memory():
    from tilescope.compiler.targets.catalog import load_target

    mtia = load_target("mtia_v1")  # 128 KiB per PE
    c = compile_model(
        import_mlir(PERMUTE.replace("256x256", "4096x4096"), "p.mlir"), mtia, CompileOptions(policy="greedy-l1")
    )
    assert c.levels["kernel"].meta.get("diagnostics", []) == []
    for op in c.kernel.ops:
        assert op.meta["l1_bytes"] <= mtia.core_memory.capacity_bytes
