"""The link model: how a collective's bytes go over a system's links.

lower-collectives plans each collective at compile time and keeps the plan on the op
(op.meta[LINKS]); the simulator times the op from it. The bytes a collective moves are counted on
the whole tensor, as the system's cost model (targets/system.py) takes them: the gathered result of
an all_gather, each device's operand otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.dtypes import bytes_per_element
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.sharding.mesh import Mesh
from tilescope.compiler.targets.system import CollectiveCost, System


@dataclass(frozen=True)
class LinkPlan:
    """How one collective runs on the system's links."""

    axes: tuple[str, ...]  # the mesh axes its devices differ along
    group: int  # the devices exchanging data: one per position along the axes
    tensor_bytes: float  # the tensor size the cost model takes (see the module's docstring)
    cost: CollectiveCost  # the algorithm, its steps, the bytes sent and their time


def _bytes(graph: Graph, name: str) -> float:
    tensor = graph.tensors[name]
    dtype = tensor.layout.dtype if tensor.layout is not None else tensor.dtype
    return tensor.numel * bytes_per_element(dtype)


def collective_bytes(graph: Graph, op: Op) -> float:
    """The tensor size the cost model takes for the op (see the module's docstring)."""
    if op.kind == "all_gather" and op.outputs:
        return _bytes(graph, op.outputs[0])
    return _bytes(graph, op.inputs[0]) if op.inputs else 0.0


def plan_links(system: System, mesh: Mesh, graph: Graph, op: Op) -> LinkPlan:
    """The collective `op` of `graph` on `system`'s links, over the axes of `mesh` it names."""
    axes = tuple(a for a in op.attrs.get("axes", ()) if mesh.has(a))
    group = mesh.ways(axes)
    stride = min((mesh.stride(a) for a in axes), default=1)
    nbytes = collective_bytes(graph, op)
    return LinkPlan(axes, group, nbytes, system.collective(op.kind, group, nbytes, stride))
