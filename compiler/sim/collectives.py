"""A collective's time on the system's links, for the simulator.

Each device's part of a collective is also a local copy (its kernel: read its piece, write the
result); the links and the copy overlap, so the slower of the two sets the time. The bytes a
collective moves are counted on the whole tensor, as the link model (compiler/system.py) takes
them: the gathered result of an all_gather, each device's operand otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilescope.compiler.ir.dtypes import bytes_per_element
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sharding.mesh import Mesh
from tilescope.compiler.targets.system import CollectiveCost
from tilescope.compiler.targets.chip import Target

if TYPE_CHECKING:
    from tilescope.compiler.sim.simulator import OpTiming

NS = 1e9

LINK = "link"  # the path a collective's bytes take, as OpTiming.bytes names paths


def is_collective(op: Op) -> bool:
    return op.kind in COLLECTIVES


def _bytes(graph: Graph, name: str) -> float:
    tensor = graph.tensors[name]
    dtype = tensor.layout.dtype if tensor.layout is not None else tensor.dtype
    return tensor.numel * bytes_per_element(dtype)


def collective_bytes(graph: Graph, op: Op) -> float:
    """The tensor size the link model takes for the op (see the module's docstring)."""
    if op.kind == "all_gather" and op.outputs:
        return _bytes(graph, op.outputs[0])
    return _bytes(graph, op.inputs[0]) if op.inputs else 0.0


def on_the_links(target: Target, graph: Graph, op: Op) -> tuple[tuple[str, ...], int, float, CollectiveCost]:
    """(mesh axes, devices in its group, tensor bytes, cost): how the collective runs on the
    system's links, by the link model."""
    mesh: Mesh = graph.meta.get("mesh") or Mesh(())
    axes = tuple(a for a in op.attrs.get("axes", ()) if mesh.has(a))
    group = mesh.ways(axes)  # the devices exchanging data: one per position along the axes
    stride = min((mesh.stride(a) for a in axes), default=1)
    nbytes = collective_bytes(graph, op)
    return axes, group, nbytes, target.system.collective(op.kind, group, nbytes, stride)


def on_links(target: Target, graph: Graph, op: Op, local: OpTiming) -> OpTiming:
    """`local` (the op's copy on each device) with the links' time, bytes and why added, from
    what lower-collectives found at the kernel level."""
    axes, group, nbytes, cost = op.meta["links"]
    link_ns = cost.seconds * NS
    local.bytes = {**local.bytes, LINK: cost.bytes_per_device}
    if link_ns >= local.duration_ns:
        local.duration_ns = link_ns
        local.bound = LINK
    local.roofline_ns = max(
        local.roofline_ns, cost.link_bytes / target.system.bytes_per_s * NS if cost.link_bytes else 0.0
    )
    over = f"{group} devices" + (f" along {', '.join(axes)}" if axes else "")
    local.why = (
        f"{op.kind} of {_size(nbytes)} over {over} ({cost.algorithm}, {cost.steps} steps): "
        f"{_size(cost.bytes_per_device)} sent per device, {_size(cost.link_bytes)} on the busiest link at "
        f"{target.system.bytes_per_s / 1e9:.1f} GB/s; {'link' if local.bound == LINK else 'copy'}-bound"
    )
    return local


def _size(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.2f} MB"
    return f"{nbytes / 1e3:.1f} KB"
