"""The model zoo: BERT-base and -large, Llama 3.2 1B, 3.2 3B and 3.1 8B (prefill and decode) and
ResNet-50 as TTIR text.

MLIR parses unregistered (generic-form) ops without verifying them, so these tests check what the
parser does not: every op's result shape follows from its operands and properties (an independent
shape checker per TTIR op kind below), values are defined before use, names are hierarchical and
unique, op counts match the architecture, arguments carry the kind a real export gives them, and
parameters scale the model or fail in one line.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

import pytest
from iree.compiler import ir

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.frontend import zoo
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.stages import compile_model

BERT, LLAMA, DECODE, RESNET = "zoo:bert-base", "zoo:llama-3.2-1b", "zoo:llama-3.2-1b?mode=decode", "zoo:resnet50"
BERT_LARGE, LLAMA_3B, LLAMA_8B = "zoo:bert-large", "zoo:llama-3.2-3b", "zoo:llama-3.1-8b"


@lru_cache(maxsize=None)
def graph(ref: str) -> Graph:
    return load_model(ref).graph


def shape(g: Graph, name: str) -> tuple[tuple[int, ...], str]:
    t = g.tensors[name]
    return t.shape, t.dtype


def kinds(g: Graph) -> Counter:
    return Counter(op.kind.removeprefix("ttir.") for op in g.ops)


def with_query(ref: str, query: str) -> str:
    return f"{ref}{'&' if '?' in ref else '?'}{query}"


def argument_kinds(text: str) -> dict[str, str]:
    """Each function argument's `ttir.name` -> its `ttcore.argument_type`, as MLIR parses them."""
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        func = ir.Module.parse(text).body.operations[0]
        kinds = {}
        for attrs in ir.ArrayAttr(func.attributes["arg_attrs"]):
            attrs = ir.DictAttr(attrs)
            kind = str(attrs["ttcore.argument_type"])
            assert kind.startswith("#ttcore.argument_type<") and kind.endswith(">")
            kinds[ir.StringAttr(attrs["ttir.name"]).value] = kind.removeprefix("#ttcore.argument_type<")[:-1]
        return kinds


# --- an independent shape checker ------------------------------------------------------------------


def ints(text: str) -> list[int]:
    """[8 : i32, 384 : i32], array<i64: 0, 2>, array<i64>, -1 : si32 -> the integers."""
    if text.startswith("array<"):
        body = text[len("array<") : -1]
        return [int(v) for v in body.split(":", 1)[1].split(",")] if ":" in body else []
    return [int(v) for v in re.findall(r"(-?\d+) : [a-z]+\d+", text)]


ELTWISE = {"add", "subtract", "multiply", "div", "maximum"}
UNARY = {"relu", "gelu", "silu", "neg", "cos", "sin", "exp", "sigmoid", "tanh", "softmax", "typecast"}


def expected_outputs(g: Graph, op) -> list[tuple[int, ...]]:
    """Result shapes of `op` from its operand shapes and properties, per TTIR's semantics."""
    kind = op.kind.removeprefix("ttir.")
    ins = [g.tensors[t].shape for t in op.inputs]
    a = op.attrs
    if kind == "constant":
        assert a["value"].endswith(g.tensors[op.outputs[0]].type_str())
        return [g.tensors[op.outputs[0]].shape]
    if kind in ELTWISE:
        assert len({g.tensors[t].shape for t in op.inputs} | {g.tensors[op.outputs[0]].shape}) == 1
        assert len({g.tensors[t].dtype for t in op.inputs} | {g.tensors[op.outputs[0]].dtype}) == 1
        return [ins[0]]
    if kind in UNARY:
        if kind != "typecast":
            assert g.tensors[op.inputs[0]].dtype == g.tensors[op.outputs[0]].dtype
        return [ins[0]]
    if kind == "reshape":
        assert math.prod(ins[0]) == math.prod(ints(a["shape"]))
        return [tuple(ints(a["shape"]))]
    if kind == "permute":
        return [tuple(ins[0][p] for p in ints(a["permutation"]))]
    if kind == "broadcast":
        factors = ints(a["broadcast_dimensions"])
        assert all(f == 1 or d == 1 for d, f in zip(ins[0], factors))
        return [tuple(d * f for d, f in zip(ins[0], factors))]
    if kind in ("layer_norm", "rms_norm"):
        assert ints(a["normalized_shape"]) == [ins[0][-1]]
        assert all(p == (ins[0][-1],) for p in ins[1:])
        return [ins[0]]
    if kind == "dot_general":
        keys = ("batch_dims_lhs", "batch_dims_rhs", "contract_dims_lhs", "contract_dims_rhs")
        lb, rb, lc, rc = (ints(a[k]) for k in keys)
        lhs, rhs = ins
        assert [lhs[i] for i in lb] == [rhs[i] for i in rb] and [lhs[i] for i in lc] == [rhs[i] for i in rc]
        free = lambda s, skip: tuple(d for i, d in enumerate(s) if i not in skip)  # noqa: E731
        return [tuple(lhs[i] for i in lb) + free(lhs, lb + lc) + free(rhs, rb + rc)]
    if kind == "embedding":
        assert g.tensors[op.inputs[0]].dtype == "ui32"
        return [ins[0] + ins[1][1:]]
    if kind == "slice_static":
        begins, ends, step = ints(a["begins"]), ints(a["ends"]), ints(a["step"])
        assert all(0 <= b < e <= d for b, e, d in zip(begins, ends, ins[0])) and set(step) == {1}
        return [tuple(e - b for b, e in zip(begins, ends))]
    if kind == "concat":
        dim = ints(a["dim"])[0] % len(ins[0])
        assert all(s[:dim] + s[dim + 1 :] == ins[0][:dim] + ins[0][dim + 1 :] for s in ins)
        return [ins[0][:dim] + (sum(s[dim] for s in ins),) + ins[0][dim + 1 :]]
    if kind == "sum":
        dims = ints(a["dim_arg"])
        return [tuple(d for i, d in enumerate(ins[0]) if i not in dims)]
    if kind in ("conv2d", "max_pool2d"):
        n, h, w, c = ins[0]
        if kind == "conv2d":
            assert [ints(a[k])[0] for k in ("batch_dim", "height_dim", "width_dim", "channel_dim")] == [0, 1, 2, 3]
            out_c, in_c, kh, kw = ins[1]
            assert in_c * ints(a["groups"])[0] == c
        else:
            out_c, (kh, kw) = c, ints(a["kernel"])
        (sh, sw), (pt, pl, pb, pr), (dh, dw) = ints(a["stride"]), ints(a["padding"]), ints(a["dilation"])
        oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
        ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
        return [(n, oh, ow, out_c)]
    if kind == "batch_norm_inference":
        channels = ins[0][ints(a["dimension"])[0]]
        assert ins[1:] == [(channels,)] * 4
        return [ins[0]]
    if kind == "update_cache":  # cache [users, heads, len, dim] <- [1, heads, users, dim] at a position
        users, heads, _, dim = ins[0]
        assert ins[1] == (1, heads, users, dim) and ins[2] == (1,)
        return []
    if kind == "fill_cache":  # cache [users, heads, len, dim] <- [1, heads, seq, dim] for one user
        users, heads, length, dim = ins[0]
        assert ins[1][0] == 1 and ins[1][1] == heads and ins[1][2] <= length and ins[1][3] == dim
        assert ints(a["batch_offset"])[0] < users
        return []
    raise AssertionError(f"no shape rule for {op.kind}")


def assert_consistent(g: Graph) -> None:
    defined = set(g.inputs)
    for op in g.ops:
        missing = [t for t in op.inputs if t not in defined]
        assert not missing, f"{op.name} reads undefined {missing}"
        got = [g.tensors[t].shape for t in op.outputs]
        assert got == expected_outputs(g, op), f"{op.name} ({op.kind}): {got}"
        defined.update(op.outputs)
    assert set(g.outputs) <= defined


def test_the_checker_catches_what_the_parser_lets_through():
    text = zoo.generate("zoo:bert-base?layers=1")
    line = next(li for li in text.splitlines() if 'loc("encoder.layer.0.attention.self.key.permute_heads")' in li)
    bad = text.replace(line, line.replace("array<i64: 0, 2, 1, 3>", "array<i64: 0, 1, 2, 3>"))
    g = import_mlir(bad, "bad.mlir").graph  # parses: MLIR does not verify unregistered ops
    with pytest.raises(AssertionError, match="key.permute_heads"):
        assert_consistent(g)


# --- the models -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ref",
    [
        BERT,
        LLAMA,
        DECODE,
        RESNET,
        "zoo:llama-3.2-1b?batch=2&seq=16&layers=2",
        "zoo:bert-large?layers=2",
        "zoo:llama-3.2-3b?layers=2",
        "zoo:llama-3.2-3b?mode=decode&layers=2",
        "zoo:llama-3.1-8b?batch=2&seq=16&layers=2",
        "zoo:llama-3.1-8b?mode=decode&batch=4&layers=2",
    ],
)
def test_every_op_is_consistent(ref):
    assert_consistent(graph(ref))


@pytest.mark.parametrize(
    "ref, total, per_kind",
    [
        # 27 embedding + mask ops, then 96 per layer: 6 linears x 10, heads 3 x 3, attention 11, ...
        (BERT, 27 + 96 * 12, {"dot_general": 96, "layer_norm": 1 + 2 * 12, "softmax": 12, "gelu": 12, "embedding": 3}),
        # 21 embedding/rotary/head ops, then 75 per layer: 7 projections + 2 attention matmuls
        (LLAMA, 21 + 75 * 16, {"dot_general": 9 * 16 + 2, "rms_norm": 2 * 16 + 1, "fill_cache": 2 * 16, "silu": 16}),
        (DECODE, 21 + 73 * 16, {"dot_general": 9 * 16 + 2, "update_cache": 2 * 16, "softmax": 16}),
        # the larger models: the same ops per layer, more layers
        (BERT_LARGE, 27 + 96 * 24, {"dot_general": 8 * 24, "layer_norm": 1 + 2 * 24, "softmax": 24, "gelu": 24}),
        (LLAMA_3B, 21 + 75 * 28, {"dot_general": 9 * 28 + 2, "rms_norm": 2 * 28 + 1, "fill_cache": 2 * 28}),
        (LLAMA_3B + "?mode=decode", 21 + 73 * 28, {"update_cache": 2 * 28, "softmax": 28}),
        (LLAMA_8B, 21 + 75 * 32, {"dot_general": 9 * 32 + 2, "rms_norm": 2 * 32 + 1, "silu": 32}),
        (LLAMA_8B + "?mode=decode", 21 + 73 * 32, {"update_cache": 2 * 32, "softmax": 32}),
        # stem 4, 16 bottlenecks x 10 + 4 projection shortcuts x 2, pool + fc 8
        (RESNET, 4 + 16 * 10 + 4 * 2 + 8, {"conv2d": 53, "batch_norm_inference": 53, "relu": 49, "max_pool2d": 1}),
    ],
)
def test_default_op_counts(ref, total, per_kind):
    g = graph(ref)
    assert len(g.ops) == total
    assert {k: kinds(g)[k] for k in per_kind} == per_kind
    assert len(graph(BERT).ops) >= 1000


@pytest.mark.parametrize("ref", [BERT, LLAMA, DECODE, RESNET])
def test_names_are_hierarchical_and_unique(ref):
    g = graph(ref)
    names = [op.name for op in g.ops]
    assert len(set(names)) == len(names)
    assert not any("#" in n for n in names)  # the importer suffixes a loc name used twice
    assert all(re.fullmatch(r"[A-Za-z_][\w-]*(\.[\w-]+)+", n) for n in names)
    assert len(set(g.inputs)) == len(g.inputs)


def test_bert_shapes():
    g = graph(BERT)
    a = "encoder.layer.3.attention.self"
    assert shape(g, f"{a}.query.matmul") == ((3072, 768), "bf16")
    assert shape(g, f"{a}.key.permute_heads") == ((8, 12, 384, 64), "bf16")
    assert shape(g, f"{a}.scores.matmul") == ((8, 12, 384, 384), "f32")
    assert shape(g, f"{a}.softmax") == ((8, 12, 384, 384), "f32")
    assert shape(g, f"{a}.context.merge_heads") == ((3072, 768), "bf16")
    assert shape(g, "encoder.layer.3.intermediate.gelu") == ((8, 384, 3072), "bf16")
    assert shape(g, "embeddings.word_embeddings.gather") == ((1, 3072, 768), "bf16")
    assert shape(g, "embeddings.word_embeddings.weight") == ((30522, 768), "bf16")
    assert g.outputs == ["encoder.layer.11.output.LayerNorm.layer_norm"]
    assert shape(g, g.outputs[0]) == ((8, 384, 768), "bf16")
    op = g.op(f"{a}.scores.matmul")
    assert (op.attrs["batch_dims_lhs"], op.attrs["contract_dims_lhs"], op.attrs["contract_dims_rhs"]) == (
        "array<i64: 0, 1>",
        "array<i64: 3>",
        "array<i64: 2>",
    )
    assert g.op(f"{a}.softmax").attrs["dimension"] == "-1 : si32"
    assert g.op(f"{a}.query.split_heads").attrs["shape"] == "[8 : i32, 384 : i32, 12 : i32, 64 : i32]"


def test_llama_prefill_shapes():
    g = graph(LLAMA)
    a = "model.layers.15.self_attn"
    assert shape(g, "input_ids") == ((1, 128), "i64")
    assert shape(g, f"{a}.q_proj.matmul") == ((128, 2048), "bf16")
    assert shape(g, f"{a}.k_proj.matmul") == ((128, 512), "bf16")
    assert shape(g, f"{a}.v_proj.matmul") == ((128, 512), "bf16")
    assert shape(g, f"{a}.rotary.k.add") == ((1, 8, 128, 64), "bf16")
    assert shape(g, f"{a}.repeat_kv.k.reshape.1") == ((1, 32, 128, 64), "bf16")
    assert shape(g, f"{a}.scores.matmul") == ((1, 32, 128, 128), "f32")
    assert shape(g, "model.layers.0.mlp.act_fn.silu") == ((1, 128, 8192), "bf16")
    assert shape(g, "lm_head.matmul") == ((128, 128256), "bf16")
    assert g.outputs[0] == "lm_head.unflatten" and shape(g, g.outputs[0]) == ((1, 128, 128256), "bf16")
    assert shape(g, f"{a}.k_cache") == ((1, 8, 128, 64), "bf16")  # the cache holds the prompt
    assert g.op(f"{a}.k_cache.fill").inputs == [f"{a}.k_cache", f"{a}.rotary.k.add"]
    assert kinds(g)["update_cache"] == 0
    short = graph("zoo:llama-3.2-1b?seq=32&layers=1")
    assert shape(short, "model.layers.0.self_attn.k_cache") == ((1, 8, 32, 64), "bf16")
    room = graph("zoo:llama-3.2-1b?seq=32&cache=256&layers=1")
    assert shape(room, "model.layers.0.self_attn.k_cache") == ((1, 8, 256, 64), "bf16")
    assert shape(room, "model.layers.0.self_attn.scores.matmul") == ((1, 32, 32, 32), "f32")  # the prompt only


def test_llama_decode_has_one_token_and_updates_the_cache():
    g = graph(DECODE)
    a = "model.layers.0.self_attn"
    assert shape(g, "input_ids") == ((1, 1), "i64")
    assert shape(g, f"{a}.q_proj.matmul") == ((1, 2048), "bf16")
    assert shape(g, f"{a}.k_proj.matmul") == ((1, 512), "bf16")
    assert shape(g, f"{a}.scores.matmul") == ((1, 32, 1, 128), "f32")
    assert shape(g, "lm_head.unflatten") == ((1, 1, 128256), "bf16")
    update = g.op(f"{a}.k_cache.update")
    assert update.outputs == [] and update.attrs["batch_offset"] == "0 : i32"
    assert update.inputs == [f"{a}.k_cache", f"{a}.k_cache.permute", "cache_position"]
    assert g.op(f"{a}.repeat_kv.k.reshape.0").inputs == [f"{a}.k_cache"]  # attention reads the cache
    assert kinds(g)["fill_cache"] == 0
    assert f"{a}.k_cache" in g.outputs  # updated in place and returned, as real exports do
    longer = graph("zoo:llama-3.2-1b?mode=decode&cache=4096&batch=4&layers=1")
    assert shape(longer, f"{a}.scores.matmul") == ((4, 32, 1, 4096), "f32")
    assert shape(longer, f"{a}.k_cache.permute") == ((1, 8, 4, 64), "bf16")
    # the users are the rows of their one position, as tt-metal lays decode out: [1, B, hidden],
    # so the MLP and the LM head flatten and unflatten without moving a tile
    assert shape(longer, "input_ids") == ((1, 4), "i64")
    assert shape(longer, "model.layers.0.mlp.act_fn.silu") == ((1, 4, 8192), "bf16")
    assert shape(longer, "lm_head.unflatten") == ((1, 4, 128256), "bf16")


def test_decode_defaults_to_a_cache_of_128_positions():
    """Decode throughput is published with 128 positions filled; an explicit cache overrides it."""
    for ref in (DECODE, LLAMA_3B + "?mode=decode&layers=1", LLAMA_8B + "?mode=decode&layers=1"):
        g = graph(ref)
        assert shape(g, "model.layers.0.self_attn.k_cache")[0][2] == 128
        assert shape(g, "model.layers.0.self_attn.v_cache")[0][2] == 128
        assert shape(g, "attention_mask")[0] == (1, 1, 1, 128)
        assert shape(g, "model.layers.0.self_attn.scores.matmul")[0][-1] == 128
    g = graph("zoo:llama-3.2-1b?mode=decode&batch=32&cache=1024&layers=1")
    assert shape(g, "model.layers.0.self_attn.k_cache") == ((32, 8, 1024, 64), "bf16")
    assert shape(g, "attention_mask") == ((32, 1, 1, 1024), "bf16")


def test_bert_large_shapes():
    g = graph(BERT_LARGE)
    a = "encoder.layer.23.attention.self"
    assert shape(g, "embeddings.word_embeddings.weight") == ((30522, 1024), "bf16")
    assert shape(g, "embeddings.position_embeddings.weight") == ((512, 1024), "bf16")
    assert shape(g, f"{a}.query.weight") == ((1024, 1024), "bf16")
    assert shape(g, f"{a}.query.matmul") == ((3072, 1024), "bf16")
    assert shape(g, f"{a}.key.permute_heads") == ((8, 16, 384, 64), "bf16")
    assert shape(g, f"{a}.scores.matmul") == ((8, 16, 384, 384), "f32")
    assert shape(g, "encoder.layer.23.intermediate.dense.weight") == ((4096, 1024), "bf16")
    assert shape(g, "encoder.layer.23.intermediate.gelu") == ((8, 384, 4096), "bf16")
    assert g.outputs == ["encoder.layer.23.output.LayerNorm.layer_norm"]
    assert shape(g, g.outputs[0]) == ((8, 384, 1024), "bf16")
    assert not g.has_op("encoder.layer.24.attention.self.softmax")
    small = graph("zoo:bert-large?batch=2&seq=128&layers=3")
    assert shape(small, "encoder.layer.2.attention.self.softmax") == ((2, 16, 128, 128), "f32")
    assert kinds(small)["softmax"] == 3


@pytest.mark.parametrize(
    "ref, hidden, heads, head_dim, ffn, layers",
    [
        (LLAMA, 2048, 32, 64, 8192, 16),
        (LLAMA_3B, 3072, 24, 128, 8192, 28),
        (LLAMA_8B, 4096, 32, 128, 14336, 32),
    ],
)
def test_llama_family_shapes(ref, hidden, heads, head_dim, ffn, layers):
    g = graph(ref)
    last = f"model.layers.{layers - 1}"
    a = f"{last}.self_attn"
    assert shape(g, "model.embed_tokens.weight") == ((128256, hidden), "bf16")
    assert shape(g, f"{a}.q_proj.weight") == ((heads * head_dim, hidden), "bf16")
    assert shape(g, f"{a}.k_proj.weight") == ((8 * head_dim, hidden), "bf16")
    assert shape(g, f"{a}.v_proj.weight") == ((8 * head_dim, hidden), "bf16")
    assert shape(g, f"{a}.o_proj.weight") == ((hidden, heads * head_dim), "bf16")
    assert shape(g, f"{last}.mlp.gate_proj.weight") == ((ffn, hidden), "bf16")
    assert shape(g, f"{last}.mlp.down_proj.weight") == ((hidden, ffn), "bf16")
    assert shape(g, f"{a}.k_cache") == ((1, 8, 128, head_dim), "bf16")
    assert shape(g, f"{a}.repeat_kv.k.reshape.1") == ((1, heads, 128, head_dim), "bf16")
    assert shape(g, f"{a}.scores.matmul") == ((1, heads, 128, 128), "f32")
    assert shape(g, "model.rotary_emb.inv_freq") == ((head_dim // 2,), "f32")
    assert not g.has_op(f"model.layers.{layers}.self_attn.softmax")
    assert shape(g, "lm_head.unflatten") == ((1, 128, 128256), "bf16")


def test_llama_3b_and_8b_weights():
    assert shape(graph(LLAMA_3B), "model.layers.0.self_attn.q_proj.weight") == ((3072, 3072), "bf16")
    assert shape(graph(LLAMA_3B), "model.layers.0.self_attn.k_proj.weight") == ((1024, 3072), "bf16")
    assert shape(graph(LLAMA_8B), "model.layers.0.self_attn.q_proj.weight") == ((4096, 4096), "bf16")
    assert shape(graph(LLAMA_8B), "model.layers.0.self_attn.k_proj.weight") == ((1024, 4096), "bf16")
    assert shape(graph(LLAMA_8B), "model.layers.0.mlp.gate_proj.weight") == ((14336, 4096), "bf16")


def test_arguments_are_marked_as_exports_mark_them():
    """Weights are parameters and registered buffers constants (both loaded once); what changes
    every step is an input, the KV caches included."""
    bert = argument_kinds(zoo.generate("zoo:bert-base?layers=1"))
    assert {n: k for n, k in bert.items() if k != "parameter"} == {
        "input_ids": "input",
        "token_type_ids": "input",
        "attention_mask": "input",
        "embeddings.position_ids": "constant",
    }
    assert bert["encoder.layer.0.attention.self.query.weight"] == "parameter"
    assert bert["encoder.layer.0.attention.self.query.bias"] == "parameter"
    assert bert["encoder.layer.0.output.LayerNorm.weight"] == "parameter"
    assert bert["embeddings.word_embeddings.weight"] == "parameter"
    assert argument_kinds(zoo.generate("zoo:bert-large?layers=1")) == bert  # the same arguments, larger

    for mode in ("prefill", "decode"):
        llama = argument_kinds(zoo.generate(f"zoo:llama-3.1-8b?mode={mode}&layers=2"))
        inputs = {"input_ids", "cache_position", "attention_mask"} | {
            f"model.layers.{i}.self_attn.{part}" for i in range(2) for part in ("k_cache", "v_cache")
        }
        assert {n for n, k in llama.items() if k == "input"} == inputs
        assert {n for n, k in llama.items() if k == "constant"} == {"model.rotary_emb.inv_freq"}
        assert llama["model.layers.1.self_attn.q_proj.weight"] == "parameter"
        assert llama["model.layers.1.post_attention_layernorm.weight"] == "parameter"
        assert llama["model.embed_tokens.weight"] == llama["lm_head.weight"] == "parameter"

    resnet = argument_kinds(zoo.generate("zoo:resnet50?batch=1&size=64"))
    assert Counter(resnet.values()) == {"input": 1, "parameter": 161, "constant": 106}  # as the export has it
    assert resnet["pixel_values"] == "input"
    assert resnet["resnet.stem.conv.weight"] == resnet["resnet.stem.bn.weight"] == "parameter"
    assert resnet["resnet.stem.bn.running_mean"] == resnet["resnet.stem.bn.running_var"] == "constant"

    mlp = argument_kinds(zoo.generate("zoo:mlp?layers=1"))
    assert mlp == {
        "input": "input",
        **dict.fromkeys(("mlp.layer.0.fc1.weight", "mlp.layer.0.fc1.bias"), "parameter"),
        **dict.fromkeys(("mlp.layer.0.fc2.weight", "mlp.layer.0.fc2.bias"), "parameter"),
    }
    assert argument_kinds(zoo.generate("zoo:matmul:64x64x64")) == {"a": "input", "b": "input"}


def test_resnet_shapes():
    g = graph(RESNET)
    assert shape(g, "pixel_values") == ((8, 224, 224, 3), "bf16")
    assert shape(g, "resnet.stem.conv") == ((8, 112, 112, 64), "bf16")
    assert shape(g, "resnet.stem.maxpool") == ((8, 56, 56, 64), "bf16")
    stage_ends = {0: (2, 56, 256), 1: (3, 28, 512), 2: (5, 14, 1024), 3: (2, 7, 2048)}
    for s, (last, side, channels) in stage_ends.items():
        assert shape(g, f"resnet.stage.{s}.block.{last}.relu3") == ((8, side, side, channels), "bf16")
    assert shape(g, "resnet.stage.2.block.1.conv2.weight") == ((256, 256, 3, 3), "bf16")
    assert shape(g, "resnet.pool.mean") == ((8, 2048), "bf16")
    assert g.outputs == ["resnet.fc.bias_add"] and shape(g, g.outputs[0]) == ((8, 1000), "bf16")
    conv = g.op("resnet.stage.1.block.0.conv2")
    assert (conv.attrs["stride"], conv.attrs["padding"], conv.attrs["groups"]) == (
        "array<i32: 2, 2>",
        "array<i32: 1, 1, 1, 1>",
        "1 : i32",
    )
    assert g.op("resnet.stage.1.block.0.shortcut.conv").attrs["stride"] == "array<i32: 2, 2>"
    assert not g.has_op("resnet.stage.1.block.1.shortcut.conv")
    assert g.op("resnet.stem.bn").attrs["dimension"] == "3 : i32"


@pytest.mark.parametrize(
    "ref, first, per_layer",
    [
        (BERT + "?batch=1&seq=32", 1, 96),
        (LLAMA + "?seq=32", 1, 75),
        (DECODE + "&cache=64", 1, 73),
        (RESNET + "?batch=1&size=64", 50, 10),  # ResNet depth: +3 layers is one more bottleneck
    ],
)
def test_layers_scale_the_op_count_linearly(ref, first, per_layer):
    step = 3 if "resnet" in ref else 1
    counts = [len(graph(with_query(ref, f"layers={first + i * step}")).ops) for i in range(3)]
    assert counts[1] - counts[0] == counts[2] - counts[1] == per_layer


def test_parameters():
    g = graph("zoo:bert-base?batch=2&seq=128&layers=1&dtype=f32")
    assert shape(g, "encoder.layer.0.attention.self.scores.matmul") == ((2, 12, 128, 128), "f32")
    assert shape(g, g.outputs[0]) == ((2, 128, 768), "f32")
    assert "encoder.layer.0.attention.self.query.typecast" not in g.tensors  # nothing to cast in f32
    g = graph("zoo:llama-3.2-1b?batch=2&seq=16&layers=2")
    assert shape(g, "model.layers.1.self_attn.q_proj.matmul") == ((32, 2048), "bf16")
    assert kinds(g)["fill_cache"] == 2 * 2 * 2  # one per user, keys and values, per layer
    assert g.op("model.layers.0.self_attn.v_cache.user.1.fill").attrs["batch_offset"] == "1 : i32"
    assert shape(g, "model.layers.0.self_attn.k_cache") == ((2, 8, 16, 64), "bf16")
    g = graph("zoo:resnet50?batch=1&size=128&layers=101")
    assert kinds(g)["conv2d"] == 1 + 3 * 33 + 4
    assert shape(g, "resnet.stage.3.block.2.relu3") == ((1, 4, 4, 2048), "bf16")
    assert shape(g, "resnet.stage.2.block.22.relu3") == ((1, 8, 8, 1024), "bf16")
    assert zoo.resnet_stages(14) == (1, 1, 1, 1) and zoo.resnet_stages(152) == (3, 8, 36, 3)


@pytest.mark.parametrize(
    "ref, fragment",
    [
        ("zoo:bert-base?layers=0", "parameter layers must be a positive integer, got '0'"),
        ("zoo:bert-base?batch=-1", "parameter batch must be a positive integer"),
        ("zoo:bert-base?seq=", "parameter seq must be a positive integer, got ''"),
        ("zoo:bert-base?seq=2.5", "parameter seq must be a positive integer"),
        ("zoo:bert-base?seq=1024", "parameter seq must be at most 512"),
        ("zoo:bert-base?heads=16", "unknown parameter 'heads'"),
        ("zoo:bert-base?layers=100000", "parameter layers must be at most"),
        ("zoo:llama-3.2-1b?mode=train", "parameter mode must be one of prefill, decode, got 'train'"),
        ("zoo:llama-3.2-1b?mode=decode&seq=8", "parameter seq is 1 in decode mode"),
        ("zoo:llama-3.2-1b?seq=256&cache=128", "parameter cache (128) must hold the prompt"),
        ("zoo:llama-3.2-1b?cache=0", "parameter cache must be a positive integer"),
        ("zoo:llama-3.2-1b?size=3", "unknown parameter 'size'"),
        ("zoo:bert-large?seq=513", "parameter seq must be at most 512"),
        ("zoo:bert-large?mode=decode", "unknown parameter 'mode'"),
        ("zoo:llama-3.2-3b?mode=decode&seq=2", "parameter seq is 1 in decode mode"),
        ("zoo:llama-3.1-8b?seq=256&cache=255", "parameter cache (255) must hold the prompt"),
        ("zoo:resnet50?layers=51", "parameter layers is the ResNet depth"),
        ("zoo:resnet50?seq=3", "unknown parameter 'seq'"),
        ("zoo:resnet50?dtype=int8", "parameter dtype must be one of bf16, f32, f16"),
        ("zoo:matmul:8x8x8?dtype=bfp8", "parameter dtype must be one of"),
    ],
)
def test_bad_parameters_are_one_line_model_errors(ref, fragment):
    with pytest.raises(ModelLoadError, match=re.escape(fragment)) as err:
        load_model(ref)
    assert "\n" not in str(err.value) and str(err.value).startswith(ref)


def test_names_list_the_models():
    assert zoo.names() == [
        "zoo:mlp",
        "zoo:bert-base",
        "zoo:bert-large",
        "zoo:llama-3.2-1b",
        "zoo:llama-3.2-1b?mode=decode",
        "zoo:llama-3.2-3b",
        "zoo:llama-3.2-3b?mode=decode",
        "zoo:llama-3.1-8b",
        "zoo:llama-3.1-8b?mode=decode",
        "zoo:resnet50",
        "zoo:matmul:2048x2048x2048",
    ]
    assert all(zoo.is_zoo(n) for n in zoo.names())


@pytest.mark.parametrize(
    "ref",
    [
        "zoo:bert-base?layers=1",
        "zoo:bert-large?layers=1",
        "zoo:llama-3.2-1b?layers=1",
        "zoo:llama-3.2-1b?mode=decode&layers=1",
        "zoo:llama-3.1-8b?mode=decode&batch=32&layers=1",
        RESNET,
    ],
)
def test_compiles_for_wormhole(ref, wormhole):
    compilation = compile_model(load_model(ref), wormhole)
    assert compilation.kernel.ops
    assert all(KERNEL in op.meta for op in compilation.kernel.ops)


# --- the builder ----------------------------------------------------------------------------------


def test_builder_emits_ops_with_several_or_no_results():
    b = zoo.MlirBuilder()
    x = b.arg("x", (4, 8), "bf16")
    hi, lo = b.emit("ttir.split", [x], [((4, 4), "bf16"), ((4, 4), "bf16")], "split", "dim = 1 : si32")
    assert (hi, lo) == ("%0#0", "%0#1")
    y = b.eltwise("add", [hi, lo], "add")
    assert b.emit("ttir.print", [y], [], "print") == []
    s = b.reshape(y, (16,), "flat")
    g = import_mlir(b.text([y, s]), "builder.mlir").graph
    assert [op.name for op in g.ops] == ["split", "add", "print", "flat"]
    assert g.op("split").outputs == ["split:0", "split:1"] and g.op("split").attrs["dim"] == "1 : si32"
    assert g.op("add").inputs == ["split:0", "split:1"]
    assert g.op("print").outputs == []
    assert zoo.MlirBuilder.tensor_type((), "f32") == "tensor<f32>"


def test_builder_marks_each_argument_with_its_kind():
    b = zoo.MlirBuilder()
    x = b.arg("x", (4, 8), "bf16")  # an input unless said otherwise
    w = b.arg("w", (8, 8), "bf16", "parameter")
    t = b.arg("table", (8,), "i64", "constant")
    text = b.text([b.op("matmul", [x, w], (4, 8), "bf16", "mm"), t])
    assert '%arg1: tensor<8x8xbf16> {ttcore.argument_type = #ttcore.argument_type<parameter>, ttir.name = "w"}' in text
    assert argument_kinds(text) == {"x": "input", "w": "parameter", "table": "constant"}
    assert import_mlir(text, "kinds.mlir").graph.inputs == ["x", "w", "table"]  # the importer still names them
    with pytest.raises(ValueError, match="argument kind 'weight' is not one of input, parameter, constant"):
        b.arg("v", (8,), "bf16", "weight")


def test_builder_rejects_inconsistent_ops():
    b = zoo.MlirBuilder()
    x = b.arg("x", (4, 8), "bf16")
    w = b.arg("w", (16, 8), "bf16")
    with pytest.raises(ValueError, match="cannot reshape"):
        b.reshape(x, (5, 8), "r")
    with pytest.raises(ValueError, match="dot_general"):
        b.dot_general(x, w, "mm")
    with pytest.raises(ValueError, match="broadcast"):
        b.broadcast(x, (4, 16), "bc")
    b.permute(w, (1, 0), "t")
    with pytest.raises(ValueError, match="two ops named 't'"):
        b.permute(w, (1, 0), "t")
