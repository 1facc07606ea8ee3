"""graph: attention written out op by op becomes one scaled-dot-product-attention op.

    %kr = reshape(broadcast(reshape(%k_cache)))    repeat each KV head for its query heads
    %s  = matmul(typecast(%q), typecast(%kr))       contracting the head dim of both (keys untransposed)
    %p  = softmax(add(multiply(%s, %scale), %mask))
    %o  = typecast(matmul(%p, typecast(%vr)))
        ->  %o = scaled_dot_product_attention_decode(%q, %k_cache, %v_cache, %mask)

ttnn runs attention as one kernel (flash attention for prefill, a decode kernel reading the KV
cache in place for one new token), as tt-mlir lowers it: the scores never leave the cores, keys
are read as stored (no transpose), each KV head is read once for all the query heads that share
it, and the f32 casts around the matmuls are the kernel's own accumulation. A match needs every
intermediate to have no other reader; the fused op takes the last op's place and lists every
matched op in its provenance. One query position per user is the decode form.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.meta import CANONICALIZED, CODE_LINE, Dropped
from tilescope.compiler.ir import attributes
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.rewrite import drop_unread, producers, readers

PREFILL, DECODE = "scaled_dot_product_attention", "scaled_dot_product_attention_decode"
_SCORE_STEPS = ("typecast", "multiply", "divide", "add")
_REPEAT_STEPS = ("typecast", "reshape", "broadcast")
SWAP_HEADS = (0, 2, 1, 3)  # [B, S, H, D] <-> [B, H, S, D]
HEAD_COLUMNS = 32  # a head read in place must be whole tiles wide


@dataclass
class _Match:
    ops: list[Op]
    q: str
    k: str
    v: str
    mask: str | None
    out: str
    last: Op  # the matched op that runs last: the fused op takes its place
    dims: dict[str, int]  # batch, heads, kv_heads, q_len, kv_len, head_dim


@dataclass(frozen=True)
class FuseAttention:
    name = "fuse-attention"

    def run(self, graph: Graph) -> Graph:
        made_by, read_by = producers(graph), readers(graph)
        matches = [
            m for op in graph.ops if op.kind == "softmax" for m in [self._match(graph, op, made_by, read_by)] if m
        ]
        if not matches:
            return graph
        taken = {op.name for op in graph.ops}
        replaced: dict[int, Op] = {}
        # this level's own list, added to in place: a copy per match was quadratic in the model
        graph.meta[CANONICALIZED] = list(graph.meta.get(CANONICALIZED, []))
        for m in matches:
            fused = self._fused(graph, m, taken)
            replaced[id(m.last)] = fused
            m.last.outputs = []  # its result is now the fused op's
        graph.ops = [replaced.get(id(op), op) for op in graph.ops]
        # every match's other ops at once: one pass over the graph, not one per attention
        into = {id(op): replaced[id(m.last)].name for m in matches for op in m.ops if op is not m.last}
        drop_unread(
            graph, [op for m in matches for op in m.ops if op is not m.last], lambda op: f"fused into {into[id(op)]}"
        )
        return graph

    def _fused(self, graph: Graph, m: _Match, taken: set[str]) -> Op:
        kind = DECODE if m.dims["q_len"] == 1 else PREFILL
        scope = m.ops[0].name.rsplit(".", 1)[0] if "." in m.ops[0].name else m.ops[0].name
        name, n = f"{scope}.{kind}", 1
        while name in taken:
            name, n = f"{scope}.{kind}#{n}", n + 1
        taken.add(name)
        source = tuple(s for op in m.ops for s in op.source)
        graph.meta[CANONICALIZED].append(Dropped(m.last.name, f"fused into {name}"))
        inputs = [m.q, m.k, m.v] + ([m.mask] if m.mask else [])
        fused = Op(name, kind, inputs, [m.out], dict(m.dims), source)
        lines = [op.meta[CODE_LINE] for op in m.ops if CODE_LINE in op.meta]
        if lines:  # the softmax's line of source (matched first): where the model writes attention
            fused.meta[CODE_LINE] = lines[0]
        return fused

    def _match(self, graph: Graph, softmax: Op, made_by, read_by) -> _Match | None:
        def only_reader(t: str) -> Op | None:
            users = read_by.get(t, [])
            return users[0] if len(users) == 1 and t not in graph.outputs else None

        ops = [softmax]
        mask = None
        scores = softmax.inputs[0] if softmax.inputs else None
        while scores is not None:  # back from the softmax to the QK matmul
            step = made_by.get(scores)
            if step is None or only_reader(scores) is None:
                return None
            if step.kind == "matmul":
                break
            if step.kind not in _SCORE_STEPS or not step.inputs:
                return None
            ops.append(step)
            if step.kind == "typecast":
                scores = step.inputs[0]
                continue
            if len(step.inputs) != 2:
                return None
            on_path = [t for t in step.inputs if self._reaches_matmul(t, made_by)]
            if len(on_path) != 1:
                return None
            other = step.inputs[1] if step.inputs[0] == on_path[0] else step.inputs[0]
            if step.kind == "add" and mask is None:  # the other operand is the additive mask
                mask = other
            elif step.kind not in ("multiply", "divide") or not graph.tensors[other].is_constant:
                return None  # scaled by anything but a constant
            scores = on_path[0]
        if scores is None:
            return None
        qk = made_by[scores]
        if not self._batched(graph, qk, 3):
            return None
        ops.append(qk)
        probs = softmax.outputs[0]
        after = only_reader(probs)
        while after is not None and after.kind == "typecast":
            ops.append(after)
            probs = after.outputs[0]
            after = only_reader(probs)
        pv = after
        if pv is None or pv.kind != "matmul" or pv.inputs[0] != probs or not self._batched(graph, pv, 2):
            return None
        ops.append(pv)
        out, last = pv.outputs[0], pv
        cast = only_reader(out)
        if cast is not None and cast.kind == "typecast":
            ops.append(cast)
            out, last = cast.outputs[0], cast
        q = self._back(qk.inputs[0], ("typecast",), made_by, only_reader, ops)
        k = self._back(qk.inputs[1], _REPEAT_STEPS, made_by, only_reader, ops)
        v = self._back(pv.inputs[1], _REPEAT_STEPS, made_by, only_reader, ops)
        if mask is not None:
            mask = self._back(mask, ("broadcast",), made_by, only_reader, ops)
        shapes = [graph.tensors[t].shape for t in (q, k, v)]
        if any(len(s) != 4 for s in shapes) or shapes[1] != shapes[2] or shapes[0][1] % max(1, shapes[1][1]):
            return None
        q_shape, k_shape = shapes[0], shapes[1]
        dims = {"batch": q_shape[0], "heads": q_shape[1], "kv_heads": k_shape[1]}
        dims |= {"q_len": q_shape[2], "kv_len": k_shape[2], "head_dim": q_shape[3]}
        return self._with_heads_in_place(graph, _Match(ops, q, k, v, mask, out, last, dims), made_by, only_reader)

    def _with_heads_in_place(self, graph: Graph, m: _Match, made_by, only_reader) -> _Match:
        """Heads split from [B, S, H x D] by a reshape and a permute: each head's columns are read
        where they are when a head is whole tiles wide, and the result is written back so."""
        split = [self._head_split(graph, t, made_by, only_reader) for t in (m.q, m.k, m.v)]
        merge = only_reader(m.out)
        if m.dims["head_dim"] % HEAD_COLUMNS or not all(split) or merge is None or not self._swaps_heads(merge):
            return m
        ops = [*m.ops, *(op for chain in split for op in chain), merge]
        q, k, v = (chain[-1].inputs[0] for chain in split)
        out, last = merge.outputs[0], merge
        joined = only_reader(out)
        width = m.dims["heads"] * m.dims["head_dim"]
        if joined is not None and joined.kind == "reshape" and graph.tensors[joined.outputs[0]].shape[-1] == width:
            ops.append(joined)
            out, last = joined.outputs[0], joined
        return _Match(ops, q, k, v, m.mask, out, last, m.dims)

    @staticmethod
    def _swaps_heads(op: Op) -> bool:
        return op.kind == "permute" and attributes.ints(op.attrs.get("permutation")) == SWAP_HEADS

    def _head_split(self, graph: Graph, t: str, made_by, only_reader) -> list[Op] | None:
        """The permute of [B, S, H, D] into [B, H, S, D] that makes `t`, and the reshape of
        [.., H x D] before it if any: the ops the attention reads past."""
        step = made_by.get(t)
        if step is None or not self._swaps_heads(step) or only_reader(t) is None:
            return None
        chain = [step]
        before = made_by.get(step.inputs[0])
        width = graph.tensors[t].shape[1] * graph.tensors[t].shape[3]
        if (
            before is not None
            and before.kind == "reshape"
            and only_reader(step.inputs[0]) is not None
            and graph.tensors[before.inputs[0]].shape[-1] == width
        ):
            chain.append(before)
        return chain

    @staticmethod
    def _reaches_matmul(t: str, made_by, depth: int = 6) -> bool:
        """Whether `t` is a matmul's result, or comes from one through a few score steps."""
        step = made_by.get(t)
        if step is None or depth == 0:
            return False
        if step.kind == "matmul":
            return True
        return step.kind in _SCORE_STEPS and any(
            FuseAttention._reaches_matmul(x, made_by, depth - 1) for x in step.inputs
        )

    @staticmethod
    def _back(t: str, kinds: tuple[str, ...], made_by, only_reader, ops: list[Op]) -> str:
        """Walk from `t` back through ops of `kinds` that only this path reads; the tensor reached."""
        while (step := made_by.get(t)) is not None and step.kind in kinds and len(step.inputs) == 1:
            if only_reader(t) is None:
                break
            ops.append(step)
            t = step.inputs[0]
        return t

    @staticmethod
    def _batched(graph: Graph, op: Op, rhs_contract: int) -> bool:
        """A matmul over [batch, heads, positions, head dim] operands, both as stored: the lhs
        contracting its last dim, the rhs dim `rhs_contract` (3 for Q K^T, 2 for P V)."""
        if len(op.inputs) != 2 or any(len(graph.tensors[t].shape) != 4 for t in op.inputs):
            return False
        lhs, rhs = (attributes.ints(op.attrs.get(f"contract_dims_{side}")) for side in ("lhs", "rhs"))
        return lhs == (3,) and rhs == (rhs_contract,)
