"""Inputs in the other dialects real compilers emit: linalg/tensor/arith (IREE, torch-mlir) and TOSA."""

from __future__ import annotations

from tilescope.compiler.ir.meta import CANONICALIZED, Dropped
from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate

LINALG = """
func.func @forward(%a: tensor<128x256xf32>, %b: tensor<256x512xf32>, %bias: tensor<512xf32>) -> tensor<128x512xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<128x512xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<128x512xf32>) -> tensor<128x512xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<128x256xf32>, tensor<256x512xf32>) outs(%acc : tensor<128x512xf32>) -> tensor<128x512xf32>
  %init2 = tensor.empty() : tensor<128x512xf32>
  %biased = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<128x512xf32>, tensor<512xf32>) outs(%init2 : tensor<128x512xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<128x512xf32>
  %r = tensor.collapse_shape %biased [[0, 1]] : tensor<128x512xf32> into tensor<65536xf32>
  %e = tensor.expand_shape %r [[0, 1]] output_shape [128, 512] : tensor<65536xf32> into tensor<128x512xf32>
  return %e : tensor<128x512xf32>
}
"""

TOSA = """
func.func @main(%x: tensor<1x64x128xf32>, %w: tensor<1x128x256xf32>, %b: tensor<1x1x256xf32>) -> tensor<1x64x256xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x256xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x256xf32>
  %a = tosa.add %mm, %b : (tensor<1x64x256xf32>, tensor<1x1x256xf32>) -> tensor<1x64x256xf32>
  %s = tosa.sigmoid %a : (tensor<1x64x256xf32>) -> tensor<1x64x256xf32>
  return %s : tensor<1x64x256xf32>
}
"""


def test_linalg_tensor_arith(wormhole):
    c = compile_model(import_mlir(LINALG, "linalg.mlir"), wormhole)
    graph = c.levels["graph"]
    kinds = {op.name: op.kind for op in graph.ops}
    # the generic's body is an add of a row: a bias add, fused into the matmul that produces it
    assert kinds == {"constant_0": "constant", "fill_0": "constant", "matmul_0": "matmul"}
    assert graph.op("matmul_0").attrs["fused"] == ("generic_0",)
    assert graph.op("matmul_0").attrs["fused_kinds"] == ("add",)
    # the collapse and the expand back undo each other: the expand reads past the collapse, then is a no-op
    assert graph.meta[CANONICALIZED] == [
        Dropped("expand_shape_0", "no-op reshape"),
        Dropped("collapse_shape_0", "read past by the op after it"),
    ]
    assert gemm_dims(graph, graph.op("matmul_0")) == (128, 256, 512)
    # tensor.empty only gave destinations: gone; the fill of a constant is computed at compile time
    assert all("empty" not in op.name for op in graph.ops)
    assert graph.op("fill_0").attrs == {"folded": "fill"}
    assert c.warnings == []
    sim = simulate(c.kernel, wormhole)
    matmul = next(o for o in sim.ops if o.name == "matmul_0")
    assert matmul.flops == 2 * 128 * 256 * 512 + 128 * 512  # the fused add's element per output
    for level in ("graph", "layout", "kernel"):
        parse_module(c.mlir(level), level)


def test_tosa(wormhole):
    c = compile_model(import_mlir(TOSA, "tosa.mlir"), wormhole)
    graph = c.levels["graph"]
    assert [op.name for op in graph.ops] == ["const_0", "matmul_0"]
    matmul = graph.op("matmul_0")
    assert gemm_dims(graph, matmul) == (64, 128, 256)
    assert matmul.attrs["fused"] == ("add_0", "sigmoid_0")
    assert c.warnings == []
