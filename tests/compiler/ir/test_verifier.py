"""The IR verifier: every level the compiler makes keeps its rules, and IR broken one way at a
time fails the rule it breaks, in one line naming the op."""

from __future__ import annotations

import dataclasses

import pytest

from tilescope.compiler.ir.meta import KERNEL, L1_PEAK
from tilescope.compiler.errors import VerifyError
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.ir.graph import Graph, Tensor
from tilescope.compiler.ir.verifier import VERIFY_ENV, verification_requested, verify
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.targets.catalog import load_target

# a constant and a reshape that only adds a size-1 dim: ops with no work at the kernel level
NO_WORK = """
func.func @f(%x: tensor<32x64xf32> {ttir.name = "x"}) -> tensor<1x32x64xf32> {
  %c = "ttir.constant"() <{value = dense<1.0> : tensor<32x64xf32>}> : () -> tensor<32x64xf32> loc("c")
  %y = "ttir.add"(%x, %c) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32> loc("y")
  %r = "ttir.reshape"(%y) <{shape = [1 : i32, 32 : i32, 64 : i32]}>
    : (tensor<32x64xf32>) -> tensor<1x32x64xf32> loc("r")
  return %r : tensor<1x32x64xf32>
}
"""


@pytest.fixture(scope="module")
def levels(tiny_path, wormhole) -> dict[str, Graph]:
    model = load_model(tiny_path)
    return {"input": model.graph, **compile_model(model, wormhole).levels}


def _copy(graph: Graph) -> Graph:
    """A copy to break: its ops, tensors and their lists are its own."""
    return graph.with_level(graph.level)


def _fails(graph: Graph, rule: str, op: str | None) -> str:
    with pytest.raises(VerifyError) as err:
        verify(graph, after="some-pass")
    assert (err.value.rule, err.value.op) == (rule, op)
    message = str(err.value)
    assert "\n" not in message and f"{graph.level} level after some-pass" in message and rule in message
    return message


def test_every_level_of_a_compiled_model_keeps_the_rules(levels):
    for graph in levels.values():
        verify(graph)


@pytest.mark.parametrize(
    "ref, target", [("zoo:llama-3.2-1b?layers=1&devices=8", "t3k"), ("zoo:resnet50?layers=14&size=64", "wormhole_n150")]
)
def test_levels_split_over_devices_and_of_a_cnn_keep_the_rules(ref, target):
    for graph in compile_model(
        load_model(ref), load_target(target), CompileOptions(policy="greedy-l1")
    ).levels.values():
        verify(graph)


def test_a_constant_and_a_view_need_no_work(wormhole):
    kernel = compile_model(import_mlir(NO_WORK, "no_work.mlir"), wormhole).kernel
    assert {op.name: op.meta[KERNEL] for op in kernel.ops if op.meta[KERNEL] is None} == {"c": None, "r": None}
    verify(kernel)


def test_a_name_two_ops_share(levels):
    graph = _copy(levels["graph"])
    graph.ops[1].name = graph.ops[0].name
    assert "another op before it has its name" in _fails(graph, "unique-names", graph.ops[0].name)


def test_a_result_missing_from_the_tensors(levels):
    graph = _copy(levels["graph"])
    del graph.tensors[graph.ops[0].outputs[0]]
    _fails(graph, "declared", graph.ops[0].name)


def test_an_operand_missing_from_the_tensors(levels):
    graph = _copy(levels["graph"])
    graph.ops[0].inputs[0] = "ghost"
    _fails(graph, "declared", graph.ops[0].name)


def test_a_tensor_two_ops_make(levels):
    graph = _copy(levels["graph"])
    first, second = graph.ops[:2]
    second.outputs[0] = first.outputs[0]
    _fails(graph, "single-definition", second.name)


def test_an_op_before_the_op_it_reads(levels):
    graph = _copy(levels["kernel"])
    first, second = graph.ops[:2]
    graph.ops[:2] = [second, first]
    message = _fails(graph, "dataflow-order", second.name)
    assert f"the result of {first.name!r} after it" in message


def test_an_operand_nothing_makes(levels):
    graph = _copy(levels["graph"])
    graph.tensors["ghost"] = Tensor("ghost", (32, 64), "f32")
    graph.ops[0].inputs[0] = "ghost"
    _fails(graph, "defined-operands", graph.ops[0].name)


def test_an_output_nothing_makes(levels):
    graph = _copy(levels["graph"])
    graph.outputs.append("ghost")
    _fails(graph, "defined-outputs", None)


def test_a_tensor_nothing_names(levels):
    graph = _copy(levels["partition"])
    graph.tensors["ghost"] = Tensor("ghost", (32, 64), "f32")
    assert "'ghost' is declared" in _fails(graph, "named-tensors", None)


def test_a_level_the_compiler_has_not(levels):
    graph = _copy(levels["graph"])
    graph.level = "assembly"
    with pytest.raises(VerifyError, match="known-level"):
        verify(graph)


def test_an_op_that_came_from_nowhere(levels):
    graph = _copy(levels["graph"])
    graph.ops[0].source = ()
    _fails(graph, "provenance", graph.ops[0].name)
    verify(levels["input"])  # the input level is where ops come from


def test_a_source_dialects_kind_below_input(levels):
    graph = _copy(levels["partition"])
    graph.ops[0].kind = "ttir.matmul"
    _fails(graph, "vocabulary", graph.ops[0].name)


@pytest.mark.parametrize("level", ["layout", "kernel"])
def test_a_tensor_without_a_layout(levels, level):
    graph = _copy(levels[level])
    graph.tensors[graph.inputs[0]].layout = None
    _fails(graph, "layouts", None)
    unplaced = _copy(levels["partition"])  # nothing is laid out above the layout level
    assert all(t.layout is None for t in unplaced.tensors.values())
    verify(unplaced)


@pytest.mark.parametrize("grid", [None, (0, 8), (8,), (8.0, 8)])
def test_an_op_without_a_grid(levels, grid):
    graph = _copy(levels["layout"])
    graph.ops[0].attrs["grid"] = grid
    _fails(graph, "grids", graph.ops[0].name)


def test_a_meta_key_no_module_declares(levels):
    graph = _copy(levels["graph"])
    graph.ops[0].meta["scratch"] = 1
    assert "'scratch', no key" in _fails(graph, "meta-keys", graph.ops[0].name)


def test_a_meta_key_above_its_level(levels):
    graph = _copy(levels["partition"])
    graph.meta[L1_PEAK] = levels["layout"].meta[L1_PEAK]
    assert "'l1_peak', a key of the layout level on" in _fails(graph, "meta-keys", None)


def test_an_op_without_a_kernel(levels):
    graph = _copy(levels["kernel"])
    del graph.ops[-1].meta[KERNEL]
    assert "it has no kernel" in _fails(graph, "work", graph.ops[-1].name)


def test_a_matmul_with_no_cores_doing_it(levels):
    graph = _copy(levels["kernel"])
    graph.ops[0].meta[KERNEL] = None
    assert "a matmul with work to do" in _fails(graph, "work", graph.ops[0].name)


def test_a_kernel_on_another_grid(levels):
    graph = _copy(levels["kernel"])
    op = graph.ops[0]
    op.meta[KERNEL] = dataclasses.replace(op.meta[KERNEL], grid=(1, 1))
    _fails(graph, "work", op.name)


def test_a_kernel_reading_a_tensor_of_another_op(levels):
    graph = _copy(levels["kernel"])
    op, other = graph.ops[0], graph.ops[1]
    kernel = op.meta[KERNEL]
    group = kernel.groups[0]
    moved = dataclasses.replace(group.reads[0], tensor=other.outputs[0])
    op.meta[KERNEL] = dataclasses.replace(kernel, groups=(dataclasses.replace(group, reads=(moved,)),))
    assert f"moves {other.outputs[0]!r}" in _fails(graph, "own-tensors", op.name)


@pytest.mark.parametrize("value, on", [("1", True), ("yes", True), ("0", False), ("", False), (None, False)])
def test_verification_is_asked_for_by_the_environment(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv(VERIFY_ENV, raising=False)
    else:
        monkeypatch.setenv(VERIFY_ENV, value)
    assert verification_requested() is on


def test_a_compile_verifies_after_each_pass_when_asked(monkeypatch, tiny_path, wormhole):
    """A tensor the model declares and nothing names is carried through every level, unseen
    unless verification is on, which stops at the first pass that leaves it."""
    model = load_model(tiny_path)
    model.graph.tensors["ghost"] = Tensor("ghost", (32, 64), "f32")
    monkeypatch.setenv(VERIFY_ENV, "0")
    assert "ghost" in compile_model(model, wormhole).kernel.tensors
    monkeypatch.setenv(VERIFY_ENV, "1")
    with pytest.raises(VerifyError, match="^graph level after normalize: the graph breaks named-tensors"):
        compile_model(model, wormhole)
