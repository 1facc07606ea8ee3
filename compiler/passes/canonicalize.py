"""graph: drop ops that do nothing and fold ops that only compute constants.

    %1 = reshape(%0) : 1x512 -> 1x512        dropped, readers of %1 read %0
    %2 = broadcast(constant) -> 8x512         becomes a constant (computed at compile time)

Removed ops are listed in `graph.meta["canonicalized"]` as (op, reason), so views can say where an
op of the input went.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import attrs, opset
from ..ir import Graph, Op

# Ops whose output equals their input when shapes and dtypes match.
_IDENTITY_WHEN_SAME_TYPE = {"reshape", "broadcast", "typecast", "slice", "to_layout", "repeat"}
# Ops that change state or inputs outside the graph's values; never folded.
_NEVER_FOLD = {"fill_cache", "update_cache", "scatter"}


def _is_identity(graph: Graph, op: Op) -> bool:
    if len(op.inputs) < 1 or len(op.outputs) != 1:
        return False
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if src.shape != dst.shape or src.dtype != dst.dtype:
        return False
    if op.kind in _IDENTITY_WHEN_SAME_TYPE:
        return True
    if op.kind == "permute":
        perm = attrs.ints(op.attrs.get("permutation"))
        return perm == tuple(range(len(perm)))
    if op.kind == "transpose":
        dims = attrs.ints(op.attrs.get("dim0")) + attrs.ints(op.attrs.get("dim1"))
        return len(dims) == 2 and dims[0] % max(1, len(src.shape)) == dims[1] % max(1, len(src.shape))
    return False


@dataclass(frozen=True)
class Canonicalize:
    name = "canonicalize"

    def run(self, graph: Graph) -> Graph:
        removed: list[tuple[str, str]] = list(graph.meta.get("canonicalized", []))
        kept: list[Op] = []
        constants = {name for name, t in graph.tensors.items() if t.is_constant}
        for op in graph.ops:
            if _is_identity(graph, op) and op.outputs[0] not in graph.inputs:
                graph.replace_uses(op.outputs[0], op.inputs[0])
                graph.tensors.pop(op.outputs[0], None)
                removed.append((op.name, f"no-op {op.kind}"))
                continue
            cls = opset.op_class(op.kind)
            foldable = (
                cls.kind_class not in (opset.CONSTANT, opset.OPAQUE, *opset.MATRIX_CLASSES)
                and op.kind not in _NEVER_FOLD
                and all(t in constants for t in op.inputs)
            )
            if foldable:
                op.attrs = {"folded": op.kind}
                op.kind = "constant"
                op.inputs = []
                for t in op.outputs:
                    graph.tensors[t].is_constant = True
                    constants.add(t)
            kept.append(op)
        graph.ops = kept
        graph.meta["canonicalized"] = removed
        return graph
