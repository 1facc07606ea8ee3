"""layout: insert a `to_layout` op wherever a consumer cannot read its input as it is laid out.

    %1 = gelu(%0 : l1 height_sharded 8x8)           %1' = to_layout(%1) : dram interleaved
    %2 = permute(%1)                          ->    %2  = permute(%1')

What each op can read is compiler.operand_layout's rule. An operand override (the layout pass's
`operand_layouts`) names the layout outright.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilescope.compiler.ir.meta import CODE_LINE, OPERAND_LAYOUTS, OPERAND_OF, REQUIRED_LAYOUTS, OperandOf
from tilescope.compiler.ir.meta_key import Meta
from tilescope.compiler.ir.graph import Graph, Op, Tensor
from tilescope.compiler.analysis.operand_layout import required_layout, required_layout_key
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class InsertToLayout:
    """`known`: the layouts ops were found to need, by what decides them (an earlier compile's
    `graph.meta[REQUIRED_LAYOUTS]`, shared and added to): every layer of a model, and every op
    an override leaves alone in a re-run, asks the same question again."""

    name = "insert-to-layout"
    target: Target
    known: dict = field(default_factory=dict, compare=False)

    def run(self, graph: Graph) -> Graph:
        ops: list[Op] = []
        for op in graph.ops:
            asked = op.meta.get(OPERAND_LAYOUTS, {})  # operand overrides (layout pass)
            for i, name in enumerate(list(op.inputs)):
                tensor = graph.tensors[name]
                need = asked.get(i) or self._required(graph, op, tensor)
                if need == tensor.layout:
                    continue
                converted = f"{op.name}.in{i}.to_layout"
                graph.tensors[converted] = Tensor(converted, tensor.shape, tensor.dtype, need)
                attrs = {"grid": op.attrs["grid"]}
                if op.attrs.get("const_eval"):  # converting for load-time work is load-time work
                    attrs["const_eval"] = True
                # runs on the consumer's cores; at the graph level it is part of the consumer
                ops.append(
                    Op(
                        converted,
                        "to_layout",
                        [name],
                        [converted],
                        attrs,
                        source=op.source[:1],
                        meta=Meta({OPERAND_OF: OperandOf(op.name, i)}),
                    )
                )
                if CODE_LINE in op.meta:  # made for the consumer's line of source
                    ops[-1].meta[CODE_LINE] = op.meta[CODE_LINE]
                op.inputs[i] = converted
            ops.append(op)
        graph.ops = ops
        graph.meta[REQUIRED_LAYOUTS] = self.known
        return graph

    def _required(self, graph: Graph, op: Op, tensor: Tensor):
        key = required_layout_key(graph, op, tensor)
        need = self.known.get(key)
        if need is None:
            need = self.known[key] = required_layout(self.target, graph, op, tensor)
        return need
