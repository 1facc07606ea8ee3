"""Runs with load-time work made from real simulations: ops of a simulated model moved from its step
into the work done once per model load, as the compiler's const-eval moves weight-only ops."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tilescope.app.workbench.runs import new_run
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import SimResult, simulate
from tilescope.compiler.targets.catalog import load_target, target_text
from tilescope.perfdb.records import ZoneColumns
from tilescope.perfdb.store import save_run

MLP = "zoo:mlp?layers=2"  # four matmuls, bias adds and activations fused in
TARGET = "wormhole_n150"


def hoisted(sim: SimResult, names: set[str]) -> SimResult:
    """`sim` with the ops named taken out of its step and run at load instead, after whatever it
    loads already, one after the other on the load clock."""
    load = list(sim.load_ops)
    for op in sim.ops:
        if op.name in names:
            load.append(replace(op, start_ns=load[-1].end_ns if load else 0.0))
    return replace(sim, ops=[op for op in sim.ops if op.name not in names], load_ops=load)


def simulated(ref: str = MLP):
    """(compilation, SimResult) of `ref` on the default target."""
    target = load_target(TARGET)
    compilation = compile_model(load_model(ref), target)
    return compilation, simulate(compilation.kernel, target)


def store_hoisted(sessions, names: set[str], ref: str = MLP, label: str = "") -> tuple[int, SimResult]:
    """Store a simulated run of `ref` with the ops named moved to load time; (its id, its SimResult)."""
    compilation, sim = simulated(ref)
    sim = hoisted(sim, names)
    new = new_run(compilation, sim, ref, TARGET, target_text(TARGET)[0], label=label)
    # ops run at load have no zones: the timeline is the step's
    z = new.zones
    keep = ~np.isin(z.op, [i for i, name in enumerate(z.names) if name in names])
    new.zones = ZoneColumns(
        z.tracks, z.names, z.track[keep], z.depth[keep], z.name[keep], z.start[keep], z.end[keep], z.op[keep]
    )
    with sessions() as session:
        return save_run(session, new), sim
