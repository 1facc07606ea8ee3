from tilescope.compiler.ir.meta import CONST_EVAL
from tilescope.compiler.passes.const_eval import ConstEval

from .golden import lines, run

WEIGHTS = """
func.func @f(%x: tensor<32x64xbf16> {ttcore.argument_type = #ttcore.argument_type<input>, ttir.name = "x"},
             %w: tensor<64x64xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w"},
             %cache: tensor<4x64xbf16> {ttcore.argument_type = #ttcore.argument_type<input>, ttir.name = "cache"},
             %b: tensor<64xbf16> {ttir.name = "b"}) -> tensor<32x64xbf16> {
  %wt = "ttir.permute"(%w) <{permutation = array<i64: 1, 0>}> : (tensor<64x64xbf16>) -> tensor<64x64xbf16> loc("w.transpose")
  %wc = "ttir.typecast"(%wt) : (tensor<64x64xbf16>) -> tensor<64x64xf32> loc("w.typecast")
  %xc = "ttir.typecast"(%x) : (tensor<32x64xbf16>) -> tensor<32x64xf32> loc("x.typecast")
  %y = "ttir.matmul"(%xc, %wc) : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("y")
  %yc = "ttir.typecast"(%y) : (tensor<32x64xf32>) -> tensor<32x64xbf16> loc("y.typecast")
  %c = "ttir.typecast"(%cache) : (tensor<4x64xbf16>) -> tensor<4x64xf32> loc("cache.typecast")
  %bb = "ttir.typecast"(%b) : (tensor<64xbf16>) -> tensor<64xf32> loc("b.typecast")
  return %yc : tensor<32x64xbf16>
}
"""


def test_work_on_parameters_only_is_marked_load_time():
    graph = run(WEIGHTS, ConstEval())
    load_time = [op.name for op in graph.ops if op.attrs.get("const_eval")]
    # the weight's transpose and cast; not the input's, the cache's (an input: it changes every
    # step) or the unmarked argument's (nothing says it is loaded once)
    assert load_time == ["w.transpose", "w.typecast"] == graph.meta[CONST_EVAL]
    assert graph.tensors["w.typecast"].is_parameter and not graph.tensors["y"].is_parameter
    assert lines(graph)[:2] == [
        "w.transpose = permute(w) {permutation=array<i64: 1, 0>, const_eval=True}",
        "w.typecast = typecast(w.transpose) {const_eval=True}",
    ]


def test_the_argument_kind_is_read_from_the_export():
    graph = run(WEIGHTS)
    assert {t: graph.tensors[t].is_parameter for t in graph.inputs} == {
        "x": False,
        "w": True,
        "cache": False,
        "b": False,
    }
