"""The graph-level op vocabulary: which source ops map to which kind, and each kind's class.

One vocabulary whatever the source dialect: `ttir.matmul`, `ttir.dot_general`,
`stablehlo.dot_general`, `linalg.matmul` and `tosa.matmul` all become `matmul`. A kind's class
decides which engine runs it and how much work each element is (compiler/sim/flops.py counts an
op's FLOPs from it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.graph import Op

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
# ops that sample their input at points another operand gives (bilinear grid sampling)
SAMPLE = "sample"
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
    # a matmul on operands packed into inner tiles (IREE's data-tiling): M1xK1xM0xK0 times
    # N1xK1xN0xK0 into M1xN1xM0xN0, with an optional batch dim in front
    **_kinds(MATMUL, "matrix", 0, "mmt4d"),
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
        "atan",
        # comparisons with zero (ttnn's unary gtz, ltz, ...): one SFPU pass each
        "gtz",
        "ltz",
        "gez",
        "lez",
        "eqz",
        "nez",
    ),
    **_kinds(ELTWISE_UNARY, "vector", 0, "typecast"),
    **_kinds(ELTWISE_TERNARY, "vector", 1, "where"),
    **_kinds(NORM, "vector", 5, "softmax", "rmsnorm"),  # max/square, subtract, exp, sum, divide
    **_kinds(NORM, "vector", 8, "layernorm"),
    # a layernorm over each group of channels: the same mean, variance, normalize, scale and shift
    **_kinds(NORM, "vector", 8, "groupnorm"),
    **_kinds(NORM, "vector", 2, "batchnorm"),  # folded scale and shift
    **_kinds(REDUCE, "vector", 1, "sum", "mean", "max", "min", "prod", "argmax", "reduce_or", "reduce_and"),
    # a running sum along a dimension (ttnn's accumulation ops): one add per element
    **_kinds(REDUCE, "vector", 1, "cumsum"),
    **_kinds(POOL, "vector", 1, "max_pool2d", "avg_pool2d"),
    # bilinear sampling (torch.nn.functional.grid_sample, ttnn.grid_sample): each output element
    # weighs the 4 input pixels around its sample point, ~8 operations (weights, 4 multiplies, 3
    # adds); it reads SAMPLED_READS of the input per output element (compiler/analysis/stream_kernel.py)
    **_kinds(SAMPLE, "vector", 8, "grid_sample"),
    # x * cos + rotate(x) * sin, tile by tile: ttnn's rotary_embedding_llama compute kernel runs a
    # matmul_tiles (the rotation), two mul_tiles and an add_tiles per tile (tt-metal
    # ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding_llama), 4 passes
    **_kinds(ELTWISE_TERNARY, "vector", 4, "rotary_embedding"),
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
        # a convolution's input shards with the rows their neighbours' windows overlap (ttnn's halo)
        "halo",
        # nearest-neighbour upsampling: each input pixel copied scale_h x scale_w times
        "upsample",
        # a relayout into inner tiles and back (linalg.pack / unpack), and an IREE encoding set
        # or unset on a tensor, which materializes into one
        "pack",
        "unpack",
        "set_encoding",
        "unset_encoding",
        # a tensor sent to another device (IREE's flow.tensor.transfer)
        "transfer",
        # attention's heads split out of a projection's columns, and merged back, whole tiles at
        # a time (ttnn's nlp_create_qkv_heads and nlp_concat_heads; passes/fuse_heads.py)
        "split_heads",
        "concatenate_heads",
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
    "group_norm": "groupnorm",
    "upsample2d": "upsample",
    "upsample_nearest2d": "upsample",
    "rotary_embedding_llama": "rotary_embedding",
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
    "batch_mmt4d": "mmt4d",
    "tensor.encode": "set_encoding",  # flow.tensor.encode
    "tensor.reshape": "reshape",  # flow.tensor.reshape
    "tensor.transfer": "transfer",  # flow.tensor.transfer
    "tensor.splat": "fill",  # flow.tensor.splat
    # arith and math spellings, as linalg.generic bodies hold them (compiler/ir/generic_ops.py)
    "subi": "subtract",
    "muli": "multiply",
    "divsi": "divide",
    "divui": "divide",
    "negf": "neg",
    "absf": "abs",
    "powf": "pow",
    "maxnumf": "maximum",
    "minnumf": "minimum",
    "maxsi": "maximum",
    "minsi": "minimum",
    "cmpf": "eq",
    "cmpi": "eq",
    "extf": "typecast",
    "truncf": "typecast",
    "sitofp": "typecast",
    "uitofp": "typecast",
    "fptosi": "typecast",
    "extsi": "typecast",
    "extui": "typecast",
    "trunci": "typecast",
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
