"""One stored run as every panel shows it, read once: its settings, its totals per step and its
work once per model load, and its compilation at every level (none for a measured run read from
a report: it has no model to compile). A stored run never changes, so a view of it is kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.compilation import Compilation
from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.targets.chip import Target
from tilescope.perfdb.runs import load_ops
from tilescope.perfdb.records import LoadOp
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.measured_runs import no_model_line
from tilescope.app.workbench.runs import target_of


@dataclass(frozen=True)
class RunView:
    id: int
    label: str
    model_ref: str
    model_name: str
    target_ref: str  # as it was asked for: a built-in name or a target file
    target_name: str
    options: CompileOptions  # what it was compiled and simulated with
    target_source: str | None  # the target description it kept (None: a built-in, as it is now)
    parent_id: int | None
    total_ns: float
    device_ns: float
    tracks: tuple[str, ...]  # the timeline's rows, in order
    compilation: Compilation | None  # None: a run made from a report (measured, or its replay): no model
    target: Target  # what it ran on (a compilation's, or the description a measured run kept)
    # what is evaluated once when the model is loaded (const-eval), not in each step: its ops, in
    # the order they ran, and their total; not in total_ns, and not on the timeline
    load_ops: tuple[LoadOp, ...] = ()
    load_ns: float = 0.0
    kind: str = "simulated"  # or measured

    @property
    def measured(self) -> bool:
        return self.kind == "measured"

    @property
    def compiled(self) -> Compilation:
        """The run's compilation; for a measured run read from a report, one line saying it has none."""
        if self.compilation is None:
            raise TilescopeError(no_model_line(self.model_ref, self.kind))
        return self.compilation

    @classmethod
    def of(
        cls, run: Run, options: CompileOptions, compilation: Compilation | None, target: Target | None = None
    ) -> RunView:
        """`run` as stored, made with `options` (runs.options_of) into `compilation`; a run with
        none (a measured report's) on `target`."""
        return cls(
            id=run.id,
            label=run.label or "baseline",
            model_ref=run.model_ref,
            model_name=run.model.name,
            target_ref=target_of(run),
            target_name=run.target.name,
            options=options,
            target_source=run.target.description or None,
            parent_id=run.parent_id,
            total_ns=run.total_ns,
            device_ns=run.device_ns,
            tracks=tuple(run.tracks),
            compilation=compilation,
            target=compilation.target if compilation is not None else target,
            load_ops=tuple(load_ops(run)),
            load_ns=run.load_ns,
            kind=run.kind,
        )

    def rerun_with(self, overrides: Sequence[OpOverride]) -> CompileOptions:
        """What a re-run with `overrides` runs with: this run's options, its overrides each
        replaced by any of `overrides` of the same op part, then `overrides`."""
        replaced = {o.key for o in overrides}
        return self.options.with_overrides([*(o for o in self.options.overrides if o.key not in replaced), *overrides])
