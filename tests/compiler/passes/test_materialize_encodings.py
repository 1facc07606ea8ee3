"""materialize-encodings: each encoded matmul becomes pack -> mmt4d -> unpack with the target's
inner tiles (or an override's), an unpack packed again the same way cancels, and a pack into the
tiles a tensor already lies in is a view."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import CANCELLED_PACKS, KERNEL, PACKED_TILES, CancelledPair
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.targets.catalog import load_target

from .golden import printed, through

PARAMETER = "{ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "
FFN = f"""
func.func @f(%x: tensor<8x384x768xbf16> {{ttir.name = "x"}},
             %w1: tensor<768x3072xbf16> {PARAMETER}"w1"}},
             %w2: tensor<3072x768xbf16> {PARAMETER}"w2"}}) -> tensor<8x384x768xbf16> {{
  %h = "ttir.matmul"(%x, %w1) : (tensor<8x384x768xbf16>, tensor<768x3072xbf16>) -> tensor<8x384x3072xbf16> loc("fc1")
  %g = "ttir.gelu"(%h) : (tensor<8x384x3072xbf16>) -> tensor<8x384x3072xbf16> loc("act")
  %y = "ttir.matmul"(%g, %w2) : (tensor<8x384x3072xbf16>, tensor<3072x768xbf16>) -> tensor<8x384x768xbf16> loc("fc2")
  return %y : tensor<8x384x768xbf16>
}}
"""


def materialized(target: str, overrides=()):
    return through(FFN, load_target(target), "materialize-encodings", overrides=overrides, data_tiling=True)[1]


def test_on_avx512_each_matmul_is_pack_mmt4d_unpack_in_ieees_bf16_tiles():
    graph = materialized("x86_avx512")
    kinds = {op.name: op.kind for op in graph.ops}
    assert kinds["fc1"] == kinds["fc2"] == "mmt4d"
    # bf16 on AVX-512: 16x16x2 (M0 x N0 x K0); 3072 rows of 768 into 192 x 384 tiles of 16 x 2
    assert graph.tensors["fc1.lhs_encoded"].shape == (192, 384, 16, 2)
    assert graph.tensors["fc1.rhs_encoded"].shape == (192, 384, 16, 2)  # N1 x K1 x N0 x K0
    assert graph.tensors["fc1.result_encoded"].shape == (192, 192, 16, 16)
    assert graph.op("fc1.set_encoding_lhs").attrs["inner_tiles"] == "array<i64: 16, 2>"
    assert graph.op("fc1").attrs["inner_tiles"] == "array<i64: 16, 16, 2>"
    assert graph.meta[PACKED_TILES]["fc1.lhs_encoded"] == (16, 2)
    # the result's 16 x 16 tiles are not the next LHS's 16 x 2: nothing cancels (nor does IREE)
    assert graph.meta[CANCELLED_PACKS] == []
    assert all(graph.tensors[t].encoding is None for t in graph.tensors)
    assert '"ts.mmt4d"' in printed(graph) and "tensor<192x384x16x2xbf16>" in printed(graph)


def test_on_wormhole_the_tiles_are_32x32_and_the_unpack_packed_again_cancels():
    graph = materialized("wormhole_n150")
    assert graph.tensors["fc1.lhs_encoded"].shape == (96, 24, 32, 32)
    assert graph.meta[CANCELLED_PACKS] == [CancelledPair("fc1.unset_encoding", "fc2.set_encoding_lhs")]
    # fc2 reads fc1's packed result (through the activation, fused or not) with no pack between
    fc2 = graph.op("fc2")
    assert not graph.has_op("fc2.set_encoding_lhs") and not graph.has_op("fc1.unset_encoding")
    assert graph.tensors[fc2.inputs[0]].shape == (96, 96, 32, 32)


def test_an_override_sets_a_matmuls_inner_tiles():
    graph = materialized("x86_avx512", [OpOverride("fc1", inner_tiles=(8, 8, 1), spec="fc1=inner_tiles#8x8x1")])
    assert graph.tensors["fc1.lhs_encoded"].shape == (384, 768, 8, 1)
    assert graph.tensors["fc2.lhs_encoded"].shape == (192, 1536, 16, 2)  # the other keeps the target's


def test_inner_tiles_on_what_is_not_a_data_tiled_matmul_is_rejected_with_the_reason():
    target = load_target("x86_avx512")
    model = import_mlir(FFN, "ffn.mlir")
    override = OpOverride("fc1", inner_tiles=(8, 8, 1), spec="fc1=inner_tiles#8x8x1")
    (without,) = compile_model(model, target, CompileOptions((override,))).override_outcomes
    assert without.status == "rejected" and "data-tiled matmul" in without.reason
    (applied,) = compile_model(model, target, CompileOptions((override,), data_tiling=True)).override_outcomes
    assert applied.status == "applied"


@pytest.mark.parametrize(("target", "views"), [("wormhole_n150", True), ("x86_avx512", False)])
def test_a_pack_into_the_tiles_a_tensor_lies_in_runs_no_kernel(target, views):
    kernel = compile_model(import_mlir(FFN, "ffn.mlir"), load_target(target), CompileOptions(data_tiling=True)).kernel
    lhs_pack = kernel.op("fc1.set_encoding_lhs")
    # Tensix tensors lie in 32x32 tiles already; a CPU's lie row-major, and packing moves them
    assert (lhs_pack.meta[KERNEL] is None) == views
    # the weight's pack transposes its tiles on any target: work, done when the model loads
    rhs_pack = kernel.op("fc1.set_encoding_rhs")
    assert rhs_pack.meta[KERNEL] is not None and rhs_pack.attrs.get("const_eval")


TRANSPOSED_NEXT = """
func.func @f(%a: tensor<256x256xbf16>, %w1: tensor<256x256xbf16>, %w2: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %h = "ttir.matmul"(%a, %w1) : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("mm0")
  %y = "ttir.matmul"(%h, %w2) {transpose_a = true} : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("mm1")
  return %y : tensor<256x256xbf16>
}
"""


def test_a_result_the_next_matmul_reads_transposed_is_not_cancelled():
    """The tiles of mm0's result are not those of the transposed LHS mm1 packs, though shaped alike."""
    graph = through(TRANSPOSED_NEXT, load_target("wormhole_n150"), "materialize-encodings", data_tiling=True)[1]
    assert graph.meta[CANCELLED_PACKS] == []
    assert graph.op("mm1.set_encoding_lhs").attrs["transposed"] is True


def test_the_ops_between_a_cancelled_pair_keep_the_inner_tile():
    """The activation between fc1 and fc2, on fc1's packed result: stored in its 16x16 tiles, so no
    conversion to the target's 32x32 appears around it."""
    tiles = [OpOverride(op, inner_tiles=(16, 16, 16), spec=f"{op}=inner_tiles#16x16x16") for op in ("fc1", "fc2")]
    model = import_mlir(FFN, "ffn.mlir")
    compilation = compile_model(model, load_target("wormhole_n150"), CompileOptions(tiles, data_tiling=True))
    layout = compilation.levels["layout"]
    assert layout.meta[CANCELLED_PACKS] == [CancelledPair("fc1.unset_encoding", "fc2.set_encoding_lhs")]
    assert not [op.name for op in layout.ops if op.kind == "to_layout"]


def test_a_broadcast_lhs_is_left_unencoded_and_names_are_never_taken_twice():
    text = """
func.func @f(%a: tensor<64x128xbf16>, %b: tensor<4x128x96xbf16>, %c: tensor<32x64xbf16>, %w: tensor<64x64xbf16>)
    -> (tensor<4x64x96xbf16>, tensor<32x64xbf16>) {
  %y = "ttir.matmul"(%a, %b) : (tensor<64x128xbf16>, tensor<4x128x96xbf16>) -> tensor<4x64x96xbf16> loc("bcast")
  %r = "ttir.relu"(%c) : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("mm.lhs_encoded")
  %z = "ttir.matmul"(%r, %w) : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16> loc("mm")
  return %y, %z : tensor<4x64x96xbf16>, tensor<32x64xbf16>
}
"""
    graph = through(text, load_target("x86_avx512"), "set-encodings", data_tiling=True)[1]
    assert graph.op("bcast").inputs == ["arg0", "arg1"]  # its LHS would be packed once per matrix of b
    setter = graph.op("mm.set_encoding_lhs")
    assert setter.inputs == ["mm.lhs_encoded"] and setter.outputs == ["mm.lhs_encoded#1"]


def test_on_a_system_of_several_devices_data_tiling_is_said_to_be_not_modelled():
    _, graph = through(FFN, load_target("t3k"), "set-encodings", data_tiling=True)
    assert not any(op.kind == "set_encoding" for op in graph.ops)
    assert any("data-tiling on 8 devices is not modelled yet" in w for w in graph.warnings)
