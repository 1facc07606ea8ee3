"""The options a run is compiled and simulated under, in one record: the command line, the page, a
search and a background worker each make one and hand it down to the passes that read it (as
IREE's Pipelines/Options.h gathers its pipeline's). Named here, not in the pass that applies
them, so the command line, the app and override checks depend on the compiler's options and not
on a pass."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from dataclasses import dataclass, replace

from tilescope.compiler.pipeline.op_override import OpOverride, fusion_requests, sharding_requests
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH

DEFAULT_POLICY = "dram-interleaved"  # every tensor interleaved in DRAM
GREEDY_L1 = "greedy-l1"  # each output sharded in L1 while what is live fits (passes/layout.py)
# tt-mlir's optimizer as production runs it: greedy-l1 for activations, and weights stored in the
# target's 8-bit block floating point where it has one (tt-mlir's experimental-bfp8-weights)
OPTIMIZER = "optimizer"
POLICIES = (DEFAULT_POLICY, GREEDY_L1, OPTIMIZER)
# Share of each core's L1 that tensors may take; the rest is left for circular buffers.
# tt-mlir calls this tensor-l1-usage-cap.
DEFAULT_L1_USAGE_CAP = 0.8


@dataclass(frozen=True)
class CompileOptions:
    """What a run is made with besides its model and target. `overrides` go to the partition pass
    (their shardings) and the layout pass (the rest), `policy` and `l1_usage_cap` to the layout
    pass; `dispatch` (how the host launches the ops: one by one, or a captured trace) is the
    simulator's alone. `data_tiling`, as IREE's flag of that name: matmul operands get encodings
    at the graph level, materialized into packs and mmt4d with the target's inner tiles."""

    overrides: tuple[OpOverride, ...] = ()
    policy: str = DEFAULT_POLICY
    l1_usage_cap: float = DEFAULT_L1_USAGE_CAP
    dispatch: str = DEFAULT_DISPATCH
    data_tiling: bool = False

    def __post_init__(self) -> None:
        # any sequence is taken, and kept as a tuple: the record keys caches of compilations
        object.__setattr__(self, "overrides", tuple(self.overrides))

    def with_overrides(self, overrides: Iterable[OpOverride]) -> CompileOptions:
        return replace(self, overrides=tuple(overrides))

    @property
    def compiler_part(self) -> CompileOptions:
        """These options as far as the compiler reads them (the dispatch set to its default): a
        compilation is the same under either dispatch, so this is what one is cached by."""
        return replace(self, dispatch=DEFAULT_DISPATCH)

    @cached_property
    def inner_tiles(self) -> dict[str, tuple[int, int, int]]:
        """Data-tiling inner tiles the overrides set, by matmul (materialize_encodings.py)."""
        return {ov.op: ov.inner_tiles for ov in self.overrides if ov.inner_tiles is not None}

    @cached_property
    def fusion_requests(self) -> tuple[tuple[str, bool], ...]:
        """The graph passes' part of the overrides: (op, fuse or not), by op (op_override.fusion_requests)."""
        return fusion_requests(self.overrides)

    @cached_property  # read by several stages of one compile
    def sharding_requests(self) -> tuple[OpOverride, ...]:
        """The partition pass's part of the overrides (op_override.sharding_requests)."""
        return sharding_requests(self.overrides)


DEFAULT_OPTIONS = CompileOptions()  # no overrides, the default policy, L1 cap and dispatch
