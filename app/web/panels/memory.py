"""The memory tab: L1 in use over the run on the fullest core, and what fills it at its peak."""

from __future__ import annotations

import plotly.graph_objects as go
from dash import Input, Output, dcc, html, no_update

from tilescope.app.web import ids
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.style import LOADING, base_layout, graph_config, message_figure, plain
from tilescope.app.workbench.memory_view import MemoryView

TAB = "memory"


def layout(_page: PageContext) -> list:
    return [
        dcc.Graph(id=ids.MEMORY_VIEW, config=graph_config("memory"), figure=message_figure(LOADING)),
        html.Div(id=ids.MEMORY_PEAK),
    ]


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=dict(figure=Output(ids.MEMORY_VIEW, "figure"), peak=Output(ids.MEMORY_PEAK, "children")),
        inputs=dict(run_id=Input(ids.RUN_SELECT, "value"), tab=Input(ids.ANALYSIS_TABS, "value")),
    )
    def show_memory(run_id, tab=TAB):
        if run_id is None or tab != TAB:
            return no_update
        view = explorer.memory(explorer.view(run_id))
        return dict(figure=memory_figure(view), peak=memory_children(view))

    return {"show_memory": show_memory}


PANEL = Panel("tab", "Memory", TAB, layout, register)


def memory_figure(view: MemoryView) -> go.Figure:
    """L1 in use on the fullest core over the run (KiB, a step per op), with the capacity and the
    planner's peak marked."""
    envelope, capacity = view.envelope, view.capacity
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[t / 1e3 for t, _ in envelope],
            y=[v / 1024 for _, v in envelope],
            mode="lines",
            line_shape="hv",
            fill="tozeroy",
            name="L1 in use, fullest core",
            line=dict(color="#2563eb", width=1.5),
            hovertemplate="%{x:.2f} us<br>%{y:,.1f} KiB<extra></extra>",
        )
    )
    fig.add_hline(
        y=capacity / 1024,
        line=dict(color="#b91c1c", dash="dash", width=1),
        annotation_text=f"L1 capacity {capacity / 1024:,.0f} KiB",
        annotation_position="top left",
    )
    if envelope:
        t, v = max(envelope, key=lambda p: p[1])
        fig.add_trace(
            go.Scatter(
                x=[t / 1e3],
                y=[v / 1024],
                mode="markers+text",
                name="peak",
                marker=dict(color="#b91c1c", size=9),
                text=[f"peak {v / 1024:,.1f} KiB" + (f" at {plain(view.peak.op)}" if view.peak else "")],
                textposition="top right",
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(title="time (us)", gridcolor="#e4e7eb")
    fig.update_yaxes(title="KiB per core", gridcolor="#e4e7eb", rangemode="tozero")
    fig.update_layout(showlegend=False)
    return base_layout(fig, 300)


def memory_children(view: MemoryView) -> list:
    """The table under the memory chart: what fills the fullest core at the fullest op."""
    peak = view.peak
    if peak is None:
        return [html.P("Nothing of this run is placed in L1.", className="hint")]
    capacity = view.capacity
    rows = [("tensor", t.name, t.bytes, f"{t.address:#x}" if t.address is not None else "-") for t in peak.tensors]
    rows += [("circular buffer", name, size, f"{pages} pages") for name, size, pages in peak.cbs]
    total = sum(size for _, _, size, _ in rows)
    body = [
        html.Tr(
            [
                html.Td(kind),
                html.Td(name, className="mono"),
                html.Td(f"{size / 1024:,.1f}", className="num"),
                html.Td(
                    html.Div(
                        className=f"fill {kind.split()[0]}",
                        style={"width": f"{min(100.0, size / capacity * 100):.1f}%"},
                    )
                ),
                html.Td(where, className="mono"),
            ]
        )
        for kind, name, size, where in rows
    ]
    where = f"core {peak.core[0]},{peak.core[1]}" if peak.core else "each core of its grid"
    head = html.Tr([html.Th(h) for h in ("what", "name", "KiB", "share of L1", "address / pages")])
    return [
        html.P(
            [
                html.B(f"Peak {total / 1024:,.1f} KiB of {capacity / 1024:,.0f} KiB"),
                f" on {where} while {peak.op} runs ({total / capacity * 100:.0f}% of L1)",
            ],
            className="peak-line",
        ),
        html.Table([head, *body], className="grid-table"),
    ]
