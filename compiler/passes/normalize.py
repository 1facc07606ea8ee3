"""input -> graph: one op vocabulary whatever the source dialect.

Destination-passing `empty` operands are dropped (they carry no data). An op outside the vocabulary
is kept as an `opaque` op with a generic cost and listed in a warning: never dropped. Mesh ops
become collectives and sharding ops (`ttir.mesh_shard` by its direction, GSPMD's custom calls by
their target); the mesh, per-device tensors and shardings are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilescope.compiler.ir.meta import CODE_LINE, LOCAL
from tilescope.compiler.ir.meta_key import Meta
from tilescope.compiler.ir import opset
from tilescope.compiler.errors import clip
from tilescope.compiler.ir.generic_ops import GENERICS, generic_kind
from tilescope.compiler.ir.graph import Graph, Op


FUSED = "fused_kinds"  # element-wise functions an op applies to its result in the same kernel
MAX_FUSED = 16


def fused_kinds(text: str) -> tuple[str, ...]:
    """The kinds a source names as fused into an op (`fused_kinds = ["exp", "reciprocal"]`),
    those of the vocabulary, at most MAX_FUSED."""
    names = re.findall(r'"([a-z_0-9]{1,40})"', text[:4096])[:MAX_FUSED]
    return tuple(name for name in names if name in opset.KINDS)


@dataclass(frozen=True)
class Normalize:
    name = "normalize"

    def run(self, graph: Graph) -> Graph:
        out = graph
        empties = {t for op in out.ops if op.kind in opset.DPS_EMPTY for t in op.outputs}
        unknown: dict[str, int] = {}
        ops: list[Op] = []
        for op in out.ops:  # the level's own copies: changed in place
            if op.kind in opset.DPS_EMPTY:
                continue
            if op.kind in GENERICS:
                kind, fused = generic_kind(op, out.tensors)
                op.attrs[FUSED] = fused[:MAX_FUSED]
            else:
                kind = opset.kind_of_op(op)
            if kind is None:
                unknown[op.kind] = unknown.get(op.kind, 0) + 1
                op.attrs["source_op"] = op.kind
                kind = opset.OPAQUE
            # the import's keys stay at the input level, but for the line of source that made it
            made_by = op.meta.get(CODE_LINE)
            op.kind, op.source, op.meta = kind, (op.name,), Meta()
            if made_by is not None:
                op.meta[CODE_LINE] = made_by
            if isinstance(op.attrs.get(FUSED), str):
                op.attrs[FUSED] = fused_kinds(op.attrs[FUSED])
            if empties:
                op.inputs = [t for t in op.inputs if t not in empties]
            ops.append(op)
            if kind == "constant":
                for t in op.outputs:
                    out.tensors[t].is_constant = True
        for t in empties:
            out.tensors.pop(t, None)
        out.ops = ops
        if LOCAL in out.meta:  # per-device tensors, less the destination operands dropped
            out.meta[LOCAL] = {t for t in out.meta[LOCAL] if t in out.tensors}
        if unknown:  # a bounded line however many kinds (or however long) the model has
            listed = ", ".join(f"{clip(k)} x{n}" for k, n in sorted(unknown.items())[:20])
            more = f" and {len(unknown) - 20} more kinds" if len(unknown) > 20 else ""
            out.warnings.append(f"ops kept as opaque (generic DRAM cost): {listed}{more}")
        return out
