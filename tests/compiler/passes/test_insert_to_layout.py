"""insert-to-layout: a `to_layout` op before each operand its consumer cannot read as it is laid
out, or that an operand override asks for in another layout; it runs on the consumer's grid."""

from tilescope.compiler.ir.meta import KERNEL, OPERAND_OF, OperandOf
from tilescope.overrides import parse_item

from .golden import printed, through

EXP_PERMUTE_EXP = """
func.func @f(%x: tensor<256x256xbf16> {ttir.name = "x"}) -> tensor<256x256xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e")
  %1 = "ttir.permute"(%0) <{permutation = array<i64: 1, 0>}> : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("p")
  %2 = "ttir.exp"(%1) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e2")
  return %2 : tensor<256x256xbf16>
}
"""


def _inserted(wormhole, item: str):
    given, graph = through(EXP_PERMUTE_EXP, wormhole, "insert-to-layout", overrides=[parse_item(item)])
    assert [op.name for op in given.ops] == ["e", "p", "e2"]
    return graph


def test_nothing_is_inserted_where_every_op_reads_its_operands_as_they_are(wormhole):
    given, graph = through(EXP_PERMUTE_EXP, wormhole, "insert-to-layout")
    assert printed(graph) == printed(given)


GOLDEN_SHARDED_INTO_A_PERMUTE = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}) -> (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.exp"(%arg0) {grid = array<i64: 8, 8>, ts.from = ["e"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32>> loc("e")
    %1 = "ts.to_layout"(%0) {grid = array<i64: 8, 8>, ts.from = ["p"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> loc("p.in0.to_layout")
    %2 = "ts.permute"(%1) {grid = array<i64: 8, 8>, permutation = "array<i64: 1, 0>", ts.from = ["p"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("p")
    %3 = "ts.exp"(%2) {grid = array<i64: 8, 8>, ts.from = ["e2"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e2")
    return %3 : tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_a_sharded_result_is_moved_to_dram_for_a_permute_that_reads_interleaved_tensors_only(wormhole):
    graph = _inserted(wormhole, "e=8x8:l1:block_sharded")
    assert graph.op("p.in0.to_layout").meta[OPERAND_OF] == OperandOf("p", 0)
    assert printed(graph) == GOLDEN_SHARDED_INTO_A_PERMUTE
    _, kernels = through(EXP_PERMUTE_EXP, wormhole, "split-kernels", overrides=[parse_item("e=8x8:l1:block_sharded")])
    moved = kernels.op("p.in0.to_layout").meta[KERNEL]
    assert {t.path for group in moved.groups for t in group.writes} == {"dram"}  # its cores write to DRAM


GOLDEN_OPERAND_OVERRIDE = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}) -> (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.exp"(%arg0) {grid = array<i64: 8, 8>, ts.from = ["e"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e")
    %1 = "ts.permute"(%0) {grid = array<i64: 8, 8>, permutation = "array<i64: 1, 0>", ts.from = ["p"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("p")
    %2 = "ts.to_layout"(%1) {grid = array<i64: 8, 8>, ts.from = ["e2"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32>> loc("e2.in0.to_layout")
    %3 = "ts.exp"(%2) {grid = array<i64: 8, 8>, ts.from = ["e2"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e2")
    return %3 : tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_an_operand_override_converts_that_operand_on_the_consumers_grid(wormhole):
    graph = _inserted(wormhole, "e2=operand#0:8x8:l1:block_sharded")
    assert printed(graph) == GOLDEN_OPERAND_OVERRIDE


GOLDEN_TILIZED = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}) -> (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.exp"(%arg0) {grid = array<i64: 8, 8>, ts.from = ["e"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e")
    %1 = "ts.permute"(%0) {grid = array<i64: 8, 8>, permutation = "array<i64: 1, 0>", ts.from = ["p"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, row_major>> loc("p")
    %2 = "ts.to_layout"(%1) {grid = array<i64: 8, 8>, ts.from = ["e2"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, row_major>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e2.in0.to_layout")
    %3 = "ts.exp"(%2) {grid = array<i64: 8, 8>, ts.from = ["e2"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e2")
    return %3 : tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_a_row_major_result_is_tilized_for_an_eltwise_reader(wormhole):
    graph = _inserted(wormhole, "p=row_major")
    assert printed(graph) == GOLDEN_TILIZED
