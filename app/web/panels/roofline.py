"""The roofline tab: the run's compute ops on its target's roofline; a click selects an op."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from dash import Input, Output, dcc, no_update

from .. import ids
from ..callback_context import clicked_op, first_trace, only_triggered
from ..panel import PageContext, Panel, Wiring
from ..style import BOUND_COLOURS, LOADING, SELECTED, TOP_LEGEND, base_layout, graph_config, message_figure, plain
from ...workbench.roofline_view import Roofline, RooflinePoint

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


def _points(points: Sequence[RooflinePoint], bound: str, peak_flops: float) -> go.Scatter:
    return go.Scatter(
        x=[p.intensity for p in points],
        y=[p.achieved / 1e12 for p in points],
        mode="markers",
        name=f"{bound}-bound",
        customdata=[p.name for p in points],
        marker=dict(
            color=BOUND_COLOURS.get(bound, "#6b7280"),
            size=8,
            symbol=["circle" if p.memory == "dram" else "diamond" for p in points],
        ),
        hovertext=[
            f"<b>{plain(p.name)}</b><br>{plain(p.kind)}<br>{p.intensity:.1f} FLOP/{p.memory} byte"
            f"<br>{p.achieved / 1e12:.2f} TFLOP/s ({p.achieved / peak_flops * 100:.0f}% of peak)"
            for p in points
        ],
        hoverinfo="text",
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
