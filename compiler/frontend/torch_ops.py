"""The core aten ops of tensors' shapes, element-wise math, matmuls, norms and reductions as TTIR
ops. Torch broadcasts implicitly and mixes tensors with Python scalars; TTIR's ops take operands
of one shape and type, so the rules reshape, broadcast and cast as exporters do. An op no rule
takes is one line naming it and where it comes from (compiler/frontend/torch_graph.py)."""

from __future__ import annotations

import math
from typing import Any

from tilescope.compiler.frontend.torch_rules import (
    Call,
    Translation,
    Value,
    channels_last,
    fit,
    logical,
    once,
    plain,
    rule,
    shape_of,
    stored_shape,
    value,
)

# one TTIR op of the same operand: aten name -> TTIR kind
UNARY = {
    "relu": "relu",
    "gelu": "gelu",
    "silu": "silu",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "exp": "exp",
    "rsqrt": "rsqrt",
    "sqrt": "sqrt",
    "neg": "neg",
    "cos": "cos",
    "sin": "sin",
    "abs": "abs",
    "erf": "erf",
    "log": "log",
    "reciprocal": "reciprocal",
}
BINARY = {"add": "add", "sub": "subtract", "rsub": "subtract", "mul": "multiply", "div": "divide"}
BINARY.update({"maximum": "maximum", "minimum": "minimum", "pow": "pow"})
# comparisons: a mask of the result's type (torch's bool)
COMPARISONS = ("eq", "ne", "gt", "ge", "lt", "le")
BINARY.update({name: name for name in COMPARISONS})
# views and copies of their first operand: nothing to compute
IDENTITY = ("clone", "alias", "detach", "lift_fresh_copy", "contiguous", "dropout")
REDUCTIONS = {"mean": "mean", "sum": "sum", "amax": "max"}


@rule(*UNARY)
def unary(tr: Translation, call: Call) -> Value:
    x = plain(tr, call.args[0], call.loc)
    return Value(tr.builder.eltwise(UNARY[call.name], [x.ssa], call.loc), x.shape, x.dtype, x.nhwc)


@rule(*BINARY)
def binary(tr: Translation, call: Call) -> Value:
    """An element-wise op of tensors and scalars, broadcast to the result's shape and type."""
    operands = call.args[:2]
    if call.arg(2, "alpha", 1) != 1:
        raise tr.error(f"{call.name} with alpha {call.arg(2, 'alpha')} is not supported")
    if call.name == "rsub":
        operands = operands[::-1]  # rsub(x, s) is s - x
    if call.name == "pow" and operands[1] == 2:
        operands, kind = [operands[0], operands[0]], "multiply"
    else:
        kind = BINARY[call.name]
    shape, dtype = shape_of(call.out), tr.dtype_of(call.out.dtype)
    tensors = [o for o in operands if isinstance(o, Value)]
    nhwc = len(tensors) == len(operands) and all(t.nhwc and t.shape == shape for t in tensors)
    result = dtype
    if kind in COMPARISONS:  # operands compared in their own type: only the result is a mask
        dtype = next((t.dtype for t in tensors if t.dtype not in ("i1",)), tensors[0].dtype)
    ssas = []
    for i, operand in enumerate(operands):
        loc = f"{call.loc}.in{i}"
        if not isinstance(operand, Value):
            ssas.append(tr.builder.constant(float(operand), channels_last(shape) if nhwc else shape, dtype, loc))
        elif nhwc:
            ssas.append(tr.builder.typecast(operand.ssa, dtype, f"{loc}.typecast"))
        else:
            ssas.append(fit(tr, logical(tr, operand, loc), shape, dtype, loc))
    if kind in COMPARISONS:
        out = tr.builder.op(kind, ssas, channels_last(shape) if nhwc else shape, result, call.loc)
        return Value(out, shape, result, nhwc)
    return Value(tr.builder.eltwise(kind, ssas, call.loc), shape, dtype, nhwc)


@rule("view", "_unsafe_view", "reshape", "unsqueeze", "squeeze")
def reshape(tr: Translation, call: Call) -> Value:
    x, shape = call.args[0], shape_of(call.out)
    if isinstance(x, Value) and not x.nhwc:
        held = stored_shape(tr, x)
        if held == shape or _merges_leading(held, shape):  # read as it is held: no op
            return Value(x.ssa, shape, x.dtype, transposed=x.transposed)
    x = logical(tr, x, call.loc)
    if x.shape == shape:
        return x
    return value(tr, once(tr, (x.ssa, shape), lambda: tr.builder.reshape(x.ssa, shape, call.loc)), shape)


def _merges_leading(held: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether `shape` is `held` with all its leading dims merged into one (a batched matmul's
    [B x H, M, K] view of [B, H, M, K])."""
    return len(shape) == 3 and len(held) > 3 and held[-2:] == shape[-2:] and math.prod(held[:-2]) == shape[0]


def _swaps_last_two(dims: list[int]) -> bool:
    rank = len(dims)
    return rank >= 2 and dims == [*range(rank - 2), rank - 1, rank - 2]


@rule("permute")
def permute(tr: Translation, call: Call) -> Value:
    x = call.args[0]
    dims = [d % len(x.shape) for d in call.args[1]]
    return _permuted(tr, call, x, dims)


@rule("t", "transpose")
def transpose(tr: Translation, call: Call) -> Value:
    x = call.args[0]
    rank = len(x.shape)
    a, b = (call.args[1] % rank, call.args[2] % rank) if len(call.args) >= 3 else (0, 1)
    dims = list(range(rank))
    dims[a], dims[b] = dims[b], dims[a]
    return _permuted(tr, call, x, dims)


def _permuted(tr: Translation, call: Call, x: Value, dims: list[int]) -> Value:
    """A permute; a swap of the last two dims of a batched operand left for its matmul to read."""
    shape = shape_of(call.out)
    plain = isinstance(x, Value) and not (x.nhwc or x.transposed) and tr.builder.shape(x.ssa) == x.shape
    if plain and len(dims) > 2 and _swaps_last_two(dims):
        return Value(x.ssa, shape, x.dtype, transposed=True)
    x = logical(tr, x, call.loc)
    return value(tr, tr.builder.permute(x.ssa, dims, call.loc), shape)


@rule("expand")
def expand(tr: Translation, call: Call) -> Value:
    x, shape = call.args[0], shape_of(call.out)
    if x.shape == shape:
        return x
    x = logical(tr, x, call.loc)
    return value(tr, fit(tr, x, shape, x.dtype, call.loc), shape)


@rule(*IDENTITY)
def identity(tr: Translation, call: Call) -> Value:
    return call.args[0]


@rule("_assert_tensor_metadata", "_assert_async", "_assert_scalar")
def assertion(tr: Translation, call: Call) -> None:
    """A check torch.export leaves in the program (a tensor's dtype before a cast): no work."""
    return None


@rule("_to_copy", "to")
def cast(tr: Translation, call: Call) -> Value:
    x, dtype = plain(tr, call.args[0], call.loc), tr.dtype_of(call.out.dtype)
    return Value(tr.builder.typecast(x.ssa, dtype, call.loc), x.shape, dtype, x.nhwc)


@rule("mm", "bmm")
def matmul(tr: Translation, call: Call) -> Value:
    """A matmul; a batched one of operands held as [B, H, M, K] (torch's [B x H, M, K] views of
    them) runs over them as held, the rhs contracted in place where it was transposed, as an
    attention's Q K^T and P V are."""
    a, b = call.args[:2]
    if call.name == "bmm" and not (a.nhwc or b.nhwc or a.transposed):
        held_a, held_b = tr.builder.shape(a.ssa), tr.builder.shape(b.ssa)
        if len(held_a) == 4 and len(held_b) == 4 and held_a[:2] == held_b[:2]:
            rhs = tr.builder.typecast(b.ssa, a.dtype, f"{call.loc}.rhs.typecast")
            y = tr.builder.dot_general(a.ssa, rhs, call.loc, 2, 3 if b.transposed else 2)
            return Value(y, shape_of(call.out), a.dtype)
    a, b = (logical(tr, v, call.loc) for v in (a, b))
    rhs = fit(tr, b, b.shape, a.dtype, f"{call.loc}.rhs")
    return value(tr, tr.builder.dot_general(a.ssa, rhs, call.loc, len(a.shape) - 2), shape_of(call.out))


@rule("addmm")
def addmm(tr: Translation, call: Call) -> Value:
    """bias + x @ w: a Linear's matmul and its bias add, as exports spell nn.Linear."""
    if call.kwargs.get("beta", 1) != 1 or call.kwargs.get("alpha", 1) != 1:
        raise tr.error("addmm with beta or alpha is not supported")
    bias, x, w = (logical(tr, v, call.loc) for v in call.args[:3])
    shape = shape_of(call.out)
    y = tr.builder.dot_general(x.ssa, fit(tr, w, w.shape, x.dtype, f"{call.loc}.rhs"), call.loc)
    b = fit(tr, bias, shape, x.dtype, f"{call.loc}.bias")
    return value(tr, tr.builder.eltwise("add", [y, b], f"{call.loc}.bias_add"), shape)


@rule("_softmax", "softmax")
def softmax(tr: Translation, call: Call) -> Value:
    x = logical(tr, call.args[0], call.loc)
    return value(tr, tr.builder.softmax(x.ssa, call.loc, call.args[1] % len(x.shape)), x.shape)


@rule("native_layer_norm")
def layer_norm(tr: Translation, call: Call) -> tuple:
    x, weight, bias, eps = logical(tr, call.args[0], call.loc), *call.args[2:5]
    params = [logical(tr, p, call.loc).ssa for p in (weight, bias) if isinstance(p, Value)]
    y = tr.builder.norm("layer_norm", x.ssa, params, f"{float(eps):e}", call.loc)
    return (value(tr, y, x.shape), None, None)  # its mean and rstd serve training only


@rule("mean", "sum", "amax")
def reduce(tr: Translation, call: Call) -> Value:
    x = logical(tr, call.args[0], call.loc)
    rank = len(x.shape)
    dims = call.arg(1, "dim")
    dims = sorted({d % rank for d in (range(rank) if dims is None or dims == [] else dims)})
    y = tr.builder.reduce(REDUCTIONS[call.name], x.ssa, dims, call.loc)
    shape = shape_of(call.out)
    if tr.builder.shape(y) != shape:  # keepdim
        y = tr.builder.reshape(y, shape, f"{call.loc}.keepdim")
    return value(tr, y, shape)


@rule("slice")
def slice_(tr: Translation, call: Call) -> Value:
    x = logical(tr, call.args[0], call.loc)
    dim = call.arg(1, "dim", 0) % len(x.shape)
    size = x.shape[dim]
    start, end, step = call.arg(2, "start") or 0, call.arg(3, "end"), call.arg(4, "step", 1)
    if step != 1:
        raise tr.error(f"a slice with step {step} is not supported")
    end = size if end is None else end
    start, end = max(0, start + size if start < 0 else start), min(size, end + size if end < 0 else end)
    if (start, end) == (0, size):
        return x
    begins = [start if i == dim else 0 for i in range(len(x.shape))]
    ends = [end if i == dim else s for i, s in enumerate(x.shape)]
    return value(tr, tr.builder.slice(x.ssa, begins, ends, call.loc), shape_of(call.out))


@rule("split_with_sizes", "split")
def split(tr: Translation, call: Call) -> tuple:
    x = logical(tr, call.args[0], call.loc)
    dim = call.arg(2, "dim", 0) % len(x.shape)
    pieces, begin = [], 0
    for i, part in enumerate(call.out):
        size = int(part.shape[dim])
        begins = [begin if d == dim else 0 for d in range(len(x.shape))]
        ends = [begin + size if d == dim else s for d, s in enumerate(x.shape)]
        pieces.append(value(tr, tr.builder.slice(x.ssa, begins, ends, f"{call.loc}.{i}"), shape_of(part)))
        begin += size
    return tuple(pieces)


@rule("cat")
def cat(tr: Translation, call: Call) -> Value:
    shape = shape_of(call.out)
    parts = [logical(tr, p, call.loc) for p in call.args[0] if isinstance(p, Value) and math.prod(p.shape)]
    dim = call.arg(1, "dim", 0) % len(shape)
    return value(tr, tr.builder.concat([p.ssa for p in parts], dim, call.loc), shape)


@rule("embedding")
def embedding(tr: Translation, call: Call) -> Value:
    table, ids = logical(tr, call.args[0], call.loc), logical(tr, call.args[1], call.loc)
    return value(tr, tr.builder.embedding(ids.ssa, table.ssa, call.loc), shape_of(call.out))


def scalar_tensor(tr: Translation, call: Call, fill: Any) -> Value:
    """A tensor of one value everywhere (`full`, `zeros`, `ones`)."""
    shape, dtype = shape_of(call.out), tr.dtype_of(call.out.dtype)
    return Value(tr.builder.constant(float(fill), shape, dtype, call.loc), shape, dtype)


@rule("full", "zeros", "ones", "scalar_tensor", "full_like", "zeros_like", "ones_like")
def full(tr: Translation, call: Call) -> Value:
    fill = {"zeros": 0.0, "ones": 1.0}.get(call.name.removesuffix("_like"))
    if fill is None:
        fill = call.args[1] if call.name in ("full", "full_like") else call.args[0]
    return scalar_tensor(tr, call, fill)


@rule("where")
def where(tr: Translation, call: Call) -> Value:
    """condition ? x : y, each broadcast to the result's shape (a scalar a splat constant)."""
    shape, dtype = shape_of(call.out), tr.dtype_of(call.out.dtype)
    ssas = []
    for i, operand in enumerate(call.args[:3]):
        loc, want = f"{call.loc}.in{i}", dtype if i else "i1"
        if isinstance(operand, Value):
            ssas.append(fit(tr, logical(tr, operand, loc), shape, operand.dtype if i == 0 else want, loc))
        else:
            ssas.append(tr.builder.constant(float(operand), shape, want, loc))
    return Value(tr.builder.op("where", ssas, shape, dtype, call.loc), shape, dtype)


@rule("clamp", "hardtanh")
def clamp(tr: Translation, call: Call) -> Value:
    """min(max(x, low), high): the bounds a clamp names (hardtanh: ReLU6's)."""
    x = logical(tr, call.args[0], call.loc)
    low, high = call.arg(1, "min"), call.arg(2, "max")
    if call.name == "hardtanh":
        low, high = call.arg(1, "min_val", -1.0), call.arg(2, "max_val", 1.0)
    if isinstance(low, Value) or isinstance(high, Value):
        raise tr.error("a clamp to tensor bounds is not supported (its bounds must be numbers)")
    props = ", ".join(f"{k} = {float(v):e} : f32" for k, v in (("min", low), ("max", high)) if v is not None)
    return value(tr, tr.builder.op("clamp", [x.ssa], x.shape, x.dtype, call.loc, props), x.shape)


@rule("select")
def select(tr: Translation, call: Call) -> Value:
    """One index of a dim (`x[:, 0]`): a slice of it, the dim dropped."""
    x = logical(tr, call.args[0], call.loc)
    dim = call.args[1] % len(x.shape)
    index = call.args[2] % x.shape[dim]
    begins = [index if i == dim else 0 for i in range(len(x.shape))]
    ends = [index + 1 if i == dim else s for i, s in enumerate(x.shape)]
    piece = tr.builder.slice(x.ssa, begins, ends, call.loc)
    shape = shape_of(call.out)
    return value(tr, tr.builder.reshape(piece, shape, f"{call.loc}.squeeze"), shape)
