"""graph: element-wise ops broadcast their operands themselves, so explicit broadcasts into them go.

    %b = broadcast(%bias) : 1x1x768 -> 8x384x768
    %y = add(%x, %b)                                ->    %y = add(%x, %bias)

Binary and ternary element-wise ops on the targets broadcast an operand of size 1 along a
dimension as they read it (tt-mlir's implicit broadcast folding does the same), which saves
writing and reading the broadcast tensor. A broadcast is folded when every reader is such an op
and the op's result keeps its shape without it: another operand has the full shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.rewrite import drop_unread, readers

_BROADCASTING = (opset.ELTWISE_BINARY, opset.ELTWISE_TERNARY)


@dataclass(frozen=True)
class FoldBroadcasts:
    name = "fold-broadcasts"

    def run(self, graph: Graph) -> Graph:
        read_by = readers(graph)
        folded = []
        for op in graph.ops:
            if op.kind != "broadcast" or len(op.inputs) != 1 or len(op.outputs) != 1:
                continue
            src, out = graph.tensors[op.inputs[0]], op.outputs[0]
            users = read_by.get(out, [])
            if not users or out in graph.outputs or len(src.shape) != len(graph.tensors[out].shape):
                continue
            if all(self._broadcasts_itself(graph, user, out) for user in users):
                for user in users:
                    user.inputs = [op.inputs[0] if t == out else t for t in user.inputs]
                    user.source = user.source + op.source
                read_by.setdefault(op.inputs[0], []).extend(users)
                folded.append(op)
        drop_unread(graph, folded, "broadcast folded into the element-wise ops reading it")
        return graph

    @staticmethod
    def _broadcasts_itself(graph: Graph, user, operand: str) -> bool:
        if opset.op_class(user.kind).kind_class not in _BROADCASTING or len(user.outputs) != 1:
            return False
        shape = graph.tensors[user.outputs[0]].shape
        return any(t != operand and graph.tensors[t].shape == shape for t in user.inputs)
