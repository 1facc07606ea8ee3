"""kernel: each collective lowered to the transfers on the system's links that carry it.

    %r = all_reduce(%p) {axes = ["model"]}   ->   ... {algorithm = "ring", steps = 14,
                                                   bytes_per_device = 917504, link_bytes = 458752}

The algorithm follows the topology the group's devices sit on (a ring where they close into
one, a line, or halving and doubling through a switch: compiler/targets/system.py). The plan
(compiler/targets/links.py) is what the simulator times (op.meta[LINKS]); its steps and bytes are
what the kernel level shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilescope.compiler.ir.meta import LINKS, MESH
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.opset import COLLECTIVES, EXCHANGES
from tilescope.compiler.targets.chip import Target
from tilescope.compiler.targets.links import plan_links


@dataclass(frozen=True)
class LowerCollectives:
    name = "lower-collectives"
    target: Target

    def run(self, graph: Graph) -> Graph:
        mesh = graph.meta.get(MESH)
        if mesh is None or mesh.devices <= 1:
            return graph
        for op in graph.ops:
            if op.kind not in COLLECTIVES or not op.inputs:
                continue
            plan = plan_links(self.target.system, mesh, graph, op)
            op.meta[LINKS] = plan  # what the simulator times
            if op.kind in EXCHANGES:  # an all_slice moves nothing: nothing to show
                op.attrs.update(
                    algorithm=plan.cost.algorithm,
                    steps=plan.cost.steps,
                    bytes_per_device=round(plan.cost.bytes_per_device),
                    link_bytes=round(plan.cost.link_bytes),
                )
        return graph
