"""The incremental path: what a compile may take from an earlier compilation of the same model on
the same target, made with other options (another override, say), rather than make again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tilescope.compiler.ir.meta import KERNELS, PLACED, REQUIRED_LAYOUTS, SHARDING_OVERRIDES
from tilescope.compiler.frontend.mlir_import import ImportedModel
from tilescope.compiler.ir.core_work import SplitKernel
from tilescope.compiler.ir.meta import Placement
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.targets.chip import Target


@dataclass(frozen=True)
class Known:
    """What an earlier compile of the same model on the same target made, for a compile with other
    overrides: the policy's placement of the same `partition` level (None when that level was
    made again), the layouts ops were found to read their operands in, and the kernels split."""

    placement: Placement | None = None
    required_layouts: dict = field(default_factory=dict)
    kernels: Mapping[tuple, list[SplitKernel]] = field(default_factory=dict)

    @classmethod
    def since(cls, since: Compilation, same_partition: bool) -> Known:
        layout = since.levels["layout"]
        return cls(
            layout.meta.get(PLACED) if same_partition else None,
            layout.meta.get(REQUIRED_LAYOUTS, {}),
            since.kernel.meta.get(KERNELS, {}),
        )


def reusable(since: Compilation | None, model: ImportedModel, target: Target) -> bool:
    """Whether `since` compiled the same model for the same target, so a compile may build on it."""
    return since is not None and since.model is model and since.target == target


def unchanged(since: Compilation, level: str, options: CompileOptions) -> bool:
    """Whether `since`'s `level` is what compiling with `options` would make of it: the `graph` level
    depends on the overrides' fusions alone, the `partition` level on their shardings and inner
    tiles; data-tiling and fusions change every level."""
    if since.options.data_tiling != options.data_tiling or since.options.fusion_requests != options.fusion_requests:
        return False
    if level == "partition":  # made by the overrides' shardings and inner tiles
        same_tiles = since.options.inner_tiles == options.inner_tiles
        return same_tiles and since.levels[level].meta.get(SHARDING_OVERRIDES, ()) == options.sharding_requests
    return level == "graph"
