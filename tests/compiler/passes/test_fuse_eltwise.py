"""fuse-eltwise: bias adds and activations fused into the op making their input, where the target
fuses them and nothing else reads that input."""

import dataclasses

import pytest

from tilescope.compiler.passes.const_eval import ConstEval
from tilescope.compiler.passes.fuse_eltwise import FuseEltwise

from .golden import lines, run

FORK = """
func.func @f(%x: tensor<64x128xbf16> {ttir.name = "x"}, %w: tensor<128x256xbf16> {ttir.name = "w"},
             %b: tensor<256xbf16> {ttir.name = "b"}) -> (tensor<64x256xbf16>, tensor<64x256xbf16>) {
  %0 = "ttir.matmul"(%x, %w) : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16> loc("mm")
  %1 = "ttir.add"(%0, %b) : (tensor<64x256xbf16>, tensor<256xbf16>) -> tensor<64x256xbf16> loc("bias")
  %2 = "ttir.gelu"(%1) : (tensor<64x256xbf16>) -> tensor<64x256xbf16> loc("act")
  %3 = "ttir.exp"(%2) : (tensor<64x256xbf16>) -> tensor<64x256xbf16> loc("exp")
  %4 = "ttir.exp"(%2) : (tensor<64x256xbf16>) -> tensor<64x256xbf16> loc("exp2")
  return %3, %4 : tensor<64x256xbf16>, tensor<64x256xbf16>
}
"""

ELTWISE_HOST = """
func.func @f(%x: tensor<64x64xf32> {ttir.name = "x"}, %y: tensor<64x64xf32> {ttir.name = "y"}) -> tensor<64x64xbf16> {
  %0 = "ttir.add"(%x, %y) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("sum")
  %1 = "ttir.relu"(%0) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("act")
  %2 = "ttir.typecast"(%1) : (tensor<64x64xf32>) -> tensor<64x64xbf16> loc("cast")
  return %2 : tensor<64x64xbf16>
}
"""

LATE_BIAS = """
func.func @f(%x: tensor<64x128xbf16> {ttir.name = "x"}, %w: tensor<128x256xbf16> {ttir.name = "w"},
             %b: tensor<256xbf16> {ttir.name = "b"}) -> tensor<64x256xbf16> {
  %0 = "ttir.matmul"(%x, %w) : (tensor<64x128xbf16>, tensor<128x256xbf16>) -> tensor<64x256xbf16> loc("mm")
  %1 = "ttir.reshape"(%b) <{shape = [1 : i32, 256 : i32]}> : (tensor<256xbf16>) -> tensor<1x256xbf16> loc("b2d")
  %2 = "ttir.add"(%0, %1) : (tensor<64x256xbf16>, tensor<1x256xbf16>) -> tensor<64x256xbf16> loc("bias")
  return %2 : tensor<64x256xbf16>
}
"""


def _weights_times(bias_kind: str) -> str:
    """A product of two weights, plus a bias that is a weight too or an input of every step."""
    return f"""
func.func @f(%w1: tensor<64x64xf32> {{ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w1"}},
             %w2: tensor<64x64xf32> {{ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w2"}},
             %b: tensor<64xf32> {{ttcore.argument_type = #ttcore.argument_type<{bias_kind}>, ttir.name = "b"}}) -> tensor<64x64xf32> {{
  %0 = "ttir.matmul"(%w1, %w2) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("ww")
  %1 = "ttir.add"(%0, %b) : (tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32> loc("plus_b")
  return %1 : tensor<64x64xf32>
}}
"""


def test_a_bias_and_an_activation_fuse_into_the_matmul_up_to_a_fork(wormhole):
    graph = run(FORK, FuseEltwise(wormhole))
    # the activation has two readers: neither exp can take its place
    assert lines(graph) == [
        "mm = matmul(x, w, b) {fused=('bias', 'act')}",
        "exp = exp(act)",
        "exp2 = exp(act)",
    ]
    mm = graph.op("mm")
    assert mm.outputs == ["act"] and mm.source == ("mm", "bias", "act") and mm.attrs["fused_kinds"] == ("add", "gelu")
    assert "mm" not in graph.tensors  # the matmul's own result no longer exists


def test_a_bias_made_after_the_matmul_is_not_fused_into_it(wormhole):
    """The fused matmul would read b2d before b2d is made (the verifier's dataflow-order rule)."""
    assert lines(run(LATE_BIAS, FuseEltwise(wormhole))) == [
        "mm = matmul(x, w)",
        "b2d = reshape(b)",
        "bias = add(mm, b2d)",
    ]


def test_an_activation_fuses_into_an_eltwise_op_and_a_cast_fuses_nowhere(wormhole):
    assert lines(run(ELTWISE_HOST, FuseEltwise(wormhole))) == [
        "sum = add(x, y) {fused=('act',)}",
        "cast = typecast(act)",
    ]


@pytest.mark.parametrize(
    "bias_kind, expected",
    [
        ("parameter", ["ww = matmul(w1, w2, b) {const_eval=True, fused=('plus_b',)}"]),
        ("input", ["ww = matmul(w1, w2) {const_eval=True}", "plus_b = add(ww, b)"]),
    ],
)
def test_work_at_load_time_and_work_every_step_do_not_fuse(wormhole, bias_kind, expected):
    assert lines(run(_weights_times(bias_kind), ConstEval(), FuseEltwise(wormhole))) == expected


def test_a_target_that_fuses_nothing_keeps_every_op(wormhole):
    no_fusion = dataclasses.replace(wormhole, fusion={"activation": False, "bias": False})
    assert [line.split(" = ")[0] for line in lines(run(FORK, FuseEltwise(no_fusion)))] == [
        "mm",
        "bias",
        "act",
        "exp",
        "exp2",
    ]


THROUGH_RESHAPE = """
func.func @f(%x: tensor<128x128xbf16> {ttir.name = "x"},
             %w: tensor<128x256xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w"},
             %b: tensor<256xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "b"}) -> tensor<2x64x256xbf16> {
  %0 = "ttir.matmul"(%x, %w) : (tensor<128x128xbf16>, tensor<128x256xbf16>) -> tensor<128x256xbf16> loc("mm")
  %1 = "ttir.reshape"(%0) <{shape = [2 : i32, 64 : i32, 256 : i32]}> : (tensor<128x256xbf16>) -> tensor<2x64x256xbf16> loc("unflat")
  %2 = "ttir.reshape"(%b) <{shape = [1 : i32, 1 : i32, 256 : i32]}> : (tensor<256xbf16>) -> tensor<1x1x256xbf16> loc("b3d")
  %3 = "ttir.add"(%1, %2) : (tensor<2x64x256xbf16>, tensor<1x1x256xbf16>) -> tensor<2x64x256xbf16> loc("bias")
  %4 = "ttir.gelu"(%3) : (tensor<2x64x256xbf16>) -> tensor<2x64x256xbf16> loc("act")
  return %4 : tensor<2x64x256xbf16>
}
"""


def test_a_bias_and_an_activation_fuse_through_a_reshape_keeping_the_columns(wormhole):
    """A matmul on flattened rows, unflattened, then its bias and activation (every transformer's
    linear layer as exported): both fuse into the matmul, whose bias, reshaped at load time, moves
    before it; the reshape makes the activation's result."""
    graph = run(THROUGH_RESHAPE, ConstEval(), FuseEltwise(wormhole))
    assert lines(graph) == [
        "b3d = reshape(b) {const_eval=True}",
        "mm = matmul(x, w, b3d) {fused=('bias', 'act')}",
        "unflat = reshape(mm)",
    ]
    assert graph.op("unflat").outputs == ["act"] and graph.op("mm").attrs["fused_kinds"] == ("add", "gelu")
    assert "unflat" not in graph.tensors  # the reshape's own result no longer exists


def test_a_bias_through_a_reshape_moving_the_columns_is_not_fused(wormhole):
    """[128, 256] read as [2, 64, 256] keeps each column's bias; as [128, 2, 128] it would not."""
    moved = THROUGH_RESHAPE.replace("2 : i32, 64 : i32, 256 : i32", "128 : i32, 2 : i32, 128 : i32")
    moved = moved.replace("tensor<2x64x256xbf16>", "tensor<128x2x128xbf16>")
    moved = moved.replace("shape = [1 : i32, 1 : i32, 256 : i32]", "shape = [1 : i32, 1 : i32, 128 : i32]")
    moved = moved.replace("%b: tensor<256xbf16>", "%b: tensor<128xbf16>").replace(
        "(tensor<256xbf16>)", "(tensor<128xbf16>)"
    )
    moved = moved.replace("tensor<1x1x256xbf16>", "tensor<1x1x128xbf16>")
    ops = lines(run(moved, ConstEval(), FuseEltwise(wormhole)))
    assert "bias = add(unflat, b3d) {fused=('act',)}" in ops and ops[0] == "mm = matmul(x, w)"
