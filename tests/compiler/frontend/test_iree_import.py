"""IREE's own outputs import: iree-compile (the wheel tilescope depends on) compiles a matmul, a
BERT-like layer and a two-device program to global optimization (with and without data-tiling)
and to dispatch creation; each imports, compiles for a target, and re-parses at every level."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from iree.compiler import tools

from tilescope.compiler.analysis.matrix_dims import gemm_dims
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.mlir_import import import_mlir, parse_module
from tilescope.compiler.ir.printer import print_graph
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.flops import flops
from tilescope.compiler.targets.catalog import BUILTIN_DIR, load_target

INPUTS = Path(__file__).parent / "iree_inputs"
WORMHOLE = BUILTIN_DIR / "wormhole_n150.toml"
ZNVER4 = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=znver4",
)
STAGES = {
    "global-optimization": ("--compile-to=global-optimization",),
    "global-optimization+data-tiling": ("--iree-global-opt-data-tiling", "--compile-to=global-optimization"),
    "dispatch-creation+data-tiling": ("--iree-opt-data-tiling", "--compile-to=dispatch-creation"),
}
MODELS = ("matmul", "bert_layer", "two_devices")
X86 = load_target("x86_avx512")


@lru_cache(maxsize=None)
def iree_output(model: str, stage: str) -> str:
    # the two-device program names its own devices; the others get one znver4 CPU
    devices = () if model == "two_devices" else ZNVER4
    text = (INPUTS / f"{model}.mlir").read_text()
    return tools.compile_str(text, extra_args=[*devices, *STAGES[stage]]).decode()


@lru_cache(maxsize=None)
def compiled(model: str, stage: str):
    imported = import_mlir(iree_output(model, stage), f"{model}.{stage}.mlir")
    return compile_model(imported, load_target("wormhole_n150"))


def kinds(model: str, stage: str, level: str = "graph") -> list[str]:
    return [op.kind for op in compiled(model, stage).levels[level].ops]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("model", MODELS)
def test_each_output_imports_with_no_opaque_op_and_every_level_reparses(model, stage):
    compilation = compiled(model, stage)
    assert not [w for w in compilation.levels["graph"].warnings if "opaque" in w]
    for level, graph in compilation.levels.items():
        parse_module(print_graph(graph)[0], f"{model}@{level}")


def test_a_data_tiled_matmul_is_pack_mmt4d_unpack_with_the_weight_packed_at_compile_time():
    # the accumulator's fill of zeros folds into a constant
    worked = [k for k in kinds("matmul", "global-optimization+data-tiling") if k != "constant"]
    assert worked == ["pack", "mmt4d", "unpack"]
    graph = compiled("matmul", "global-optimization+data-tiling").levels["graph"]
    mmt4d = next(op for op in graph.ops if op.kind == "mmt4d")
    # 128x512 by 512x256: the same multiply-adds as the matmul it came from
    assert flops(graph, mmt4d) == 2 * 128 * 512 * 256
    packed_weight = graph.tensors[mmt4d.inputs[1]]
    assert packed_weight.shape == (16, 512, 16, 1) and packed_weight.is_parameter
    assert packed_weight.name in graph.inputs
    # the activation's pack runs every step: the buffer view's tensor is an input, not a weight
    pack = next(op for op in graph.ops if op.kind == "pack")
    assert graph.tensors[pack.inputs[0]].name == "input0" and not graph.tensors["input0"].is_parameter
    assert graph.outputs == [next(op for op in graph.ops if op.kind == "unpack").outputs[0]]


def test_tilescope_materializes_ireees_encodings_into_the_packs_iree_makes_for_the_same_cpu():
    """IREE's dispatch-creation output keeps the encodings unresolved; materialized by tilescope for
    the x86_avx512 target (a znver4), its mmt4d's operands are shaped as IREE's own global-optimization
    output, where IREE materialized them for znver4."""
    ours = compile_model(import_mlir(iree_output("matmul", "dispatch-creation+data-tiling"), "mm.mlir"), X86)
    mmt4d = next(op for op in ours.levels["layout"].ops if op.kind == "mmt4d")
    theirs = compiled("matmul", "global-optimization+data-tiling").levels["graph"]
    iree_mmt4d = next(op for op in theirs.ops if op.kind == "mmt4d")
    shapes = [ours.levels["layout"].tensors[t].shape for t in (*mmt4d.inputs[:2], *mmt4d.outputs)]
    assert shapes == [theirs.tensors[t].shape for t in (*iree_mmt4d.inputs[:2], *iree_mmt4d.outputs)]
    assert shapes == [(8, 512, 16, 1), (16, 512, 16, 1), (8, 16, 16, 16)]


def test_without_data_tiling_the_same_matmul_is_a_matmul_of_the_same_flops():
    graph = compiled("matmul", "global-optimization").levels["graph"]
    (matmul,) = [op for op in graph.ops if op.kind == "matmul"]
    assert flops(graph, matmul) == 2 * 128 * 512 * 256


def test_an_initializer_that_encodes_a_weight_is_load_time_work():
    graph = compiled("matmul", "dispatch-creation+data-tiling").levels["graph"]
    encodes = [op for op in graph.ops if op.kind == "set_encoding"]
    assert len(encodes) == 2  # the weight's in the initializer, the activation's in the step
    weight, activation = encodes
    assert weight.attrs.get("const_eval") and not activation.attrs.get("const_eval")
    assert graph.tensors[weight.inputs[0]].name == "w"


def test_encodings_print_on_their_tensors_until_a_target_with_inner_tiles_materializes_them(tmp_path):
    compilation = compiled("matmul", "dispatch-creation+data-tiling")
    graph = compilation.levels["graph"]
    assert "operand_index = 1 : index, op_type = matmul" in print_graph(graph)[0]
    assert [op.kind for op in compilation.levels["layout"].ops if op.kind in ("pack", "mmt4d", "unpack")] == [
        "pack",
        "pack",
        "mmt4d",
        "unpack",
    ]
    # a target declaring no inner tiles keeps them, printed at every level
    untiled = tmp_path / "untiled.toml"
    untiled.write_text(re.sub(r"(?ms)^\[data_tiling\]$.*?(?=^\[[a-z_.]+\]$|\Z)", "", WORMHOLE.read_text()))
    model = import_mlir(iree_output("matmul", "dispatch-creation+data-tiling"), "mm.mlir")
    kept = compile_model(model, load_target(str(untiled)))
    for level in ("graph", "layout", "kernel"):
        text = print_graph(kept.levels[level])[0]
        assert "operand_index = 1 : index, op_type = matmul" in text
        parse_module(text, level)


def test_a_dispatchs_ops_are_named_by_their_dispatch():
    names = [op.name for op in compiled("matmul", "dispatch-creation+data-tiling").levels["graph"].ops]
    assert "dispatch_0.matmul_0" in names and "dispatch_0.unset_encoding_0" in names


def test_the_bert_layer_keeps_its_work_whatever_the_stage():
    """The same layer's GEMM FLOPs from every stage: data-tiling pads nothing at these sizes."""
    totals = set()
    for stage in STAGES:
        graph = compiled("bert_layer", stage).levels["graph"]
        gemms = [gemm_dims(graph, op) for op in graph.ops if op.kind in ("matmul", "mmt4d")]
        totals.add(sum(2 * rows * k * cols for rows, k, cols in gemms))
    assert len(totals) == 1
    b, s, d, f, heads = 1, 128, 256, 1024, 4
    projections = 4 * 2 * b * s * d * d + 2 * 2 * b * s * d * f
    attention = 2 * 2 * b * heads * s * s * (d // heads)
    assert totals == {projections + attention}


def test_the_bert_layers_element_wise_generics_get_their_kinds():
    graph = compiled("bert_layer", "global-optimization").levels["graph"]
    # kinds of ops, and of those fused into their producers (the layer norm's rsqrt into its add)
    found = {op.kind for op in graph.ops} | {k for op in graph.ops for k in op.attrs.get("fused_kinds", ())}
    assert {"softmax", "sum", "rsqrt", "tanh", "subtract", "multiply", "broadcast"} <= found


def test_transfers_between_devices_are_ops_of_their_own():
    assert kinds("two_devices", "global-optimization").count("transfer") == 4


def test_a_dispatch_storing_into_what_is_not_its_result_is_one_line():
    text = iree_output("matmul", "dispatch-creation+data-tiling")
    store = "iree_tensor_ext.dispatch.tensor.store %9, "
    broken = text.replace(store + "%arg3", store + "%arg1")
    assert broken != text
    with pytest.raises(ModelLoadError) as err:
        import_mlir(broken, "broken.mlir")
    assert "\n" not in str(err.value)


def test_a_module_with_neither_function_form_is_one_line():
    with pytest.raises(ModelLoadError, match="no func.func or util.func"):
        import_mlir("util.global private @w = 1.0 : f32\n", "empty.mlir")


HOSTILE = {
    "a buffer view returned as data": """
util.func public @main(%arg0: !hal.buffer_view) -> !hal.buffer_view {
  util.return %arg0 : !hal.buffer_view
}""",
    "a buffer view read by an op": """
util.func public @main(%arg0: !hal.buffer_view) -> index {
  %d = hal.buffer_view.dim<%arg0 : !hal.buffer_view>[0] : index
  util.return %d : index
}""",
    "an initializer with no body": """
util.initializer {
}
util.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  util.return %a : tensor<4xf32>
}""",
    "an entry with no body": "util.func private @main(%a: tensor<4xf32>) -> tensor<4xf32>\n",
    "a dispatch tied to an argument it does not have": """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = flow.dispatch.workgroups(%a) : (tensor<4xf32>) -> %a =
      (%b: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<4xf32>>) {
    flow.return
  }
  return %r : tensor<4xf32>
}""",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE)
def test_an_iree_program_tilescope_cannot_read_is_one_line(text):
    with pytest.raises(ModelLoadError) as err:
        import_mlir(text, "x.mlir")
    assert "\n" not in str(err.value) and str(err.value).startswith("x.mlir")


def test_a_dispatchs_workload_operands_are_not_its_arguments():
    ro, wo = (
        "!iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>>",
        "!iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>",
    )
    whole = "offsets = [0], sizes = [4], strides = [1]"
    text = f"""
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {{
  %c1 = arith.constant 1 : index
  %r = flow.dispatch.workgroups[%c1](%a) : (tensor<4xf32>) -> tensor<4xf32> = (%in: {ro}, %out: {wo}) {{
    %t = iree_tensor_ext.dispatch.tensor.load %in, {whole} : {ro} -> tensor<4xf32>
    %e = math.exp %t : tensor<4xf32>
    iree_tensor_ext.dispatch.tensor.store %e, %out, {whole} : tensor<4xf32> -> {wo}
    flow.return
  }} count(%w: index) -> (index, index, index) {{
    flow.return %w, %w, %w : index, index, index
  }}
  return %r : tensor<4xf32>
}}"""
    graph = import_mlir(text, "x.mlir").graph
    (exp,) = [op for op in graph.ops if op.kind == "math.exp"]
    assert exp.inputs == graph.inputs and graph.outputs == exp.outputs
