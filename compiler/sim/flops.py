"""Useful FLOPs of a graph-level op: a GEMM's multiply-adds, attention's two GEMMs and softmax, and
per element what the op's class (compiler.ir.opset) counts; padding to tiles is not work."""

from __future__ import annotations

import math

from tilescope.compiler.analysis.matrix_dims import attention_dims, gemm_dims
from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.opset import ATTENTION, MATRIX_CLASSES, POOL, REDUCE, op_class

MAX_FLOPS = 2**63 - 1  # what a run stores per op (a 64-bit integer column)


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
