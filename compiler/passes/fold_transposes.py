"""graph: a transpose or permute that feeds a matmul becomes how the matmul reads that operand.

    %wt = permute(%w) {permutation = [1, 0]} : 512x2048 -> 2048x512
    %y = dot_general(%x, %wt) {contract_dims_rhs = [0]}
        ->  %y = dot_general(%x, %w) {contract_dims_rhs = [1], transpose_b}

The matrix engine's reader fetches tiles in either order, so the transposed copy is never
written: tt-mlir folds these into `transpose_a` / `transpose_b` of its matmul. For a
dot_general the permutation is folded into its batch and contracting dimensions, which is
possible when the operand's free dimensions keep their order (the result's shape is unchanged);
for a matmul without dimension numbers, when the permutation swaps the last two dimensions.
The permute goes when nothing else reads it; the matmul lists it in its provenance.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.rewrite import drop_unread, producers

_TRANSPOSES = ("permute", "transpose")
_SIDES = (("lhs", "transpose_a"), ("rhs", "transpose_b"))


def permutation(graph: Graph, op: Op) -> tuple[int, ...] | None:
    """The permutation a permute or transpose applies, as positions of its input dims."""
    rank = len(graph.tensors[op.inputs[0]].shape)
    if op.kind == "permute":
        perm = attributes.ints(op.attrs.get("permutation"))
        return perm if sorted(perm) == list(range(rank)) else None
    dims = attributes.ints(op.attrs.get("dim0")) + attributes.ints(op.attrs.get("dim1"))
    if len(dims) != 2 or rank == 0:
        return None
    a, b = (d % rank for d in dims)
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


def _array(values) -> str:
    return f"array<i64: {', '.join(map(str, values))}>" if values else "array<i64>"


@dataclass(frozen=True)
class FoldTransposes:
    name = "fold-transposes"

    def run(self, graph: Graph) -> Graph:
        made_by = producers(graph)
        folded: list[Op] = []
        for op in graph.ops:
            if op.kind != "matmul" or len(op.inputs) < 2:
                continue
            for index, (side, flag) in enumerate(_SIDES):
                source = made_by.get(op.inputs[index])
                if source is None or source.kind not in _TRANSPOSES or len(source.inputs) != 1:
                    continue
                perm = permutation(graph, source)
                if perm is None or not self._fold(graph, op, index, side, flag, perm):
                    continue
                op.inputs[index] = source.inputs[0]
                op.source = op.source + source.source
                folded.append(source)
        drop_unread(graph, folded, "folded into the matmul reading it")
        return graph

    @staticmethod
    def _fold(graph: Graph, op: Op, index: int, side: str, flag: str, perm: tuple[int, ...]) -> bool:
        """Rewrite `op` to read the permute's input directly; False when it cannot."""
        rank = len(perm)
        contract_key, batch_key = f"contract_dims_{side}", f"batch_dims_{side}"
        if contract_key in op.attrs:
            contract = attributes.ints(op.attrs[contract_key])
            batch = attributes.ints(op.attrs.get(batch_key))
            free = [d for d in range(rank) if d not in contract and d not in batch]
            if [perm[d] for d in free] != sorted(perm[d] for d in free):
                return False  # the free dims would come out in another order
            new_contract = [perm[d] for d in contract]
            op.attrs[contract_key] = _array(new_contract)
            op.attrs[batch_key] = _array([perm[d] for d in batch])
            # the operand as stored has its contracting dim where a transposed operand has it
            last_contracts = new_contract == [rank - 1]
            op.attrs[flag] = "true" if last_contracts == (side == "rhs") else "false"
            return True
        if rank < 2 or perm != (*range(rank - 2), rank - 1, rank - 2):
            return False
        op.attrs[flag] = "false" if op.attrs.get(flag, "false").startswith("true") else "true"
        return True
