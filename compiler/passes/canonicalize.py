"""graph: drop ops that do nothing and fold ops that only compute constants.

    %1 = reshape(%0) : 1x512 -> 1x512        dropped, readers of %1 read %0
    %2 = broadcast(constant) -> 8x512         becomes a constant (computed at compile time)
    %3 = reshape(reshape(%0))                 one reshape of %0 (dropped if it gives %0's shape)
    %4 = typecast(typecast(%0 : bf16) : f32) : bf16    %0: a widening cast and back loses nothing

Removed ops are listed in `graph.meta[CANONICALIZED]` as Dropped(op, reason), so views can say where an
op of the input went.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.meta import CANONICALIZED, Dropped
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.rewrite import drop_unread

# Ops whose output equals their input when shapes and dtypes match.
_IDENTITY_WHEN_SAME_TYPE = {"reshape", "broadcast", "typecast", "slice", "to_layout", "repeat"}
# (from, to) casts that keep every value, so casting back restores the original exactly
WIDENING = {
    ("bf16", "f32"),
    ("f16", "f32"),
    ("bfp8", "bf16"),
    ("bfp8", "f32"),
    ("bfp4", "bf16"),
    ("bfp4", "f32"),
    ("i8", "i16"),
    ("i8", "i32"),
    ("i16", "i32"),
    ("ui8", "i16"),
    ("ui8", "i32"),
    ("ui8", "ui32"),
    ("i32", "i64"),
    ("ui32", "i64"),
    ("i1", "i32"),
}


def _skip_chain(graph: Graph, op: Op, producer: dict[str, Op]) -> Op | None:
    """The inner op `op` can read past: a reshape of a reshape, or a cast of a widening cast.
    None when there is none."""
    inner = producer.get(op.inputs[0]) if op.inputs else None
    if inner is None or inner.kind != op.kind or len(inner.inputs) != 1 or len(op.inputs) != 1:
        return None
    if op.kind == "reshape":
        return inner
    if op.kind == "typecast":
        source, middle = graph.tensors[inner.inputs[0]].dtype, graph.tensors[inner.outputs[0]].dtype
        return inner if (source, middle) in WIDENING else None
    return None


def _is_identity(graph: Graph, op: Op) -> bool:
    if len(op.inputs) < 1 or len(op.outputs) != 1:
        return False
    src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if src.shape != dst.shape or src.dtype != dst.dtype:
        return False
    if op.kind in _IDENTITY_WHEN_SAME_TYPE:
        return True
    if op.kind == "permute":
        perm = attributes.ints(op.attrs.get("permutation"))
        return perm == tuple(range(len(perm)))
    if op.kind == "transpose":
        dims = attributes.ints(op.attrs.get("dim0")) + attributes.ints(op.attrs.get("dim1"))
        return len(dims) == 2 and dims[0] % max(1, len(src.shape)) == dims[1] % max(1, len(src.shape))
    return False


@dataclass(frozen=True)
class Canonicalize:
    name = "canonicalize"

    def run(self, graph: Graph) -> Graph:
        removed: list[Dropped] = list(graph.meta.get(CANONICALIZED, []))
        kept: list[Op] = []
        constants = {name for name, t in graph.tensors.items() if t.is_constant}
        producer: dict[str, Op] = {}
        skipped: list[Op] = []
        # a removed no-op's output -> what its readers read instead; applied as each later op comes
        # up (ops are in topological order), not by a walk over every op per no-op: a 100k-op model
        # has ~17k no-ops, and that walk was quadratic (120 s)
        alias: dict[str, str] = {}
        inputs = set(graph.inputs)  # a large model's weights are thousands of inputs
        for op in graph.ops:
            if alias:
                op.inputs = [alias.get(t, t) for t in op.inputs]
            inner = _skip_chain(graph, op, producer)
            if inner is not None:  # read past it; it goes if nothing else reads it
                op.inputs = [inner.inputs[0]]
                skipped.append(inner)
            for t in op.outputs:
                producer[t] = op
            if _is_identity(graph, op) and op.outputs[0] not in inputs:
                alias[op.outputs[0]] = op.inputs[0]
                graph.tensors.pop(op.outputs[0], None)
                removed.append(Dropped(op.name, f"no-op {op.kind}"))
                continue
            cls = opset.op_class(op.kind)
            foldable = (
                cls.kind_class not in (opset.CONSTANT, opset.OPAQUE, *opset.MATRIX_CLASSES)
                and op.kind not in opset.STATEFUL
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
        graph.outputs = [alias.get(t, t) for t in graph.outputs]
        graph.meta[CANONICALIZED] = removed
        drop_unread(graph, skipped, "read past by the op after it")
        return graph
