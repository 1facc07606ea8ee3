"""set-encodings: with data-tiling, a matmul's operands and result get IREE's matmul encodings,
and the weight's encoding is load-time work."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import CONST_EVAL
from tilescope.compiler.passes.const_eval import ConstEval
from tilescope.compiler.targets.catalog import load_target

from .golden import lines, printed, through

LINEAR = """
func.func @f(%x: tensor<8x384x768xbf16> {ttir.name = "x"},
             %w: tensor<768x3072xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w"})
             -> tensor<8x384x3072xbf16> {
  %y = "ttir.matmul"(%x, %w) : (tensor<8x384x768xbf16>, tensor<768x3072xbf16>) -> tensor<8x384x3072xbf16> loc("fc")
  %g = "ttir.gelu"(%y) : (tensor<8x384x3072xbf16>) -> tensor<8x384x3072xbf16> loc("act")
  return %g : tensor<8x384x3072xbf16>
}
"""

SCORES = """
func.func @f(%q: tensor<2x12x128x64xbf16> {ttir.name = "q"}, %k: tensor<2x12x64x128xbf16> {ttir.name = "k"})
             -> tensor<2x12x128x128xbf16> {
  %s = "ttir.matmul"(%q, %k) : (tensor<2x12x128x64xbf16>, tensor<2x12x64x128xbf16>) -> tensor<2x12x128x128xbf16> loc("scores")
  return %s : tensor<2x12x128x128xbf16>
}
"""


def test_a_matmuls_operands_and_result_are_encoded_around_it():
    _, graph = through(LINEAR, load_target("x86_avx512"), "set-encodings", data_tiling=True)
    assert lines(graph) == [
        "fc.set_encoding_lhs = set_encoding(x)",
        "fc.set_encoding_rhs = set_encoding(w)",
        "fc = matmul(fc.lhs_encoded, fc.rhs_encoded) {fused=('act',)}",
        "fc.unset_encoding = unset_encoding(fc.result_encoded)",
    ]
    # the LHS's leading dims fold into M, as IREE collapses them: a 3072 x 3072 x 768 matmul
    assert graph.tensors["fc.lhs_encoded"].encoding == (
        "#iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [bf16, bf16, bf16], "
        "user_indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
        "affine_map<(d0, d1, d2) -> (d0, d1)>], iteration_sizes = [3072, 3072, 768]>"
    )
    assert "operand_index = 2 : index" in graph.tensors["fc.result_encoded"].encoding
    # the consumers still read the (fused) matmul's result by its name
    assert graph.op("fc.unset_encoding").outputs == graph.outputs == ["act"]
    assert graph.tensors["act"].encoding is None
    assert "tensor<768x3072xbf16, #iree_encoding.encoding<operand_index = 1 : index" in printed(graph)


def test_the_weights_encoding_is_load_time_work_and_the_activations_is_not():
    # const-eval runs again after set-encodings (`through` would stop at its first run)
    _, graph = through(LINEAR, load_target("x86_avx512"), "set-encodings", data_tiling=True)
    graph = ConstEval().run(graph)
    assert graph.meta[CONST_EVAL] == ["fc.set_encoding_rhs"]
    assert graph.tensors["fc.rhs_encoded"].is_parameter and not graph.tensors["fc.lhs_encoded"].is_parameter


def test_a_batched_matmul_keeps_its_batch():
    _, graph = through(SCORES, load_target("x86_avx512"), "set-encodings", data_tiling=True)
    encoding = graph.tensors["scores.lhs_encoded"].encoding
    assert "iteration_sizes = [24, 128, 128, 64]" in encoding
    assert "affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>" in encoding


def test_without_data_tiling_there_is_no_such_pass():
    _, graph = through(LINEAR, load_target("x86_avx512"), "const-eval")
    assert not any(op.kind == "set_encoding" for op in graph.ops)
    with pytest.raises(ValueError, match="no pass 'set-encodings'"):
        through(LINEAR, load_target("x86_avx512"), "set-encodings")
