"""BERT encoders (base and large): post-norm layers over word, token type and position embeddings."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.zoo.builder import ACC, MlirBuilder
from tilescope.compiler.frontend.zoo.torch_layers import dense, gather, param_1d


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder; `layers` is the default depth."""

    hidden: int
    heads: int
    ffn: int
    layers: int
    vocab: int = 30522
    positions: int = 512  # rows of the position table: the longest sequence

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


BERTS = {
    "bert-base": BertConfig(hidden=768, heads=12, ffn=3072, layers=12),
    "bert-large": BertConfig(hidden=1024, heads=16, ffn=4096, layers=24),
}


def bert(config: BertConfig, batch: int = 8, seq: int = 384, layers: int | None = None, dtype: str = "bf16") -> str:
    """A BERT encoder of `config`'s sizes (`layers` of them by default) on `batch` sequences of `seq` tokens."""
    if seq > config.positions:
        raise ModelLoadError(f"parameter seq must be at most {config.positions} (BERT's position table), got {seq}")
    layers = config.layers if layers is None else layers
    hidden, positions = config.hidden, config.positions
    b = MlirBuilder()
    tokens = (batch, seq)
    x3 = (batch, seq, hidden)
    input_ids = b.arg("input_ids", tokens, "i64", "input")
    token_type_ids = b.arg("token_type_ids", tokens, "i64", "input")
    attention_mask = b.arg("attention_mask", tokens, "i64", "input")
    position_ids = b.arg("embeddings.position_ids", (1, positions), "i64", "constant")  # a registered buffer

    # embeddings: word + token type + position, then LayerNorm
    e = "embeddings"
    word_table = b.arg(f"{e}.word_embeddings.weight", (config.vocab, hidden), dtype, "parameter")
    words = gather(b, input_ids, word_table, f"{e}.word_embeddings")
    type_table = b.arg(f"{e}.token_type_embeddings.weight", (2, hidden), dtype, "parameter")
    types = gather(b, token_type_ids, type_table, f"{e}.token_type_embeddings")
    h = b.eltwise("add", [words, types], f"{e}.add_token_type")
    pos_table = b.arg(f"{e}.position_embeddings.weight", (positions, hidden), dtype, "parameter")
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
        h = _bert_layer(b, h, mask, f"encoder.layer.{i}", config)
    return b.text([h])


def _layer_norm(b: MlirBuilder, x: str, scope: str) -> str:
    width, dtype = b.shape(x)[-1], b.dtype(x)
    weight = param_1d(b, f"{scope}.weight", width, dtype)
    bias = param_1d(b, f"{scope}.bias", width, dtype)
    return b.layer_norm(x, weight, bias, f"{scope}.layer_norm")


def _bert_layer(b: MlirBuilder, h: str, mask: str, scope: str, config: BertConfig) -> str:
    batch, seq, hidden = b.shape(h)
    heads, head_dim, ffn = config.heads, config.head_dim, config.ffn
    dtype = b.dtype(h)
    rows = batch * seq
    a = f"{scope}.attention.self"
    x = b.reshape(h, (rows, hidden), f"{a}.flatten")
    qkv = {}
    for part in ("query", "key", "value"):
        y = dense(b, x, hidden, f"{a}.{part}", (batch, seq, hidden), roundtrip=True)
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
    y = dense(b, ctx, hidden, f"{o}.dense", (batch, seq, hidden), roundtrip=True)
    y = b.eltwise("add", [y, h], f"{o}.residual_add")
    h = _layer_norm(b, y, f"{o}.LayerNorm")

    f = f"{scope}.intermediate"
    x = b.reshape(h, (rows, hidden), f"{f}.flatten")
    y = dense(b, x, ffn, f"{f}.dense", (batch, seq, ffn), roundtrip=True)
    y = b.op("gelu", [y], b.shape(y), dtype, f"{f}.gelu")

    o = f"{scope}.output"
    y = b.reshape(y, (rows, ffn), f"{o}.flatten")
    y = dense(b, y, hidden, f"{o}.dense", (batch, seq, hidden), roundtrip=True)
    y = b.eltwise("add", [y, h], f"{o}.residual_add")
    return _layer_norm(b, y, f"{o}.LayerNorm")
