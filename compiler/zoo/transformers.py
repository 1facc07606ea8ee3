"""Transformer models: BERT-base encoders and Llama 3.2 1B (prefill and decode)."""

from __future__ import annotations

import math

from ..errors import ModelLoadError
from .builder import ACC, MlirBuilder, Shape


def _param_1d(b: MlirBuilder, name: str, size: int, dtype: str) -> str:
    """A [size] parameter through the 1x1xN round trip exports put around every bias and norm weight."""
    p = b.arg(name, (size,), dtype)
    p = b.reshape(p, (1, 1, size), f"{name}.reshape.0")
    return b.reshape(p, (size,), f"{name}.reshape.1")


def _dense(
    b: MlirBuilder, x: str, out: int, scope: str, unflatten: Shape, bias: bool = True, roundtrip: bool = False
) -> str:
    """torch.nn.Linear on a [rows, in] input: the [out, in] weight transposed, a dot_general, the
    result reshaped to `unflatten`, and the bias reshaped, broadcast and added. `roundtrip` adds the
    1xOxI reshape round trip torch-xla exports put around the weight."""
    width, dtype = b.shape(x)[1], b.dtype(x)
    w = b.arg(f"{scope}.weight", (out, width), dtype)
    if roundtrip:
        w = b.reshape(w, (1, out, width), f"{scope}.weight.reshape.0")
        w = b.reshape(w, (out, width), f"{scope}.weight.reshape.1")
    w = b.permute(w, (1, 0), f"{scope}.weight.transpose")
    y = b.dot_general(x, w, f"{scope}.matmul")
    y = b.reshape(y, unflatten, f"{scope}.unflatten")
    if not bias:
        return y
    c = _param_1d(b, f"{scope}.bias", out, dtype)
    c = b.reshape(c, (1,) * (len(unflatten) - 1) + (out,), f"{scope}.bias.reshape.2")
    c = b.broadcast(c, unflatten, f"{scope}.bias.broadcast")
    return b.eltwise("add", [y, c], f"{scope}.bias_add")


def _gather(b: MlirBuilder, ids: str, table: str, scope: str) -> str:
    """Token ids [B, S] (i64) -> embeddings [B, S, width]: flattened, cast to ui32, gathered."""
    shape = b.shape(ids)
    flat = b.reshape(ids, (math.prod(shape),), f"{scope}.flatten_ids")
    flat = b.typecast(flat, "ui32", f"{scope}.ids_typecast")
    flat = b.reshape(flat, (1, math.prod(shape)), f"{scope}.ids_reshape")
    rows = b.embedding(flat, table, f"{scope}.gather")
    return b.reshape(rows, shape + b.shape(table)[1:], f"{scope}.unflatten")


# --- BERT -------------------------------------------------------------------------------------------


def bert_base(batch: int = 8, seq: int = 384, layers: int = 12, dtype: str = "bf16") -> str:
    """BERT-base encoder (hidden 768, 12 heads of 64, FFN 3072, vocab 30522), post-norm layers."""
    hidden, heads, ffn, vocab, positions = 768, 12, 3072, 30522, 512
    if seq > positions:
        raise ModelLoadError(f"parameter seq must be at most {positions} (BERT's position table), got {seq}")
    head_dim = hidden // heads
    b = MlirBuilder()
    tokens = (batch, seq)
    x3 = (batch, seq, hidden)
    input_ids = b.arg("input_ids", tokens, "i64")
    token_type_ids = b.arg("token_type_ids", tokens, "i64")
    attention_mask = b.arg("attention_mask", tokens, "i64")
    position_ids = b.arg("embeddings.position_ids", (1, positions), "i64")

    # embeddings: word + token type + position, then LayerNorm
    e = "embeddings"
    words = _gather(b, input_ids, b.arg(f"{e}.word_embeddings.weight", (vocab, hidden), dtype), f"{e}.word_embeddings")
    type_table = b.arg(f"{e}.token_type_embeddings.weight", (2, hidden), dtype)
    types = _gather(b, token_type_ids, type_table, f"{e}.token_type_embeddings")
    h = b.eltwise("add", [words, types], f"{e}.add_token_type")
    pos_table = b.arg(f"{e}.position_embeddings.weight", (positions, hidden), dtype)
    pos = b.slice(position_ids, (0, 0), (1, seq), f"{e}.position_embeddings.slice_ids")
    pos = b.typecast(pos, "ui32", f"{e}.position_embeddings.ids_typecast")
    pos = b.embedding(pos, pos_table, f"{e}.position_embeddings.gather")
    pos = b.broadcast(pos, x3, f"{e}.position_embeddings.broadcast")
    h = b.eltwise("add", [h, pos], f"{e}.add_position")
    h = _layer_norm(b, h, f"{e}.LayerNorm")

    # the additive mask: (1 - mask) * min, [B, 1, 1, S], in f32
    m = b.reshape(attention_mask, (batch, 1, 1, seq), "attention_mask.reshape")
    m = b.typecast(m, ACC, "attention_mask.typecast")
    one = b.constant(1.0, (batch, 1, 1, seq), ACC, "attention_mask.one")
    m = b.eltwise("subtract", [one, m], "attention_mask.invert")
    low = b.constant(-3.402823e38, (batch, 1, 1, seq), ACC, "attention_mask.min_value")
    mask = b.eltwise("multiply", [m, low], "attention_mask.scale")

    for i in range(layers):
        h = _bert_layer(b, h, mask, f"encoder.layer.{i}", heads, head_dim, ffn)
    return b.text([h])


def _layer_norm(b: MlirBuilder, x: str, scope: str) -> str:
    width, dtype = b.shape(x)[-1], b.dtype(x)
    weight = _param_1d(b, f"{scope}.weight", width, dtype)
    bias = _param_1d(b, f"{scope}.bias", width, dtype)
    return b.layer_norm(x, weight, bias, f"{scope}.layer_norm")


def _bert_layer(b: MlirBuilder, h: str, mask: str, scope: str, heads: int, head_dim: int, ffn: int) -> str:
    batch, seq, hidden = b.shape(h)
    dtype = b.dtype(h)
    rows = batch * seq
    a = f"{scope}.attention.self"
    x = b.reshape(h, (rows, hidden), f"{a}.flatten")
    qkv = {}
    for part in ("query", "key", "value"):
        y = _dense(b, x, hidden, f"{a}.{part}", (batch, seq, hidden), roundtrip=True)
        y = b.reshape(y, (batch, seq, heads, head_dim), f"{a}.{part}.split_heads")
        y = b.permute(y, (0, 2, 1, 3), f"{a}.{part}.permute_heads")
        qkv[part] = b.typecast(y, ACC, f"{a}.{part}.typecast")
    k_t = b.permute(qkv["key"], (0, 1, 3, 2), f"{a}.key.transpose")
    scores = b.dot_general(qkv["query"], k_t, f"{a}.scores.matmul", batch=2)
    scale = b.constant(1 / math.sqrt(head_dim), b.shape(scores), ACC, f"{a}.scores.scale_factor")
    scores = b.eltwise("multiply", [scores, scale], f"{a}.scores.scale")
    bias = b.broadcast(mask, b.shape(scores), f"{a}.scores.mask_broadcast")
    scores = b.eltwise("add", [scores, bias], f"{a}.scores.mask_add")
    probs = b.softmax(scores, f"{a}.softmax")
    ctx = b.dot_general(probs, qkv["value"], f"{a}.context.matmul", batch=2)
    ctx = b.typecast(ctx, dtype, f"{a}.context.typecast")
    ctx = b.permute(ctx, (0, 2, 1, 3), f"{a}.context.permute")
    ctx = b.reshape(ctx, (rows, hidden), f"{a}.context.merge_heads")

    o = f"{scope}.attention.output"
    y = _dense(b, ctx, hidden, f"{o}.dense", (batch, seq, hidden), roundtrip=True)
    y = b.eltwise("add", [y, h], f"{o}.residual_add")
    h = _layer_norm(b, y, f"{o}.LayerNorm")

    f = f"{scope}.intermediate"
    x = b.reshape(h, (rows, hidden), f"{f}.flatten")
    y = _dense(b, x, ffn, f"{f}.dense", (batch, seq, ffn), roundtrip=True)
    y = b.op("gelu", [y], b.shape(y), dtype, f"{f}.gelu")

    o = f"{scope}.output"
    y = b.reshape(y, (rows, ffn), f"{o}.flatten")
    y = _dense(b, y, hidden, f"{o}.dense", (batch, seq, hidden), roundtrip=True)
    y = b.eltwise("add", [y, h], f"{o}.residual_add")
    return _layer_norm(b, y, f"{o}.LayerNorm")


# --- Llama ------------------------------------------------------------------------------------------


def llama_3_2_1b(
    batch: int = 1,
    seq: int | None = None,
    layers: int = 16,
    mode: str = "prefill",
    cache: int | None = None,
    dtype: str = "bf16",
) -> str:
    """Llama 3.2 1B: hidden 2048, 32 query heads and 8 KV heads of 64, SiLU-gated MLP of 8192,
    RMSNorm, rotary embeddings, vocab 128256.

    prefill (default seq 128): attention over the prompt under a causal mask, keys and values written
    into the KV cache with `ttir.fill_cache`. decode: one token per user, its key and value written
    with `ttir.update_cache` at `cache_position`, attention over the whole cache (default 1024)."""
    hidden, heads, kv_heads, head_dim, ffn, vocab = 2048, 32, 8, 64, 8192, 128256
    decode = mode == "decode"
    if decode:
        if seq not in (None, 1):
            raise ModelLoadError(f"parameter seq is 1 in decode mode (one new token per user), got {seq}")
        seq = 1
        cache = 1024 if cache is None else cache
    else:
        seq = 128 if seq is None else seq
        if cache is not None and cache < seq:
            raise ModelLoadError(f"parameter cache ({cache}) must hold the prompt (seq {seq})")
        cache = max(1024, seq) if cache is None else cache
    keys = cache if decode else seq  # positions each query attends to
    rows = batch * seq

    b = MlirBuilder()
    input_ids = b.arg("input_ids", (batch, seq), "i64")
    cache_position = b.arg("cache_position", (seq,), "i64")
    attention_mask = b.arg("attention_mask", (batch, 1, seq, keys), dtype)  # additive: 0 or -inf
    caches = []
    for i in range(layers):
        for part in ("k_cache", "v_cache"):
            caches.append(b.arg(f"model.layers.{i}.self_attn.{part}", (batch, kv_heads, cache, head_dim), dtype))

    h = _gather(b, input_ids, b.arg("model.embed_tokens.weight", (vocab, hidden), dtype), "model.embed_tokens")

    # rotary tables: positions x inv_freq, duplicated to the head dim, cos and sin: [1, S, 64]
    r = "model.rotary_emb"
    inv_freq = b.arg(f"{r}.inv_freq", (head_dim // 2,), "f32")
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
        h = _llama_layer(
            b,
            h,
            f"model.layers.{i}",
            caches[2 * i],
            caches[2 * i + 1],
            cos,
            sin,
            mask,
            cache_position,
            heads,
            head_dim,
            ffn,
            decode,
        )
    h = b.rms_norm(h, b.arg("model.norm.weight", (hidden,), dtype), "model.norm.rms_norm")
    h = b.reshape(h, (rows, hidden), "lm_head.flatten")
    logits = _dense(b, h, vocab, "lm_head", (batch, seq, vocab), bias=False)
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
    k_cache: str,
    v_cache: str,
    cos: str,
    sin: str,
    mask: str,
    cache_position: str,
    heads: int,
    head_dim: int,
    ffn: int,
    decode: bool,
) -> str:
    batch, seq, hidden = b.shape(h)
    dtype = b.dtype(h)
    kv_heads = b.shape(k_cache)[1]
    rows = batch * seq
    a = f"{scope}.self_attn"

    x = b.rms_norm(h, b.arg(f"{scope}.input_layernorm.weight", (hidden,), dtype), f"{scope}.input_layernorm.rms_norm")
    x = b.reshape(x, (rows, hidden), f"{a}.flatten")
    proj = {}
    for part, n in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
        s = f"{a}.{part}_proj"
        w = b.arg(f"{s}.weight", (n * head_dim, hidden), dtype)
        y = b.dot_general(x, b.permute(w, (1, 0), f"{s}.weight.transpose"), f"{s}.matmul")
        if decode:  # seq is 1: [B, n * D] is already [B, n, 1, D]
            proj[part] = b.reshape(y, (batch, n, 1, head_dim), f"{s}.split_heads")
        else:
            y = b.reshape(y, (batch, seq, n, head_dim), f"{s}.split_heads")
            proj[part] = b.permute(y, (0, 2, 1, 3), f"{s}.permute_heads")

    r = f"{a}.rotary"
    cos4 = b.reshape(cos, (1, 1, seq, head_dim), f"{r}.cos.reshape")
    sin4 = b.reshape(sin, (1, 1, seq, head_dim), f"{r}.sin.reshape")
    q = _rotary(b, proj["q"], cos4, sin4, f"{r}.q")
    k = _rotary(b, proj["k"], cos4, sin4, f"{r}.k")
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
    y = _dense(b, ctx, hidden, f"{a}.o_proj", (batch, seq, hidden), bias=False)
    h = b.eltwise("add", [h, y], f"{scope}.attn_residual_add")

    m = f"{scope}.mlp"
    n = f"{scope}.post_attention_layernorm"
    x = b.rms_norm(h, b.arg(f"{n}.weight", (hidden,), dtype), f"{n}.rms_norm")
    x = b.reshape(x, (rows, hidden), f"{m}.flatten")
    gate = _dense(b, x, ffn, f"{m}.gate_proj", (batch, seq, ffn), bias=False)
    gate = b.op("silu", [gate], b.shape(gate), dtype, f"{m}.act_fn.silu")
    up = _dense(b, x, ffn, f"{m}.up_proj", (batch, seq, ffn), bias=False)
    y = b.eltwise("multiply", [gate, up], f"{m}.gate_mul")
    y = b.reshape(y, (rows, ffn), f"{m}.down_proj.flatten")
    y = _dense(b, y, hidden, f"{m}.down_proj", (batch, seq, hidden), bias=False)
    return b.eltwise("add", [h, y], f"{scope}.mlp_residual_add")


# --- ResNet -----------------------------------------------------------------------------------------
