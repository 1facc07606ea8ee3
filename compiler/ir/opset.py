"""The graph-level op vocabulary: which source ops map to which kind, and what each kind costs.

One vocabulary whatever the source dialect: `ttir.matmul`, `ttir.dot_general`,
`stablehlo.dot_general`, `linalg.matmul` and `tosa.matmul` all become `matmul`. A kind's class
decides which engine runs it and how its FLOPs are counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilescope.compiler.ir import attributes
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir.graph import Graph, Op

MAX_FLOPS = 2**63 - 1  # what a run stores per op (a 64-bit integer column)

MATMUL, CONV, ATTENTION = "matmul", "conv", "attention"
ELTWISE_UNARY, ELTWISE_BINARY, ELTWISE_TERNARY, REDUCE, NORM, POOL, DATA_MOVEMENT, CONSTANT, OPAQUE = (
    "eltwise_unary",
    "eltwise_binary",
    "eltwise_ternary",
    "reduce",
    "normalization",
    "pool",
    "data_movement",
    "constant",
    "opaque",
)
# communication between the devices of a mesh, and the ops that say how tensors are split over it
COLLECTIVE, SHARDING = "collective", "sharding"
# the collectives the sharding passes insert, and those of them that move data between devices
# (an all_slice does not)
COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "collective_permute", "all_slice")
EXCHANGES = COLLECTIVES[:-1]
MATRIX_CLASSES = (MATMUL, CONV)
ELTWISE_CLASSES = (ELTWISE_UNARY, ELTWISE_BINARY, ELTWISE_TERNARY)


@dataclass(frozen=True)
class OpClass:
    kind_class: str
    engine: str  # matrix | vector | data | link (between devices) | none
    flops_per_element: float = 0.0  # per output element (per input element for reductions)


def _kinds(kind_class: str, engine: str, flops: float, *names: str) -> dict[str, OpClass]:
    return {name: OpClass(kind_class, engine, flops) for name in names}


# kind -> class. Vector FLOPs per element are operation counts (a transcendental counts as one
# SFPU pass), enough to rank ops; matmul and convolution FLOPs are exact (2 per multiply-add).
KINDS: dict[str, OpClass] = {
    **_kinds(MATMUL, "matrix", 0, "matmul"),
    **_kinds(CONV, "matrix", 0, "conv2d"),
    # softmax(Q K^T * scale + mask) V in one kernel; the softmax's vector work per score
    **_kinds(ATTENTION, "matrix", 5, "scaled_dot_product_attention", "scaled_dot_product_attention_decode"),
    **_kinds(
        ELTWISE_BINARY,
        "vector",
        1,
        "add",
        "subtract",
        "multiply",
        "divide",
        "maximum",
        "minimum",
        "pow",
        "remainder",
        "atan2",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
    ),
    **_kinds(
        ELTWISE_UNARY,
        "vector",
        1,
        "relu",
        "relu6",
        "gelu",
        "silu",
        "sigmoid",
        "tanh",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "neg",
        "abs",
        "sin",
        "cos",
        "erf",
        "floor",
        "ceil",
        "sign",
        "logical_not",
        "leaky_relu",
        "clamp",
        "hardsigmoid",
        "mish",
        "log1p",
        "expm1",
    ),
    **_kinds(ELTWISE_UNARY, "vector", 0, "typecast"),
    **_kinds(ELTWISE_TERNARY, "vector", 1, "where"),
    **_kinds(NORM, "vector", 5, "softmax", "rmsnorm"),  # max/square, subtract, exp, sum, divide
    **_kinds(NORM, "vector", 8, "layernorm"),
    **_kinds(NORM, "vector", 2, "batchnorm"),  # folded scale and shift
    **_kinds(REDUCE, "vector", 1, "sum", "mean", "max", "min", "prod", "argmax", "reduce_or", "reduce_and"),
    **_kinds(POOL, "vector", 1, "max_pool2d", "avg_pool2d"),
    **_kinds(
        DATA_MOVEMENT,
        "data",
        0,
        "reshape",
        "permute",
        "transpose",
        "slice",
        "concat",
        "broadcast",
        "pad",
        "embedding",
        "gather",
        "repeat",
        "fill_cache",
        "update_cache",
        "arange",
        "to_layout",
        "scatter",
        "reverse",
        "fill",
    ),
    **_kinds(CONSTANT, "none", 0, "constant"),
    # on one device a collective is a copy; across devices its cost is the links'
    **_kinds(
        COLLECTIVE,
        "link",
        0,
        "all_gather",
        "reduce_scatter",
        "all_reduce",
        "all_to_all",
        "collective_permute",
        "all_slice",
    ),
    **_kinds(SHARDING, "data", 0, "sharding_constraint", "full_to_shard", "shard_to_full"),
}

# Ops that write state outside the graph's values (a KV cache): never folded, never hoisted to load time
STATEFUL = frozenset({"fill_cache", "update_cache", "scatter"})

# Source op names that are the same kind under another spelling (dialect prefix removed).
ALIASES: dict[str, str] = {
    "dot_general": "matmul",
    "dot": "matmul",
    "linear": "matmul",
    "batch_matmul": "matmul",
    "matmul_transpose_b": "matmul",
    "convolution": "conv2d",
    "conv_2d_nhwc_hwcf": "conv2d",
    "conv_2d_nchw_fchw": "conv2d",
    "conv": "conv2d",
    "sub": "subtract",
    "subf": "subtract",
    "addf": "add",
    "addi": "add",
    "mul": "multiply",
    "mulf": "multiply",
    "div": "divide",
    "divf": "divide",
    "maximumf": "maximum",
    "minimumf": "minimum",
    "exponential": "exp",
    "negate": "neg",
    "select": "where",
    "compare": "eq",
    "not": "logical_not",
    "and": "logical_and",
    "or": "logical_or",
    "xor": "logical_xor",
    "logistic": "sigmoid",
    "reduce_sum": "sum",
    "reduce_mean": "mean",
    "reduce_max": "max",
    "reduce_min": "min",
    "reduce": "sum",
    "pooling_nhwc_max": "max_pool2d",
    "max_pool2d": "max_pool2d",
    "avg_pool2d": "avg_pool2d",
    "broadcast_in_dim": "broadcast",
    "expand": "broadcast",
    "convert": "typecast",
    "cast": "typecast",
    "bitcast": "typecast",
    "layer_norm": "layernorm",
    "rms_norm": "rmsnorm",
    "batch_norm_inference": "batchnorm",
    "concatenate": "concat",
    "slice_static": "slice",
    "extract_slice": "slice",
    "dynamic_slice": "slice",
    "insert_slice": "concat",
    "squeeze": "reshape",
    "unsqueeze": "reshape",
    "collapse_shape": "reshape",
    "expand_shape": "reshape",
    "iota": "arange",
    "splat": "fill",
    "full": "fill",
    "zeros": "fill",
    "ones": "fill",
    "const": "constant",
    "empty_tensor": "constant",
    "dynamic_update_slice": "update_cache",
    "reshard": "sharding_constraint",  # sdy.reshard: the partitioner picks the collectives
}

# GSPMD's sharding ops are custom calls, told apart by their target
CUSTOM_CALL_KINDS = {
    "Sharding": "sharding_constraint",
    "SPMDFullToShardShape": "full_to_shard",
    "SPMDShardToFullShape": "shard_to_full",
}

# Ops that only give destination-passing style outputs (or allocations); they carry no work.
DPS_EMPTY = {"tensor.empty", "ttir.empty", "bufferization.alloc_tensor"}


def kind_of(source_name: str) -> str | None:
    """Vocabulary kind of a source op name such as 'ttir.matmul', or None when unknown."""
    base = source_name.split(".", 1)[-1]
    base = ALIASES.get(base, base)
    return base if base in KINDS else None


def kind_of_op(op: Op) -> str | None:
    """Vocabulary kind of an `input`-level op: its source name's, or for the ops whose name alone
    does not say (`ttir.mesh_shard`, GSPMD's custom calls) what their attributes say."""
    if op.kind == "ttir.mesh_shard":
        to_full = "shard_to_full" in op.attrs.get("shard_direction", "")
        return "shard_to_full" if to_full else "full_to_shard"
    if op.kind == "stablehlo.custom_call":
        return CUSTOM_CALL_KINDS.get(op.attrs.get("call_target_name", "").strip('"'))
    return kind_of(op.kind)


def op_class(kind: str) -> OpClass:
    return KINDS.get(kind, OpClass(OPAQUE, "data"))


def attention_dims(graph: Graph, op: Op) -> tuple[int, int, int, int, int]:
    """(batch x query heads, batch x KV heads, query positions, key positions, head dim) of an
    attention op, as fuse-attention recorded them (its operands may hold the heads side by side)."""
    a = op.attrs
    try:
        batch, heads, kv_heads = int(a["batch"]), int(a["heads"]), int(a["kv_heads"])
        return batch * heads, batch * kv_heads, int(a["q_len"]), int(a["kv_len"]), int(a["head_dim"])
    except (KeyError, ValueError):
        raise ModelLoadError(
            f"op {op.name}: {op.kind} needs integer batch, heads, kv_heads, q_len, kv_len and head_dim attributes"
        ) from None


def gemm_dims(graph: Graph, op: Op) -> tuple[int, int, int]:
    """(rows, K, cols) of the GEMM a matmul or convolution performs; batch dims fold into rows.

    Convolutions run as implicit GEMMs: rows = N*Ho*Wo output pixels, cols = output channels and
    K = input channels per group times the kernel window (weights are O x I/groups x Kh x Kw)."""
    out = graph.tensors[op.outputs[0]]
    out_elems = out.numel
    if op.kind == "conv2d":
        weight = graph.tensors[op.inputs[1]]
        c_out = weight.shape[0] if weight.shape else 1
        k = weight.numel // max(1, c_out)
        return max(1, out_elems // max(1, c_out)), k, c_out
    a = graph.tensors[op.inputs[0]]
    contract = attributes.ints(op.attrs.get("contract_dims_lhs"))
    if contract:
        if len(set(contract)) != len(contract) or not all(0 <= d < len(a.shape) for d in contract):
            raise ModelLoadError(
                f"op {op.name}: contract_dims_lhs {list(contract)[:8]} are not distinct dimensions of its "
                f"rank-{len(a.shape)} first operand"
            )
        k = math.prod(a.shape[d] for d in contract)
    elif op.attrs.get("transpose_a", "").startswith("true") and len(a.shape) >= 2:
        k = a.shape[-2]
    else:
        k = a.shape[-1] if a.shape else 1
    cols = out.shape[-1] if out.shape else 1
    return max(1, out_elems // max(1, cols)), k, cols


def flops(graph: Graph, op: Op) -> int:
    """Useful FLOPs of one graph-level op (no padding); fused ops add their per-element work.
    More than a run can store is an error naming the op: tensors within MAX_ELEMENTS can still
    multiply to more (a matmul of two 2^48-element operands)."""
    count = _flops(graph, op)
    if count > MAX_FLOPS:
        raise ModelLoadError(f"op {op.name}: {count:.3g} FLOPs, more than tilescope counts (2^63)")
    return count


def _flops(graph: Graph, op: Op) -> int:
    cls = op_class(op.kind)
    if not op.outputs:
        return 0
    out = graph.tensors[op.outputs[0]]
    fused = sum(op_class(kind).flops_per_element for kind in op.attrs.get("fused_kinds", ()))
    if cls.kind_class in MATRIX_CLASSES and len(op.inputs) >= 2:
        rows, k, cols = gemm_dims(graph, op)
        return 2 * rows * k * cols + int(out.numel * fused)
    if cls.kind_class == ATTENTION and len(op.inputs) >= 3:
        heads, _, sq, sk, d = attention_dims(graph, op)
        scores = heads * sq * sk
        return 2 * 2 * scores * d + int(scores * cls.flops_per_element)  # Q K^T and P V, softmax
    if cls.kind_class in (REDUCE, POOL):
        return int(graph.tensors[op.inputs[0]].numel * cls.flops_per_element) if op.inputs else 0
    return int(math.ceil(out.numel * (cls.flops_per_element + fused)))
