"""input -> graph: one op vocabulary; DPS empties dropped; unknown ops kept as opaque, never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.ir import opset
from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.passes.normalize import Normalize
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate

from .golden import lines, run

NAMED_DPS = str(Path(__file__).parents[2] / "data" / "named_dps.mlir")

DIALECTS = """
func.func @f(%x: tensor<32x64xf32> {ttir.name = "x"}, %w: tensor<64x64xf32> {ttir.name = "w"}) -> tensor<32x64xf32> {
  %y = "stablehlo.dot_general"(%x, %w) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("y")
  %e = "ttir.empty"() : () -> tensor<32x64xf32> loc("e")
  %z = "ttir.mul"(%y, %y, %e) : (tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32> loc("z")
  %u = "ttir.frobnicate"(%z) : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("u")
  %v = "tosa.exp"(%u) : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("v")
  return %v : tensor<32x64xf32>
}
"""

CUSTOM_CALLS = """
func.func @f(%x: tensor<32x64xf32> {ttir.name = "x"}) -> tensor<32x64xf32> {
  %s = "stablehlo.custom_call"(%x) {call_target_name = "Sharding"} : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("s")
  %k = "stablehlo.custom_call"(%s) {call_target_name = "my_kernel"} : (tensor<32x64xf32>) -> tensor<32x64xf32> loc("k")
  return %k : tensor<32x64xf32>
}
"""


def test_three_dialects_become_one_vocabulary():
    graph = run(DIALECTS)
    # the destination operand `e` goes with its empty; an op outside the vocabulary stays, opaque
    assert lines(graph) == [
        "y = matmul(x, w)",
        "z = multiply(y, y)",
        "u = opaque(z) {source_op=ttir.frobnicate}",
        "v = exp(u)",
    ]
    assert [op.source for op in graph.ops] == [("y",), ("z",), ("u",), ("v",)]
    assert "e" not in graph.tensors
    assert graph.warnings == ["ops kept as opaque (generic DRAM cost): ttir.frobnicate x1"]


def test_a_custom_call_is_what_its_target_says():
    graph = run(CUSTOM_CALLS)
    assert lines(graph) == ["s = sharding_constraint(x)", "k = opaque(s) {source_op=stablehlo.custom_call}"]


@pytest.fixture
def graph():
    return Normalize().run(load_model(NAMED_DPS).graph)


def test_dps_empties_are_dropped(graph):
    assert [op.kind for op in graph.ops] == ["add", "add", "opaque", "relu"]
    assert not any(name.startswith("empty_") for name in graph.tensors)
    for op in graph.ops[:2]:
        assert len(op.inputs) == 2 and not any(i.startswith("empty_") for i in op.inputs)
    assert graph.ops[0].inputs == ["a", "b"]


def test_unknown_op_is_kept_as_opaque_with_a_warning(graph):
    opaque = graph.op("frobnicate_0")
    assert opaque.kind == opset.OPAQUE
    assert opaque.attrs["source_op"] == "ttir.frobnicate"
    assert opaque.inputs == [graph.ops[1].name]
    assert graph.op("block.0.act").inputs == ["frobnicate_0"]
    assert len(graph.warnings) == 1
    assert "ttir.frobnicate" in graph.warnings[0] and "opaque" in graph.warnings[0]


def test_opaque_op_survives_to_the_simulator(wormhole):
    compilation = compile_model(load_model(NAMED_DPS), wormhole)
    assert "ttir.frobnicate" in " ".join(compilation.warnings)
    sim = simulate(compilation.kernel, wormhole)
    timing = {o.name: o for o in sim.ops}["frobnicate_0"]
    assert timing.kind == "opaque"
    assert timing.duration_ns > 0 and timing.bytes.get("dram", 0) > 0
    assert len(sim.ops) == 4
    parse_module(compilation.mlir("kernel"), "kernel")
    assert '"ts.opaque"' in compilation.mlir("graph")


def test_compiling_does_not_touch_the_input_level(wormhole):
    model = load_model(NAMED_DPS)
    compile_model(model, wormhole)
    assert [op.kind for op in model.graph.ops][:2] == ["tensor.empty", "ttir.add"]
    assert model.graph.level == "input"


def test_normalize_runs_on_the_level_copy_it_is_given():
    model = load_model(NAMED_DPS)
    graph = Normalize().run(model.graph.with_level("graph"))
    assert [op.kind for op in graph.ops][0] == "add"
    assert [op.kind for op in model.graph.ops][0] == "tensor.empty"


def test_aliases_and_constants():
    text = """
func.func @forward(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %c = "ttir.constant"() : () -> tensor<32x32xf32>
  %0 = "ttir.dot_general"(%a, %b) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %1 = "ttir.mul"(%0, %c) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %2 = "ttir.exponential"(%1) : (tensor<32x32xf32>) -> tensor<32x32xf32>
  return %2 : tensor<32x32xf32>
}
"""
    graph = Normalize().run(import_mlir(text, "t.mlir").graph)
    assert [op.kind for op in graph.ops] == ["constant", "matmul", "multiply", "exp"]
    assert graph.tensors["constant_0"].is_constant
    assert not graph.tensors["dot_general_0"].is_constant
    assert graph.warnings == []


def test_constants_take_no_time(wormhole):
    text = """
func.func @forward(%a: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %c = "ttir.constant"() : () -> tensor<32x32xf32>
  %0 = "ttir.add"(%a, %c) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %0 : tensor<32x32xf32>
}
"""
    compilation = compile_model(import_mlir(text, "t.mlir"), wormhole)
    assert compilation.kernel.op("constant_0").meta[KERNEL] is None
    sim = simulate(compilation.kernel, wormhole)
    assert [o.name for o in sim.ops] == ["add_0"]


def test_functions_a_source_names_as_fused_become_kinds_of_the_vocabulary():
    text = """
func.func @f(%x: tensor<32x64xbf16> {ttir.name = "x"}) -> tensor<32x64xbf16> {
  %0 = "ttir.neg"(%x) {fused_kinds = ["exp", "frobnicate", "reciprocal"]} : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("n")
  return %0 : tensor<32x64xbf16>
}
"""
    graph = Normalize().run(import_mlir(text, "t.mlir").graph)
    # a name outside the vocabulary is left out, never guessed
    assert graph.op("n").attrs["fused_kinds"] == ("exp", "reciprocal")


def test_a_hostile_fused_list_is_bounded():
    names = ", ".join(['"exp"'] * 5000)
    text = f"""
func.func @f(%x: tensor<32x64xbf16> {{ttir.name = "x"}}) -> tensor<32x64xbf16> {{
  %0 = "ttir.neg"(%x) {{fused_kinds = [{names}]}} : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("n")
  return %0 : tensor<32x64xbf16>
}}
"""
    graph = Normalize().run(import_mlir(text, "t.mlir").graph)
    assert len(graph.op("n").attrs["fused_kinds"]) <= 16
