"""A collective's cost on a system of several devices.

Each device's part of a collective is also a local copy (its kernel: read its piece, write the
result); the links and the copy overlap, so the slower of the two sets the time. How the bytes go
over the links, and what that costs, is the link model's (compiler/targets/links.py), which
lower-collectives kept on the op.
"""

from __future__ import annotations

from tilescope.compiler.ir.meta import LINKS
from tilescope.compiler.ir.graph import Op
from tilescope.compiler.ir.opset import COLLECTIVES
from tilescope.compiler.sim.records import LINK, NS, OpTiming
from tilescope.compiler.targets.links import LinkPlan
from tilescope.compiler.targets.system import System


def is_collective(op: Op) -> bool:
    return op.kind in COLLECTIVES


def on_links(system: System, op: Op, local: OpTiming) -> OpTiming:
    """`local` (the op's copy on each device) with the links' time, bytes and why added."""
    plan: LinkPlan = op.meta[LINKS]
    cost = plan.cost
    link_ns = cost.seconds * NS
    links_slower = link_ns >= local.duration_ns
    bound = LINK if links_slower else local.bound
    link_roofline = cost.link_bytes / system.bytes_per_s * NS if cost.link_bytes else 0.0
    over = f"{plan.group} devices" + (f" along {', '.join(plan.axes)}" if plan.axes else "")
    why = (
        f"{op.kind} of {_size(plan.tensor_bytes)} over {over} ({cost.algorithm}, {cost.steps} steps): "
        f"{_size(cost.bytes_per_device)} sent per device, {_size(cost.link_bytes)} on the busiest link at "
        f"{system.bytes_per_s / 1e9:.1f} GB/s; {'link' if bound == LINK else 'copy'}-bound"
    )
    return local.replace(
        bytes={**local.bytes, LINK: cost.bytes_per_device},
        duration_ns=link_ns if links_slower else local.duration_ns,
        bound=bound,
        roofline_ns=max(local.roofline_ns, link_roofline),
        why=why,
    )


def transfer_on_link(system: System, source: int, target: int, nbytes: float, local: OpTiming) -> OpTiming:
    """A multi-device program's transfer of a tensor of `nbytes` from device `source` to `target`:
    the link's time and bytes, in place of `local` (the copy's cost on a device's cores)."""
    cost = system.transfer(source, target, nbytes)
    why = (
        f"transfer of {_size(nbytes)} from device {source} to device {target} ({cost.steps} hop(s)) at "
        f"{system.bytes_per_s / 1e9:.1f} GB/s; link-bound"
    )
    roofline = nbytes / system.bytes_per_s * NS if system.bytes_per_s else 0.0
    return local.replace(bytes={LINK: nbytes}, duration_ns=cost.seconds * NS, bound=LINK, roofline_ns=roofline, why=why)


def _size(nbytes: float) -> str:
    if nbytes >= 1e6:
        return f"{nbytes / 1e6:.2f} MB"
    return f"{nbytes / 1e3:.1f} KB"
