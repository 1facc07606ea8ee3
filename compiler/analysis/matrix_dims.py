"""The problem sizes of an op's matrix work, as the passes block it and the simulator counts its
FLOPs: a matmul's or convolution's GEMM, and attention's heads and lengths."""

from __future__ import annotations

import math

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Graph, Op


ATTENTION_DIMS = ("batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim")


def attention_dims(graph: Graph, op: Op) -> tuple[int, int, int, int, int]:
    """(batch x query heads, batch x KV heads, query positions, key positions, head dim) of an
    attention op, as fuse-attention recorded them (its operands may hold the heads side by side), or
    as an attention op read from MLIR gives them (`32 : i64`)."""
    try:
        batch, heads, kv_heads, q_len, kv_len, head_dim = (attributes.integer(op.attrs[key]) for key in ATTENTION_DIMS)
        return batch * heads, batch * kv_heads, q_len, kv_len, head_dim
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
    if op.kind == "mmt4d" and len(a.shape) >= 4 and len(out.shape) >= 4:
        # packed: A is [B,] M1 x K1 x M0 x K0 and the result [B,] M1 x N1 x M0 x N0
        cols = out.shape[-3] * out.shape[-1]
        return max(1, out_elems // max(1, cols)), a.shape[-3] * a.shape[-1], cols
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
