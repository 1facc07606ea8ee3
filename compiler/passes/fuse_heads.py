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

from dataclasses import dataclass

from tilescope.compiler.analysis.heads import MERGE, SPLIT, heads_fusion
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.meta import FUSIONS
from tilescope.compiler.ir.rewrite import producers, readers
from tilescope.compiler.targets.chip import Target

DEFAULT_ON = {SPLIT: False, MERGE: True}  # tt-mlir's defaults, above
NOT_A_SPLIT = (
    "fuse#true applies to a fusion that is off by default: a head split (a reshape before a permute (0, 2, 1, 3))"
)


@dataclass(frozen=True)
class FuseHeads:
    name = "fuse-heads"
    target: Target
    requests: tuple[tuple[str, bool], ...] = ()  # (reshape, fuse or not), op_override.fusion_requests

    def run(self, graph: Graph) -> Graph:
        asked = dict(self.requests)
        refused: dict[str, str] = {}  # op asked to fuse -> why it could not be
        done: set[str] = set()  # the ops of each pair fused or left as asked
        if self.target.fusion.get("heads"):
            self._fuse_pairs(graph, asked, refused, done)
            why_not = NOT_A_SPLIT
        else:  # no such kernels on the target
            why_not = f"{self.target.name} has no fused head split or merge"
        left = [name for name, on in asked.items() if on and name not in done and name not in refused]
        named = _names(graph) if left else set()
        # an op no fusion applies to; one not in the graph is the layout pass's to name
        refused.update((name, why_not) for name in left if name in named)
        graph.meta[FUSIONS] = refused
        return graph

    def _fuse_pairs(self, graph: Graph, asked: dict[str, bool], refused: dict[str, str], done: set[str]) -> None:
        """Fuse each head split or merge asked for, or on by default and not refused; note in
        `refused` why a reshape asked of cannot be, and in `done` the ops of each pair found."""
        made_by, read_by = producers(graph), readers(graph)
        gone: set[str] = set()
        for op in graph.ops:
            if op.kind != "reshape" or op.name in gone:
                continue
            found = heads_fusion(graph, op, made_by, read_by, self.target.tile[1])
            if isinstance(found, str):
                if asked.get(op.name):
                    refused[op.name] = found
                continue
            kind, permute, heads = found
            wanted = [asked[n] for n in (op.name, permute.name) if n in asked]  # either op names the pair
            done.update((op.name, permute.name))
            if False in wanted or not (True in wanted or DEFAULT_ON[kind]):
                continue
            _fuse(graph, op, permute, kind, heads)
            gone.add(permute.name)
            if kind == SPLIT:  # the fused op now makes what the permute made
                made_by.update(dict.fromkeys(op.outputs, op))
            else:  # and reads what the permute read
                read_by[op.inputs[0]] = [op if r is permute else r for r in read_by.get(op.inputs[0], [])]
        graph.ops = [op for op in graph.ops if op.name not in gone]


def _names(graph: Graph) -> set[str]:
    """The names of `graph`'s ops and of the ops they were made of."""
    return {op.name for op in graph.ops}.union(*(op.source for op in graph.ops))


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
