"""Dash callbacks of the analysis tabs: the timeline, statistics with find zone, memory, roofline,
and the runs with their diff. All but the timeline are drawn when their tab is open (and again when
it opens): a re-run or a selection does not wait for views nobody sees."""

from __future__ import annotations

from collections.abc import Callable

from dash import Dash, Input, Output, State, html, no_update

from . import ids
from .callback_context import clicked_op, diff_pair, first_trace, only_triggered, triggered
from ..workbench.explorer import Explorer
from .figures import find_zone_histogram, memory_figure, roofline_figure, roofline_ring
from .panels import diff_children, memory_children, runs_data, stats_columns, stats_data
from .timelines import aligned_timelines, timeline_figure


def _x_window(relayout: dict | None) -> tuple[float, float] | None:
    """The time range (us) a zoom or pan on the timeline set, if it set one: on the zones' axis
    (xaxis) or a counter plot's (xaxis2, ...), which share it."""
    relayout = relayout or {}
    for axis in sorted({key.split(".")[0] for key in relayout if key.startswith("xaxis")}):
        if f"{axis}.range[0]" in relayout and f"{axis}.range[1]" in relayout:
            return float(relayout[f"{axis}.range[0]"]), float(relayout[f"{axis}.range[1]"])
        if isinstance(relayout.get(f"{axis}.range"), list) and len(relayout[f"{axis}.range"]) == 2:
            return float(relayout[f"{axis}.range"][0]), float(relayout[f"{axis}.range"][1])
    return None


def _x_reset(relayout: dict | None) -> bool:
    """Whether the time axis went back to the whole run (a double click, or the home button)."""
    return any(
        key.startswith("xaxis") and key.endswith(".autorange") and value for key, value in (relayout or {}).items()
    )


def register(app: Dash, explorer: Explorer) -> dict[str, Callable]:
    """Wire the analysis tabs; returns the callback functions by name so tests can call them directly."""

    @app.callback(
        Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        Input(ids.TIMELINE_VIEW, "clickData"),
        prevent_initial_call=True,
    )
    def select_in_timeline(click):
        return clicked_op(click)

    # only the relayout events that move the time axis reach the server: a request for any other
    # (a resize, as the page grows a scroll bar) would replace a request still running for a new run
    # (Dash keeps the newest of a callback's requests) and, having nothing to draw, lose that run
    app.clientside_callback(
        "function(relayout) { return window.tilescope.timeAxisChange(relayout); }",
        Output(ids.TIMELINE_ZOOM, "data"),
        Input(ids.TIMELINE_VIEW, "relayoutData"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output(ids.TIMELINE_VIEW, "figure"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.TIMELINE_ZOOM, "data"),
        Input(ids.TIMELINE_SHOW, "value"),
        State(ids.SELECTED_OP, "data"),
    )
    def show_timeline(run_id, relayout, shown, selected):
        """The whole run, or on zoom and pan the window shown, at one level of detail: the query
        returns a few thousand items whatever the run's size. `shown` adds engine rows and counters."""
        if run_id is None:
            return no_update
        # a zoom alone: the first draw's relayout event can come with the run, which must not be lost
        zoomed = only_triggered(ids.TIMELINE_ZOOM)
        window = _x_window(relayout) if zoomed or triggered() is None else None
        if zoomed and window is None and not _x_reset(relayout):
            return no_update  # not a change of the time axis
        if triggered() == ids.TIMELINE_SHOW:
            window = _x_window(relayout)  # keep the window when rows are added or taken away
        shown = shown or []
        run = explorer.run(run_id)
        kinds = {op.name: op.kind for op in explorer.compilation(run).kernel.ops}
        view = explorer.timeline(run_id, window and (window[0] * 1e3, window[1] * 1e3), engines="engines" in shown)
        counters = explorer.counters(run_id) if "counters" in shown else None
        return timeline_figure(view.items, kinds, selected, window, view.hidden_cores, view.core_zones, counters)

    @app.callback(
        Output(ids.STATS_TABLE, "data"),
        Output(ids.STATS_TABLE, "columns"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.STATS_BY, "value"),
        Input(ids.ANALYSIS_TABS, "value"),
    )
    def show_statistics(run_id, by, tab="statistics"):
        if run_id is None or tab != "statistics":
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

    @app.callback(
        Output(ids.FIND_ZONE, "figure"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.SELECTED_OP, "data"),
        Input(ids.STATS_TABLE, "active_cell"),
        Input(ids.ANALYSIS_TABS, "value"),
        State(ids.STATS_BY, "value"),
    )
    def find_zone(run_id, selected, cell, tab, by):
        """The spread of the selected op's zones over its cores, or of the ops of the type whose
        row was clicked in the per-type table. Drawn when its tab is open: a selection elsewhere
        should not wait for it."""
        if run_id is None or tab != "statistics":
            return no_update
        if triggered() == ids.STATS_TABLE and by == "kind" and cell and cell.get("row_id"):
            kind = cell["row_id"]
            return find_zone_histogram(explorer.find_zone(run_id, kind=kind), f"ops of type {kind}")
        return find_zone_histogram(explorer.find_zone(run_id, op=selected), selected or "")

    @app.callback(
        Output(ids.MEMORY_VIEW, "figure"),
        Output(ids.MEMORY_PEAK, "children"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.ANALYSIS_TABS, "value"),
    )
    def show_memory(run_id, tab="memory"):
        if run_id is None or tab != "memory":
            return no_update, no_update
        view = explorer.memory(run_id)
        return memory_figure(view["envelope"], view["capacity"], view["peak"]), memory_children(view)

    @app.callback(
        Output(ids.ROOFLINE_VIEW, "figure"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.SELECTED_OP, "data"),
        Input(ids.ANALYSIS_TABS, "value"),
    )
    def show_roofline(run_id, selected, tab="roofline"):
        if run_id is None or tab != "roofline":
            return no_update
        points, roofs, peak = explorer.roofline(run_id)
        if only_triggered(ids.SELECTED_OP):  # the run's points are drawn already: move the ring
            return first_trace(roofline_ring(points, selected))
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
        Output(ids.RUNS_TABLE, "selected_row_ids"),
        Output(ids.URL_STATE, "data", allow_duplicate=True),
        Input(ids.RUN_SELECT, "options"),
        State(ids.MODEL_SELECT, "value"),
        State(ids.URL_STATE, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def list_runs(_options, model, linked=None):
        """The model's runs; the pair a link compares comes ticked. The table derives the ticked
        rows' ids only from a user's clicks, so they are set here with the rows: the diff and the
        graph read the ids."""
        rows = runs_data(explorer.runs_of(model))
        pair = (linked or {}).get("diff") or []
        ticked = [i for i, row in enumerate(rows) if row["id"] in pair]
        ticked_ids = [rows[i]["id"] for i in ticked]
        if not pair:
            return rows, ticked, ticked_ids, no_update
        return rows, ticked, ticked_ids, {**linked, "diff": []}

    @app.callback(
        Output(ids.DIFF_VIEW, "children"),
        Input(ids.RUNS_TABLE, "selected_row_ids"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.ANALYSIS_TABS, "value"),
    )
    def show_diff(ticked, run_id, tab="runs"):
        """Two ticked runs: the older against the newer. One: it against the shown run. None: the
        shown run against the run it was derived from."""
        if run_id is None or tab != "runs":
            return no_update
        pair = diff_pair(ticked or [], explorer.run(run_id))
        if pair is None:
            return html.P("This run has no parent run; tick two runs to compare them.", className="hint")
        found = explorer.diff(*pair)
        a, b = (explorer.op_records(i) for i in pair)
        kinds = {r.name: r.kind for r in (*a, *b)}
        changed = {op["name"] for op in found["ops"] if op["changes"]}
        timelines = aligned_timelines(a, b, (f"A #{pair[0]}", f"B #{pair[1]}"), kinds, changed)
        return diff_children(found, timelines)

    # outlining the selected op's zones is done in the browser, by a relayout of the drawn figure
    # (its output is never set: the timeline is not rebuilt)
    app.clientside_callback(
        "function(selected, figure) { return window.tilescope.highlightZones(selected, figure); }",
        Output(ids.TIMELINE_VIEW, "figure", allow_duplicate=True),
        Input(ids.SELECTED_OP, "data"),
        State(ids.TIMELINE_VIEW, "figure"),
        prevent_initial_call=True,
    )
    return {
        f.__name__: f
        for f in (
            select_in_timeline,
            show_timeline,
            show_statistics,
            select_in_statistics,
            find_zone,
            show_memory,
            show_roofline,
            select_in_roofline,
            list_runs,
            show_diff,
        )
    }
