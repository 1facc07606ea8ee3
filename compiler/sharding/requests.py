"""Sharding overrides as the partition pass takes them: each checked against the graph and the
mesh before any op is split, then applied op by op and given its outcome.

    op=operand#1:sharding#{},{model}   how the op reads input 1 (a weight: how it is loaded)
    op=sharding#replicated             what the op gives: it computes by its rule, then
                                       collectives reshard its result(s) to this

A request names the op part it shards; one that cannot apply is rejected with one line naming
the op part, the token and why (an axis the mesh lacks, an axis twice, a dimension that does not
divide, a rank that differs, an index out of range, an op whose rule cannot read the operand so, an
op the partition keeps as the model wrote it, a system of one device).
"""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.pipeline.op_override import ADJUSTED, APPLIED, REJECTED, OpOverride, OverrideOutcome, short_name
from tilescope.compiler.analysis.heads import gone_result
from tilescope.compiler.sharding.mesh import Mesh, Sharding


class ShardingRequests:
    """The requests of one partition: what each op reads and gives as overridden, and outcomes."""

    def __init__(self, graph: Graph, mesh: Mesh, requests: Sequence[OpOverride], system: str) -> None:
        self.requests = tuple(requests)
        self.outcomes: list[OverrideOutcome | None] = [None] * len(self.requests)
        self.notes: dict[int, str] = {}
        # op name -> {operand index: (request index, sharding)}; and {result index or None: ...}
        self.reading: dict[str, dict[int, tuple[int, Sharding]]] = {}
        self.giving: dict[str, dict[int | None, tuple[int, Sharding]]] = {}
        hosts: dict[str, Op] = {}  # a fused-away op's name -> the op it was fused into
        for op in graph.ops:
            for name in op.source:
                hosts.setdefault(name, op)
        for i, ov in enumerate(self.requests):
            if mesh.devices <= 1:
                self.reject(i, f"no mesh: {system} is one device")
                continue
            op = graph.op(ov.op) if graph.has_op(ov.op) else hosts.get(ov.op)
            if op is None:
                self.reject(i, "no such op in the graph")
                continue
            gone = gone_result(op, ov.op) if ov.operand is None else ""
            if gone:
                self.reject(i, gone)
                continue
            if op.name != ov.op:
                self.notes[i] = f"fused into {short_name(op.name)}; applied there"
            self._check(i, graph, mesh, op)

    def _check(self, i: int, graph: Graph, mesh: Mesh, op: Op) -> None:
        ov = self.requests[i]
        if ov.operand is not None:
            if ov.operand >= len(op.inputs):
                self.reject(i, f"the op has {len(op.inputs)} operand(s); operand#{ov.operand} is not one")
                return
            tensors = [op.inputs[ov.operand]]
        elif ov.result is not None:
            if ov.result >= len(op.outputs):
                self.reject(i, f"the op has {len(op.outputs)} result(s); result#{ov.result} is not one")
                return
            tensors = [op.outputs[ov.result]]
        else:
            tensors = list(op.outputs)
            if not tensors:
                self.reject(i, "the op has no result to shard")
                return
        for name in tensors:
            shape = graph.tensors[name].shape
            problem = ov.sharding.ranked(len(shape)).problem(shape, mesh)
            if problem:
                self.reject(i, problem)
                return
        if ov.operand is not None:
            rank = len(graph.tensors[tensors[0]].shape)
            self.reading.setdefault(op.name, {})[ov.operand] = (i, ov.sharding.ranked(rank))
        else:
            self.giving.setdefault(op.name, {})[ov.result] = (i, ov.sharding)

    def reads(self, op: Op) -> dict[int, Sharding]:
        """How `op` must read its inputs, by operand index, as the requests still standing say."""
        return {index: sharding for index, (_, sharding) in self.reading.get(op.name, {}).items()}

    def gives(self, op: Op, index: int, rank: int) -> Sharding | None:
        """The sharding `op`'s result `index` must end in, or None."""
        found = self.giving.get(op.name, {})
        request = found.get(index) or found.get(None)
        if request is None:
            return None
        self.apply(request[0])
        return request[1].ranked(rank)

    def unread(self, op: Op, index: int, need: Sharding) -> None:
        """The op's rule cannot read input `index` as asked: it needs `need` given its others."""
        i, asked = self.reading[op.name].pop(index)
        self.reject(i, f"{op.kind} cannot read operand {index} as {asked.spec()}: its rule needs {need.spec()}")

    def read(self, op: Op) -> None:
        """`op` reads its inputs as the requests standing say."""
        for i, _ in self.reading.get(op.name, {}).values():
            self.apply(i)

    def refuse(self, op: Op, why: str) -> None:
        """Every request on an op the partition keeps as written."""
        for found in (self.reading.pop(op.name, {}), self.giving.pop(op.name, {})):
            for i, _ in found.values():
                self.reject(i, why)

    def apply(self, i: int) -> None:
        note = self.notes.get(i, "")
        self._done(i, ADJUSTED if note else APPLIED, note)

    def reject(self, i: int, why: str) -> None:
        ov = self.requests[i]
        self._done(i, REJECTED, f"{ov.part + ': ' if ov.part else ''}sharding#{ov.sharding.spec()}: {why}")

    def _done(self, i: int, status: str, reason: str) -> None:
        ov = self.requests[i]
        self.outcomes[i] = OverrideOutcome(ov.op, ov.spec, status, reason, ov.operand)

    def results(self) -> tuple[OverrideOutcome, ...]:
        """Every request's outcome, in their order (one never reached is applied: its op was
        partitioned without needing it)."""
        for i, outcome in enumerate(self.outcomes):
            if outcome is None:
                self.apply(i)
        return tuple(self.outcomes)  # type: ignore[arg-type]
