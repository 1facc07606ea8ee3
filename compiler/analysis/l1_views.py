"""Reshapes that are views in a core's memory: a reshape keeping its input's bytes (only size-1
dims, or whole tile rows regrouped) takes its input's buffer, as ttnn returns a view, and keeps
that buffer live as long as the view is read. The memory planner aliases them; the L1 views
count them so."""

from __future__ import annotations


from tilescope.compiler.analysis.l1_allocator import last_uses
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.tiles import at_address, same_bytes_as


def views(graph: Graph) -> dict[str, str]:
    """Each view reshape's output -> the tensor holding its bytes (the first of a chain of views),
    wherever they were placed."""
    found: dict[str, str] = {}
    for op in graph.ops:
        if op.kind != "reshape" or len(op.inputs) != 1 or len(op.outputs) != 1:
            continue
        src, dst = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if src.layout is None or dst.layout is None:
            continue
        if same_bytes_as(src.shape, at_address(src.layout, None), dst.shape, at_address(dst.layout, None)):
            found[dst.name] = found.get(src.name, src.name)
    return found


def aliases(graph: Graph) -> dict[str, str]:
    """The views a planned graph's planner gave their source's address: view -> source."""
    return {
        view: source
        for view, source in views(graph).items()
        if graph.tensors[view].layout.address is not None
        and graph.tensors[view].layout.address == graph.tensors[source].layout.address
    }


def live_until(graph: Graph, aliased: dict[str, str]) -> dict[str, int]:
    """Index of the last op each tensor is live for: its own last reader, or an alias's."""
    last = last_uses(graph)
    for view, source in aliased.items():
        last[source] = max(last[source], last[view])
    return last
