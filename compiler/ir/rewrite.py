"""What the graph-level rewrites share: who reads a tensor, and dropping ops a rewrite left unread.

A dropped op is listed in `graph.meta[CANONICALIZED]` as Dropped(op, reason), as canonicalize lists
its own, so a view can say where an op of the input went.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tilescope.compiler.ir.meta import CANONICALIZED, Dropped
from tilescope.compiler.ir.graph import Graph, Op


def readers(graph: Graph) -> dict[str, list[Op]]:
    """Tensor -> the ops that read it, in program order (an op reading it twice is listed twice)."""
    found: dict[str, list[Op]] = {}
    for op in graph.ops:
        for t in op.inputs:
            found.setdefault(t, []).append(op)
    return found


def producers(graph: Graph) -> dict[str, Op]:
    return {t: op for op in graph.ops for t in op.outputs}


def drop_unread(graph: Graph, candidates: Iterable[Op], reason: str | Callable[[Op], str]) -> list[str]:
    """Drop the candidates no op and no graph output reads any more, and, in turn, the candidates
    only they read, each for `reason` (or reason(op)), in one pass over the graph however many
    rewrites left them. Returns the dropped ops' names."""
    pending = {id(op): op for op in candidates}
    if not pending:  # nothing to drop: no count of every op's reads
        graph.meta[CANONICALIZED] = list(graph.meta.get(CANONICALIZED, []))
        return []
    made_by = {t: op for op in pending.values() for t in op.outputs}
    # reads of what the candidates make: only those can fall to zero
    count: dict[str, int] = {t: 1 for t in graph.outputs if t in made_by}
    for op in graph.ops:
        for t in op.inputs:
            if t in made_by:
                count[t] = count.get(t, 0) + 1
    dropped: dict[int, Op] = {}
    work = list(pending.values())
    while work:
        op = work.pop()
        if id(op) in dropped or not op.outputs or any(count.get(t, 0) for t in op.outputs):
            continue
        dropped[id(op)] = op
        for t in op.outputs:
            graph.tensors.pop(t, None)
        for t in op.inputs:
            if t in made_by:
                count[t] -= 1
                if count[t] == 0:
                    work.append(made_by[t])
    if dropped:
        graph.ops = [op for op in graph.ops if id(op) not in dropped]
    why = reason if callable(reason) else lambda _op: reason
    graph.meta[CANONICALIZED] = [
        *graph.meta.get(CANONICALIZED, []),
        *(Dropped(op.name, why(op)) for op in dropped.values()),
    ]
    return [op.name for op in dropped.values()]
