"""The roofline tab: the run's compute ops on its target's roofline; a click selects an op."""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go
from dash import Input, Output, dcc, no_update

from tilescope.app.web import ids
from tilescope.app.web.callback_context import clicked_op, first_trace, only_triggered
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.style import (
    BOUND_COLOURS,
    LOADING,
    SELECTED,
    TOP_LEGEND,
    base_layout,
    graph_config,
    message_figure,
    plain,
)
from tilescope.app.workbench.roofline_view import Roofline, RooflineDot, RooflinePoint, stacked

TAB = "roofline"


def layout(_page: PageContext) -> list:
    return [dcc.Graph(id=ids.ROOFLINE_VIEW, config=graph_config("roofline"), figure=message_figure(LOADING))]


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=Output(ids.ROOFLINE_VIEW, "figure"),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            tab=Input(ids.ANALYSIS_TABS, "value"),
        ),
    )
    def show_roofline(run_id, selected=None, tab=TAB):
        if run_id is None or tab != TAB:
            return no_update
        found = explorer.roofline(explorer.view(run_id))
        if only_triggered(ids.SELECTED_OP):  # the run's points are drawn already: move the ring
            return first_trace(roofline_ring(found.points, selected))
        return roofline_figure(found, selected)

    @app.callback(
        output=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        inputs=dict(click=Input(ids.ROOFLINE_VIEW, "clickData")),
        prevent_initial_call=True,
    )
    def select_in_roofline(click):
        return clicked_op(click)

    return {"show_roofline": show_roofline, "select_in_roofline": select_in_roofline}


PANEL = Panel("tab", "Roofline", TAB, layout, register)


def roofline_figure(found: Roofline, selected: str | None) -> go.Figure:
    """The run's ops on the target's roofline, log-log: attainable FLOP/s is the lower of peak
    compute and (bytes/s of a memory x FLOPs per byte)."""
    points, peak_flops = found.points, found.peak_flops
    # always there, and first: a new selection changes only this trace (roofline_ring)
    fig = go.Figure(roofline_ring(points, selected))
    xs = [p.intensity for p in points] or [1.0]
    lo, hi = min(min(xs) / 4, 0.1), max(max(xs) * 4, 1e4)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    dash_of = {0: "solid", 1: "dash", 2: "dot"}
    for i, (memory, bandwidth) in enumerate(found.roofs.items()):
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=[min(peak_flops, bandwidth * x) / 1e12 for x in grid],
                mode="lines",
                name=f"{memory} roof",
                line=dict(color="#374151", width=1.5, dash=dash_of.get(i, "dashdot")),
                hoverinfo="skip",
            )
        )
    for bound in sorted({p.bound for p in points}):
        fig.add_trace(_points([p for p in points if p.bound == bound], bound, peak_flops))
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOPs per byte)", gridcolor="#e4e7eb")
    fig.update_yaxes(type="log", title="TFLOP/s", gridcolor="#e4e7eb")
    fig.update_layout(legend=TOP_LEGEND, clickmode="event")
    return base_layout(fig, 380, top=30)


SHOWN_NAMES = 10  # ops a stacked dot's hover names; the rest are counted


def _points(points: Sequence[RooflinePoint], bound: str, peak_flops: float) -> go.Scatter:
    """One dot per place: alike ops (a model's repeated layers) stack into one dot, bigger the
    more it holds, with their count beside it and their names on hover; a click selects the first."""
    dots = stacked(points)
    return go.Scatter(
        x=[d.first.intensity for d in dots],
        y=[d.first.achieved / 1e12 for d in dots],
        mode="markers+text",
        name=f"{bound}-bound",
        customdata=[d.first.name for d in dots],
        text=[f"×{len(d.points)}" if len(d.points) > 1 else "" for d in dots],
        textposition="middle right",
        textfont=dict(size=10, color="#374151"),
        marker=dict(
            color=BOUND_COLOURS.get(bound, "#6b7280"),
            size=[min(8 + 3 * math.sqrt(len(d.points) - 1), 26) for d in dots],
            symbol=["circle" if d.first.memory == "dram" else "diamond" for d in dots],
            line=dict(width=[1.5 if len(d.points) > 1 else 0 for d in dots], color="#1f2933"),
            # a stack lets a dot of another bound at its place show through
            opacity=[0.7 if len(d.points) > 1 else 1.0 for d in dots],
        ),
        hovertext=[_hover(d, peak_flops) for d in dots],
        hoverinfo="text",
    )


def _hover(dot: RooflineDot, peak_flops: float) -> str:
    p = dot.first
    where = (
        f"{p.intensity:.1f} FLOP/{p.memory} byte<br>{p.achieved / 1e12:.2f} TFLOP/s "
        f"({p.achieved / peak_flops * 100:.0f}% of peak)"
    )
    if len(dot.points) == 1:
        return f"<b>{plain(p.name)}</b><br>{plain(p.kind)}<br>{where}"
    kinds = ", ".join(sorted({q.kind for q in dot.points}))
    names = [plain(q.name) for q in dot.points[:SHOWN_NAMES]]
    left = len(dot.points) - SHOWN_NAMES
    names += [f"... and {left} more"] if left > 0 else []
    return (
        f"<b>{len(dot.points)} ops alike</b> ({plain(kinds)}), one over another:<br>"
        + "<br>".join(names)
        + f"<br>{where}<br><i>a click selects the first</i>"
    )


def roofline_ring(points: Sequence[RooflinePoint], selected: str | None) -> go.Scatter:
    """The ring around the selected op's point: the roofline figure's first trace."""
    chosen = [p for p in points if p.name == selected]
    return go.Scatter(
        x=[p.intensity for p in chosen],
        y=[p.achieved / 1e12 for p in chosen],
        mode="markers",
        name=SELECTED,
        marker=dict(size=16, symbol="circle-open", color="#2563eb", line=dict(width=3, color="#2563eb")),
        hoverinfo="skip",
        showlegend=False,
    )
