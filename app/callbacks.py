"""Dash callbacks: unpack inputs, call explorer functions, return outputs."""

from __future__ import annotations

from collections.abc import Callable

from dash import Dash, Input, Output, State, ctx, html, no_update
from dash.exceptions import MissingCallbackContextException

from compiler.errors import TilescopeError
from compiler.target import load_target

from . import ids
from .explorer import (
    Explorer,
    form_override,
    form_values,
    inspector_children,
    mlir_children,
    override_choices,
    summary_children,
)
from .figures import graph_figure, memory_figure, roofline_figure, timeline_figure
from .panels import diff_children, memory_children, runs_data, stats_columns, stats_data
from .runs import target_of

FORM_FIELDS = (
    ids.OV_MEMORY, ids.OV_MEMORY_LAYOUT, ids.OV_GRID_ROWS, ids.OV_GRID_COLS, ids.OV_LAYOUT, ids.OV_DTYPE, ids.OV_FIDELITY,
)


def outcome_list(outcomes: list[dict]) -> html.Ul:
    return html.Ul(
        [
            html.Li(
                [html.Span(o["status"], className=f"badge {o['status']}"), f" {o['spec']}", f" - {o['reason']}" if o["reason"] else ""]
            )
            for o in outcomes
        ],
        className="outcomes",
    )


def _triggered() -> str | None:
    """The id of the input that fired the callback (None when called directly, as tests do)."""
    try:
        return ctx.triggered_id
    except MissingCallbackContextException:
        return None


def _x_window(relayout: dict | None) -> tuple[float, float] | None:
    """The time range (us) a zoom or pan on the timeline set, if it set one."""
    relayout = relayout or {}
    if "xaxis.range[0]" in relayout and "xaxis.range[1]" in relayout:
        return float(relayout["xaxis.range[0]"]), float(relayout["xaxis.range[1]"])
    if isinstance(relayout.get("xaxis.range"), list) and len(relayout["xaxis.range"]) == 2:
        return float(relayout["xaxis.range"][0]), float(relayout["xaxis.range"][1])
    return None


def register(app: Dash, explorer: Explorer) -> dict[str, Callable]:
    """Wire the page; returns the callback functions by name so tests can call them directly."""

    @app.callback(
        Output(ids.RUN_SELECT, "options"),
        Output(ids.RUN_SELECT, "value"),
        Output(ids.OVERRIDE_STATUS, "children"),
        Input(ids.MODEL_SELECT, "value"),
        Input(ids.TARGET_SELECT, "value"),
        Input(ids.POLICY_SELECT, "value"),
    )
    def choose_model(model, target, policy):
        try:
            run_id = explorer.ensure_run(model, target, policy)
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error")
        return explorer.run_options(model, target), run_id, None

    @app.callback(
        Output(ids.MODEL_SELECT, "options"),
        Output(ids.MODEL_SELECT, "value"),
        Output(ids.PAGE_MESSAGE, "children"),
        Output(ids.MODEL_UPLOAD, "contents"),
        Input(ids.MODEL_UPLOAD, "contents"),
        State(ids.MODEL_UPLOAD, "filename"),
        State(ids.TARGET_SELECT, "value"),
        State(ids.POLICY_SELECT, "value"),
        prevent_initial_call=True,
    )
    def upload_model(contents, filename, target, policy):
        """Compile and simulate an uploaded file, then show it; a bad file is one line on the page."""
        if not contents:
            return no_update, no_update, no_update, no_update
        # the upload's contents are cleared, so dropping the same file again loads it again
        try:
            ref = explorer.upload(filename or "upload", contents, target, policy)
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error"), None
        return explorer.model_options(ref), ref, html.P(f"Loaded {filename}.", className="ok"), None

    @app.callback(
        Output(ids.RUN_SELECT, "options", allow_duplicate=True),
        Output(ids.RUN_SELECT, "value", allow_duplicate=True),
        Output(ids.OVERRIDE_STATUS, "children", allow_duplicate=True),
        Input(ids.APPLY_OVERRIDES, "n_clicks"),
        State(ids.RUN_SELECT, "value"),
        State(ids.SELECTED_OP, "data"),
        *(State(f, "value") for f in FORM_FIELDS),
        prevent_initial_call=True,
    )
    def apply_override(_clicks, run_id, selected, *form):
        if run_id is None:
            return no_update, no_update, no_update
        try:
            new_id, outcomes = explorer.apply_override(run_id, form_override(selected, *form))
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error")
        status = outcome_list(outcomes)
        if new_id is None:
            return no_update, no_update, [html.P("Not re-run: an override was rejected.", className="error"), status]
        run = explorer.run(new_id)
        return explorer.run_options(run.model_ref, target_of(run)), new_id, status

    @app.callback(
        Output(ids.GRAPH_VIEW, "figure"),
        Output(ids.MLIR_VIEW, "children"),
        Output(ids.RUN_SUMMARY, "children"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.LEVEL_SELECT, "value"),
        Input(ids.SELECTED_OP, "data"),
    )
    def show_level(run_id, level, selected):
        if run_id is None:
            return no_update, no_update, no_update
        run = explorer.run(run_id)
        compilation = explorer.compilation(run)
        text, spans = compilation.mlir_with_lines(level)
        figure = graph_figure(compilation.graph_at(level), explorer.durations(run_id), selected)
        return figure, mlir_children(text, spans, selected), summary_children(run)

    @app.callback(Output(ids.SELECTED_OP, "data"), Input(ids.GRAPH_VIEW, "clickData"), prevent_initial_call=True)
    def select_in_graph(click):
        return clicked_op(click)

    @app.callback(
        Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        Input(ids.TIMELINE_VIEW, "clickData"),
        prevent_initial_call=True,
    )
    def select_in_timeline(click):
        return clicked_op(click)

    @app.callback(
        Output(ids.OP_INSPECTOR, "children"),
        *(Output(f, "value") for f in FORM_FIELDS),
        Output(ids.APPLY_OVERRIDES, "disabled"),
        Input(ids.SELECTED_OP, "data"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.LEVEL_SELECT, "value"),
    )
    def inspect(selected, run_id, level):
        if run_id is None:
            return (no_update,) * (len(FORM_FIELDS) + 2)
        compilation = explorer.compilation(explorer.run(run_id))
        record = explorer.op_record(run_id, selected) if selected else None
        values = form_values(compilation, selected)
        return (inspector_children(compilation, level, selected, record), *values, values[0] is None)

    @app.callback(
        Output(ids.TIMELINE_VIEW, "figure"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.TIMELINE_VIEW, "relayoutData"),
        State(ids.SELECTED_OP, "data"),
    )
    def show_timeline(run_id, relayout, selected):
        """The whole run, or on zoom and pan the window shown, at one level of detail: the query
        returns a few thousand items whatever the run's size."""
        if run_id is None:
            return no_update
        zoomed = _triggered() == ids.TIMELINE_VIEW
        window = _x_window(relayout) if zoomed or _triggered() is None else None
        if zoomed and window is None and not (relayout or {}).get("xaxis.autorange"):
            return no_update  # not a change of the time axis
        run = explorer.run(run_id)
        kinds = {op.name: op.kind for op in explorer.compilation(run).kernel.ops}
        view = explorer.timeline(run_id, window and (window[0] * 1e3, window[1] * 1e3))
        return timeline_figure(view.items, kinds, selected, window, view.hidden_cores, view.core_zones)

    @app.callback(
        Output(ids.OV_MEMORY, "options"),
        Output(ids.OV_GRID_ROWS, "options"),
        Output(ids.OV_GRID_COLS, "options"),
        Output(ids.OV_DTYPE, "options"),
        Input(ids.TARGET_SELECT, "value"),
    )
    def form_choices(target):
        try:
            return override_choices(load_target(target))
        except TilescopeError:
            return no_update, no_update, no_update, no_update

    @app.callback(
        Output(ids.STATS_TABLE, "data"),
        Output(ids.STATS_TABLE, "columns"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.STATS_BY, "value"),
    )
    def show_statistics(run_id, by):
        if run_id is None:
            return no_update, no_update
        return stats_data(explorer.statistics(run_id, by), by), stats_columns(by)

    @app.callback(
        Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        Input(ids.STATS_TABLE, "active_cell"),
        State(ids.STATS_BY, "value"),
        prevent_initial_call=True,
    )
    def select_in_statistics(cell, by):
        """A row of the per-op table is an op: select it (rows of the per-type table are not)."""
        if not cell or by != "name" or cell.get("row_id") is None:
            return no_update
        return cell["row_id"]

    @app.callback(Output(ids.MEMORY_VIEW, "figure"), Output(ids.MEMORY_PEAK, "children"), Input(ids.RUN_SELECT, "value"))
    def show_memory(run_id):
        if run_id is None:
            return no_update, no_update
        view = explorer.memory(run_id)
        return memory_figure(view["envelope"], view["capacity"], view["peak"]), memory_children(view)

    @app.callback(Output(ids.ROOFLINE_VIEW, "figure"), Input(ids.RUN_SELECT, "value"), Input(ids.SELECTED_OP, "data"))
    def show_roofline(run_id, selected):
        if run_id is None:
            return no_update
        points, roofs, peak = explorer.roofline(run_id)
        return roofline_figure(points, roofs, peak, selected)

    @app.callback(
        Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        Input(ids.ROOFLINE_VIEW, "clickData"),
        prevent_initial_call=True,
    )
    def select_in_roofline(click):
        return clicked_op(click)

    @app.callback(
        Output(ids.RUNS_TABLE, "data"),
        Output(ids.RUNS_TABLE, "selected_rows"),
        Input(ids.RUN_SELECT, "options"),
        State(ids.MODEL_SELECT, "value"),
    )
    def list_runs(_options, model):
        return runs_data(explorer.runs_of(model)), []

    @app.callback(
        Output(ids.DIFF_VIEW, "children"),
        Input(ids.RUNS_TABLE, "selected_row_ids"),
        Input(ids.RUN_SELECT, "value"),
    )
    def show_diff(ticked, run_id):
        """Two ticked runs: the older against the newer. One: it against the shown run. None: the
        shown run against the run it was derived from."""
        if run_id is None:
            return no_update
        pair = diff_pair(ticked or [], explorer.run(run_id))
        if pair is None:
            return html.P("This run has no parent run; tick two runs to compare them.", className="hint")
        return diff_children(explorer.diff(*pair))

    # outlining the selected op's zones is done in the browser: the timeline is not rebuilt
    app.clientside_callback(
        "function(selected, figure) { return window.tilescope.highlightZones(selected, figure); }",
        Output(ids.TIMELINE_VIEW, "figure", allow_duplicate=True),
        Input(ids.SELECTED_OP, "data"),
        State(ids.TIMELINE_VIEW, "figure"),
        prevent_initial_call=True,
    )

    app.clientside_callback(
        "function(children) { return window.tilescope.scrollToMark(children); }",
        Output(ids.MLIR_VIEW, "title"),
        Input(ids.MLIR_VIEW, "children"),
    )
    return {
        f.__name__: f
        for f in (
            choose_model, upload_model, apply_override, show_level, select_in_graph, select_in_timeline, inspect, show_timeline,
            form_choices, show_statistics, select_in_statistics, show_memory, show_roofline, select_in_roofline,
            list_runs, show_diff,
        )
    }


def clicked_op(click: dict | None):
    """The op name a plotly click carries in `customdata`, or no_update for clicks on anything else."""
    points = (click or {}).get("points") or []
    name = points[0].get("customdata") if points else None
    return name if isinstance(name, str) else no_update


def diff_pair(ticked: list[int], shown) -> tuple[int, int] | None:
    """Which two runs the diff view compares (A, B); None when there is nothing to compare."""
    ticked = sorted(int(i) for i in ticked)
    if len(ticked) >= 2:
        return ticked[0], ticked[-1]
    if len(ticked) == 1 and ticked[0] != shown.id:
        return ticked[0], shown.id
    return (shown.parent_id, shown.id) if shown.parent_id is not None else None
