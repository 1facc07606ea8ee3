"""canonicalize: no-ops dropped, chains of reshapes and casts shortened, work on constants folded."""

from tilescope.compiler.ir.meta import CANONICALIZED, Dropped
from tilescope.compiler.passes.canonicalize import Canonicalize

from .golden import lines, run

CHAINS = """
func.func @f(%x: tensor<32x2048xbf16> {ttir.name = "x"}) -> (tensor<32x1x2048xbf16>, tensor<32x2048xbf16>, tensor<32x2048xf32>) {
  %a = "ttir.reshape"(%x) <{shape = [1 : i32, 32 : i32, 2048 : i32]}> : (tensor<32x2048xbf16>) -> tensor<1x32x2048xbf16> loc("r0")
  %b = "ttir.reshape"(%a) <{shape = [32 : i32, 1 : i32, 2048 : i32]}> : (tensor<1x32x2048xbf16>) -> tensor<32x1x2048xbf16> loc("r1")
  %c = "ttir.typecast"(%x) : (tensor<32x2048xbf16>) -> tensor<32x2048xf32> loc("up")
  %d = "ttir.typecast"(%c) : (tensor<32x2048xf32>) -> tensor<32x2048xbf16> loc("down")
  %e = "ttir.typecast"(%d) : (tensor<32x2048xbf16>) -> tensor<32x2048xf32> loc("up_again")
  return %b, %d, %e : tensor<32x1x2048xbf16>, tensor<32x2048xbf16>, tensor<32x2048xf32>
}
"""

NARROWING = """
func.func @f(%x: tensor<64xf32> {ttir.name = "x"}) -> tensor<64xf32> {
  %a = "ttir.typecast"(%x) : (tensor<64xf32>) -> tensor<64xbf16> loc("down")
  %b = "ttir.typecast"(%a) : (tensor<64xbf16>) -> tensor<64xf32> loc("up")
  return %b : tensor<64xf32>
}
"""


def test_a_reshape_of_a_reshape_reads_the_first_input_and_a_widening_round_trip_goes():
    graph = run(CHAINS, Canonicalize())
    # r1 reads x directly (r0 had no other reader); bf16 -> f32 -> bf16 is x itself; the last
    # cast, of a value equal to x, reads x
    assert lines(graph) == ["r1 = reshape(x)", "up_again = typecast(x)"]
    assert graph.outputs == ["r1", "x", "up_again"]
    assert {d.op: d.reason for d in graph.meta[CANONICALIZED]} == {
        "down": "no-op typecast",
        "r0": "read past by the op after it",
        "up": "read past by the op after it",
    }


def test_a_narrowing_cast_and_back_is_kept():
    """f32 -> bf16 drops mantissa bits: casting back does not restore x."""
    graph = run(NARROWING, Canonicalize())
    assert lines(graph) == ["down = typecast(x)", "up = typecast(down)"]


NO_OPS = """
func.func @f(%x: tensor<32x64xbf16> {ttir.name = "x"}) -> (tensor<32x64xbf16>, tensor<32x64xbf16>) {
  %a = "ttir.reshape"(%x) <{shape = [32 : i32, 64 : i32]}> : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("same0")
  %b = "ttir.reshape"(%a) <{shape = [32 : i32, 64 : i32]}> : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("same1")
  %c = "ttir.add"(%b, %a) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("sum")
  %d = "ttir.reshape"(%c) <{shape = [32 : i32, 64 : i32]}> : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("same2")
  return %d, %b : tensor<32x64xbf16>, tensor<32x64xbf16>
}
"""


def test_no_ops_in_a_row_are_all_read_past_by_every_reader_and_the_outputs():
    graph = run(NO_OPS, Canonicalize())
    assert lines(graph) == ["sum = add(x, x)"]
    assert graph.outputs == ["sum", "x"]
    assert {d.op: d.reason for d in graph.meta[CANONICALIZED]} == {
        "same0": "no-op reshape",
        "same1": "no-op reshape",
        "same2": "no-op reshape",
    }


CONSTANTS = """
func.func @f(%x: tensor<32x64xf32> {ttir.name = "x"}) -> tensor<32x64xf32> {
  %c = "ttir.constant"() <{value = dense<1.0> : tensor<1x64xf32>}> : () -> tensor<1x64xf32> loc("c")
  %b = "ttir.broadcast"(%c) : (tensor<1x64xf32>) -> tensor<32x64xf32> loc("c.broadcast")
  %r = "ttir.reshape"(%x) <{shape = [32 : i32, 64 : i32]}> : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("same_shape")
  %p = "ttir.permute"(%r) <{permutation = array<i64: 0, 1>}> : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("identity")
  %y = "ttir.add"(%p, %b) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32> loc("y")
  %t = "ttir.typecast"(%y) : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("same_type")
  return %t : tensor<32x64xf32>
}
"""


def test_no_ops_go_and_work_on_constants_becomes_a_constant():
    graph = run(CONSTANTS, Canonicalize())
    assert lines(graph) == ["c = constant()", "c.broadcast = constant() {folded=broadcast}", "y = add(x, c.broadcast)"]
    assert graph.outputs == ["y"]  # the return read the no-op cast: it reads what the cast read
    assert graph.tensors["c.broadcast"].is_constant and not graph.tensors["y"].is_constant
    assert graph.meta[CANONICALIZED] == [
        Dropped("same_shape", "no-op reshape"),
        Dropped("identity", "no-op permute"),
        Dropped("same_type", "no-op typecast"),
    ]
