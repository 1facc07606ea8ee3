"""The run summary under the run bar: the shown run's totals, settings and overrides, and its
export (overrides, trace or ops table)."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from compiler.errors import TilescopeError
from overrides import format_item

from .. import ids
from ..panel import PageContext, Panel, Wiring
from ..style import error
from ...workbench.run_export import EXPORT_FORMATS
from ...workbench.run_view import RunView


def layout(_page: PageContext) -> html.Div:
    export = html.Div(
        [
            dcc.Dropdown(
                id=ids.EXPORT_FORMAT,
                options=[{"label": label, "value": k} for k, (label, _) in EXPORT_FORMATS.items()],
                value="chrome",
                clearable=False,
                className="export-format",
            ),
            html.Button("Export", id=ids.EXPORT_BUTTON, n_clicks=0, className="secondary"),
            dcc.Download(id=ids.EXPORT_DOWNLOAD),
        ],
        className="export",
    )
    return html.Div([html.Div(id=ids.RUN_SUMMARY, className="run-summary"), export], className="summary-row")


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(output=Output(ids.RUN_SUMMARY, "children"), inputs=dict(run_id=Input(ids.RUN_SELECT, "value")))
    def show_summary(run_id):
        return no_update if run_id is None else summary_children(explorer.view(run_id))

    @wiring.app.callback(
        output=dict(
            download=Output(ids.EXPORT_DOWNLOAD, "data"),
            message=Output(ids.PAGE_MESSAGE, "children", allow_duplicate=True),
        ),
        inputs=dict(_clicks=Input(ids.EXPORT_BUTTON, "n_clicks")),
        state=dict(run_id=State(ids.RUN_SELECT, "value"), fmt=State(ids.EXPORT_FORMAT, "value")),
        prevent_initial_call=True,
    )
    def export_run(_clicks, run_id, fmt):
        if run_id is None:
            return no_update
        try:
            text, filename = explorer.export(run_id, fmt)
        except TilescopeError as err:
            return dict(download=no_update, message=error(str(err)))
        return dict(download={"content": text, "filename": filename}, message=None)

    return {"show_summary": show_summary, "export_run": export_run}


PANEL = Panel("bar", "Summary", "summary", layout, register)


def summary_children(run: RunView) -> list:
    parts = [
        html.Span(f"run #{run.id}", className="pill"),
        html.Span(f"{run.model_name} on {run.target_name}"),
        html.Span(f"total {run.total_ns / 1e3:,.1f} us", className="metric"),
        html.Span(f"device busy {run.device_ns / 1e3:,.1f} us", className="metric"),
        html.Span(f"{run.policy} policy, {run.dispatch} dispatch"),
    ]
    if run.overrides:
        parts.append(html.Span("overrides: " + ", ".join(format_item(o) for o in run.overrides), className="overrides"))
    return parts
