"""plan-memory: an L1 address for every tensor in a core's memory, by liveness, first fit from the
bottom; and check-l1, at the kernel level: each op's circular buffers beside the live tensors."""

from tilescope.compiler.ir.meta import DIAGNOSTICS, L1_BYTES, L1_LIVE, L1_PEAK
from tilescope.compiler.analysis.l1_usage import L1Tensor
from tilescope.overrides import parse_item

from .golden import printed, through

LIVENESS = """
func.func @f(%x: tensor<256x256xbf16> {ttir.name = "x"}) -> tensor<256x256xbf16> {
  %a = "ttir.exp"(%x) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("a")
  %b = "ttir.exp"(%a) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("b")
  %c = "ttir.add"(%a, %b) : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("c")
  %d = "ttir.exp"(%c) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("d")
  %e = "ttir.add"(%d, %c) : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e")
  return %e : tensor<256x256xbf16>
}
"""


GOLDEN_LIVENESS = r"""module @"golden" attributes {ts.level = "layout"} {
  func.func @forward(%arg0: tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>> {ttir.name = "x"}) -> (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>) {
    %0 = "ts.exp"(%arg0) {grid = array<i64: 8, 8>, ts.from = ["a"]} : (tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 1x1, bf16, tile 32x32>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x0>> loc("a")
    %1 = "ts.exp"(%0) {grid = array<i64: 8, 8>, ts.from = ["b"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x0>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x800>> loc("b")
    %2 = "ts.add"(%0, %1) {grid = array<i64: 8, 8>, ts.from = ["c"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x0>>, tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x800>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x1000>> loc("c")
    %3 = "ts.exp"(%2) {grid = array<i64: 8, 8>, ts.from = ["d"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x1000>>) -> tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x0>> loc("d")
    %4 = "ts.add"(%3, %2) {grid = array<i64: 8, 8>, ts.from = ["e"]} : (tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x0>>, tensor<256x256xbf16, #ts.layout<l1, block_sharded, grid 8x8, bf16, tile 32x32, addr 0x1000>>) -> tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>> loc("e")
    return %4 : tensor<256x256xbf16, #ts.layout<dram, interleaved, grid 8x8, bf16, tile 32x32>>
  }
}
"""


def test_tensors_live_together_get_disjoint_addresses_and_a_freed_range_is_taken_again(wormhole):
    given, graph = through(LIVENESS, wormhole, "plan-memory", policy="greedy-l1")
    assert {t.layout.address for t in given.tensors.values()} == {None}
    # 8x8 tiles of 2 KiB block-sharded over 8x8 cores: 2 KiB a core each. a and b are live at c,
    # so c goes above them; a and b die at c, so d takes a's range; e is returned, in DRAM
    assert printed(graph) == GOLDEN_LIVENESS
    peak = graph.meta[L1_PEAK]
    assert (peak.bytes, peak.op, peak.tensors) == (
        6144,
        "c",
        (L1Tensor("a", 2048, 0), L1Tensor("b", 2048, 2048), L1Tensor("c", 2048, 4096)),
    )
    assert [op.meta[L1_LIVE] for op in graph.ops] == [2048, 4096, 6144, 4096, 4096]


RESIDENT_A = """
func.func @f(%x: tensor<1056x704xbf16> {ttir.name = "x"}, %w: tensor<704x256xbf16> {ttir.name = "w"}) -> tensor<1056x256xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<1056x704xbf16>) -> tensor<1056x704xbf16> loc("e1")
  %1 = "ttir.matmul"(%0, %w) : (tensor<1056x704xbf16>, tensor<704x256xbf16>) -> tensor<1056x256xbf16> loc("mm")
  return %1 : tensor<1056x256xbf16>
}
"""


def test_check_l1_says_where_buffers_beside_the_live_tensors_overflow(wormhole):
    """e1's 1452 KiB result, whole on one core, fits beside the least buffers any op needs; the
    matmul's blocks of all of K need 178 KiB of buffers beside it on that core, past its 1464 KiB."""
    resident = [parse_item("e1=1x1:l1:block_sharded")]
    _, graph = through(RESIDENT_A, wormhole, "check-l1", overrides=resident)
    assert graph.meta[DIAGNOSTICS] == [] and graph.op("mm").meta[L1_BYTES] <= 1464 * 1024
    whole_k = [*resident, parse_item("mm=block#1x1x22")]
    _, graph = through(RESIDENT_A, wormhole, "check-l1", overrides=whole_k)
    overflow = "L1 overflow at mm: circular buffers 178.0 KiB + live tensors 1452.0 KiB per core > 1464 KiB"
    assert graph.meta[DIAGNOSTICS] == [overflow] and graph.warnings == [overflow]
    assert [op.meta[L1_BYTES] / 1024 for op in graph.ops] == [1460, 1452 + 178]
