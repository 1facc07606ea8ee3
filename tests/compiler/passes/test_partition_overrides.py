"""Sharding overrides in the partition pass: how an op reads an input, or what its result ends in,
over the devices; the collectives and per-device shapes they change, and one line for each that
cannot apply."""

from __future__ import annotations

import pytest

from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.override_check import layout_outcomes
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sharding.mesh import Sharding
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import check_overrides, parse_item

TP = "zoo:llama-3.2-1b?layers=1&devices=8"  # Megatron tensor parallel, annotated, over ["model"=8]
POLICY = "zoo:llama-3.2-1b?layers=1"  # no annotations: on a T3K the policy splits it over ("model", 8)
LAYER = "model.layers.0"
SEQ, HIDDEN, FFN, VOCAB = 128, 2048, 8192, 128256


@pytest.fixture(scope="module")
def t3k():
    return load_target("t3k")


@pytest.fixture(scope="module")
def tp(t3k):
    return load_model(TP)


def compiled(model, target, *items: str):
    return compile_model(model, target, CompileOptions([parse_item(i) for i in items]))


def collectives(compilation) -> list[tuple[str, str, tuple[int, ...]]]:
    """Each collective of the partition level: the tensor it acts on, its kind, its result's shape."""
    graph = compilation.levels["partition"]
    return [
        (op.inputs[0].split("~")[0], op.kind, graph.tensors[op.outputs[0]].shape)
        for op in graph.ops
        if op.kind in COLLECTIVES
    ]


def shape(compilation, tensor: str) -> tuple[int, ...]:
    return compilation.levels["partition"].tensors[tensor].shape


def test_the_model_as_annotated(tp, t3k):
    assert collectives(compile_model(tp, t3k)) == [
        (f"{LAYER}.self_attn.o_proj.matmul", "all_reduce", (SEQ, HIDDEN)),
        (f"{LAYER}.mlp.down_proj.matmul", "all_reduce", (SEQ, HIDDEN)),
        ("lm_head.unflatten", "all_gather", (1, SEQ, VOCAB)),
    ]


def test_a_row_parallel_lm_head_weight_all_reduces_the_logits_instead_of_gathering_them(tp, t3k):
    c = compiled(tp, t3k, "lm_head.matmul=operand#1:sharding#{},{model}")
    assert [o.status for o in c.override_outcomes] == ["applied"]
    # the weight is loaded split along K (no collective); the activation is cut to match, free
    assert shape(c, "lm_head.weight") == (VOCAB, HIDDEN // 8)
    assert c.levels["partition"].tensors["lm_head.weight"].sharding == Sharding(((), ("model",)))
    assert collectives(c)[2:] == [
        ("lm_head.flatten", "all_slice", (SEQ, HIDDEN // 8)),
        ("lm_head.matmul", "all_reduce", (SEQ, VOCAB)),
    ]
    assert shape(c, "lm_head.matmul") == (SEQ, VOCAB)  # each device a partial sum of every logit


def test_a_column_parallel_down_proj_weight_drops_its_all_reduce_and_gathers_its_input(tp, t3k):
    c = compiled(tp, t3k, f"{LAYER}.mlp.down_proj.matmul=operand#1:sharding#{{model}},{{}}")
    assert shape(c, f"{LAYER}.mlp.down_proj.weight") == (HIDDEN // 8, FFN)
    assert shape(c, f"{LAYER}.mlp.down_proj.matmul") == (SEQ, HIDDEN // 8)
    found = collectives(c)
    assert (f"{LAYER}.mlp.down_proj.matmul", "all_reduce", (SEQ, HIDDEN)) not in found
    assert (f"{LAYER}.mlp.down_proj.flatten", "all_gather", (SEQ, FFN)) in found
    assert (f"{LAYER}.mlp_residual_add", "all_gather", (1, SEQ, HIDDEN)) in found  # the norm needs it whole


def test_a_result_sharding_reshards_after_the_op_computes_by_its_rule(tp, t3k):
    c = compiled(tp, t3k, f"{LAYER}.mlp.down_proj.matmul=sharding#{{}},{{model}}")
    found = collectives(c)
    # the partial sums are reduced and scattered in one: each device keeps its columns
    assert (f"{LAYER}.mlp.down_proj.matmul", "reduce_scatter", (SEQ, HIDDEN // 8)) in found
    assert not any(kind == "all_reduce" and name.startswith(f"{LAYER}.mlp") for name, kind, _ in found)
    assert c.levels["partition"].tensors[f"{LAYER}.mlp.down_proj.matmul"].sharding == Sharding(((), ("model",)))


def test_a_replicated_attention_output_is_gathered_and_a_replicated_o_proj_weight_loaded_whole(tp, t3k):
    sdpa = f"{LAYER}.self_attn.scaled_dot_product_attention"
    c = compiled(
        tp, t3k, f"{sdpa}=sharding#replicated", f"{LAYER}.self_attn.o_proj.matmul=operand#1:sharding#replicated"
    )
    assert [o.status for o in c.override_outcomes] == ["applied", "applied"]
    found = collectives(c)
    assert found[0] == (f"{LAYER}.self_attn.context.typecast", "all_gather", (1, 32, SEQ, 64))
    assert shape(c, f"{LAYER}.self_attn.o_proj.weight") == (HIDDEN, HIDDEN)
    assert not any(name.startswith(f"{LAYER}.self_attn.o_proj") for name, _, _ in found)  # no all_reduce


def test_replicating_the_policys_column_parallel_weights_removes_down_projs_all_reduce(t3k):
    model = load_model(POLICY)
    base = collectives(compile_model(model, t3k))
    assert (f"{LAYER}.mlp.down_proj.matmul", "all_reduce", (SEQ, HIDDEN)) in base
    items = [f"{LAYER}.mlp.{part}.matmul=operand#1:sharding#replicated" for part in ("gate_proj", "up_proj")]
    c = compiled(model, t3k, *items)
    assert shape(c, f"{LAYER}.mlp.up_proj.weight") == (FFN, HIDDEN)
    found = collectives(c)
    # the activation now arrives whole: the policy splits down_proj's weight by columns instead
    assert shape(c, f"{LAYER}.mlp.down_proj.weight") == (HIDDEN // 8, FFN)
    assert not any(name.startswith(f"{LAYER}.mlp.down_proj") for name, _, _ in found)
    assert (f"{LAYER}.mlp_residual_add", "all_gather", (1, SEQ, HIDDEN)) in found


REJECTED = [
    ("lm_head.matmul=operand#1:sharding#{},{vocab}", 'mesh has no axis "vocab" (its axes: "model")'),
    ("lm_head.flatten=sharding#{model},{model}", 'axis "model" used twice'),
    ("model.norm.rms_norm=sharding#{model}", "1 dimensions given for a rank-3 tensor"),
    (
        f"{LAYER}.self_attn.k_proj.permute_heads=sharding#{{model}},{{}},{{}},{{}}",
        "dimension 0 (1) does not divide into 8",
    ),
    (f"{LAYER}.mlp.gate_mul=operand#5:sharding#replicated", "has 2 operand(s); operand#5 is not one"),
    (f"{LAYER}.mlp.gate_mul=result#1:sharding#replicated", "has 1 result(s); result#1 is not one"),
    (f"{LAYER}.self_attn.k_cache.fill=sharding#replicated", "has no result to shard"),
    ("model.norm.rms_norm=operand#0:sharding#{},{},{model}", "cannot read operand 0 as {},{},{model}: its rule needs"),
    ("no.such.op=sharding#replicated", "no such op in the graph"),
]


@pytest.mark.parametrize("item, reason", REJECTED)
def test_a_sharding_that_cannot_apply_is_rejected_in_one_line_naming_the_part_token_and_cause(tp, t3k, item, reason):
    c = compiled(tp, t3k, item)
    (outcome,) = c.override_outcomes
    ov = parse_item(item)
    assert outcome.status == "rejected" and outcome.spec == item
    part = f"{ov.part}: " if ov.part else ""  # the op is named beside the reason, not in it
    assert outcome.reason.startswith(f"{part}sharding#{ov.sharding.spec()}: ")
    assert reason in outcome.reason and "\n" not in outcome.reason and ov.op not in outcome.reason
    assert c.mlir("partition") == compile_model(tp, t3k).mlir("partition")  # nothing changed


def test_on_one_device_a_sharding_is_rejected_and_the_level_is_the_graphs():
    model, n150 = load_model(POLICY), load_target("wormhole_n150")
    c = compiled(model, n150, "lm_head.matmul=operand#1:sharding#{},{model}", "lm_head.matmul=l1")
    first, second = c.override_outcomes
    assert (first.status, first.reason) == (
        "rejected",
        "operand 1: sharding#{},{model}: no mesh: wormhole_n150 is one device",
    )
    assert second.status == "applied"
    assert [op.name for op in c.levels["partition"].ops] == [op.name for op in c.levels["graph"].ops]
    assert not collectives(c)


def test_an_op_fused_away_is_adjusted_to_its_host(tp, t3k):
    c = compiled(tp, t3k, f"{LAYER}.self_attn.softmax=sharding#replicated")
    (outcome,) = c.override_outcomes
    assert outcome.status == "adjusted"
    assert outcome.reason == f"fused into {LAYER}.self_attn.scaled_dot_product_attention; applied there"
    assert collectives(c)[0][1] == "all_gather"


def test_outcomes_merge_with_the_layout_ones_in_the_given_order(tp, t3k):
    items = [
        "lm_head.matmul=l1",  # layout only
        "lm_head.matmul=operand#1:sharding#{},{model}",  # sharding only
        f"{LAYER}.mlp.up_proj.matmul=l1:interleaved:sharding#{{}},{{model}}",  # both
        f"{LAYER}.mlp.gate_proj.matmul=l1:interleaved:sharding#{{}},{{vocab}}",  # both, the sharding rejected
        "model.norm.rms_norm=8x9",  # layout rejected
    ]
    c = compiled(tp, t3k, *items)
    outcomes = c.override_outcomes
    assert [o.spec for o in outcomes] == items
    assert [o.status for o in outcomes] == ["applied", "applied", "applied", "rejected", "rejected"]
    assert outcomes[3].reason.startswith("sharding#{},{vocab}: mesh has no axis")
    layout = c.levels["layout"]
    assert layout.tensors[f"{LAYER}.mlp.up_proj.matmul"].layout.memory == "l1"
    assert layout.tensors[f"{LAYER}.mlp.gate_proj.matmul"].layout.memory == "dram"  # a rejected item is not applied
    # what the explorer checks before a re-run, against the compiled model, says the same
    base = compile_model(tp, t3k)
    parsed = [parse_item(i) for i in items]
    assert layout_outcomes(base, CompileOptions(parsed)) == outcomes
    problems = check_overrides(CompileOptions(parsed), base)
    assert problems.count == 2 and "mesh has no axis" in problems.lines[0] and items[3] in problems.lines[0]
