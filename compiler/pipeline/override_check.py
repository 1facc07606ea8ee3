"""Each override's outcome on a model compiled already, from the layout pass alone: what a compile
with them would apply or reject, at a few percent of a compile's cost."""

from __future__ import annotations

from tilescope.compiler.ir.meta import OVERRIDES
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.passes.layout import AssignLayouts
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import OverrideOutcome
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.reuse import unchanged
from tilescope.compiler.pipeline.stages import stages


def layout_outcomes(compilation: Compilation, options: CompileOptions) -> list[OverrideOutcome]:
    """Each of `options`' overrides' outcomes under its policy and L1 cap, from the layout pass
    run on a copy of the kept `partition` level (partitioned again when their shardings differ
    from its own). No memory planning or kernels, so an L1 the planner later finds over-full is
    not among its rejections."""
    assign = AssignLayouts(compilation.target, options)
    return assign.run(_partitioned(compilation, options).with_level("layout")).meta[OVERRIDES]


def _partitioned(compilation: Compilation, options: CompileOptions) -> Graph:
    """The `partition` level `options` make: the compilation's own when their shardings, fusions
    and inner tiles are the same, else the stages that make it again (from the kept `graph` level
    when their fusions are the same)."""
    if unchanged(compilation, "partition", options):
        return compilation.levels["partition"]
    graph = compilation.model.graph
    for level, passes in stages(compilation.target, options)[:2]:  # graph, partition
        if level == "graph" and unchanged(compilation, "graph", options):
            graph = compilation.levels["graph"]
            continue
        graph = graph.with_level(level)
        for compiler_pass in passes:
            graph = compiler_pass.run(graph)
    return graph
