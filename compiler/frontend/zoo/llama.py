"""Llama decoders (3.2 1B, 3.2 3B, 3.1 8B): prefill of a prompt, or decode of one token per user."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.zoo.builder import ACC, MlirBuilder
from tilescope.compiler.frontend.zoo.torch_layers import dense, gather

PREFILL_SEQ = 128  # prompt length when none is given
# KV cache positions in decode when none are given: Tenstorrent publishes decode throughput with
# 128 positions filled
DECODE_CACHE = 128


@dataclass(frozen=True)
class LlamaConfig:
    """The sizes of a Llama decoder (grouped-query attention, SiLU-gated MLP); `layers` is the
    default depth."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    layers: int
    vocab: int = 128256


LLAMAS = {
    "llama-3.2-1b": LlamaConfig(hidden=2048, heads=32, kv_heads=8, head_dim=64, ffn=8192, layers=16),
    "llama-3.2-3b": LlamaConfig(hidden=3072, heads=24, kv_heads=8, head_dim=128, ffn=8192, layers=28),
    "llama-3.1-8b": LlamaConfig(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=32),
}


def llama(
    config: LlamaConfig,
    batch: int = 1,
    seq: int | None = None,
    layers: int | None = None,
    mode: str = "prefill",
    cache: int | None = None,
    dtype: str = "bf16",
    devices: int = 1,
) -> str:
    """A Llama decoder of `config`'s sizes: RMSNorm, rotary embeddings, grouped-query attention
    and a SiLU-gated MLP per layer (`layers` of them by default), then the LM head.

    `cache` is the number of positions the KV cache holds. prefill (default seq 128): attention
    over the prompt under a causal mask, keys and values written into the KV cache (default: the
    prompt's `seq` positions) with `ttir.fill_cache`. decode: one token per user, its key and value
    written with `ttir.update_cache` at `cache_position`, attention over the whole cache (default
    128 positions)."""
    decode = mode == "decode"
    if decode:
        if seq not in (None, 1):
            raise ModelLoadError(f"parameter seq is 1 in decode mode (one new token per user), got {seq}")
        seq = 1
        cache = DECODE_CACHE if cache is None else cache
    else:
        seq = PREFILL_SEQ if seq is None else seq
        if cache is not None and cache < seq:
            raise ModelLoadError(f"parameter cache ({cache}) must hold the prompt (seq {seq})")
        cache = seq if cache is None else cache
    layers = config.layers if layers is None else layers
    hidden, head_dim = config.hidden, config.head_dim
    keys = cache if decode else seq  # positions each query attends to
    rows = batch * seq

    if devices > 1 and (config.kv_heads % devices or config.ffn % devices or config.vocab % devices):
        raise ModelLoadError(
            f"parameter devices ({devices}) must divide the KV heads ({config.kv_heads}), the MLP width "
            f"({config.ffn}) and the vocabulary ({config.vocab})"
        )
    b = MlirBuilder(devices=devices)
    # decode keeps its users in the rows of one sequence position, [1, B, hidden], as tt-metal's
    # Llama demo lays decode out ([1, 1, B, hidden]): a user's row never needs a tile of its own
    lead = (seq, batch) if decode else (batch, seq)
    input_ids = b.arg("input_ids", lead, "i64", "input")
    cache_position = b.arg("cache_position", (seq,), "i64", "input")
    attention_mask = b.arg("attention_mask", (batch, 1, seq, keys), dtype, "input")  # additive: 0 or -inf
    caches = []  # inputs: every step writes them
    for i in range(layers):
        for part in ("k_cache", "v_cache"):
            shape = (batch, config.kv_heads, cache, head_dim)
            caches.append(b.arg(f"model.layers.{i}.self_attn.{part}", shape, dtype, "input", split=1))

    table = b.arg("model.embed_tokens.weight", (config.vocab, hidden), dtype, "parameter")
    h = gather(b, input_ids, table, "model.embed_tokens")

    # rotary tables: positions x inv_freq, duplicated to the head dim, cos and sin: [1, S, D]
    r = "model.rotary_emb"
    inv_freq = b.arg(f"{r}.inv_freq", (head_dim // 2,), "f32", "constant")  # a registered buffer
    inv_freq = b.reshape(inv_freq, (1, head_dim // 2, 1), f"{r}.inv_freq.reshape")
    positions = b.reshape(cache_position, (1, 1, seq), f"{r}.positions.reshape")
    positions = b.typecast(positions, "f32", f"{r}.positions.typecast")
    freqs = b.dot_general(inv_freq, positions, f"{r}.freqs.matmul", batch=1)
    freqs = b.permute(freqs, (0, 2, 1), f"{r}.freqs.transpose")
    emb = b.concat([freqs, freqs], 2, f"{r}.emb")
    cos = b.typecast(b.op("cos", [emb], b.shape(emb), "f32", f"{r}.cos"), dtype, f"{r}.cos.typecast")
    sin = b.typecast(b.op("sin", [emb], b.shape(emb), "f32", f"{r}.sin"), dtype, f"{r}.sin.typecast")
    mask = b.typecast(attention_mask, ACC, "model.attention_mask.typecast")

    for i in range(layers):
        kv = (caches[2 * i], caches[2 * i + 1])
        h = _llama_layer(b, h, f"model.layers.{i}", config, kv, (cos, sin), mask, cache_position, batch, decode)
    norm = b.arg("model.norm.weight", (hidden,), dtype, "parameter")
    h = b.rms_norm(h, norm, "model.norm.rms_norm")
    h = b.reshape(h, (rows, hidden), "lm_head.flatten")
    logits = dense(b, h, config.vocab, "lm_head", (*lead, config.vocab), bias=False, split=0)
    return b.text([logits, *caches])


def _rotary(b: MlirBuilder, x: str, cos: str, sin: str, scope: str) -> str:
    """x * cos + rotate_half(x) * sin on [B, heads, S, D]; rotate_half(x) = concat(-x2, x1)."""
    shape = b.shape(x)
    half = shape[-1] // 2
    y = b.eltwise("multiply", [x, b.broadcast(cos, shape, f"{scope}.cos_broadcast")], f"{scope}.mul_cos")
    hi = b.slice(x, (0, 0, 0, half), shape, f"{scope}.slice_hi")
    hi = b.op("neg", [hi], b.shape(hi), b.dtype(hi), f"{scope}.neg")
    lo = b.slice(x, (0, 0, 0, 0), shape[:-1] + (half,), f"{scope}.slice_lo")
    rot = b.concat([hi, lo], 3, f"{scope}.rotate_half")
    rot = b.eltwise("multiply", [rot, b.broadcast(sin, shape, f"{scope}.sin_broadcast")], f"{scope}.mul_sin")
    return b.eltwise("add", [y, rot], f"{scope}.add")


def _repeat_kv(b: MlirBuilder, x: str, heads: int, scope: str) -> str:
    """[B, kv_heads, L, D] -> [B, heads, L, D]: each KV head serves heads / kv_heads query heads."""
    batch, kv_heads, length, dim = b.shape(x)
    group = heads // kv_heads
    x = b.reshape(x, (batch, kv_heads, 1, length, dim), f"{scope}.reshape.0")
    x = b.broadcast(x, (batch, kv_heads, group, length, dim), f"{scope}.broadcast")
    return b.reshape(x, (batch, heads, length, dim), f"{scope}.reshape.1")


def _llama_layer(
    b: MlirBuilder,
    h: str,
    scope: str,
    config: LlamaConfig,
    kv_cache: tuple[str, str],
    rotary: tuple[str, str],
    mask: str,
    cache_position: str,
    batch: int,
    decode: bool,
) -> str:
    lead, hidden = b.shape(h)[:-1], b.shape(h)[-1]  # [B, S] in prefill, [1, B] in decode
    seq = math.prod(lead) // batch
    dtype = b.dtype(h)
    heads, kv_heads, head_dim = config.heads, config.kv_heads, config.head_dim
    k_cache, v_cache = kv_cache
    rows = batch * seq
    a = f"{scope}.self_attn"

    weight = b.arg(f"{scope}.input_layernorm.weight", (hidden,), dtype, "parameter")
    x = b.rms_norm(h, weight, f"{scope}.input_layernorm.rms_norm")
    x = b.reshape(x, (rows, hidden), f"{a}.flatten")
    proj = {}
    for part, n in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
        s = f"{a}.{part}_proj"
        w = b.arg(f"{s}.weight", (n * head_dim, hidden), dtype, "parameter", split=0)
        y = b.dot_general(x, b.permute(w, (1, 0), f"{s}.weight.transpose"), f"{s}.matmul")
        if decode:  # seq is 1: [B, n * D] is already [B, n, 1, D]
            proj[part] = b.reshape(y, (batch, n, 1, head_dim), f"{s}.split_heads")
        else:
            y = b.reshape(y, (batch, seq, n, head_dim), f"{s}.split_heads")
            proj[part] = b.permute(y, (0, 2, 1, 3), f"{s}.permute_heads")

    r = f"{a}.rotary"
    cos = b.reshape(rotary[0], (1, 1, seq, head_dim), f"{r}.cos.reshape")
    sin = b.reshape(rotary[1], (1, 1, seq, head_dim), f"{r}.sin.reshape")
    q = _rotary(b, proj["q"], cos, sin, f"{r}.q")
    k = _rotary(b, proj["k"], cos, sin, f"{r}.k")
    v = proj["v"]

    if decode:  # write this step's key and value, then attend over the whole cache
        for part, new, kv in (("k_cache", k, k_cache), ("v_cache", v, v_cache)):
            new = b.permute(new, (2, 1, 0, 3), f"{a}.{part}.permute")
            b.update_cache(kv, new, cache_position, f"{a}.{part}.update")
        k, v = k_cache, v_cache
    else:  # fill the caches for the decode steps to come; attend over the prompt
        for part, new, kv in (("k_cache", k, k_cache), ("v_cache", v, v_cache)):
            if batch == 1:
                b.fill_cache(kv, new, f"{a}.{part}.fill")
                continue
            for user in range(batch):
                shape = b.shape(new)
                row = b.slice(new, (user, 0, 0, 0), (user + 1,) + shape[1:], f"{a}.{part}.user.{user}.slice")
                b.fill_cache(kv, row, f"{a}.{part}.user.{user}.fill", user)

    k = _repeat_kv(b, k, heads, f"{a}.repeat_kv.k")
    v = _repeat_kv(b, v, heads, f"{a}.repeat_kv.v")
    q = b.typecast(q, ACC, f"{a}.q.typecast")
    k = b.typecast(k, ACC, f"{a}.k.typecast")
    k = b.permute(k, (0, 1, 3, 2), f"{a}.k.transpose")
    scores = b.dot_general(q, k, f"{a}.scores.matmul", batch=2)
    scale = b.constant(1 / math.sqrt(head_dim), b.shape(scores), ACC, f"{a}.scores.scale_factor")
    scores = b.eltwise("multiply", [scores, scale], f"{a}.scores.scale")
    bias = b.broadcast(mask, b.shape(scores), f"{a}.scores.mask_broadcast")
    scores = b.eltwise("add", [scores, bias], f"{a}.scores.mask_add")
    probs = b.softmax(scores, f"{a}.softmax")
    v = b.typecast(v, ACC, f"{a}.v.typecast")
    ctx = b.dot_general(probs, v, f"{a}.context.matmul", batch=2)
    ctx = b.typecast(ctx, dtype, f"{a}.context.typecast")
    if not decode:
        ctx = b.permute(ctx, (0, 2, 1, 3), f"{a}.context.permute")
    ctx = b.reshape(ctx, (rows, heads * head_dim), f"{a}.context.merge_heads")
    y = dense(b, ctx, hidden, f"{a}.o_proj", (*lead, hidden), bias=False, split=1)
    h = b.eltwise("add", [h, y], f"{scope}.attn_residual_add")
    return _llama_mlp(b, h, scope, config)


def _llama_mlp(b: MlirBuilder, h: str, scope: str, config: LlamaConfig) -> str:
    """The post-attention norm and the gated MLP (SiLU), with its residual add."""
    lead, hidden = b.shape(h)[:-1], b.shape(h)[-1]
    dtype = b.dtype(h)
    rows = math.prod(lead)
    m = f"{scope}.mlp"
    n = f"{scope}.post_attention_layernorm"
    x = b.rms_norm(h, b.arg(f"{n}.weight", (hidden,), dtype, "parameter"), f"{n}.rms_norm")
    x = b.reshape(x, (rows, hidden), f"{m}.flatten")
    gate = dense(b, x, config.ffn, f"{m}.gate_proj", (*lead, config.ffn), bias=False, split=0)
    gate = b.op("silu", [gate], b.shape(gate), dtype, f"{m}.act_fn.silu")
    up = dense(b, x, config.ffn, f"{m}.up_proj", (*lead, config.ffn), bias=False, split=0)
    y = b.eltwise("multiply", [gate, up], f"{m}.gate_mul")
    y = b.reshape(y, (rows, config.ffn), f"{m}.down_proj.flatten")
    y = dense(b, y, hidden, f"{m}.down_proj", (*lead, hidden), bias=False, split=1)
    return b.eltwise("add", [h, y], f"{scope}.mlp_residual_add")
