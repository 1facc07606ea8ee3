"""Attention's head split and head merge as a model spells them: a reshape of (B*S, H*D) into
(B, S, H, D) before a permute (0, 2, 1, 3), or after one; and whether each moves whole tiles (the
head dim a whole number of tile columns), as ttnn's nlp_create_qkv_heads and nlp_concat_heads do.
The fuse-heads pass fuses them; a search asks which it may fuse."""

from __future__ import annotations

import math

from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Graph, Op

SWAP_HEADS = (0, 2, 1, 3)
SPLIT, MERGE = "split_heads", "concatenate_heads"


def heads_fusion(graph: Graph, reshape: Op, made_by, read_by, tile_cols: int) -> tuple[str, Op, int] | str:
    """(kind, the permute, heads) when `reshape` splits heads before a head-swapping permute or
    merges them after one; else why not, one line."""
    if len(reshape.inputs) != 1 or len(reshape.outputs) != 1:
        return "not a one-operand reshape"
    src, out = graph.tensors[reshape.inputs[0]], graph.tensors[reshape.outputs[0]]
    after = read_by.get(out.name, [])
    if len(out.shape) == 4 and len(after) == 1 and _swaps_heads(after[0]) and out.name not in graph.outputs:
        batch, seq, heads, dim = out.shape
        if not src.shape or src.shape[-1] != heads * dim or math.prod(src.shape[:-1]) != batch * seq:
            return "the reshape does not split the last dim into heads"
        return (SPLIT, after[0], heads) if dim % tile_cols == 0 else _untiled(dim, tile_cols)
    before = made_by.get(src.name)
    if before is not None and _swaps_heads(before) and len(read_by.get(src.name, [])) == 1:
        batch, heads, seq, dim = graph.tensors[before.inputs[0]].shape
        if src.name in graph.outputs:
            return "the permute's result is an output of the model: it must be made"
        if tuple(out.shape) not in ((batch, seq, heads * dim), (batch * seq, heads * dim)):
            return "the reshape does not merge the heads into the last dim"
        return (MERGE, before, heads) if dim % tile_cols == 0 else _untiled(dim, tile_cols)
    return "no head split or merge here: a reshape next to a permute (0, 2, 1, 3) that only it reads"


def _untiled(dim: int, tile_cols: int) -> str:
    return f"head dim {dim} is not a whole number of {tile_cols}-column tiles"


def _swaps_heads(op: Op) -> bool:
    return (
        op.kind == "permute"
        and len(op.inputs) == 1
        and len(op.outputs) == 1
        and attributes.ints(op.attrs.get("permutation")) == SWAP_HEADS
    )


def gone_result(host: Op, name: str) -> str:
    """Why an override of the result of op `name`, fused into `host`, cannot apply there, or '':
    a head merge's permute made the (B, S, H, D) tensor the fused op no longer has."""
    if host.kind != MERGE or name == host.name or name not in host.attrs.get("fused", ()):
        return ""
    return (
        f"fused into {host.name}, a head merge, which does not make its result; "
        f"{host.name}=fuse#false keeps the two apart"
    )
