"""The graph-level op vocabulary: which source ops map to which kind, and what each kind costs.

One vocabulary whatever the source dialect: `ttir.matmul` and `stablehlo.dot_general` both become
`matmul`. A kind's class decides which engine runs it and how its FLOPs are counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .ir import Graph, Op

MATMUL, ELTWISE_UNARY, ELTWISE_BINARY, REDUCE, NORM, DATA_MOVEMENT, CONSTANT, OPAQUE = (
    "matmul",
    "eltwise_unary",
    "eltwise_binary",
    "reduce",
    "normalization",
    "data_movement",
    "constant",
    "opaque",
)


@dataclass(frozen=True)
class OpClass:
    kind_class: str
    engine: str  # matrix | vector | data | none
    flops_per_element: float = 0.0  # per output element, except matmul


# kind -> class. Vector FLOPs per element are operation counts (exp and friends count as one
# SFPU pass each), enough to rank ops; matmul FLOPs are exact (2*M*N*K).
KINDS: dict[str, OpClass] = {
    "matmul": OpClass(MATMUL, "matrix"),
    "add": OpClass(ELTWISE_BINARY, "vector", 1),
    "subtract": OpClass(ELTWISE_BINARY, "vector", 1),
    "multiply": OpClass(ELTWISE_BINARY, "vector", 1),
    "divide": OpClass(ELTWISE_BINARY, "vector", 1),
    "maximum": OpClass(ELTWISE_BINARY, "vector", 1),
    "minimum": OpClass(ELTWISE_BINARY, "vector", 1),
    "pow": OpClass(ELTWISE_BINARY, "vector", 1),
    "relu": OpClass(ELTWISE_UNARY, "vector", 1),
    "gelu": OpClass(ELTWISE_UNARY, "vector", 1),
    "silu": OpClass(ELTWISE_UNARY, "vector", 1),
    "sigmoid": OpClass(ELTWISE_UNARY, "vector", 1),
    "tanh": OpClass(ELTWISE_UNARY, "vector", 1),
    "exp": OpClass(ELTWISE_UNARY, "vector", 1),
    "log": OpClass(ELTWISE_UNARY, "vector", 1),
    "sqrt": OpClass(ELTWISE_UNARY, "vector", 1),
    "rsqrt": OpClass(ELTWISE_UNARY, "vector", 1),
    "neg": OpClass(ELTWISE_UNARY, "vector", 1),
    "abs": OpClass(ELTWISE_UNARY, "vector", 1),
    "typecast": OpClass(ELTWISE_UNARY, "vector", 0),
    "softmax": OpClass(NORM, "vector", 5),  # max, subtract, exp, sum, divide
    "layernorm": OpClass(NORM, "vector", 8),
    "rmsnorm": OpClass(NORM, "vector", 5),
    "sum": OpClass(REDUCE, "vector", 1),
    "mean": OpClass(REDUCE, "vector", 1),
    "max": OpClass(REDUCE, "vector", 1),
    "reshape": OpClass(DATA_MOVEMENT, "data"),
    "permute": OpClass(DATA_MOVEMENT, "data"),
    "transpose": OpClass(DATA_MOVEMENT, "data"),
    "slice": OpClass(DATA_MOVEMENT, "data"),
    "concat": OpClass(DATA_MOVEMENT, "data"),
    "broadcast": OpClass(DATA_MOVEMENT, "data"),
    "embedding": OpClass(DATA_MOVEMENT, "data"),
    "constant": OpClass(CONSTANT, "none"),
}

# Source op names that are the same kind under another spelling.
ALIASES: dict[str, str] = {
    "dot_general": "matmul",
    "dot": "matmul",
    "linear": "matmul",
    "batch_matmul": "matmul",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "max_pool2d": "max",
    "exponential": "exp",
    "negate": "neg",
    "reduce_sum": "sum",
    "reduce_mean": "mean",
    "reduce_max": "max",
    "broadcast_in_dim": "broadcast",
    "convert": "typecast",
    "layer_norm": "layernorm",
    "rms_norm": "rmsnorm",
    "logistic": "sigmoid",
    "concatenate": "concat",
}

# Ops that only exist to give destination-passing style outputs; they carry no work.
DPS_EMPTY = {"tensor.empty", "ttir.empty"}


def kind_of(source_name: str) -> str | None:
    """Vocabulary kind of a source op name such as 'ttir.matmul', or None when unknown."""
    base = source_name.split(".", 1)[-1]
    base = ALIASES.get(base, base)
    return base if base in KINDS else None


def op_class(kind: str) -> OpClass:
    return KINDS.get(kind, OpClass(OPAQUE, "data"))


def flops(graph: Graph, op: Op) -> int:
    """Useful FLOPs of one graph-level op (no padding)."""
    cls = op_class(op.kind)
    if not op.outputs:
        return 0
    out = graph.tensors[op.outputs[0]]
    if cls.kind_class == MATMUL:
        a = graph.tensors[op.inputs[0]]
        k = a.shape[-1] if a.shape else 1
        return 2 * out.numel * k
    if cls.kind_class == REDUCE:
        return int(sum(graph.tensors[t].numel for t in op.inputs[:1]) * cls.flops_per_element)
    return int(math.ceil(out.numel * cls.flops_per_element))
