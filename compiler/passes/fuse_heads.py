"""graph: attention's head split and head merge, each a reshape and a permute, as one data movement
that moves whole tiles (ttnn's nlp_create_qkv_heads and nlp_concat_heads).

    %h = reshape(%x) : (B*S, H*D) -> (B, S, H, D)      %t = split_heads(%x) {num_heads = H}
    %t = permute(%h) {0, 2, 1, 3} -> (B, H, S, D)   ->

    %p = permute(%c) {0, 2, 1, 3} -> (B, S, H, D)      %m = concatenate_heads(%c) {num_heads = H}
    %m = reshape(%p) : -> (B, S, H*D) or (B*S, H*D) ->

A reshape that changes the last dim of a tiled tensor re-tiles every row (ttnn's reshape runs
row by row on the data-movement cores: 19 us for a 48 KB tensor, tt-perf-report of CLIP on
Wormhole); the fused op copies each tile whole, as D is a whole number of tile columns.

tt-mlir merges heads by default (TTIRFusing's ConcatenateHeadsUpdatePattern, under
`enable-fusing-pass`, on by default); it splits them only with op constraints on
(`enable-op-constraints`: TTNN's SplitQueryKeyValueAndSplitHeads fusing). So do we: a merge
unless its reshape says `fuse#false`, a split only where its reshape says `fuse#true`. Each
`fuse#true` that could not be done, and why, is in graph.meta[FUSIONS] for the layout pass to
report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.meta import FUSIONS
from tilescope.compiler.ir.rewrite import producers, readers
from tilescope.compiler.targets.chip import Target

SWAP_HEADS = (0, 2, 1, 3)
SPLIT, MERGE = "split_heads", "concatenate_heads"
DEFAULT_ON = {SPLIT: False, MERGE: True}  # tt-mlir's defaults, above
NOT_A_SPLIT = (
    "fuse#true applies to a fusion that is off by default: a head split (a reshape before a permute (0, 2, 1, 3))"
)


@dataclass(frozen=True)
class FuseHeads:
    name = "fuse-heads"
    target: Target
    requests: tuple[tuple[str, bool], ...] = field(default=())  # (reshape, fuse or not), op_override.fusion_requests

    def run(self, graph: Graph) -> Graph:
        asked = dict(self.requests)
        made_by, read_by = producers(graph), readers(graph)
        refused: dict[str, str] = {}  # op asked to fuse -> why it could not be
        gone: set[str] = set()
        for op in graph.ops:
            if op.kind != "reshape" or op.name in gone:
                continue
            found = heads_fusion(graph, op, made_by, read_by, self.target.tile[1])
            wanted = asked.get(op.name)
            if isinstance(found, str):
                if wanted:
                    refused[op.name] = found
                continue
            kind, permute, heads = found
            if asked.get(permute.name) is False:
                wanted = False
            if DEFAULT_ON[kind] if wanted is None else wanted:
                _fuse(graph, op, permute, kind, heads)
                gone.add(permute.name)
        graph.ops = [op for op in graph.ops if op.name not in gone]
        fused = {op.name for op in graph.ops if op.kind in (SPLIT, MERGE)}
        for name, on in asked.items():
            if on and name not in fused and name not in refused:
                refused[name] = NOT_A_SPLIT
        graph.meta[FUSIONS] = refused
        return graph


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
        if src.name in graph.outputs or tuple(out.shape) not in ((batch, seq, heads * dim), (batch * seq, heads * dim)):
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


def _fuse(graph: Graph, reshape: Op, permute: Op, kind: str, heads: int) -> None:
    """`reshape` becomes the fused op, keeping its name (an override naming the permute finds it
    through the provenance); the tensor between the two is gone."""
    if kind == SPLIT:
        graph.tensors.pop(reshape.outputs[0], None)
        reshape.outputs = list(permute.outputs)
    else:
        graph.tensors.pop(reshape.inputs[0], None)
        reshape.inputs = list(permute.inputs)
    reshape.kind = kind
    reshape.attrs = {"num_heads": heads, "fused": (permute.name,)}
    reshape.source = reshape.source + permute.source if kind == SPLIT else permute.source + reshape.source
