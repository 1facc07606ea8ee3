"""The layout an op reads each input in: what the insert-to-layout pass converts to, and what the
layout pass checks an operand override against.

Matrix ops read any layout (sharded operands arrive over the NoC). Element-wise, normalization,
reduction and pooling ops stream tiles in place, so a sharded input must be sharded like the op
works: on the op's grid, the way the op's own output is sharded, else interleaved. Data-movement
ops read interleaved tensors only, but for those whose work is to read shards where they lie (a
layout conversion, ttnn's halo and upsample, which take height- or block-sharded inputs, and the
cache writes, which write each core's rows). Compute
ops need tiles, so row-major inputs are tilized, in the tile shape of the op's output (a matmul's
B operand in full tiles); sampling ops, like data movement, read row-major rows as they are.
"""

from __future__ import annotations

from dataclasses import replace

from tilescope.compiler.ir import opset
from tilescope.compiler.ir.graph import Graph, Layout, Op, Tensor
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.ir.tiles import same_bytes, shard_bytes

_STREAMING = (*opset.ELTWISE_CLASSES, opset.NORM, opset.REDUCE, opset.POOL)
_ROW_READERS = (opset.DATA_MOVEMENT, opset.SAMPLE)  # classes that read row-major tensors as they are
# data movement that reads a sharded input where it lies: converting or extending shards is its
# work, or writing each core's rows into a larger tensor (ttnn's slice_write, update_cache)
SHARD_READERS = frozenset({"to_layout", "halo", "upsample", "update_cache", "fill_cache"})


def required_layout(target: Target, graph: Graph, op: Op, tensor: Tensor) -> Layout:
    """The layout `op` needs for input `tensor`."""
    have = tensor.layout
    need = have
    cls = opset.op_class(op.kind).kind_class
    if cls in (opset.CONSTANT, opset.OPAQUE) or op.kind == "mmt4d":
        return have  # an mmt4d reads its operands as packed, tile by inner tile
    if op.kind == "reshape" and op.outputs and same_bytes(tensor, graph.tensors[op.outputs[0]]):
        return have  # a view: read where it is
    if have.layout == "row_major" and cls not in _ROW_READERS:
        need = replace(need, layout="tile")
    if need.layout == "tile" and cls not in _ROW_READERS and op.outputs:
        need = replace(need, tile=_tile_for(target, graph, op, tensor))
    if have.sharded and cls == opset.DATA_MOVEMENT and op.kind not in SHARD_READERS:
        need = replace(need, memory="dram", memory_layout="interleaved", grid=(1, 1))
    elif have.sharded and cls in _STREAMING:
        out = graph.tensors[op.outputs[0]].layout if op.outputs else None
        grid = op.attrs["grid"]
        same = out is not None and out.sharded and out.memory_layout == have.memory_layout
        if have.grid != grid or (out is not None and out.sharded and not same):
            if out is not None and out.sharded:
                need = replace(need, memory_layout=out.memory_layout, grid=grid)
                if shard_bytes(tensor, need) > target.core_memory.capacity_bytes / 2:
                    need = replace(need, memory="dram", memory_layout="interleaved", grid=(1, 1))
            else:
                need = replace(need, memory="dram", memory_layout="interleaved", grid=(1, 1))
    return replace(need, address=None) if need != have else have


def required_layout_key(graph: Graph, op: Op, tensor: Tensor) -> tuple:
    """Everything `required_layout` reads, besides the target: the op's kind and grid, whether the
    tensor is past its first operand, the tensor's and the op's first result's shape and layout."""
    out = graph.tensors[op.outputs[0]] if op.outputs else None
    return (
        op.kind,
        op.attrs.get("grid"),
        op.inputs.index(tensor.name) > 0,
        tensor.shape,
        tensor.dtype,
        tensor.layout,
        out.shape if out else None,
        out.dtype if out else None,
        out.layout if out else None,
    )


def _tile_for(target: Target, graph: Graph, op: Op, tensor: Tensor) -> tuple[int, int]:
    """Compute ops read tiles shaped like the tiles they write; a matmul's B operand (and any
    past it) comes in full tiles, since short tiles only shorten M."""
    out_tile = graph.tensors[op.outputs[0]].layout.tile
    if opset.op_class(op.kind).kind_class in opset.MATRIX_CLASSES and op.inputs.index(tensor.name) > 0:
        return target.tile
    return out_tile
