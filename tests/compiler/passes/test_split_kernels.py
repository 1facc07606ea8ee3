"""split-kernels: an op shaped like one split before takes that kernel under its own tensors'
names, and gets what splitting it on its own gives."""

import pytest

from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.passes.split_kernels import SplitKernels
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.targets.catalog import load_target


@pytest.mark.parametrize(
    "ref, target",
    [
        ("zoo:bert-base?layers=3", "wormhole_n150"),
        ("zoo:llama-3.2-1b?mode=decode&layers=3", "wormhole_n150"),  # caches written in place, attention
        ("zoo:resnet50", "blackhole_p150"),
        ("zoo:llama-3.2-1b?layers=2&devices=8", "t3k"),  # collectives, each device's piece
    ],
)
def test_every_kernel_equals_the_ops_own_split(ref, target):
    compiled = compile_model(load_model(ref), load_target(target))
    layout = compiled.levels["layout"]
    alone = SplitKernels(compiled.target)
    shared = 0
    for op in compiled.kernel.ops:
        own = alone._split(layout, layout.op(op.name))
        assert op.meta["kernel"] == own, op.name
        shared += own is not None
    assert shared > 0


def test_a_renamed_kernel_is_timed_as_its_own_op():
    """The simulator times a kernel and takes the time for its renamings (kernel.like): the same
    timings, zones and counters as timing every op on its own."""
    from dataclasses import replace

    from tilescope.compiler.sim.simulator import simulate

    target = load_target("wormhole_n150")
    compiled = compile_model(load_model("zoo:bert-base?layers=3"), target)
    renamed = [op for op in compiled.kernel.ops if op.meta["kernel"] is not None and op.meta["kernel"].like]
    assert len(renamed) > len(compiled.kernel.ops) // 3
    shared = simulate(compiled.kernel, target)
    alone_graph = compiled.kernel.with_level("kernel")
    for op in alone_graph.ops:
        if op.meta["kernel"] is not None:
            op.meta["kernel"] = replace(op.meta["kernel"], like=None)
    alone = simulate(alone_graph, target)

    def rows(sim):
        ops = [(o.name, o.start_ns, o.duration_ns, o.bound, o.why, o.bytes, o.flops, o.tensors) for o in sim.ops]
        return ops, list(sim.zones), list(sim.counters)

    assert rows(shared) == rows(alone)
