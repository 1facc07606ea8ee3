"""What the callbacks of every part of the page ask of Dash's callback context and of a click."""

from __future__ import annotations

from dash import Patch, ctx, no_update
from dash.exceptions import MissingCallbackContextException


def triggered() -> str | None:
    """The id of the input that fired the callback (None when called directly, as tests do)."""
    try:
        return ctx.triggered_id
    except MissingCallbackContextException:
        return None


def first_trace(trace) -> Patch:
    """A patch of a drawn figure that replaces its first trace (a selection ring) alone."""
    patch = Patch()
    patch["data"][0] = trace.to_plotly_json()
    return patch


def only_triggered(component_id: str) -> bool:
    """Whether `component_id` alone fired the callback (so the rest of the view is as drawn)."""
    try:
        fired = {key.rsplit(".", 1)[0] for key in ctx.triggered_prop_ids}
    except MissingCallbackContextException:
        return False
    return fired == {component_id}


def clicked_op(click: dict | None):
    """The op name a plotly click carries in `customdata`, or no_update for clicks on anything else."""
    points = (click or {}).get("points") or []
    name = points[0].get("customdata") if points else None
    return name if isinstance(name, str) else no_update


def diff_pair(ticked: list[int], shown, baseline: int | None = None) -> tuple[int, int] | None:
    """Which two runs the diff view compares (A, B): two ticked runs; one ticked and the shown run;
    else the shown run against the run it came from, or, for one with no parent (a run stored by
    the command line with overrides), against the `baseline` of its model. None: nothing to compare."""
    ticked = sorted(int(i) for i in ticked)
    if len(ticked) >= 2:
        return ticked[0], ticked[-1]
    if len(ticked) == 1 and ticked[0] != shown.id:
        return ticked[0], shown.id
    if shown.parent_id is not None:
        return shown.parent_id, shown.id
    return (baseline, shown.id) if baseline is not None and baseline != shown.id else None
