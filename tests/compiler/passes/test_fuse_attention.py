import pytest

from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.analysis.matrix_dims import attention_dims
from tilescope.compiler.sim.flops import flops
from tilescope.compiler.passes.fuse_attention import DECODE, PREFILL, FuseAttention
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate

from .golden import lines, run

LLAMA_DECODE = "zoo:llama-3.2-1b?mode=decode&batch=32"

# softmax(q k^T * scale + mask) v, the scores also read by another op: not fused
SHARED_SCORES = """
func.func @f(%q: tensor<1x4x8x64xf32> {ttir.name = "q"}, %k: tensor<1x4x8x64xf32> {ttir.name = "k"},
             %v: tensor<1x4x8x64xf32> {ttir.name = "v"}) -> (tensor<1x4x8x64xf32>, tensor<1x4x8x8xf32>) {
  %s = "ttir.dot_general"(%q, %k) <{batch_dims_lhs = array<i64: 0, 1>, batch_dims_rhs = array<i64: 0, 1>, contract_dims_lhs = array<i64: 3>, contract_dims_rhs = array<i64: 3>}> : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x8xf32> loc("scores")
  %p = "ttir.softmax"(%s) <{dimension = -1 : si32}> : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> loc("softmax")
  %o = "ttir.dot_general"(%p, %v) <{batch_dims_lhs = array<i64: 0, 1>, batch_dims_rhs = array<i64: 0, 1>, contract_dims_lhs = array<i64: 3>, contract_dims_rhs = array<i64: 2>}> : (tensor<1x4x8x8xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> loc("context")
  return %o, %s : tensor<1x4x8x64xf32>, tensor<1x4x8x8xf32>
}
"""

PLAIN = SHARED_SCORES.replace(", tensor<1x4x8x8xf32>) {", ") {").replace(
    "return %o, %s : tensor<1x4x8x64xf32>, tensor<1x4x8x8xf32>", "return %o : tensor<1x4x8x64xf32>"
)


def test_attention_op_by_op_becomes_one_op():
    graph = run(PLAIN, FuseAttention())
    assert lines(graph) == [f"softmax.{PREFILL} = {PREFILL}(q, k, v)"]
    op = graph.op(f"softmax.{PREFILL}")
    assert op.outputs == ["context"] and set(op.source) == {"scores", "softmax", "context"}
    assert attention_dims(graph, op) == (4, 4, 8, 8, 64)
    # Q K^T and P V (2 x 2 x 4 heads x 8 x 8 x 64) and the softmax's 5 passes over the scores
    assert flops(graph, op) == 2 * 2 * 4 * 8 * 8 * 64 + 5 * 4 * 8 * 8


def test_scores_another_op_reads_are_not_fused():
    graph = run(SHARED_SCORES, FuseAttention())
    assert [op.kind for op in graph.ops] == ["matmul", "softmax", "matmul"]


def test_llama_decode_reads_the_kv_cache_in_place(wormhole):
    graph = compile_model(load_model(LLAMA_DECODE + "&layers=2"), wormhole).levels["graph"]
    (attention, _) = [op for op in graph.ops if op.kind == DECODE]
    assert attention.inputs == [
        "model.layers.0.self_attn.rotary.q.add",
        "model.layers.0.self_attn.k_cache",  # as stored: no repeat per query head, no transpose
        "model.layers.0.self_attn.v_cache",
        "model.attention_mask.typecast",
    ]
    assert {k: attention.attrs[k] for k in ("batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim")} == {
        "batch": 32,
        "heads": 32,
        "kv_heads": 8,
        "q_len": 1,
        "kv_len": 128,
        "head_dim": 64,
    }


def test_the_llama_decode_step_has_no_weight_or_cache_transposes(wormhole):
    c = compile_model(load_model(LLAMA_DECODE), wormhole, CompileOptions(policy="optimizer"))
    kernel = c.kernel
    parameters = {t for t in kernel.inputs if kernel.tensors[t].is_parameter}
    caches = {t for t in kernel.inputs if t.endswith(("k_cache", "v_cache"))}
    assert len(parameters) > 100 and len(caches) == 32
    step = [op for op in kernel.ops if not op.attrs.get("const_eval")]
    transposes = [op for op in step if op.kind in ("permute", "transpose")]
    # the permutes left put each step's new key and value rows in the cache's order, and the
    # rotary angles of this step's position: none reads a weight or a cache
    assert {op.name.rsplit(".", 1)[-1] for op in transposes} == {"permute", "transpose"}
    assert len(transposes) == 2 * 16 + 1
    assert not [op.name for op in transposes if set(op.inputs) & (parameters | caches)]
    # the caches are read by the attention and written by the updates, nothing else
    readers = {op.kind for op in step for t in op.inputs if t in caches}
    assert readers == {DECODE, "update_cache"}
    assert not [op.name for op in step if op.kind == "typecast" and set(op.inputs) & parameters]
    sim = simulate(kernel, wormhole, "trace")
    assert not [o.name for o in sim.ops if "lm_head.weight" in o.name]


def test_a_real_decode_layer_keeps_no_transposes_of_weights_or_caches(corpus, wormhole):
    """tt-xla's export of one Llama 3.2 1B decode layer (softmax written out op by op, so no fused
    attention): the weight and key transposes are folded into the matmuls that read them."""
    c = compile_model(load_model(str(corpus / "llama_3_2_1b_decode_layer.mlir")), wormhole)
    graph = c.levels["graph"]
    loaded = {t for t in graph.inputs if graph.tensors[t].is_parameter}
    caches = {t for t in graph.inputs if graph.tensors[t].shape == (32, 8, 128, 64)}
    assert len(caches) == 2
    step_transposes = [
        op.name
        for op in graph.ops
        if op.kind == "permute" and not op.attrs.get("const_eval") and any(t in loaded for t in op.inputs)
    ]
    assert step_transposes == []
    matmuls = [op for op in graph.ops if op.kind == "matmul" and set(op.inputs) & loaded]
    assert len(matmuls) >= 7 and all(op.attrs.get("transpose_b") == "true" for op in matmuls)


@pytest.mark.parametrize("ref", ["zoo:bert-base?layers=1&seq=128&batch=2", "zoo:llama-3.2-1b?layers=1&seq=64"])
def test_prefill_attention_is_one_op_per_layer(ref, wormhole):
    graph = compile_model(load_model(ref), wormhole).levels["graph"]
    assert [op.kind for op in graph.ops].count(PREFILL) == 1
    assert not [op for op in graph.ops if op.kind == "softmax"]
