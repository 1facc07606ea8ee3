"""One stored run as every panel shows it, read once: its settings, its totals per step and its
work once per model load, and its compilation at every level. A stored run never changes, so a
view of it is kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.stages import Compilation
from tilescope.perfdb.runs import load_ops
from tilescope.perfdb.records import LoadOp
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.runs import target_of


@dataclass(frozen=True)
class RunView:
    id: int
    label: str
    model_ref: str
    model_name: str
    target_ref: str  # as it was asked for: a built-in name or a target file
    target_name: str
    policy: str
    dispatch: str
    l1_usage_cap: float
    target_source: str | None  # the target description it kept (None: a built-in, as it is now)
    overrides: tuple[OpOverride, ...]  # what it ran with, read once from their stored text
    parent_id: int | None
    total_ns: float
    device_ns: float
    tracks: tuple[str, ...]  # the timeline's rows, in order
    compilation: Compilation
    # what is evaluated once when the model is loaded (const-eval), not in each step: its ops, in
    # the order they ran, and their total; not in total_ns, and not on the timeline
    load_ops: tuple[LoadOp, ...] = ()
    load_ns: float = 0.0

    @classmethod
    def of(cls, run: Run, overrides: tuple[OpOverride, ...], compilation: Compilation) -> RunView:
        return cls(
            id=run.id,
            label=run.label or "baseline",
            model_ref=run.model_ref,
            model_name=run.model.name,
            target_ref=target_of(run),
            target_name=run.target.name,
            policy=run.policy,
            dispatch=run.dispatch,
            l1_usage_cap=run.l1_usage_cap,
            target_source=run.target.description or None,
            overrides=overrides,
            parent_id=run.parent_id,
            total_ns=run.total_ns,
            device_ns=run.device_ns,
            tracks=tuple(run.tracks),
            compilation=compilation,
            load_ops=tuple(load_ops(run)),
            load_ns=run.load_ns,
        )

    def rerun_with(self, overrides: Sequence[OpOverride]) -> list[OpOverride]:
        """What a re-run with `overrides` runs with: this run's overrides, each replaced by any of
        `overrides` of the same op part, then `overrides`."""
        replaced = {o.key for o in overrides}
        return [*(o for o in self.overrides if o.key not in replaced), *overrides]
