"""Built-in models, generated as TTIR MLIR text with realistic shapes and no weights.

Zoo models go through the same MLIR parser as user files, so the `input` level of a zoo model is
real MLIR and every later stage sees one kind of input. Ops carry hierarchical loc names
(`encoder.layer.3.attention.self.query.matmul`) so views can group them by scope; weights are
function arguments named by `{ttir.name = "..."}`. Op spellings and properties follow real TTIR
exports from tt-mlir (`ttir.dot_general` with batch/contract dims, `ttir.reshape` with
`shape = [..]`, `ttir.permute`, `ttir.broadcast`, `ttir.typecast`, `ttir.conv2d` with explicit
NHWC dims, `ttir.update_cache`, ...), including the reshapes, broadcasts and typecasts around the
compute ops that make real exports fine-grained.

References:
    zoo:mlp                      zoo:mlp?batch=64&hidden=2048&layers=3
    zoo:matmul:2048x2048x2048
    zoo:bert-base                BERT-base encoder; batch, seq (<= 512), layers, dtype
    zoo:llama-3.2-1b             Llama 3.2 1B prefill; batch, seq, layers, cache, dtype
    zoo:llama-3.2-1b?mode=decode one token against a KV cache of `cache` (1024) positions
    zoo:resnet50                 ResNet-50, NHWC; batch, size (image side), layers (depth), dtype
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from urllib.parse import parse_qsl

from .errors import ModelLoadError

PREFIX = "zoo:"

Shape = tuple[int, ...]

DTYPES = ("bf16", "f32", "f16")  # element types a zoo model may be generated in
ACC = "f32"  # attention scores and softmax run in f32, as real exports do
MAX_INT = 1 << 20  # upper bound of any integer parameter
MAX_LAYERS = 10_000  # ~1M ops for the transformers; more is a typo, not a model


# --- property text ------------------------------------------------------------------------------


def _i32_list(values: Iterable[int]) -> str:
    return "[" + ", ".join(f"{v} : i32" for v in values) + "]"


def _array(kind: str, values: Iterable[int]) -> str:
    body = ", ".join(map(str, values))
    return f"array<{kind}: {body}>" if body else f"array<{kind}>"


def _float(value: float) -> str:
    return f"{value:e}"


class MlirBuilder:
    """Emits one func.func of TTIR generic-form ops, each named by a loc.

    `op` and `emit` write any op; the shape-aware helpers (`reshape`, `dot_general`, `conv2d`, ...)
    compute each result type from their operands and properties and raise ValueError on operands
    that do not fit, so a generated model is consistent by construction.
    """

    def __init__(self, func_name: str = "forward") -> None:
        self.func_name = func_name
        self.args: list[str] = []
        self.lines: list[str] = []
        self.types: dict[str, str] = {}  # SSA value -> its type text
        self.shapes: dict[str, tuple[Shape, str]] = {}  # SSA value -> (shape, dtype)
        self.locs: set[str] = set()
        self.next_id = 0
        self._type_text: dict[tuple[Shape, str], str] = {}

    @staticmethod
    def tensor_type(shape: Sequence[int], dtype: str) -> str:
        dims = "x".join(map(str, shape))
        return f"tensor<{dims}x{dtype}>" if dims else f"tensor<{dtype}>"

    def _type(self, shape: Shape, dtype: str) -> str:
        text = self._type_text.get((shape, dtype))
        if text is None:
            text = self._type_text[(shape, dtype)] = self.tensor_type(shape, dtype)
        return text

    def shape(self, value: str) -> Shape:
        return self.shapes[value][0]

    def dtype(self, value: str) -> str:
        return self.shapes[value][1]

    def arg(self, name: str, shape: Sequence[int], dtype: str) -> str:
        value = f"%arg{len(self.args)}"
        shape = tuple(shape)
        ttype = self._type(shape, dtype)
        self.args.append(f'{value}: {ttype} {{ttir.name = "{name}"}}')
        self.types[value] = ttype
        self.shapes[value] = (shape, dtype)
        return value

    def emit(
        self,
        kind: str,
        operands: Sequence[str],
        results: Sequence[tuple[Sequence[int], str]],
        loc: str,
        props: str = "",
    ) -> list[str]:
        """One op with any number of results (0, 1 or more); returns the result values.
        `kind` without a dialect is a ttir op; `props` is the text inside `<{...}>`."""
        if loc in self.locs:
            raise ValueError(f"two ops named {loc!r}")
        self.locs.add(loc)
        name = kind if "." in kind else f"ttir.{kind}"
        in_types = ", ".join(self.types[o] for o in operands)
        outs = [(tuple(shape), dtype) for shape, dtype in results]
        out_types = [self._type(shape, dtype) for shape, dtype in outs]
        if not outs:
            lhs, values, out = "", [], "()"
        else:
            base = f"%{self.next_id}"
            self.next_id += 1
            if len(outs) == 1:
                lhs, values, out = f"{base} = ", [base], out_types[0]
            else:
                lhs = f"{base}:{len(outs)} = "
                values = [f"{base}#{i}" for i in range(len(outs))]
                out = f"({', '.join(out_types)})"
        for value, ttype, shaped in zip(values, out_types, outs):
            self.types[value] = ttype
            self.shapes[value] = shaped
        attrs = f" <{{{props}}}>" if props else ""
        self.lines.append(f'    {lhs}"{name}"({", ".join(operands)}){attrs} : ({in_types}) -> {out} loc("{loc}")')
        return values

    def op(
        self, kind: str, operands: list[str], shape: Sequence[int], dtype: str, loc: str, props: str = ""
    ) -> str:
        return self.emit(kind, operands, [(shape, dtype)], loc, props)[0]

    def text(self, outputs: list[str]) -> str:
        out_types = ", ".join(self.types[o] for o in outputs)
        return "\n".join(
            [
                "module {",
                f"  func.func @{self.func_name}({', '.join(self.args)}) -> ({out_types}) {{",
                *self.lines,
                f"    return {', '.join(outputs)} : {out_types}",
                "  }",
                "}",
                "",
            ]
        )

    # --- shape-aware TTIR ops -------------------------------------------------------------------

    def _fail(self, loc: str, message: str) -> ValueError:
        return ValueError(f"{loc}: {message}")

    def constant(self, value: float, shape: Sequence[int], dtype: str, loc: str) -> str:
        shape = tuple(shape)
        text = str(int(value)) if dtype.startswith(("i", "ui", "si")) else _float(value)
        return self.op("constant", [], shape, dtype, loc, f"value = dense<{text}> : {self._type(shape, dtype)}")

    def reshape(self, x: str, shape: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        shape = tuple(shape)
        if math.prod(src) != math.prod(shape):
            raise self._fail(loc, f"cannot reshape {src} to {shape}")
        return self.op("reshape", [x], shape, dtype, loc, f"shape = {_i32_list(shape)}")

    def permute(self, x: str, permutation: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        if sorted(permutation) != list(range(len(src))):
            raise self._fail(loc, f"permutation {permutation} of a rank-{len(src)} tensor")
        shape = tuple(src[p] for p in permutation)
        return self.op("permute", [x], shape, dtype, loc, f"permutation = {_array('i64', permutation)}")

    def broadcast(self, x: str, shape: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        shape = tuple(shape)
        if len(src) != len(shape) or any(s not in (1, d) for s, d in zip(src, shape)):
            raise self._fail(loc, f"cannot broadcast {src} to {shape}")
        factors = [d // s for s, d in zip(src, shape)]
        return self.op("broadcast", [x], shape, dtype, loc, f"broadcast_dimensions = {_array('i64', factors)}")

    def typecast(self, x: str, dtype: str, loc: str) -> str:
        """A typecast, or `x` itself when it already has `dtype`."""
        src, have = self.shapes[x]
        if have == dtype:
            return x
        return self.op("typecast", [x], src, dtype, loc, "conservative_folding = false")

    def eltwise(self, kind: str, operands: Sequence[str], loc: str) -> str:
        """An elementwise op; operands must agree in shape and dtype (exports broadcast explicitly)."""
        shaped = self.shapes[operands[0]]
        for other in operands[1:]:
            if self.shapes[other] != shaped:
                raise self._fail(loc, f"{kind} of {shaped} and {self.shapes[other]}")
        return self.op(kind, list(operands), shaped[0], shaped[1], loc)

    def dot_general(self, a: str, b: str, loc: str, batch: int = 0, rhs_contract: int | None = None) -> str:
        """lhs contracts its last dim with rhs dim `rhs_contract` (default: the first after the
        `batch` leading batch dims both share). Result: batch dims, lhs free dims, rhs free dims."""
        sa, da = self.shapes[a]
        sb, db = self.shapes[b]
        lc, rc = len(sa) - 1, batch if rhs_contract is None else rhs_contract
        if sa[:batch] != sb[:batch] or sa[lc] != sb[rc] or da != db:
            raise self._fail(loc, f"dot_general of {sa}x{da} and {sb}x{db}")
        shape = (
            sa[:batch]
            + tuple(d for i, d in enumerate(sa) if i >= batch and i != lc)
            + tuple(d for i, d in enumerate(sb) if i >= batch and i != rc)
        )
        dims = _array("i64", range(batch))
        props = (
            f"batch_dims_lhs = {dims}, batch_dims_rhs = {dims}, "
            f"contract_dims_lhs = {_array('i64', [lc])}, contract_dims_rhs = {_array('i64', [rc])}"
        )
        return self.op("dot_general", [a, b], shape, da, loc, props)

    def embedding(self, ids: str, table: str, loc: str) -> str:
        width = self.shape(table)[1]
        return self.op("embedding", [ids, table], self.shape(ids) + (width,), self.dtype(table), loc)

    def slice(self, x: str, begins: Sequence[int], ends: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        if len(begins) != len(src) or len(ends) != len(src) or any(
            not 0 <= b < e <= s for b, e, s in zip(begins, ends, src)
        ):
            raise self._fail(loc, f"slice [{begins}, {ends}) of {src}")
        shape = tuple(e - b for b, e in zip(begins, ends))
        props = f"begins = {_i32_list(begins)}, ends = {_i32_list(ends)}, step = {_i32_list([1] * len(src))}"
        return self.op("slice_static", [x], shape, dtype, loc, props)

    def concat(self, parts: Sequence[str], dim: int, loc: str) -> str:
        first, dtype = self.shapes[parts[0]]
        rank = len(first)
        axis = dim % rank
        for p in parts[1:]:
            s, d = self.shapes[p]
            if d != dtype or len(s) != rank or any(s[i] != first[i] for i in range(rank) if i != axis):
                raise self._fail(loc, f"concat of {first} and {s}")
        shape = first[:axis] + (sum(self.shape(p)[axis] for p in parts),) + first[axis + 1 :]
        return self.op("concat", list(parts), shape, dtype, loc, f"dim = {dim} : si32")

    def _norm(self, kind: str, x: str, params: Sequence[str], eps: str, loc: str) -> str:
        shape, dtype = self.shapes[x]
        for p in params:
            if self.shape(p) != shape[-1:]:
                raise self._fail(loc, f"{kind} of {shape} with a {self.shape(p)} parameter")
        segments = ", ".join(["1"] + ["1"] * len(params) + ["0"] * (2 - len(params)))
        props = (
            f"epsilon = {eps} : f32, normalized_shape = {_array('i64', shape[-1:])}, "
            f"operandSegmentSizes = array<i32: {segments}>"
        )
        return self.op(kind, [x, *params], shape, dtype, loc, props)

    def layer_norm(self, x: str, weight: str, bias: str, loc: str, eps: str = "9.99999996E-13") -> str:
        return self._norm("layer_norm", x, [weight, bias], eps, loc)

    def rms_norm(self, x: str, weight: str, loc: str, eps: str = "9.99999974E-6") -> str:
        return self._norm("rms_norm", x, [weight], eps, loc)

    def softmax(self, x: str, loc: str, dim: int = -1) -> str:
        shape, dtype = self.shapes[x]
        return self.op("softmax", [x], shape, dtype, loc, f"dimension = {dim} : si32")

    def reduce(self, kind: str, x: str, dims: Sequence[int], loc: str) -> str:
        src, dtype = self.shapes[x]
        shape = tuple(d for i, d in enumerate(src) if i not in dims)
        return self.op(kind, [x], shape, dtype, loc, f"dim_arg = {_i32_list(dims)}, keep_dim = false")

    def conv2d(self, x: str, weight: str, loc: str, stride: int = 1, padding: int = 0) -> str:
        """NHWC input, OIHW weight, as TTIR's conv2d takes them; the dims are spelled out."""
        (n, h, w, c), dtype = self.shapes[x]
        out_c, in_c, kh, kw = self.shape(weight)
        if in_c != c:
            raise self._fail(loc, f"conv2d of {self.shape(x)} with weight {self.shape(weight)}")
        oh, ow = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
        props = (
            "batch_dim = 0 : i64, channel_dim = 3 : i64, dilation = array<i32: 1, 1>, groups = 1 : i32, "
            f"height_dim = 1 : i64, padding = {_array('i32', [padding] * 4)}, "
            f"stride = {_array('i32', [stride, stride])}, width_dim = 2 : i64"
        )
        return self.op("conv2d", [x, weight], (n, oh, ow, out_c), dtype, loc, props)

    def batch_norm(self, x: str, params: Sequence[str], loc: str, dim: int = 3) -> str:
        """Inference batch norm; params are scale, offset, mean, variance, each of the channel size."""
        shape, dtype = self.shapes[x]
        if len(params) != 4 or any(self.shape(p) != (shape[dim],) for p in params):
            raise self._fail(loc, f"batch norm of {shape} with {[self.shape(p) for p in params]}")
        props = f"dimension = {dim} : i32, epsilon = 9.99999974E-6 : f32"
        return self.op("batch_norm_inference", [x, *params], shape, dtype, loc, props)

    def max_pool2d(self, x: str, loc: str, kernel: int, stride: int, padding: int) -> str:
        (n, h, w, c), dtype = self.shapes[x]
        oh, ow = (h + 2 * padding - kernel) // stride + 1, (w + 2 * padding - kernel) // stride + 1
        props = (
            f"ceil_mode = false, dilation = array<i32: 1, 1>, kernel = {_array('i32', [kernel, kernel])}, "
            f"padding = {_array('i32', [padding] * 4)}, stride = {_array('i32', [stride, stride])}"
        )
        return self.op("max_pool2d", [x], (n, oh, ow, c), dtype, loc, props)

    def update_cache(self, cache: str, update: str, index: str, loc: str) -> None:
        """Write one position per user into `cache` [users, heads, len, dim] in place; `update` is
        [1, heads, users, dim] as tt-metal's update_cache takes it. No result, as in real exports."""
        users, heads, _, dim = self.shape(cache)
        if self.shape(update) != (1, heads, users, dim) or self.dtype(update) != self.dtype(cache):
            raise self._fail(loc, f"update_cache of {self.shape(cache)} with {self.shape(update)}")
        self.emit("update_cache", [cache, update, index], [], loc, "batch_offset = 0 : i32")

    def fill_cache(self, cache: str, update: str, loc: str, user: int = 0) -> None:
        """Write a prompt's keys or values [1, heads, seq, dim] into user `user`'s cache rows."""
        users, heads, length, dim = self.shape(cache)
        _, uh, seq, ud = self.shape(update)
        if (uh, ud) != (heads, dim) or seq > length or user >= users:
            raise self._fail(loc, f"fill_cache of {self.shape(cache)} with {self.shape(update)}")
        self.emit("fill_cache", [cache, update], [], loc, f"batch_offset = {user} : i32")


# --- small models ---------------------------------------------------------------------------------


def _linear(b: MlirBuilder, x: str, m: int, k: int, n: int, dtype: str, scope: str) -> str:
    weight = b.arg(f"{scope}.weight", (k, n), dtype)
    bias = b.arg(f"{scope}.bias", (1, n), dtype)
    y = b.op("matmul", [x, weight], (m, n), dtype, f"{scope}.matmul")
    return b.op("add", [y, bias], (m, n), dtype, f"{scope}.bias_add")


def mlp(batch: int = 128, width: int = 1024, hidden: int = 4096, layers: int = 2, dtype: str = "bf16") -> str:
    """A transformer-style MLP stack: per layer fc1 (width->hidden), gelu, fc2 (hidden->width)."""
    b = MlirBuilder()
    x = b.arg("input", (batch, width), dtype)
    for i in range(layers):
        scope = f"mlp.layer.{i}"
        h = _linear(b, x, batch, width, hidden, dtype, f"{scope}.fc1")
        h = b.op("gelu", [h], (batch, hidden), dtype, f"{scope}.gelu")
        x = _linear(b, h, batch, hidden, width, dtype, f"{scope}.fc2")
    return b.text([x])


def matmul(m: int, k: int, n: int, dtype: str = "bf16") -> str:
    b = MlirBuilder()
    a = b.arg("a", (m, k), dtype)
    w = b.arg("b", (k, n), dtype)
    return b.text([b.op("matmul", [a, w], (m, n), dtype, "matmul")])


# --- transformer pieces, spelled as torch-xla / tt-forge exports spell them ---------------------------


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
            b, h, f"model.layers.{i}", caches[2 * i], caches[2 * i + 1], cos, sin, mask, cache_position,
            heads, head_dim, ffn, decode,
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
    b: MlirBuilder, h: str, scope: str, k_cache: str, v_cache: str, cos: str, sin: str, mask: str,
    cache_position: str, heads: int, head_dim: int, ffn: int, decode: bool,
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

RESNET_STAGES = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 24, 36, 3)}


def resnet_stages(depth: int) -> tuple[int, ...]:
    """Bottleneck blocks per stage of a ResNet of `depth` layers (3 per block, plus stem and fc).
    The torchvision depths use their configurations; others grow or shrink stage 2 (as 101 and 152
    do), then the largest stages, keeping at least one block per stage."""
    if depth in RESNET_STAGES:
        return RESNET_STAGES[depth]
    blocks, rest = divmod(depth - 2, 3)
    if rest or blocks < 4:
        raise ModelLoadError(
            f"parameter layers is the ResNet depth, 3n+2 for n >= 4 bottleneck blocks "
            f"(e.g. 14, 50, 101, 152), got {depth}"
        )
    counts = [3, 4, 6, 3]
    if blocks >= 16:
        counts[2] += blocks - 16
    while sum(counts) > blocks:
        counts[counts.index(max(counts))] -= 1
    return tuple(counts)


def resnet50(batch: int = 8, size: int = 224, layers: int = 50, dtype: str = "bf16") -> str:
    """ResNet-50 v1.5 in NHWC: stem conv 7x7/2, batch norm, relu, max pool 3x3/2; bottleneck stages
    of widths 64/128/256/512 (x4 out) with a projection shortcut (and the stride, on the 3x3 conv) in
    each stage's first block; global average pool (a sum and a multiply, as exports spell it); fc."""
    b = MlirBuilder()
    x = b.arg("pixel_values", (batch, size, size, 3), dtype)
    x = _conv_bn(b, x, 64, 7, 2, 3, "resnet.stem.conv", "resnet.stem.bn")
    x = b.op("relu", [x], b.shape(x), dtype, "resnet.stem.relu")
    x = b.max_pool2d(x, "resnet.stem.maxpool", kernel=3, stride=2, padding=1)
    for s, blocks in enumerate(resnet_stages(layers)):
        width = 64 << s
        for i in range(blocks):
            x = _bottleneck(b, x, width, 2 if s and not i else 1, f"resnet.stage.{s}.block.{i}")
    n, h, w, c = b.shape(x)
    x = b.reduce("sum", x, (1, 2), "resnet.pool.sum")
    scale = b.constant(1 / (h * w), (n, c), dtype, "resnet.pool.scale_factor")
    x = b.eltwise("multiply", [x, scale], "resnet.pool.mean")
    logits = _dense_1d_bias(b, x, 1000, "resnet.fc")
    return b.text([logits])


def _conv_bn(b: MlirBuilder, x: str, out: int, kernel: int, stride: int, padding: int, conv: str, bn: str) -> str:
    dtype = b.dtype(x)
    w = b.arg(f"{conv}.weight", (out, b.shape(x)[3], kernel, kernel), dtype)
    y = b.conv2d(x, w, conv, stride=stride, padding=padding)
    params = [b.arg(f"{bn}.{p}", (out,), dtype) for p in ("weight", "bias", "running_mean", "running_var")]
    return b.batch_norm(y, params, bn)


def _bottleneck(b: MlirBuilder, x: str, width: int, stride: int, scope: str) -> str:
    dtype = b.dtype(x)
    out = width * 4
    y = _conv_bn(b, x, width, 1, 1, 0, f"{scope}.conv1", f"{scope}.bn1")
    y = b.op("relu", [y], b.shape(y), dtype, f"{scope}.relu1")
    y = _conv_bn(b, y, width, 3, stride, 1, f"{scope}.conv2", f"{scope}.bn2")
    y = b.op("relu", [y], b.shape(y), dtype, f"{scope}.relu2")
    y = _conv_bn(b, y, out, 1, 1, 0, f"{scope}.conv3", f"{scope}.bn3")
    if stride != 1 or b.shape(x)[3] != out:
        x = _conv_bn(b, x, out, 1, stride, 0, f"{scope}.shortcut.conv", f"{scope}.shortcut.bn")
    y = b.eltwise("add", [y, x], f"{scope}.residual_add")
    return b.op("relu", [y], b.shape(y), dtype, f"{scope}.relu3")


def _dense_1d_bias(b: MlirBuilder, x: str, out: int, scope: str) -> str:
    """The classifier as the ResNet export spells it: weight transposed, dot_general, bias
    reshaped to 1xN and broadcast over the batch."""
    rows, width = b.shape(x)
    dtype = b.dtype(x)
    w = b.permute(b.arg(f"{scope}.weight", (out, width), dtype), (1, 0), f"{scope}.weight.transpose")
    y = b.dot_general(x, w, f"{scope}.matmul")
    c = b.reshape(b.arg(f"{scope}.bias", (out,), dtype), (1, out), f"{scope}.bias.reshape")
    c = b.broadcast(c, (rows, out), f"{scope}.bias.broadcast")
    return b.eltwise("add", [y, c], f"{scope}.bias_add")


# --- references -------------------------------------------------------------------------------------


def _positive_int(key: str, value: str, ref: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:
        raise ModelLoadError(f"{ref}: parameter {key} must be a positive integer, got {value!r}")
    number = int(value)
    limit = MAX_LAYERS if key == "layers" else MAX_INT
    if number > limit:
        raise ModelLoadError(f"{ref}: parameter {key} must be at most {limit}, got {number}")
    return number


def _choice(*allowed: str) -> Callable[[str, str, str], str]:
    def parse(key: str, value: str, ref: str) -> str:
        if value not in allowed:
            raise ModelLoadError(f"{ref}: parameter {key} must be one of {', '.join(allowed)}, got {value!r}")
        return value

    return parse


_DTYPE = _choice(*DTYPES)
MODELS: dict[str, Callable[..., str]] = {
    "mlp": mlp,
    "bert-base": bert_base,
    "llama-3.2-1b": llama_3_2_1b,
    "resnet50": resnet50,
}
PARAMS: dict[str, dict[str, Callable[[str, str, str], object]]] = {
    "mlp": {**{k: _positive_int for k in ("batch", "width", "hidden", "layers")}, "dtype": _DTYPE},
    "bert-base": {"batch": _positive_int, "seq": _positive_int, "layers": _positive_int, "dtype": _DTYPE},
    "llama-3.2-1b": {
        "batch": _positive_int,
        "seq": _positive_int,
        "layers": _positive_int,
        "mode": _choice("prefill", "decode"),
        "cache": _positive_int,
        "dtype": _DTYPE,
    },
    "resnet50": {"batch": _positive_int, "size": _positive_int, "layers": _positive_int, "dtype": _DTYPE},
}
VARIANTS = {"llama-3.2-1b": ["mode=decode"]}  # listed by names() next to the default


def names() -> list[str]:
    listed = []
    for name in MODELS:
        listed.append(f"{PREFIX}{name}")
        listed.extend(f"{PREFIX}{name}?{query}" for query in VARIANTS.get(name, []))
    return listed + [f"{PREFIX}matmul:2048x2048x2048"]


def is_zoo(ref: str) -> bool:
    return ref.startswith(PREFIX)


@lru_cache(maxsize=8)
def generate(ref: str) -> str:
    """MLIR text of a zoo reference such as 'zoo:mlp?layers=4' or 'zoo:matmul:512x512x512'."""
    body = ref[len(PREFIX) :]
    body, _, query = body.partition("?")
    params = dict(parse_qsl(query, keep_blank_values=True))
    if body.startswith("matmul:"):
        dims = body.split(":", 1)[1].split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ModelLoadError(f"{ref}: expected zoo:matmul:MxKxN with positive integers")
        unknown = set(params) - {"dtype"}
        if unknown:
            raise ModelLoadError(f"{ref}: unknown parameter {sorted(unknown)[0]!r} (zoo:matmul takes dtype)")
        kwargs = {"dtype": _DTYPE("dtype", params["dtype"], ref)} if "dtype" in params else {}
        return matmul(*map(int, dims), **kwargs)
    if body not in MODELS:
        raise ModelLoadError(f"unknown zoo model {ref!r}; known: {', '.join(names())}")
    spec = PARAMS[body]
    kwargs: dict[str, object] = {}
    for key, value in params.items():
        if key not in spec:
            raise ModelLoadError(f"{ref}: unknown parameter {key!r} ({PREFIX}{body} takes {', '.join(spec)})")
        kwargs[key] = spec[key](key, value, ref)
    try:
        return MODELS[body](**kwargs)
    except ModelLoadError as err:  # a constraint between parameters, e.g. bert-base's seq <= 512
        raise ModelLoadError(f"{ref}: {err}") from None
