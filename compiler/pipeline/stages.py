"""The compiler: a short list of named stages, each producing one inspectable level.

input  --normalize-->       graph    one op vocabulary, whatever the source dialect
       --canonicalize-->             no-op reshapes/casts dropped, chains of them shortened, constants folded
       --fold-broadcasts-->          broadcasts into element-wise ops left to the ops (implicit broadcast)
       --fold-transposes-->          transposes into matmuls become how the matmul reads (transpose_a/b)
       --fuse-attention-->           attention written op by op becomes scaled_dot_product_attention
       --const-eval-->               work on weights and constants only marked load-time (runs once)
       --fuse-eltwise-->             bias adds and activations fused into their producers
       --partition-->       partition  split over the devices (overrides' shardings too); collectives where they change
       --assign-layouts-->  layout   every tensor placed (memory, sharding, grid, dtype)
       --insert-to-layout-->         conversions where a consumer needs another layout
       --plan-memory-->              L1 addresses by liveness, peak per core, overflows
       --split-kernels-->   kernel   every op split into per-core reads, compute, writes
       --lower-collectives-->        each collective's algorithm, steps and bytes on the links
       --check-l1-->                 circular buffers fit next to the live tensors
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.core_work import Kernel
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.ir.printer import print_graph
from tilescope.compiler.ir.verifier import verification_requested, verify
from tilescope.compiler.pipeline.op_override import OpOverride, OverrideOutcome, sharding_requests
from tilescope.compiler.passes.layout import AssignLayouts, Placement
from tilescope.compiler.pipeline.options import DEFAULT_L1_USAGE_CAP, DEFAULT_POLICY
from tilescope.compiler.passes.canonicalize import Canonicalize
from tilescope.compiler.passes.const_eval import ConstEval
from tilescope.compiler.passes.fold_broadcasts import FoldBroadcasts
from tilescope.compiler.passes.fold_transposes import FoldTransposes
from tilescope.compiler.passes.fuse_attention import FuseAttention
from tilescope.compiler.passes.fuse_eltwise import FuseEltwise
from tilescope.compiler.passes.insert_to_layout import InsertToLayout
from tilescope.compiler.passes.lower_collectives import LowerCollectives
from tilescope.compiler.passes.normalize import Normalize
from tilescope.compiler.passes.partition import Partition
from tilescope.compiler.passes.plan_memory import CheckL1, PlanMemory
from tilescope.compiler.passes.split_kernels import SplitKernels
from tilescope.compiler.targets.chip import Target


@dataclass
class Compilation:
    model: ImportedModel
    target: Target
    levels: dict[str, Graph]  # graph, partition, layout, kernel; `input` is the imported module
    _printed: dict[str, tuple[str, dict[str, tuple[int, int]]]] = field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict:
        # the printed text is a cache, filled by whoever reads it (threads, as a copy is pickled)
        return {**self.__dict__, "_printed": {}}

    @property
    def kernel(self) -> Graph:
        return self.levels["kernel"]

    @property
    def policy(self) -> str:
        return self.levels["layout"].meta.get("policy", DEFAULT_POLICY)

    @property
    def override_outcomes(self) -> list[OverrideOutcome]:
        return self.levels["layout"].meta.get("overrides", [])

    @property
    def warnings(self) -> list[str]:
        return self.levels["kernel"].warnings

    def graph_at(self, level: str) -> Graph:
        return self.model.graph if level == "input" else self.levels[level]

    def mlir(self, level: str) -> str:
        return self.mlir_with_lines(level)[0]

    def mlir_with_lines(self, level: str) -> tuple[str, dict[str, tuple[int, int]]]:
        """MLIR text of a level and, per op name, its first and last line (1-based)."""
        if level not in self._printed:
            if level == "input":
                lines = {op.name: op.meta["lines"] for op in self.model.graph.ops if "lines" in op.meta}
                self._printed[level] = (self.model.text, lines)
            else:
                self._printed[level] = print_graph(self.levels[level])
        return self._printed[level]


@dataclass(frozen=True)
class Known:
    """What an earlier compile of the same model on the same target made, for a compile with other
    overrides: the policy's placement of the same `partition` level (None when that level was
    made again), the layouts ops were found to read their operands in, and the kernels split."""

    placement: Placement | None = None
    required_layouts: dict = field(default_factory=dict)
    kernels: Mapping[tuple, Kernel | None] = field(default_factory=dict)

    @classmethod
    def since(cls, since: Compilation, same_partition: bool) -> Known:
        layout = since.levels["layout"]
        return cls(
            layout.meta.get("placed") if same_partition else None,
            layout.meta.get("required_layouts", {}),
            since.kernel.meta.get("kernels", {}),
        )


def stages(
    target: Target,
    overrides: Sequence[OpOverride],
    policy: str,
    l1_usage_cap: float = DEFAULT_L1_USAGE_CAP,
    known: Known | None = None,
) -> list[tuple[str, list]]:
    """Each level and the passes that produce it, in order; `known`: what an earlier compile of
    the model made that this one may take rather than make again."""
    known = known or Known()
    return [
        (
            "graph",
            [
                Normalize(),
                Canonicalize(),
                FoldBroadcasts(),
                FoldTransposes(),
                FuseAttention(),
                ConstEval(),
                FuseEltwise(target),
            ],
        ),
        ("partition", [Partition(target, sharding_requests(overrides))]),
        (
            "layout",
            [
                AssignLayouts(target, tuple(overrides), policy, l1_usage_cap, known.placement),
                InsertToLayout(target, known.required_layouts),
                PlanMemory(target),
            ],
        ),
        ("kernel", [SplitKernels(target, known.kernels), LowerCollectives(target), CheckL1(target)]),
    ]


def compile_model(
    model: ImportedModel,
    target: Target,
    overrides: Sequence[OpOverride] = (),
    policy: str = DEFAULT_POLICY,
    l1_usage_cap: float = DEFAULT_L1_USAGE_CAP,
    since: Compilation | None = None,
) -> Compilation:
    """Compile `model` for `target`. With `since`, an earlier compilation of the same model and
    target (with other overrides, say), the work that cannot have changed is taken from it: the
    `graph` level (overrides act from `partition` on), the `partition` level when the sharding
    overrides are the same, and the kernels of ops whose layouts are the same. The result is the
    same as compiling from scratch."""
    reuse = since is not None and since.model is model and since.target == target
    known = Known.since(since, same_partition=_unchanged(since, "partition", overrides)) if reuse else Known()
    levels: dict[str, Graph] = {}
    graph = model.graph
    verifying = verification_requested()  # off unless asked: the checks walk the graph after every pass
    for level, passes in stages(target, overrides, policy, l1_usage_cap, known):
        if reuse and _unchanged(since, level, overrides):
            graph = levels[level] = since.levels[level]  # levels are never changed once made
            continue
        graph = graph.with_level(level)
        for compiler_pass in passes:
            graph = compiler_pass.run(graph)
            if verifying:
                verify(graph, after=compiler_pass.name)
        levels[level] = graph
    return Compilation(model, target, levels)


def _unchanged(since: Compilation, level: str, overrides: Sequence[OpOverride]) -> bool:
    """Whether `since`'s `level` is what compiling with `overrides` would make of it."""
    if level == "partition":
        return since.levels[level].meta.get("sharding_overrides", ()) == sharding_requests(overrides)
    return level == "graph"


def _partitioned(compilation: Compilation, overrides: Sequence[OpOverride]) -> Graph:
    """The `partition` level `overrides` make: the compilation's own when their shardings are the
    same, else the partition pass again on its `graph` level."""
    if _unchanged(compilation, "partition", overrides):
        return compilation.levels["partition"]
    again = Partition(compilation.target, sharding_requests(overrides))
    return again.run(compilation.levels["graph"].with_level("partition"))


def layout_outcomes(
    compilation: Compilation, overrides: Sequence[OpOverride], l1_usage_cap: float = DEFAULT_L1_USAGE_CAP
) -> list[OverrideOutcome]:
    """Each override's outcome on a compiled model, from the layout pass alone, run on a copy of
    the kept `partition` level (partitioned again when their shardings differ from its own): what
    a compile with them would apply or reject, at a few percent of a compile's cost (no memory
    planning or kernels, so an L1 the planner later finds over-full is not among its rejections)."""
    assign = AssignLayouts(compilation.target, tuple(overrides), compilation.policy, l1_usage_cap)
    return assign.run(_partitioned(compilation, overrides).with_level("layout")).meta["overrides"]
