"""The op codes tt-metal's reports name (its device operations' class names, across versions), as
kinds of tilescope's vocabulary (compiler.ir.opset): what lets a measured op be counted (FLOPs,
bytes), compared with a simulated one, and rebuilt by the replay.

Binary and unary ops say which operation they run in their attributes (`binary_op_type`,
`op_chain`); everything else is named by its code. A code that is itself a kind of the vocabulary
is that kind (the reports tilescope exports name their ops by kind); any other code not listed
here has no kind ("").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tilescope.compiler.ir import opset

# op code -> kind
KINDS: dict[str, str] = {
    **dict.fromkeys(("Matmul", "MatmulDeviceOperation", "MinimalMatmulOp", "MatmulMultiCoreReuseProgram"), "matmul"),
    **dict.fromkeys(("Conv2dDeviceOperation", "OptimizedConvNew", "Conv2d"), "conv2d"),
    **dict.fromkeys(
        (
            "ScaledDotProductAttention",
            "SDPAOperation",
            "RingJointSDPADeviceOperation",
            "JointSDPADeviceOperation",
            "RingDistributedSDPADeviceOperation",
        ),
        "scaled_dot_product_attention",
    ),
    **dict.fromkeys(
        ("ScaledDotProductAttentionDecode", "SdpaDecodeDeviceOperation"), "scaled_dot_product_attention_decode"
    ),
    **dict.fromkeys(("LayerNormDeviceOperation", "LayerNorm"), "layernorm"),
    **dict.fromkeys(("GroupNormDeviceOperation", "GroupNorm"), "groupnorm"),
    **dict.fromkeys(("SoftmaxDeviceOperation", "Softmax"), "softmax"),
    **dict.fromkeys(("ReshapeDeviceOperation", "ReshapeViewDeviceOperation"), "reshape"),
    **dict.fromkeys(("TransposeDeviceOperation", "Transpose"), "transpose"),
    **dict.fromkeys(("PermuteDeviceOperation",), "permute"),
    **dict.fromkeys(
        (
            "TilizeDeviceOperation",
            "Tilize",
            "TilizeWithValPaddingDeviceOperation",
            "TilizeWithValPadding",
            "UntilizeDeviceOperation",
            "Untilize",
            "UntilizeWithUnpaddingDeviceOperation",
            "UntilizeWithUnpadding",
            "InterleavedToShardedDeviceOperation",
            "InterleavedToShardedPartialDeviceOperation",
            "ShardedToInterleavedDeviceOperation",
            "ShardedToInterleavedPartialDeviceOperation",
            "ReshardDeviceOperation",
            "MoveDeviceOperation",
            "CopyDeviceOperation",
        ),
        "to_layout",
    ),
    **dict.fromkeys(
        ("SliceDeviceOperation", "PaddedSliceDeviceOperation", "SplitDeviceOperation"),
        "slice",
    ),
    **dict.fromkeys(
        ("SliceWriteDeviceOperation", "UpdateKVCacheOperation", "PagedUpdateCacheDeviceOperation"), "update_cache"
    ),
    **dict.fromkeys(("ConcatDeviceOperation",), "concat"),
    "NlpCreateHeadsDeviceOperation": "split_heads",
    "NLPConcatHeadsDeviceOperation": "concatenate_heads",
    **dict.fromkeys(("EmbeddingsDeviceOperation", "Embeddings"), "embedding"),
    **dict.fromkeys(("TypecastDeviceOperation", "Typecast"), "typecast"),
    **dict.fromkeys(("Pool2D",), "max_pool2d"),
    **dict.fromkeys(("FastReduceNCDeviceOperation", "ReduceDeviceOperation", "Reduce"), "sum"),
    **dict.fromkeys(("AllGatherAsyncDeviceOperation", "AllGatherDeviceOperation", "AllGather"), "all_gather"),
    **dict.fromkeys(
        ("ReduceScatterMinimalAsyncDeviceOperation", "ReduceScatterDeviceOperation", "ReduceScatter"), "reduce_scatter"
    ),
    **dict.fromkeys(("AllReduceAsyncDeviceOperation", "AllReduce"), "all_reduce"),
    **dict.fromkeys(("TernaryDeviceOperation", "WhereDeviceOperation"), "where"),
    **dict.fromkeys(("GridSampleOperation", "GridSample"), "grid_sample"),
    **dict.fromkeys(("HaloDeviceOperation", "Halo"), "halo"),
    **dict.fromkeys(("UpsampleOperation", "UpSample", "Upsample"), "upsample"),
    # cumsum and cumprod (ttnn's accumulation ops), and the integral image: running sums over rows
    # and then columns
    **dict.fromkeys(("AccumulationDeviceOperation", "CumSumDeviceOperation", "IntImgDeviceOperation"), "cumsum"),
    **dict.fromkeys(("RotaryEmbeddingLlamaDeviceOperation", "RotaryEmbeddingDeviceOperation"), "rotary_embedding"),
}

# BinaryOpType:: names -> kinds
BINARY = {
    "ADD": "add",
    "SUB": "subtract",
    "MUL": "multiply",
    "DIV": "divide",
    "DIV_FAST": "divide",
    "MAXIMUM": "maximum",
    "MINIMUM": "minimum",
    "POWER": "pow",
    "GT": "gt",
    "LT": "lt",
    "GTE": "ge",
    "LTE": "le",
    "EQ": "eq",
    "NE": "ne",
    "LOGICAL_AND": "logical_and",
    "LOGICAL_OR": "logical_or",
}
# UnaryOpType:: names (lower case) -> kinds, where they differ; where_tss is where(x, scalar, scalar)
UNARY = {"recip": "reciprocal", "identity": "typecast", "where_tss": "where"}
BINARY_CODES = ("BinaryNgDeviceOperation", "BinaryDeviceOperation", "Binary")
UNARY_CODES = ("UnaryDeviceOperation", "Unary")
POOL_CODES = ("Pool2D",)
_BINARY_TYPE = re.compile(r"BinaryOpType::(\w+)")
_UNARY_TYPE = re.compile(r"UnaryOpType::(\w+)")
MAX_CHAIN = 16  # functions of a unary op's chain read: a report's longer chain is cut there


def unary_chain(attributes: Mapping[str, str]) -> tuple[str, ...]:
    """The functions a unary op applies after its first, in order (ttnn's op_chain), as kinds of
    the vocabulary; those it does not name are left out."""
    names = (n.lower() for n in _UNARY_TYPE.findall(attributes.get("op_chain", ""))[1:MAX_CHAIN])
    return tuple(kind for kind in (UNARY.get(n, n) for n in names) if kind in opset.KINDS)


def kind_of(op_code: str, attributes: Mapping[str, str]) -> str:
    """The kind a measured op is in tilescope's vocabulary, or "" when its code is not known."""
    if op_code in BINARY_CODES:
        found = _BINARY_TYPE.search(attributes.get("binary_op_type", ""))
        return BINARY.get(found[1], "add") if found else "add"
    if op_code in UNARY_CODES:
        found = _UNARY_TYPE.search(attributes.get("op_chain", ""))
        name = found[1].lower() if found else ""
        return UNARY.get(name, name or "relu")
    if op_code in POOL_CODES:  # one program for both, its type an attribute
        return "avg_pool2d" if "AVG_POOL2D" in attributes.get("pool_type_", "") else "max_pool2d"
    return KINDS.get(op_code) or (op_code if op_code in opset.KINDS else "")
