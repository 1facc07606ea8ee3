from tilescope.compiler.ir.meta import CANONICALIZED, Dropped
from tilescope.compiler.passes.fold_broadcasts import FoldBroadcasts

from .golden import lines, run

BIAS = """
func.func @f(%x: tensor<8x384x768xbf16> {ttir.name = "x"}, %b: tensor<1x1x768xbf16> {ttir.name = "b"}) -> (tensor<8x384x768xbf16>, tensor<8x384x768xbf16>) {
  %bb = "ttir.broadcast"(%b) <{broadcast_dimensions = array<i64: 8, 384, 1>}> : (tensor<1x1x768xbf16>) -> tensor<8x384x768xbf16> loc("b.broadcast")
  %y = "ttir.add"(%x, %bb) : (tensor<8x384x768xbf16>, tensor<8x384x768xbf16>) -> tensor<8x384x768xbf16> loc("y")
  %z = "ttir.multiply"(%bb, %y) : (tensor<8x384x768xbf16>, tensor<8x384x768xbf16>) -> tensor<8x384x768xbf16> loc("z")
  return %y, %z : tensor<8x384x768xbf16>, tensor<8x384x768xbf16>
}
"""

INTO_A_RESHAPE = """
func.func @f(%k: tensor<2x8x1x16x64xbf16> {ttir.name = "k"}) -> tensor<2x32x16x64xbf16> {
  %kb = "ttir.broadcast"(%k) <{broadcast_dimensions = array<i64: 1, 1, 4, 1, 1>}> : (tensor<2x8x1x16x64xbf16>) -> tensor<2x8x4x16x64xbf16> loc("k.broadcast")
  %kr = "ttir.reshape"(%kb) <{shape = [2 : i32, 32 : i32, 16 : i32, 64 : i32]}> : (tensor<2x8x4x16x64xbf16>) -> tensor<2x32x16x64xbf16> loc("k.reshape")
  return %kr : tensor<2x32x16x64xbf16>
}
"""


def test_a_broadcast_every_reader_broadcasts_itself_goes():
    graph = run(BIAS, FoldBroadcasts())
    assert lines(graph) == ["y = add(x, b)", "z = multiply(b, y)"]
    assert graph.op("y").source == ("y", "b.broadcast")
    assert graph.meta[CANONICALIZED] == [
        Dropped("b.broadcast", "broadcast folded into the element-wise ops reading it")
    ]


def test_a_broadcast_into_a_reshape_stays():
    graph = run(INTO_A_RESHAPE, FoldBroadcasts())
    assert lines(graph) == ["k.broadcast = broadcast(k)", "k.reshape = reshape(k.broadcast)"]
