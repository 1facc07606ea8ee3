"""The printer: any level as MLIR text that MLIR's parser reads back."""

from __future__ import annotations

from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module
from tilescope.compiler.pipeline.stages import compile_model

REPLICATED = """
module @m attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["model"=2]>
  func.func @main(%x: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}) -> tensor<32x64xf32> {
    %y = stablehlo.exponential %x : tensor<32x64xf32>
    %z = sdy.sharding_constraint %y <@mesh, [{}, {}]> : tensor<32x64xf32>
    return %z : tensor<32x64xf32>
  }
}
"""


def test_a_constraint_over_no_mesh_axes_prints_an_empty_list_that_parses(wormhole):
    compilation = compile_model(import_mlir(REPLICATED, "replicated.mlir"), wormhole)
    assert compilation.levels["graph"].op("sharding_constraint_0").attrs["axes"] == ()
    text = compilation.mlir("graph")
    assert '"ts.sharding_constraint"(%0) {axes = [], sharding = ' in text
    parse_module(text, "graph")
