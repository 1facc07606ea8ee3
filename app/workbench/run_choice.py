"""Which stored run a page shows for a model: its baseline (the newest simulated run with no
overrides under the page's target, policy, dispatch and data-tiling), or for a report its newest measured run;
the runs its menu lists, and those its runs table lists."""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.measured_runs import is_report, report_name
from tilescope.app.workbench.runs import target_of


def shown_runs(stored: Sequence[Run], model_ref: str, target: str) -> list[Run]:
    """The model's runs a menu lists: those on `target`; a report's on any (measured on one chip,
    replayed on others)."""
    return [r for r in stored if is_report(model_ref) or target_of(r) == target]


def baseline_of(stored: Sequence[Run], target: str, options: CompileOptions) -> int | None:
    """The newest of `stored` (newest first) that is simulated with no overrides, on `target`
    under `options`' policy, dispatch and data-tiling (whatever its L1 cap)."""
    wanted = (target, options.policy, options.dispatch, options.data_tiling)
    for run in stored:
        settings = (target_of(run), run.policy, run.dispatch, bool(run.data_tiling))
        if not run.overrides and run.kind != "measured" and settings == wanted:
            return run.id
    return None


def measured_of(stored: Sequence[Run], model_ref: str) -> int:
    """The newest of `stored` (newest first) that is measured."""
    found = next((run.id for run in stored if run.kind == "measured"), None)
    if found is None:
        raise TilescopeError(f"{report_name(model_ref)}: no measured run of this report is stored; upload it again")
    return found


def listed_runs(model_runs: Sequence[Run], measured: Sequence[Run]) -> list[Run]:
    """What the runs table lists: the model's runs, then the `measured` runs of other models and
    reports (two reports, a Wormhole's and a Blackhole's, are compared as two measured runs)."""
    mine = {run.id for run in model_runs}
    return [*model_runs, *(run for run in measured if run.id not in mine)]
