"""A collective's time on the system's links, for the simulator.

Each device's part of a collective is also a local copy (its kernel: read its piece, write the
result); the links and the copy overlap, so the slower of the two sets the time. How the bytes go
over the links, and what that costs, is the link model's (compiler/targets/links.py), which
lower-collectives kept on the op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.links import LinkPlan

if TYPE_CHECKING:
    from tilescope.compiler.sim.simulator import OpTiming

NS = 1e9

LINK = "link"  # the path a collective's bytes take, as OpTiming.bytes names paths


def is_collective(op: Op) -> bool:
    return op.kind in COLLECTIVES


def on_links(target: Target, graph: Graph, op: Op, local: OpTiming) -> OpTiming:
    """`local` (the op's copy on each device) with the links' time, bytes and why added, from
    what lower-collectives found at the kernel level."""
    plan: LinkPlan = op.meta["links"]
    cost = plan.cost
    link_ns = cost.seconds * NS
    local.bytes = {**local.bytes, LINK: cost.bytes_per_device}
    if link_ns >= local.duration_ns:
        local.duration_ns = link_ns
        local.bound = LINK
    local.roofline_ns = max(
        local.roofline_ns, cost.link_bytes / target.system.bytes_per_s * NS if cost.link_bytes else 0.0
    )
    over = f"{plan.group} devices" + (f" along {', '.join(plan.axes)}" if plan.axes else "")
    local.why = (
        f"{op.kind} of {_size(plan.tensor_bytes)} over {over} ({cost.algorithm}, {cost.steps} steps): "
        f"{_size(cost.bytes_per_device)} sent per device, {_size(cost.link_bytes)} on the busiest link at "
        f"{target.system.bytes_per_s / 1e9:.1f} GB/s; {'link' if local.bound == LINK else 'copy'}-bound"
    )
    return local


def _size(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.2f} MB"
    return f"{nbytes / 1e3:.1f} KB"
