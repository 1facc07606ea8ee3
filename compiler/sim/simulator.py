"""Performance simulator: interprets the `kernel` level op by op, as torch.fx's Interpreter runs a
graph node by node, each op by the method for its class:

    a constant or a view (no kernel)   no launch, no time: its result is ready with its operand
    load-time (const-eval)             costed on the cores, placed on the load clock
    a collective across devices        the copy on the cores, then the links (sim/collectives.py)
    a transfer between devices         on the link between them, in a program placing each op on
                                       a device of a system (each device's ops on its own clock)
    any other kernel                   costed on the cores (sim/kernel_cost.py)

The scheduler (sim/schedule.py) places each op by the device's, host's and links' clocks, and the
timeline (sim/timeline.py) draws it. An op whose kernel was costed before, by an earlier simulation
on the same target (`known`) or as the same kernel under another name in this one, is only placed.
"""

from __future__ import annotations

from tilescope.compiler.ir.meta import CODE_LINE, DEVICES, KERNEL, MESH
from tilescope.compiler.ir.core_work import Kernel
from tilescope.compiler.ir.graph import Graph, Op
from tilescope.compiler.ir.tiles import tensor_bytes
from tilescope.compiler.sim.collectives import is_collective, on_links, transfer_on_link
from tilescope.compiler.sim.kernel_cost import KernelCost
from tilescope.compiler.sim.records import OpTiming, tensor_uses
from tilescope.compiler.sim.result import KernelCosts, KnownCost, SimResult
from tilescope.compiler.sim.schedule import Clocks
from tilescope.compiler.sim.timeline import Timeline
from tilescope.compiler.sim.tracks import link_track
from tilescope.compiler.targets.chip import Target

# simulate, what it takes and what it gives
__all__ = ["KernelCosts", "OpTiming", "SimResult", "Simulator", "simulate"]


class Simulator:
    """`known`: an earlier simulation's costs; an op whose kernel (the same object: the compiler
    reuses an unchanged op's kernel) it timed on this target is not timed again, only placed.
    Without `timeline`, only the times: no zones or counters (half a search trial's simulation)."""

    def __init__(
        self, target: Target, dispatch: str = "host", known: KernelCosts | None = None, timeline: bool = True
    ) -> None:
        self.target = target
        self.dispatch = dispatch
        self.timeline = timeline
        self.known = known.by_kernel if known is not None and known.target is target else {}
        self.cost_model = KernelCost(target)

    def run(self, graph: Graph) -> SimResult:
        mesh = graph.meta.get(MESH)
        placed = graph.meta.get(DEVICES, ())
        # a program that places each op on a device (IREE's affinities), when the system has them
        self.placed = {name: i for i, name in enumerate(placed)} if len(placed) <= self.target.system.devices else {}
        # the devices the program runs on: the mesh's, which may be fewer than the system has
        self.devices = len(self.placed) if self.placed else mesh.devices if mesh is not None else 1
        self.clocks = Clocks(self.target.dispatch_ns[self.dispatch])
        self.drawn = Timeline(self.target, self.devices) if self.timeline else None
        self.costs = KernelCosts(self.target)
        self.ops: list[OpTiming] = []
        self.load_ops: list[OpTiming] = []
        self._alike: dict[int, KnownCost] = {}  # a kernel's id -> its cost, for its renamings
        for op in graph.ops:
            self.run_op(graph, op)
        drawn = self.drawn or Timeline(self.target, self.devices)  # no timeline: empty tables
        return SimResult(
            self.target.name,
            self.dispatch,
            self.clocks.total_ns,
            self.ops,
            drawn.zones,
            drawn.counters,
            self.costs,
            self.load_ops,
        )

    def run_op(self, graph: Graph, op: Op) -> None:
        kernel: Kernel | None = op.meta.get(KERNEL)
        if kernel is None:
            self.clocks.view(op)
        elif op.attrs.get("const_eval"):
            self.at_load(graph, op, kernel)
        elif self.placed and op.kind == "transfer":
            self.transfer(graph, op, kernel)
        elif self.devices > 1 and is_collective(op):
            self.collective(graph, op, kernel)
        else:
            self.on_cores(graph, op, kernel)

    def at_load(self, graph: Graph, op: Op, kernel: Kernel) -> None:
        """Once, when the model is loaded: on the load clock, not in the step."""
        self.load_ops.append(self.clocks.at_load(self.cost(graph, op, kernel).timing))

    def collective(self, graph: Graph, op: Op, kernel: Kernel) -> None:
        """On the links, beside the cores: compute that does not need its result goes on."""
        issued = self.clocks.issue(op)
        local = self.cost(graph, op, kernel).timing
        track = link_track(op.attrs.get("axes", ()))
        timing = _located(self.clocks.on_links(op, track, on_links(self.target.system, op, local), issued), op)
        self.ops.append(timing)
        if self.drawn:
            self.drawn.on_links(op, track, timing)

    def transfer(self, graph: Graph, op: Op, kernel: Kernel) -> None:
        """A tensor sent to another device: on the link between the two, the devices go on."""
        issued = self.clocks.issue(op)
        local = self.cost(graph, op, kernel).timing
        source, target = (self.placed.get(op.attrs.get(key), 0) for key in ("from_device", "device"))
        nbytes = tensor_bytes(graph.tensors[op.inputs[0]]) if op.inputs else 0.0
        timing = transfer_on_link(self.target.system, source, target, nbytes, local).replace(device=source)
        track = link_track((f"device {source}", f"device {target}"))
        timing = _located(self.clocks.on_links(op, track, timing, issued), op)
        self.ops.append(timing)
        if self.drawn:
            self.drawn.on_links(op, track, timing)

    def on_cores(self, graph: Graph, op: Op, kernel: Kernel) -> None:
        issued = self.clocks.issue(op)
        cost = self.cost(graph, op, kernel)
        device = self.placed.get(op.attrs.get("device")) if self.placed else None
        timing = self.clocks.on_device(
            op, cost.timing if device is None else cost.timing.replace(device=device), issued, device
        )
        self.ops.append(_located(timing, op))
        if self.drawn:
            self.drawn.on_cores(op, kernel, cost.core_times, timing, device)

    def cost(self, graph: Graph, op: Op, kernel: Kernel) -> KnownCost:
        """The op's cost at start 0: known from an earlier simulation, a renaming's of a kernel
        costed in this one, or worked out now."""
        known = self.known.get(id(kernel))
        if known is None or known.kernel is not kernel or known.timing.name != op.name:
            like = self._alike.get(id(kernel.like)) if kernel.like is not None else None
            if like is not None and like.kernel is kernel.like:
                renamed = like.timing.replace(name=op.name, tensors=tensor_uses(graph, op))
                known = KnownCost(kernel, renamed, like.core_times)
            else:
                known = KnownCost(kernel, *self.cost_model.op(graph, op, kernel))
            template = kernel.like or kernel
            if id(template) not in self._alike:
                self._alike[id(template)] = KnownCost(template, known.timing, known.core_times)
        self.costs.by_kernel[id(kernel)] = known
        return known


def _located(timing: OpTiming, op: Op) -> OpTiming:
    """`timing` with the line of source that made its op, where the import knew one."""
    line = op.meta.get(CODE_LINE)
    return timing if line is None else timing.replace(code_line=f"{line.file}:{line.line}", code=line.code)


def simulate(
    kernel_graph: Graph,
    target: Target,
    dispatch: str = "host",
    known: KernelCosts | None = None,
    timeline: bool = True,
) -> SimResult:
    """`kernel_graph` run on `target`: each op's timing, and with `timeline` its zones and counters."""
    return Simulator(target, dispatch, known, timeline).run(kernel_graph)
