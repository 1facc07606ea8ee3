"""layout: insert a `to_layout` op wherever a consumer cannot read its input as it is laid out.

    %1 = gelu(%0 : l1 height_sharded 8x8)           %1' = to_layout(%1) : dram interleaved
    %2 = permute(%1)                          ->    %2  = permute(%1')

Matrix ops read any layout (sharded operands arrive over the NoC). Element-wise, normalization,
reduction and pooling ops stream tiles in place, so a sharded input must be sharded like the op
works: on the op's grid, the way the op's own output is sharded, else interleaved. Data-movement
ops read interleaved tensors only. Compute ops need tiles, so row-major inputs are tilized, in the
tile shape of the op's output (a matmul's B operand in full tiles). An operand override (the layout
pass's `operand_layouts`) names the layout outright.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import opset
from ..ir import Graph, Layout, Op, Tensor
from ..target import Target
from ..tiles import shard_bytes

_STREAMING = (*opset.ELTWISE_CLASSES, opset.NORM, opset.REDUCE, opset.POOL)


@dataclass(frozen=True)
class InsertToLayout:
    name = "insert-to-layout"
    target: Target

    def required(self, graph: Graph, op: Op, tensor: Tensor) -> Layout:
        """The layout `op` needs for input `tensor`."""
        have = tensor.layout
        need = have
        cls = opset.op_class(op.kind).kind_class
        if cls in (opset.CONSTANT, opset.OPAQUE):
            return have
        if have.layout == "row_major" and cls != opset.DATA_MOVEMENT:
            need = replace(need, layout="tile")
        if need.layout == "tile" and cls != opset.DATA_MOVEMENT and op.outputs:
            need = replace(need, tile=self._tile_for(graph, op, tensor))
        if have.sharded and cls == opset.DATA_MOVEMENT:
            need = replace(need, memory="dram", memory_layout="interleaved", grid=(1, 1))
        elif have.sharded and cls in _STREAMING:
            out = graph.tensors[op.outputs[0]].layout if op.outputs else None
            grid = op.attrs["grid"]
            same = out is not None and out.sharded and out.memory_layout == have.memory_layout
            if have.grid != grid or (out is not None and out.sharded and not same):
                if out is not None and out.sharded:
                    need = replace(need, memory_layout=out.memory_layout, grid=grid)
                    if shard_bytes(tensor, need) > self.target.core_memory.capacity_bytes / 2:
                        need = replace(need, memory="dram", memory_layout="interleaved", grid=(1, 1))
                else:
                    need = replace(need, memory="dram", memory_layout="interleaved", grid=(1, 1))
        return replace(need, address=None) if need != have else have

    def _tile_for(self, graph: Graph, op: Op, tensor: Tensor) -> tuple[int, int]:
        """Compute ops read tiles shaped like the tiles they write; a matmul's B operand (and any
        past it) comes in full tiles, since short tiles only shorten M."""
        out_tile = graph.tensors[op.outputs[0]].layout.tile
        if opset.op_class(op.kind).kind_class in opset.MATRIX_CLASSES and op.inputs.index(tensor.name) > 0:
            return self.target.tile
        return out_tile

    def run(self, graph: Graph) -> Graph:
        ops: list[Op] = []
        for op in graph.ops:
            asked = op.meta.get("operand_layouts", {})  # operand overrides (layout pass)
            for i, name in enumerate(list(op.inputs)):
                tensor = graph.tensors[name]
                need = asked.get(i) or self.required(graph, op, tensor)
                if need == tensor.layout:
                    continue
                converted = f"{op.name}.in{i}.to_layout"
                graph.tensors[converted] = Tensor(converted, tensor.shape, tensor.dtype, need)
                # runs on the consumer's cores; at the graph level it is part of the consumer
                ops.append(
                    Op(
                        converted,
                        "to_layout",
                        [name],
                        [converted],
                        {"grid": op.attrs["grid"]},
                        source=op.source[:1],
                        meta={"operand_of": (op.name, i)},
                    )
                )
                op.inputs[i] = converted
            ops.append(op)
        graph.ops = ops
        return graph
