from tilescope.compiler.ir.meta import CANONICALIZED, Dropped
from tilescope.compiler.passes.fold_transposes import FoldTransposes
from tilescope.compiler.analysis.matrix_dims import gemm_dims

from .golden import lines, run

LINEAR = """
func.func @f(%x: tensor<32x2048xbf16> {ttir.name = "x"},
             %w: tensor<512x2048xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w"}) -> tensor<32x512xbf16> {
  %wt = "ttir.permute"(%w) <{permutation = array<i64: 1, 0>}> : (tensor<512x2048xbf16>) -> tensor<2048x512xbf16> loc("w.transpose")
  %y = "ttir.dot_general"(%x, %wt) <{batch_dims_lhs = array<i64>, batch_dims_rhs = array<i64>, contract_dims_lhs = array<i64: 1>, contract_dims_rhs = array<i64: 0>}> : (tensor<32x2048xbf16>, tensor<2048x512xbf16>) -> tensor<32x512xbf16> loc("y")
  return %y : tensor<32x512xbf16>
}
"""

KEYS = """
func.func @f(%q: tensor<2x4x8x64xf32> {ttir.name = "q"}, %k: tensor<2x4x16x64xf32> {ttir.name = "k"}) -> (tensor<2x4x8x16xf32>, tensor<2x4x64x16xf32>) {
  %kt = "ttir.permute"(%k) <{permutation = array<i64: 0, 1, 3, 2>}> : (tensor<2x4x16x64xf32>) -> tensor<2x4x64x16xf32> loc("k.transpose")
  %s = "ttir.dot_general"(%q, %kt) <{batch_dims_lhs = array<i64: 0, 1>, batch_dims_rhs = array<i64: 0, 1>, contract_dims_lhs = array<i64: 3>, contract_dims_rhs = array<i64: 2>}> : (tensor<2x4x8x64xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x8x16xf32> loc("scores")
  return %s, %kt : tensor<2x4x8x16xf32>, tensor<2x4x64x16xf32>
}
"""

SWAPPED_FREE = """
func.func @f(%x: tensor<4x8x16xf32> {ttir.name = "x"}, %w: tensor<16x3x5xf32> {ttir.name = "w"}) -> tensor<4x8x5x3xf32> {
  %wp = "ttir.permute"(%w) <{permutation = array<i64: 0, 2, 1>}> : (tensor<16x3x5xf32>) -> tensor<16x5x3xf32> loc("w.permute")
  %y = "ttir.dot_general"(%x, %wp) <{batch_dims_lhs = array<i64>, batch_dims_rhs = array<i64>, contract_dims_lhs = array<i64: 2>, contract_dims_rhs = array<i64: 0>}> : (tensor<4x8x16xf32>, tensor<16x5x3xf32>) -> tensor<4x8x5x3xf32> loc("y")
  return %y : tensor<4x8x5x3xf32>
}
"""


def test_a_weight_transpose_becomes_transpose_b_and_goes():
    graph = run(LINEAR, FoldTransposes())
    assert lines(graph) == [
        "y = matmul(x, w) {contract_dims_lhs=array<i64: 1>, contract_dims_rhs=array<i64: 1>, transpose_b=true}"
    ]
    assert gemm_dims(graph, graph.op("y")) == (32, 2048, 512)  # the same GEMM as before
    assert graph.op("y").source == ("y", "w.transpose")  # where the transpose went
    assert Dropped("w.transpose", "folded into the matmul reading it") in graph.meta[CANONICALIZED]


def test_a_transpose_another_op_reads_is_folded_but_kept():
    graph = run(KEYS, FoldTransposes())
    assert lines(graph) == [
        "k.transpose = permute(k) {permutation=array<i64: 0, 1, 3, 2>}",
        "scores = matmul(q, k) {contract_dims_lhs=array<i64: 3>, contract_dims_rhs=array<i64: 3>, transpose_b=true}",
    ]


def test_a_permute_that_reorders_free_dims_stays():
    """Folding it would change the result's dims order: the matmul keeps reading the permute."""
    graph = run(SWAPPED_FREE, FoldTransposes())
    assert [line.split(" {")[0] for line in lines(graph)] == ["w.permute = permute(w)", "y = matmul(x, w.permute)"]
