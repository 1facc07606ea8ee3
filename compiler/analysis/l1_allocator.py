"""L1 allocation by liveness: the allocator the greedy layout policy and the memory planner share."""

from __future__ import annotations

from tilescope.compiler.ir.graph import Graph

ALIGNMENT = 32  # bytes; L1 buffers start on NoC-word boundaries


def last_uses(graph: Graph) -> dict[str, int]:
    """Index of the last op reading each tensor; graph outputs live to the end."""
    last = {t: i for i, op in enumerate(graph.ops) for t in op.inputs}
    for i, op in enumerate(graph.ops):
        for t in op.outputs:
            last.setdefault(t, i)
    for t in graph.outputs:
        last[t] = len(graph.ops)
    return last


class FirstFit:
    """Address ranges of one memory: allocate the lowest free range that fits."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used: list[tuple[int, int, str]] = []  # (start, end, tensor), sorted by start

    def allocate(self, size: int, tensor: str) -> int | None:
        size = -(-size // ALIGNMENT) * ALIGNMENT
        cursor = 0
        for index, (start, end, _) in enumerate(self.used):
            if start - cursor >= size:
                self.used.insert(index, (cursor, cursor + size, tensor))
                return cursor
            cursor = end
        if self.capacity - cursor >= size:
            self.used.append((cursor, cursor + size, tensor))
            return cursor
        return None

    def free(self, tensor: str) -> None:
        self.used = [u for u in self.used if u[2] != tensor]

    def largest_free(self) -> int:
        cursor, best = 0, 0
        for start, end, _ in self.used:
            best = max(best, start - cursor)
            cursor = end
        return max(best, self.capacity - cursor)
