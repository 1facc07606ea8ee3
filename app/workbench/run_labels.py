"""How a run is named in menus and tables: its label, its settings and its time; a label made from
its overrides."""

from __future__ import annotations

from collections.abc import Sequence

from tilescope.compiler.pipeline.op_override import OpOverride
from tilescope.compiler.targets.chip import DEFAULT_DISPATCH
from tilescope.overrides import format_item
from tilescope.perfdb.schema import Run

from tilescope.app.workbench.measured_runs import is_report

LABELLED_OVERRIDES = 3  # beyond, a label counts them and names the newest
MAX_LABEL = 500  # characters: a run's label column holds 512


def overrides_label(overrides: Sequence[OpOverride], new: Sequence[OpOverride] = ()) -> str:
    """A run's label from all its overrides: each of them when few, else how many and the `new`
    ones (what this run changed), then "..."."""
    if len(overrides) <= LABELLED_OVERRIDES:
        label = ", ".join(format_item(o) for o in overrides)
    else:
        shown = [format_item(o) for o in (new or overrides)[:LABELLED_OVERRIDES]]
        label = f"{len(overrides)} overrides: {', '.join(shown)}, ..."
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 3] + "..."  # long op names


def name_of(run: Run) -> str:
    """What a run is called: its label; else "baseline" when it has no overrides, else "N overrides"
    (a run the command line stored with overrides and no label is no baseline)."""
    if run.label:
        return run.label
    count = len(run.overrides)
    return "baseline" if not count else f"{count} override{'' if count == 1 else 's'}"


def run_label(run: Run) -> str:
    label = name_of(run)
    if run.kind == "measured":
        settings = f"measured on {run.target.name}"
    elif is_report(run.model_ref):
        settings = f"predicted on {run.target.name}"
    else:
        settings = run.policy if run.dispatch == DEFAULT_DISPATCH else f"{run.policy}, {run.dispatch} dispatch"
        settings += ", data-tiling" if run.data_tiling else ""
    return f"#{run.id} {label} [{settings}] ({run.total_ns / 1e3:,.1f} us)"
