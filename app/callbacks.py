"""Dash callbacks: unpack inputs, call explorer functions, return outputs."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

from dash import ALL, Dash, Input, Output, Patch, State, ctx, html, no_update
from dash.exceptions import MissingCallbackContextException

from compiler.errors import TilescopeError
from compiler.target import load_target
from overrides import parse_item

from . import ids, url_state
from .explorer import (
    Explorer,
    applies_to_choices,
    form_override,
    form_values,
    imported_overrides,
    inspector_children,
    mlir_children,
    override_choices,
    provenance,
    search_ops,
    summary_children,
    with_pending,
)
from .figures import find_zone_histogram, graph_figure, graph_rings, memory_figure, roofline_figure, roofline_ring
from .timelines import aligned_timelines, timeline_figure
from .grouping import GROUP, MAX_NODES
from .panels import diff_children, memory_children, runs_data, stats_columns, stats_data
from .runs import target_of

FORM_FIELDS = (
    ids.OV_MEMORY, ids.OV_MEMORY_LAYOUT, ids.OV_GRID_ROWS, ids.OV_GRID_COLS, ids.OV_LAYOUT, ids.OV_DTYPE, ids.OV_FIDELITY,
    ids.OV_APPLIES_TO, ids.OV_TILE, ids.OV_BLOCK, ids.OV_DOUBLE_BUFFER,
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


JOB_POLL_MS = 200  # how often the page asks after a background job (Dash's default, 1 s, adds up to 1 s to a re-run)


def _reporter(set_progress, what: str):
    """An `on_stage` that shows a job's stage on the page (a background callback's progress)."""
    return lambda stage: set_progress([html.Span([html.Span(className="spinner"), f"{what}: {stage}..."])])


def _triggered() -> str | None:
    """The id of the input that fired the callback (None when called directly, as tests do)."""
    try:
        return ctx.triggered_id
    except MissingCallbackContextException:
        return None


def _first_trace(trace) -> Patch:
    """A patch of a drawn figure that replaces its first trace (a selection ring) alone."""
    patch = Patch()
    patch["data"][0] = trace.to_plotly_json()
    return patch


def _only_triggered(component_id: str) -> bool:
    """Whether `component_id` alone fired the callback (so the rest of the view is as drawn)."""
    try:
        fired = {key.rsplit(".", 1)[0] for key in ctx.triggered_prop_ids}
    except MissingCallbackContextException:
        return False
    return fired == {component_id}


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
    return any(key.startswith("xaxis") and key.endswith(".autorange") and value for key, value in (relayout or {}).items())


def register(app: Dash, explorer: Explorer) -> dict[str, Callable]:
    """Wire the page; returns the callback functions by name so tests can call them directly."""

    @app.callback(
        Output(ids.RUN_SELECT, "options"),
        Output(ids.RUN_SELECT, "value"),
        Output(ids.OVERRIDE_STATUS, "children"),
        Output(ids.URL_STATE, "data"),
        Input(ids.MODEL_SELECT, "value"),
        Input(ids.TARGET_SELECT, "value"),
        Input(ids.POLICY_SELECT, "value"),
        Input(ids.URL_STATE, "data"),
    )
    def choose_model(model, target, policy, linked=None):
        """The newest run of the model on the target under the policy, or the run a link names."""
        try:
            run_id = explorer.ensure_run(model, target, policy)
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error"), no_update
        wanted = (linked or {}).get("run")
        if wanted is not None:
            run = explorer.find_run(wanted)
            if run is not None and (run.model_ref, target_of(run), run.policy) == (model, target, policy):
                run_id = run.id
            linked = {**linked, "run": None}  # shown once; later choices are the user's
        return explorer.run_options(model, target), run_id, None, linked if wanted is not None else no_update

    @app.callback(
        Output(ids.MODEL_SELECT, "options", allow_duplicate=True),
        Output(ids.MODEL_SELECT, "value", allow_duplicate=True),
        Output(ids.TARGET_SELECT, "value"),
        Output(ids.POLICY_SELECT, "value"),
        Output(ids.LEVEL_SELECT, "value"),
        Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        Output(ids.URL_STATE, "data", allow_duplicate=True),
        Output(ids.URL_APPLIED, "data"),
        Input(ids.URL, "href"),
        State(ids.URL_APPLIED, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def open_link(href, applied):
        """On page load, show the view the address names (later address changes are the page's own)."""
        if applied or href is None:
            return (no_update,) * 8
        state = url_state.parse(urlparse(href).query)

        def given(value):
            return no_update if value is None else value

        return (
            explorer.model_options(state.model) if state.model else no_update, given(state.model), given(state.target),
            given(state.policy), given(state.level), given(state.op),
            {"run": state.run, "diff": list(state.diff)}, True,
        )

    @app.callback(
        Output(ids.URL, "search"),
        Input(ids.MODEL_SELECT, "value"),
        Input(ids.TARGET_SELECT, "value"),
        Input(ids.POLICY_SELECT, "value"),
        Input(ids.LEVEL_SELECT, "value"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.SELECTED_OP, "data"),
        Input(ids.RUNS_TABLE, "selected_row_ids"),
        State(ids.URL_APPLIED, "data"),
    )
    def write_link(model, target, policy, level, run_id, selected, ticked, applied):
        if not applied:
            return no_update  # the link has not been read yet
        ticked = sorted(ticked or [])
        return url_state.encode(url_state.ViewState(
            model, target, policy, level, run_id, selected, tuple(ticked) if len(ticked) == 2 else (),
        ))

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
        background=True,
        interval=JOB_POLL_MS,
        progress=[Output(ids.UPLOAD_PROGRESS, "children")],
        progress_default=[""],
        running=[(Output(ids.MODEL_UPLOAD, "disabled"), True, False)],
    )
    def upload_model(set_progress, contents, filename, target, policy):
        """Compile and simulate an uploaded file, then show it; a bad file is one line on the page."""
        if not contents:
            return no_update, no_update, no_update, no_update
        explorer.in_new_process()
        # the upload's contents are cleared, so dropping the same file again loads it again
        try:
            ref = explorer.upload(filename or "upload", contents, target, policy, on_stage=_reporter(set_progress, filename))
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error"), None
        return explorer.model_options(ref), ref, html.P(f"Loaded {filename}.", className="ok"), None

    @app.callback(
        Output(ids.RUN_SELECT, "options", allow_duplicate=True),
        Output(ids.RUN_SELECT, "value", allow_duplicate=True),
        Output(ids.OVERRIDE_STATUS, "children", allow_duplicate=True),
        Output(ids.PENDING_OVERRIDES, "data", allow_duplicate=True),
        Input(ids.APPLY_OVERRIDES, "n_clicks"),
        State(ids.RUN_SELECT, "value"),
        State(ids.SELECTED_OP, "data"),
        State(ids.PENDING_OVERRIDES, "data"),
        *(State(f, "value") for f in FORM_FIELDS),
        prevent_initial_call=True,
        background=True,
        interval=JOB_POLL_MS,
        progress=[Output(ids.APPLY_PROGRESS, "children")],
        progress_default=[""],
        running=[(Output(ids.APPLY_OVERRIDES, "disabled"), True, False)],
    )
    def apply_override(set_progress, _clicks, run_id, selected, pending, *form):
        """Re-run with the pending overrides and the form's override of the selected op (left out
        when there are pending ones and the form still shows the op as it is)."""
        if run_id is None:
            return no_update, no_update, no_update, no_update
        explorer.in_new_process()
        try:
            items = [parse_item(s) for s in pending or []]
            if selected or not items:
                override = form_override(selected, *form)
                unchanged = tuple(form) == form_values(explorer.compilation(explorer.run(run_id)), selected)[: len(form)]
                if not (items and unchanged):
                    items = [parse_item(s) for s in with_pending(pending or [], override)]
            new_id, outcomes = explorer.apply_overrides(run_id, items, on_stage=_reporter(set_progress, "re-run"))
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error"), no_update
        status = outcome_list(outcomes)
        if new_id is None:
            return no_update, no_update, [html.P("Not re-run: an override was rejected.", className="error"), status], no_update
        run = explorer.run(new_id)
        return explorer.run_options(run.model_ref, target_of(run)), new_id, status, []

    @app.callback(
        Output(ids.PENDING_OVERRIDES, "data"),
        Output(ids.OVERRIDE_STATUS, "children", allow_duplicate=True),
        Input(ids.STAGE_OVERRIDE, "n_clicks"),
        State(ids.SELECTED_OP, "data"),
        State(ids.PENDING_OVERRIDES, "data"),
        *(State(f, "value") for f in FORM_FIELDS),
        prevent_initial_call=True,
    )
    def stage_override(_clicks, selected, pending, *form):
        """Keep the form's override for the next re-run, to change several ops at once."""
        try:
            return with_pending(pending or [], form_override(selected, *form)), None
        except TilescopeError as err:
            return no_update, html.P(str(err), className="error")

    @app.callback(
        Output(ids.PENDING_OVERRIDES, "data", allow_duplicate=True),
        Input({"type": ids.PENDING_REMOVE, "index": ALL}, "n_clicks"),
        State(ids.PENDING_OVERRIDES, "data"),
        prevent_initial_call=True,
    )
    def remove_pending(clicks, pending):
        which = _triggered()
        if not isinstance(which, dict) or not any(clicks):
            return no_update  # the list was redrawn, nothing clicked
        return [s for i, s in enumerate(pending or []) if i != which["index"]]

    @app.callback(Output(ids.PENDING_LIST, "children"), Input(ids.PENDING_OVERRIDES, "data"))
    def show_pending(pending):
        if not pending:
            return html.P("None. \"Add to pending\" keeps the form's override, to re-run several at once.", className="hint")
        return html.Ul([
            html.Li([html.Code(s), html.Button("×", id={"type": ids.PENDING_REMOVE, "index": i}, n_clicks=0,
                                               className="remove", title="remove")])
            for i, s in enumerate(pending)
        ], className="pending-items")

    @app.callback(
        Output(ids.PENDING_OVERRIDES, "data", allow_duplicate=True),
        Output(ids.OVERRIDE_STATUS, "children", allow_duplicate=True),
        Output(ids.OVERRIDES_UPLOAD, "contents"),
        Input(ids.OVERRIDES_UPLOAD, "contents"),
        State(ids.OVERRIDES_UPLOAD, "filename"),
        State(ids.PENDING_OVERRIDES, "data"),
        prevent_initial_call=True,
    )
    def import_overrides(contents, filename, pending):
        """A file of overrides (tilescope JSON, TT-Explorer JSON or tt-mlir options) joins the
        pending list; the items it could not read are listed, one line each."""
        if not contents:
            return no_update, no_update, no_update
        try:
            found, problems = imported_overrides(filename or "overrides", contents)
        except TilescopeError as err:
            return no_update, html.P(str(err), className="error"), None
        for override in found:
            pending = with_pending(pending or [], override)
        lines = [html.P(f"{filename}: {len(found)} override(s) added to pending", className="ok")]
        lines += [html.P(p, className="error") for p in problems]
        return pending or [], lines, None

    @app.callback(
        Output(ids.EXPORT_DOWNLOAD, "data"),
        Output(ids.PAGE_MESSAGE, "children", allow_duplicate=True),
        Input(ids.EXPORT_BUTTON, "n_clicks"),
        State(ids.RUN_SELECT, "value"),
        State(ids.EXPORT_FORMAT, "value"),
        prevent_initial_call=True,
    )
    def export_run(_clicks, run_id, fmt):
        if run_id is None:
            return no_update, no_update
        try:
            text, filename = explorer.export(run_id, fmt)
        except TilescopeError as err:
            return no_update, html.P(str(err), className="error")
        return {"content": text, "filename": filename}, None

    @app.callback(
        Output(ids.GRAPH_VIEW, "figure"),
        Output(ids.GRAPH_GROUPS, "options"),
        Output(ids.GRAPH_GROUPS, "value"),
        Output(ids.GRAPH_NOTE, "children"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.LEVEL_SELECT, "value"),
        Input(ids.SELECTED_OP, "data"),
        Input(ids.GRAPH_GROUPS, "value"),
        Input(ids.GRAPH_COLOUR, "value"),
        Input(ids.GRAPH_SEARCH, "value"),
        Input(ids.RUNS_TABLE, "selected_row_ids"),
    )
    def show_graph(run_id, level, selected, expanded, mode, pattern, ticked):
        """The selected level's graph, grouped by name scope: the groups the user opened (the
        default opening on a new model), plus those holding the op selected elsewhere."""
        trigger = _triggered()
        if run_id is None or (trigger == ids.RUNS_TABLE and mode != "delta"):
            return (no_update,) * 4
        run = explorer.run(run_id)
        compilation = explorer.compilation(run)
        graph = compilation.graph_at(level)
        tree = explorer.scope_tree(run, level)
        groups = [g for g in (expanded or []) if g in tree.members]
        if expanded is None or (expanded and not groups and trigger != ids.GRAPH_GROUPS):
            groups = list(tree.default_expansion())  # a new page or another model
        shown = provenance(compilation, level, selected)
        if trigger in (ids.SELECTED_OP, None):
            groups += [g for name in shown for g in tree.ancestors_of(name)]  # reveal the selected op
        groups = list(dict.fromkeys(groups))  # in the order they were opened
        # a selection among the nodes drawn moves the ring only: the figure is patched, not redrawn
        ring_only = _only_triggered(ids.SELECTED_OP) and groups == (expanded or [])
        notes = []
        view = tree.view(groups)
        while len(view.nodes) > MAX_NODES:  # the last groups opened close again
            closed = groups.pop()
            view = tree.view(groups)
            notes = [html.Span(f"{closed.removeprefix(GROUP)} stays closed: at most {MAX_NODES} nodes are drawn; "
                               "open a group inside it, or close another", className="error")]
        try:
            matches = search_ops(graph, pattern)
        except TilescopeError as err:
            matches, notes = [], [*notes, html.Span(str(err), className="error")]
        if pattern and not notes:
            holding = len({view.node_of[m] for m in matches})
            notes.append(html.Span(f"{len(matches)} ops match {pattern!r}, in {holding} nodes", className="matches"))
        baseline = None
        if mode == "delta":
            pair = diff_pair(ticked or [], run)
            baseline = pair[0] if pair else None
            notes.append(html.Span(
                f"delta vs run #{baseline}" if baseline else "no baseline: this run has no parent; tick a run in Runs & diff",
                className="hint" if baseline else "error",
            ))
        notes.insert(0, html.Span(f"{len(view.nodes)} nodes for {len(graph.ops):,} ops", className="hint"))
        metrics = explorer.op_metrics(run_id, compilation, baseline)
        if ring_only:
            return _first_trace(graph_rings(view, shown)), no_update, no_update, no_update
        figure = graph_figure(view, graph, metrics, mode, shown, matches)
        options = [{"label": g.removeprefix(GROUP), "value": g} for g in tree.groups]
        return figure, options, groups, notes

    @app.callback(
        Output(ids.MLIR_VIEW, "children"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.LEVEL_SELECT, "value"),
        Input(ids.SELECTED_OP, "data"),
    )
    def show_mlir(run_id, level, selected):
        if run_id is None:
            return no_update
        compilation = explorer.compilation(explorer.run(run_id))
        text, spans = compilation.mlir_with_lines(level)
        return mlir_children(text, spans, provenance(compilation, level, selected))

    @app.callback(Output(ids.RUN_SUMMARY, "children"), Input(ids.RUN_SELECT, "value"))
    def show_summary(run_id):
        return no_update if run_id is None else summary_children(explorer.run(run_id))

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
        Output(ids.OV_APPLIES_TO, "options"),
        Output(ids.APPLY_OVERRIDES, "disabled"),
        Output(ids.STAGE_OVERRIDE, "disabled"),
        Input(ids.SELECTED_OP, "data"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.LEVEL_SELECT, "value"),
        Input(ids.PENDING_OVERRIDES, "data"),
    )
    def inspect(selected, run_id, level, pending=None):
        if run_id is None:
            return (no_update,) * (len(FORM_FIELDS) + 4)
        if _triggered() == ids.PENDING_OVERRIDES:  # only whether Apply has something to apply
            return (*(no_update,) * (len(FORM_FIELDS) + 2), not selected and not pending, no_update)
        compilation = explorer.compilation(explorer.run(run_id))
        record = explorer.op_record(run_id, selected) if selected else None
        values = form_values(compilation, selected)
        shown = provenance(compilation, level, selected)
        no_op = values[0] is None
        return (
            inspector_children(compilation, level, shown[0] if shown else selected, record), *values,
            applies_to_choices(compilation, selected), no_op and not pending, no_op,
        )

    @app.callback(
        Output(ids.TIMELINE_VIEW, "figure"),
        Input(ids.RUN_SELECT, "value"),
        Input(ids.TIMELINE_VIEW, "relayoutData"),
        Input(ids.TIMELINE_SHOW, "value"),
        State(ids.SELECTED_OP, "data"),
    )
    def show_timeline(run_id, relayout, shown, selected):
        """The whole run, or on zoom and pan the window shown, at one level of detail: the query
        returns a few thousand items whatever the run's size. `shown` adds engine rows and counters."""
        if run_id is None:
            return no_update
        # a zoom alone: the first draw's relayout event can come with the run, which must not be lost
        zoomed = _only_triggered(ids.TIMELINE_VIEW)
        window = _x_window(relayout) if zoomed or _triggered() is None else None
        if zoomed and window is None and not _x_reset(relayout):
            return no_update  # not a change of the time axis
        if _triggered() == ids.TIMELINE_SHOW:
            window = _x_window(relayout)  # keep the window when rows are added or taken away
        shown = shown or []
        run = explorer.run(run_id)
        kinds = {op.name: op.kind for op in explorer.compilation(run).kernel.ops}
        view = explorer.timeline(run_id, window and (window[0] * 1e3, window[1] * 1e3), engines="engines" in shown)
        counters = explorer.counters(run_id) if "counters" in shown else None
        return timeline_figure(view.items, kinds, selected, window, view.hidden_cores, view.core_zones, counters)

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
        if _triggered() == ids.STATS_TABLE and by == "kind" and cell and cell.get("row_id"):
            kind = cell["row_id"]
            return find_zone_histogram(explorer.find_zone(run_id, kind=kind), f"ops of type {kind}")
        return find_zone_histogram(explorer.find_zone(run_id, op=selected), selected or "")

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
        if _only_triggered(ids.SELECTED_OP):  # the run's points are drawn already: move the ring
            return _first_trace(roofline_ring(points, selected))
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
        Output(ids.URL_STATE, "data", allow_duplicate=True),
        Input(ids.RUN_SELECT, "options"),
        State(ids.MODEL_SELECT, "value"),
        State(ids.URL_STATE, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def list_runs(_options, model, linked=None):
        """The model's runs; the pair a link compares comes ticked."""
        rows = runs_data(explorer.runs_of(model))
        pair = (linked or {}).get("diff") or []
        ticked = [i for i, row in enumerate(rows) if row["id"] in pair]
        if not pair:
            return rows, ticked, no_update
        return rows, ticked, {**linked, "diff": []}

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
        found = explorer.diff(*pair)
        a, b = (explorer.op_records(i) for i in pair)
        kinds = {r.name: r.kind for r in (*a, *b)}
        changed = {op["name"] for op in found["ops"] if op["changes"]}
        timelines = aligned_timelines(a, b, (f"A #{pair[0]}", f"B #{pair[1]}"), kinds, changed)
        return diff_children(found, timelines)

    # in the browser, to save a round trip before the views can ask for the selection
    app.clientside_callback(
        "function(click, expanded) { return window.tilescope.clickNode(click, expanded); }",
        Output(ids.SELECTED_OP, "data"),
        Output(ids.GRAPH_GROUPS, "value", allow_duplicate=True),
        Input(ids.GRAPH_VIEW, "clickData"),
        State(ids.GRAPH_GROUPS, "value"),
        prevent_initial_call=True,
    )

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
            choose_model, open_link, write_link, upload_model, apply_override, show_graph, show_mlir, show_summary, stage_override, remove_pending, show_pending, import_overrides, export_run, select_in_timeline, inspect, show_timeline,
            form_choices, show_statistics, select_in_statistics, find_zone, show_memory, show_roofline, select_in_roofline,
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
