"""The compiler: a short list of named stages, each producing one inspectable level.

input  --normalize-->       graph    one op vocabulary, whatever the source dialect
       --canonicalize-->             no-op reshapes/casts dropped, chains of them shortened, constants folded
       --fold-broadcasts-->          broadcasts into element-wise ops left to the ops (implicit broadcast)
       --fold-transposes-->          transposes into matmuls become how the matmul reads (transpose_a/b)
       --fuse-attention-->           attention written op by op becomes scaled_dot_product_attention
       --fuse-heads-->               head merges (and splits asked for) become whole-tile moves
       --const-eval-->               work on weights and constants only marked load-time (runs once)
       --fuse-eltwise-->             bias adds and activations fused into their producers
       --set-encodings-->            (data-tiling) matmul operands encoded for the target's inner tiles
       --const-eval-->               (data-tiling) the weights' encodings moved to load time
       --partition-->       partition  split over the devices (overrides' shardings too); collectives where they change
       --materialize-encodings-->      encodings become pack -> mmt4d -> unpack for the device; pairs cancelled
       --assign-layouts-->  layout   every tensor placed (memory, sharding, grid, dtype)
       --insert-to-layout-->         conversions where a consumer needs another layout
       --plan-memory-->              L1 addresses by liveness, peak per core, overflows
       --split-kernels-->   kernel   every op split into per-core reads, compute, writes
       --lower-collectives-->        each collective's algorithm, steps and bytes on the links
       --check-l1-->                 circular buffers fit next to the live tensors
"""

from __future__ import annotations

from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.ir.graph import Graph
from tilescope.compiler.ir.verifier import verification_requested, verify
from tilescope.compiler.passes.canonicalize import Canonicalize
from tilescope.compiler.passes.const_eval import ConstEval
from tilescope.compiler.passes.fold_broadcasts import FoldBroadcasts
from tilescope.compiler.passes.fold_transposes import FoldTransposes
from tilescope.compiler.passes.fuse_attention import FuseAttention
from tilescope.compiler.passes.fuse_eltwise import FuseEltwise
from tilescope.compiler.passes.fuse_heads import FuseHeads
from tilescope.compiler.passes.insert_to_layout import InsertToLayout
from tilescope.compiler.passes.layout import AssignLayouts
from tilescope.compiler.passes.lower_collectives import LowerCollectives
from tilescope.compiler.passes.materialize_encodings import MaterializeEncodings
from tilescope.compiler.passes.normalize import Normalize
from tilescope.compiler.passes.partition import Partition
from tilescope.compiler.passes.plan_memory import CheckL1, PlanMemory
from tilescope.compiler.passes.set_encodings import SetEncodings
from tilescope.compiler.passes.split_kernels import SplitKernels
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.options import DEFAULT_OPTIONS, CompileOptions
from tilescope.compiler.pipeline.reuse import Known, reusable, unchanged
from tilescope.compiler.targets.chip import Target


# levels whose passes change no tensor (each op's kernel is op meta): they share the level above's
SAME_TENSORS = frozenset({"kernel"})


def stages(
    target: Target, options: CompileOptions = DEFAULT_OPTIONS, known: Known | None = None
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
                # attention is found before and after transposes fold into matmuls: heads split
                # by permutes straight into its matmuls (the PyTorch import's) before they fold
                # into the matmuls' batch dims, keys transposed by a permute (q @ k^T as exports
                # spell it) once it folds into the matmul's contraction
                FuseAttention(),
                FoldTransposes(),
                FuseAttention(),
                FuseHeads(target, options.fusion_requests),
                ConstEval(),
                FuseEltwise(target, options.fusion_requests),
                *([SetEncodings(target), ConstEval()] if options.data_tiling else []),
            ],
        ),
        ("partition", [Partition(target, options), MaterializeEncodings(target, options.inner_tiles)]),
        (
            "layout",
            [
                AssignLayouts(target, options, known.placement),
                InsertToLayout(target, known.required_layouts),
                PlanMemory(target),
            ],
        ),
        ("kernel", [SplitKernels(target, known.kernels), LowerCollectives(target), CheckL1(target)]),
    ]


def compile_model(
    model: ImportedModel,
    target: Target,
    options: CompileOptions = DEFAULT_OPTIONS,
    since: Compilation | None = None,
) -> Compilation:
    """Compile `model` for `target` under `options`. With `since`, an earlier compilation of the
    same model and target (with other overrides, say), the work that cannot have changed is taken
    from it: the `graph` level (overrides act from `partition` on), the `partition` level when the
    sharding overrides are the same, and the kernels of ops whose layouts are the same. The result
    is the same as compiling from scratch."""
    reuse = reusable(since, model, target)
    known = Known.since(since, same_partition=unchanged(since, "partition", options)) if reuse else Known()
    levels: dict[str, Graph] = {}
    graph = model.graph
    verifying = verification_requested()  # off unless asked: the checks walk the graph after every pass
    for level, passes in stages(target, options, known):
        if reuse and unchanged(since, level, options):
            graph = levels[level] = since.levels[level]  # levels are never changed once made
            continue
        graph = graph.with_level(level, same_tensors=level in SAME_TENSORS)
        for compiler_pass in passes:
            graph = compiler_pass.run(graph)
            if verifying:
                verify(graph, after=compiler_pass.name)
        levels[level] = graph
    return Compilation(model, target, levels, options.compiler_part)
