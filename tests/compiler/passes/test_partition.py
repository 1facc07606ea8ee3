"""The partition level: a model split over a system's devices, and the collectives it needs."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import MESH
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sim.flops import flops
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.sim.records import TICKS_PER_NS
from tilescope.compiler.targets.catalog import load_target

from .golden import printed, through

LLAMA = "zoo:llama-3.2-1b?layers=1&seq=512"
TP_MATMULS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
BF16 = 2


def compiled(n: int):
    """The llama block tensor parallel over n devices (of a T3K; one device: an n150)."""
    ref = f"{LLAMA}&devices={n}" if n > 1 else LLAMA
    return compile_model(load_model(ref), load_target("t3k" if n > 1 else "wormhole_n150"))


@pytest.fixture(scope="module")
def by_devices():
    return {n: compiled(n) for n in (1, 2, 4, 8)}


def _matmul_flops(compilation) -> dict[str, int]:
    graph = compilation.levels["partition"]
    found = {}
    for op in graph.ops:
        part = next((p for p in TP_MATMULS if f".{p}." in op.name), None)
        if op.kind == "matmul" and part:
            found[part] = flops(graph, op)
    return found


def test_each_device_does_one_nth_of_every_split_matmul(by_devices):
    whole = _matmul_flops(by_devices[1])
    assert set(whole) == set(TP_MATMULS)
    for n in (2, 4, 8):
        assert _matmul_flops(by_devices[n]) == {part: f // n for part, f in whole.items()}


def test_a_megatron_block_all_reduces_twice_a_layer(by_devices):
    for n in (2, 4, 8):
        graph = by_devices[n].levels["partition"]
        reduces = [op for op in graph.ops if op.kind == "all_reduce"]
        assert [op.name.split(".matmul")[0] for op in reduces] == [
            "model.layers.0.self_attn.o_proj",
            "model.layers.0.mlp.down_proj",
        ]
        assert all(op.attrs["group"] == n for op in reduces)


def test_all_reduce_moves_what_a_ring_moves_and_takes_the_link_model_time(by_devices):
    seq, hidden = 512, 2048
    size = seq * hidden * BF16
    for n in (2, 4, 8):
        compilation = by_devices[n]
        system = compilation.target.system
        sim = simulate(compilation.kernel, compilation.target, "trace")
        reduces = [o for o in sim.ops if o.kind == "all_reduce"]
        assert len(reduces) == 2
        cost = system.collective("all_reduce", n, size)
        for timing in reduces:
            assert timing.bytes["link"] == pytest.approx(2 * (n - 1) / n * size)
            # the link model's time, to the clock's tick
            assert timing.duration_ns >= cost.seconds * 1e9 - 0.5 / TICKS_PER_NS
            assert timing.bound == "link"
            assert timing.duration_ns == pytest.approx(cost.seconds * 1e9)


def test_per_device_compute_shrinks_about_one_nth_and_collectives_grow(by_devices):
    compute, links = {}, {}
    for n, compilation in by_devices.items():
        sim = simulate(compilation.kernel, compilation.target, "trace")
        compute[n] = sum(o.duration_ns for o in sim.ops if o.kind not in COLLECTIVES)
        links[n] = sum(o.duration_ns for o in sim.ops if o.kind == "all_reduce")
    for n in (2, 4, 8):
        # fixed per-op costs (launch, pipeline fill) and narrower matmuls filling fewer cores keep
        # it from 1/n exactly; it stays within twice that
        assert compute[1] / n <= compute[n] <= 2 * compute[1] / n
    # the links' time is what the system's link model gives: a line along a T3K row for 2 and 4
    # devices, the ring through all 8 for 8 (so 8 beats 4: it uses both directions of every link)
    assert links[1] == 0
    size = 512 * 2048 * BF16
    for n in (2, 4, 8):
        system = by_devices[n].target.system
        assert links[n] == pytest.approx(2 * system.collective("all_reduce", n, size).seconds * 1e9)
    assert [system.route(n).algorithm for n in (2, 4, 8)] == ["line", "line", "ring"]


def test_one_device_keeps_the_graph_level_as_it_was():
    compilation = compiled(1)
    graph, partition = compilation.levels["graph"], compilation.levels["partition"]
    assert [op.name for op in partition.ops] == [op.name for op in graph.ops]
    assert not any(op.kind in COLLECTIVES for op in partition.ops)
    assert {n: t.shape for n, t in partition.tensors.items()} == {n: t.shape for n, t in graph.tensors.items()}


def test_a_model_without_shardings_is_split_by_the_policy():
    compilation = compile_model(load_model("zoo:llama-3.2-1b?layers=1&seq=128"), load_target("wormhole_n300"))
    graph = compilation.levels["partition"]
    assert graph.meta[MESH].devices == 2
    q = next(op for op in graph.ops if op.name == "model.layers.0.self_attn.q_proj.matmul")
    assert graph.tensors[q.outputs[0]].shape == (128, 1024)  # column-parallel: half the columns
    assert [op.kind for op in graph.ops if op.kind in COLLECTIVES].count("all_reduce") == 2


def test_a_mesh_larger_than_the_system_is_one_line():
    from tilescope.compiler.errors import ModelLoadError

    with pytest.raises(ModelLoadError, match=r"needs 8 devices; wormhole_n300 has 2"):
        compile_model(load_model(f"{LLAMA}&devices=8"), load_target("wormhole_n300"))


def _partition(ref: str, target: str, text: str | None = None):
    return compile_model(load_model(ref, text), load_target(target)).levels["partition"]


def test_a_bias_reshaped_at_load_time_is_split_after_its_reshape():
    graph = _partition("zoo:bert-base?layers=1&seq=128", "wormhole_n300")
    for op in graph.ops:
        if op.kind == "reshape":
            (src,), (dst,) = op.inputs, op.outputs
            assert graph.tensors[src].numel == graph.tensors[dst].numel, op.name
    cut = [op for op in graph.ops if op.kind == "all_slice" and ".bias.reshape" in op.inputs[0]]
    assert cut and all(op.attrs.get("const_eval") for op in cut)  # once, when the model loads


XWT = """module @xwt {
  sdy.mesh @mesh = <["model"=2]>
  func.func @main(%x: tensor<32x784xf32>,
      %w: tensor<128x784xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}) -> tensor<32x128xf32> {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : (tensor<32x784xf32>, tensor<128x784xf32>) -> tensor<32x128xf32>
    return %y : tensor<32x128xf32>
  }
}
"""


def test_a_stablehlo_dot_general_contracts_the_dimensions_it_names():
    # x @ w.T with w split by its rows (the output columns): column-parallel, the weight stays split
    graph = _partition("xwt.mlir", "wormhole_n300", XWT)
    assert [op.kind for op in graph.ops] == ["matmul", "all_gather"]
    assert graph.tensors[graph.ops[0].outputs[0]].shape == (32, 64)


def test_a_kv_cache_lives_split_where_it_is_updated_and_read():
    graph = _partition("zoo:llama-3.2-1b?layers=1&mode=decode", "t3k")
    assert not [op.name for op in graph.ops if op.kind == "all_slice"]
    update = next(op for op in graph.ops if op.kind == "update_cache")
    attention = next(op for op in graph.ops if op.kind.startswith("scaled_dot_product_attention"))
    cache = update.inputs[0]
    assert cache in attention.inputs and cache in graph.outputs  # the one updated is the one read and kept
    assert graph.tensors[cache].shape == (1, 1, 128, 64)  # 8 KV heads, one per device


def test_a_cnn_without_shardings_is_split_by_its_batch():
    compilation = compile_model(load_model("zoo:resnet50?layers=14&size=64"), load_target("t3k"))
    graph = compilation.levels["partition"]
    assert graph.meta[MESH].axes == (("batch", 8),)
    assert graph.tensors[graph.inputs[0]].shape[0] == 1  # 8 images, one a chip
    exchanges = [op.kind for op in graph.ops if op.kind in COLLECTIVES and op.kind != "all_slice"]
    assert exchanges == ["all_gather"]  # the logits, gathered whole at the end


def test_a_one_device_mesh_on_a_larger_system_says_so():
    text = """module {
  sdy.mesh @mesh = <["x"=1]>
  func.func @main(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %0 = stablehlo.add %a, %a : tensor<64x64xf32>
    return %0 : tensor<64x64xf32>
  }
}
"""
    from tilescope.compiler.frontend.mlir_import import import_mlir

    compilation = compile_model(import_mlir(text, "one.mlir"), load_target("t3k"))
    assert compilation.levels["partition"].meta[MESH].devices == 1
    assert "the model's mesh @mesh has one device: it runs on one of t3k's 8" in compilation.warnings


def test_a_fused_bias_is_kept_and_split_as_the_matmuls_result():
    """Operands past A and B (a bias fused into the matmul) are kept, split as the result is; an
    operand override may name one."""
    from tilescope.overrides import parse_item

    t3k = load_target("t3k")
    graph = compile_model(load_model("zoo:mlp"), t3k).levels["partition"]
    fc1 = graph.op("mlp.layer.0.fc1.matmul")
    assert fc1.inputs[2:] == ["mlp.layer.0.fc1.bias"] and "add" in fc1.attrs["fused_kinds"]
    result, bias = graph.tensors[fc1.outputs[0]], graph.tensors[fc1.inputs[2]]
    assert result.sharding.dims[-1] == ("model",) and bias.sharding.dims[-1] == ("model",)
    asked = ["mlp.layer.0.fc1.matmul=operand#2:sharding#{},{model}", "mlp.layer.0.fc1.matmul=operand#2:sharding#{},{}"]
    compiled = compile_model(load_model("zoo:mlp"), t3k, CompileOptions([parse_item(a) for a in asked]))
    applied, whole = compiled.override_outcomes
    assert applied.status == "applied" and len(compiled.levels["partition"].op(fc1.name).inputs) == 3
    assert whole.status == "rejected" and whole.reason.endswith(
        "cannot read operand 2 as {},{}: its rule needs {},{model}"
    )


def test_a_sharding_constraint_is_read_through_and_leaves_no_tensor_behind():
    """The scores are split as the model's constraint asks already: the op reading the constraint
    reads them, and neither the constraint nor its result is left in the level (the IR
    verifier's named-tensors rule)."""
    graph = compile_model(load_model("sharded_attention.mlir"), load_target("t3k")).levels["partition"]
    assert not graph.has_op("sharding_constraint_0") and "sharding_constraint_0" not in graph.tensors
    assert graph.op("multiply_0").inputs[0] == "dot_general_3"


COLUMN_PARALLEL = """
module @tp attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["model"=2]>
  func.func @main(%x: tensor<32x64xf32>, %w: tensor<64x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}) -> tensor<32x128xf32> {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
    %z = stablehlo.exponential %y : tensor<32x128xf32>
    return %z : tensor<32x128xf32>
  }
}
"""

UNANNOTATED_MLP = """
func.func @f(%x: tensor<32x64xbf16> {ttir.name = "x"},
             %w1: tensor<64x256xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w1"},
             %w2: tensor<256x64xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w2"}) -> tensor<32x64xbf16> {
  %h = "ttir.matmul"(%x, %w1) : (tensor<32x64xbf16>, tensor<64x256xbf16>) -> tensor<32x256xbf16> loc("up")
  %a = "ttir.relu"(%h) : (tensor<32x256xbf16>) -> tensor<32x256xbf16> loc("act")
  %y = "ttir.matmul"(%a, %w2) : (tensor<32x256xbf16>, tensor<256x64xbf16>) -> tensor<32x64xbf16> loc("down")
  return %y : tensor<32x64xbf16>
}
"""


GOLDEN_COLUMN_PARALLEL = r"""module @"golden" attributes {ts.level = "partition", ts.mesh = "<[\"model\"=2]>"} {
  func.func @forward(%arg0: tensor<32x64xf32> {ttir.name = "arg0", ts.sharding = "whole"}, %arg1: tensor<64x64xf32> {ttir.name = "arg1", ts.sharding = "[{}, {model}]"}) -> (tensor<32x128xf32>) {
    %0 = "ts.matmul"(%arg0, %arg1) {dot_dimension_numbers = "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>", fused = ["exponential_0"], ts.sharding = ["[{}, {model}]"], ts.from = ["dot_general_0", "exponential_0"]} : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32> loc("dot_general_0")
    %1 = "ts.all_gather"(%0) {axes = ["model"], dim = 1 : i64, group = 2 : i64, ts.sharding = ["[{}, {}]"], ts.from = ["exponential_0"]} : (tensor<32x64xf32>) -> tensor<32x128xf32> loc("exponential_0.all_gather")
    return %1 : tensor<32x128xf32>
  }
}
"""


def test_a_column_parallel_weight_makes_a_split_result_gathered_whole_for_the_return():
    _, graph = through(COLUMN_PARALLEL, load_target("wormhole_n300"), "partition")
    # each device holds half the weight's columns and makes half the result's, which the
    # all_gather along dim 1 makes whole again; the exponential fused into the matmul goes along
    assert printed(graph) == GOLDEN_COLUMN_PARALLEL


GOLDEN_UNANNOTATED_MLP = r"""module @"golden" attributes {ts.level = "partition", ts.mesh = "<[\"model\"=2]>"} {
  func.func @forward(%arg0: tensor<32x64xbf16> {ttir.name = "x", ts.sharding = "whole"}, %arg1: tensor<64x128xbf16> {ttir.name = "w1", ts.sharding = "[{}, {model}]"}, %arg2: tensor<128x64xbf16> {ttir.name = "w2", ts.sharding = "[{model}, {}]"}) -> (tensor<32x64xbf16>) {
    %0 = "ts.matmul"(%arg0, %arg1) {fused = ["act"], ts.sharding = ["[{}, {model}]"], ts.from = ["up", "act"]} : (tensor<32x64xbf16>, tensor<64x128xbf16>) -> tensor<32x128xbf16> loc("up")
    %1 = "ts.matmul"(%0, %arg2) {partial = "sum", ts.sharding = ["[{}, {}] partial {model}"], ts.from = ["down"]} : (tensor<32x128xbf16>, tensor<128x64xbf16>) -> tensor<32x64xbf16> loc("down")
    %2 = "ts.all_reduce"(%1) {axes = ["model"], group = 2 : i64, reduce = "sum", ts.sharding = ["[{}, {}]"], ts.from = ["down"]} : (tensor<32x64xbf16>) -> tensor<32x64xbf16> loc("down.all_reduce")
    return %2 : tensor<32x64xbf16>
  }
}
"""


def test_an_unannotated_mlp_is_split_megatron_style_with_one_all_reduce():
    _, graph = through(UNANNOTATED_MLP, load_target("wormhole_n300"), "partition")
    # up's weight by columns, down's by rows: down makes partial sums, which one all_reduce adds
    assert printed(graph) == GOLDEN_UNANNOTATED_MLP
