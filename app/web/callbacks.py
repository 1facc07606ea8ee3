"""Dash callbacks of the run bar, graph, MLIR, inspector and override form: unpack inputs, call
explorer functions, return outputs. The analysis tabs' are in analysis_callbacks."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

from dash import ALL, Dash, Input, Output, State, html, no_update
from dash.background_callback.managers import BaseBackgroundCallbackManager

from compiler.errors import TilescopeError
from compiler.override import OpOverride

from . import analysis_callbacks, ids, url_state
from .callback_context import diff_pair, first_trace, only_triggered, triggered
from ..workbench.explorer import (
    Explorer,
    applies_to_choices,
    form_override,
    form_values,
    imported_overrides,
    override_choices,
    pending_overrides,
    provenance,
    search_ops,
    with_pending,
)
from .figures import graph_figure, graph_rings
from ..workbench.grouping import GROUP, MAX_NODES
from .text_views import inspector_children, mlir_children, summary_children
from ..workbench.runs import target_of

FORM_FIELDS = (
    ids.OV_MEMORY,
    ids.OV_MEMORY_LAYOUT,
    ids.OV_GRID_ROWS,
    ids.OV_GRID_COLS,
    ids.OV_LAYOUT,
    ids.OV_DTYPE,
    ids.OV_FIDELITY,
    ids.OV_APPLIES_TO,
    ids.OV_TILE,
    ids.OV_BLOCK,
    ids.OV_DOUBLE_BUFFER,
)


def outcome_list(outcomes: list[dict]) -> html.Ul:
    return html.Ul(
        [
            html.Li(
                [
                    html.Span(o["status"], className=f"badge {o['status']}"),
                    f" {o['spec']}",
                    f" - {o['reason']}" if o["reason"] else "",
                ]
            )
            for o in outcomes
        ],
        className="outcomes",
    )


def _values(options: list) -> set:
    """The values a dcc menu offers, given as plain values or {label, value} dicts."""
    return {o["value"] if isinstance(o, dict) else o for o in options or []}


JOB_POLL_MS = 100  # how often the page asks after a background job (Dash's default, 1 s, adds up to 1 s to a re-run)
SHOWN_PENDING = 100  # pending overrides listed on the page, each with its remove button


def _reporter(set_progress, what: str):
    """An `on_stage` that shows a job's stage on the page (a background callback's progress)."""
    return lambda stage: set_progress([html.Span([html.Span(className="spinner"), f"{what}: {stage}..."])])


def register(
    app: Dash, explorer: Explorer, rerun_jobs: BaseBackgroundCallbackManager | None = None
) -> dict[str, Callable]:
    """Wire the page; returns the callback functions by name so tests can call them directly.
    Re-runs go to `rerun_jobs` (the app's background callback manager if None)."""

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
        State(ids.TARGET_SELECT, "options"),
        State(ids.POLICY_SELECT, "options"),
        prevent_initial_call="initial_duplicate",
    )
    def open_link(href, applied, targets=None, policies=None):
        """On page load, show the view the address names (later address changes are the page's own).
        A target or policy the page does not offer is left as it is: a menu would drop it."""
        if applied or href is None:
            return (no_update,) * 8
        state = url_state.parse(urlparse(href).query)

        def given(value, offered=None):
            if value is None or (offered is not None and value not in _values(offered)):
                return no_update
            return value

        return (
            explorer.model_options(state.model) if state.model else no_update,
            given(state.model),
            given(state.target, targets),
            given(state.policy, policies),
            given(state.level),
            given(state.op),
            {"run": state.run, "diff": list(state.diff)},
            True,
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
        return url_state.encode(
            url_state.ViewState(
                model,
                target,
                policy,
                level,
                run_id,
                selected,
                tuple(ticked) if len(ticked) == 2 else (),
            )
        )

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
            ref = explorer.upload(
                filename or "upload", contents, target, policy, on_stage=_reporter(set_progress, filename)
            )
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
        manager=rerun_jobs,  # in a thread: the new run's views then find its compilation cached
        interval=JOB_POLL_MS,
        progress=[Output(ids.APPLY_PROGRESS, "children")],
        progress_default=[""],
        running=[(Output(ids.APPLY_OVERRIDES, "disabled"), True, False)],
    )
    def apply_override(set_progress, _clicks, run_id, selected, pending, *form):
        """Re-run with the pending overrides and the form's override of the selected op."""
        if run_id is None:
            return no_update, no_update, no_update, no_update
        explorer.in_new_process()
        try:
            items = rerun_overrides(run_id, selected, pending, form)
            new_id, outcomes = explorer.apply_overrides(run_id, items, on_stage=_reporter(set_progress, "re-run"))
        except TilescopeError as err:
            return no_update, no_update, html.P(str(err), className="error"), no_update
        status = outcome_list(outcomes)
        if new_id is None:
            return (
                no_update,
                no_update,
                [html.P("Not re-run: an override was rejected.", className="error"), status],
                no_update,
            )
        run = explorer.run(new_id)
        return explorer.run_options(run.model_ref, target_of(run)), new_id, status, []

    def rerun_overrides(run_id, selected, pending, form) -> list[OpOverride]:
        """What a re-run applies: the pending overrides and the form's override of the selected op
        (left out when there are pending ones and the form still shows the op as it is)."""
        items = pending_overrides(pending or [])
        if selected or not items:
            override = form_override(selected, *form)
            unchanged = tuple(form) == form_values(explorer.compilation(explorer.run(run_id)), selected)[: len(form)]
            if not (items and unchanged):
                items = [*(o for o in items if o.key != override.key), override]  # as with_pending orders them
        return items

    @app.callback(
        Output(ids.RUN_SELECT, "options", allow_duplicate=True),
        Input(ids.RUNS_POLL, "n_intervals"),
        State(ids.MODEL_SELECT, "value"),
        State(ids.TARGET_SELECT, "value"),
        State(ids.RUN_SELECT, "options"),
        prevent_initial_call=True,
    )
    def refresh_runs(_ticks, model, target, options):
        """Runs stored by others on a shared database (a CI pipeline, a teammate, the CLI) join the
        run list, and so the runs table, without a reload; the shown run stays."""
        if not model or not target:
            return no_update
        newest = explorer.newest_run_id(model, target)
        if newest is None or newest <= max((o["value"] for o in options or []), default=0):
            return no_update
        return explorer.run_options(model, target)

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
        which = triggered()
        if not isinstance(which, dict) or not any(clicks):
            return no_update  # the list was redrawn, nothing clicked
        return [s for i, s in enumerate(pending or []) if i != which["index"]]

    @app.callback(Output(ids.PENDING_LIST, "children"), Input(ids.PENDING_OVERRIDES, "data"))
    def show_pending(pending):
        if not pending:
            return html.P(
                'None. "Add to pending" keeps the form\'s override, to re-run several at once.', className="hint"
            )
        items = [
            html.Li(
                [
                    html.Code(s),
                    html.Button(
                        "×", id={"type": ids.PENDING_REMOVE, "index": i}, n_clicks=0, className="remove", title="remove"
                    ),
                ]
            )
            for i, s in enumerate(pending[:SHOWN_PENDING])
        ]
        if len(pending) > SHOWN_PENDING:  # all are applied; a page of 100,000 rows would not be read
            items.append(html.Li(f"... and {len(pending) - SHOWN_PENDING:,} more", className="hint"))
        return html.Ul(items, className="pending-items")

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
        try:
            pending = with_pending(pending or [], *found)
        except TilescopeError as err:
            return no_update, html.P(str(err), className="error"), None
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
        trigger = triggered()
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
        view = tree.view(groups)
        # a selection among the nodes drawn moves the ring only: the figure is patched, not redrawn
        if only_triggered(ids.SELECTED_OP) and groups == (expanded or []):
            return first_trace(graph_rings(view, shown)), no_update, no_update, no_update
        notes = []
        if len(view.nodes) > MAX_NODES:  # the last groups opened close again
            fits = tree.fitting(groups)
            closed, groups = groups[len(fits) :], fits
            view = tree.view(groups)
            which = closed[0].removeprefix(GROUP) + (f" and {len(closed) - 1:,} more groups" if len(closed) > 1 else "")
            notes = [
                html.Span(
                    f"{which} stay{'s' * (len(closed) == 1)} closed: at most {MAX_NODES} nodes are drawn; "
                    "open a group inside it, or close another",
                    className="error",
                )
            ]
        try:
            matches = search_ops(graph, pattern)
        except TilescopeError as err:
            matches, notes = [], [*notes, html.Span(str(err), className="error")]
        if pattern and not notes:
            holding = len({view.node_of[m] for m in matches})
            said = f"{len(matches)} op matches" if len(matches) == 1 else f"{len(matches)} ops match"
            notes.append(html.Span(f"{said} {pattern!r}, in {holding} node{'s' * (holding != 1)}", className="matches"))
        baseline = None
        if mode == "delta":
            pair = diff_pair(ticked or [], run)
            baseline = pair[0] if pair else None
            notes.append(
                html.Span(
                    f"delta vs run #{baseline}"
                    if baseline
                    else "no baseline: this run has no parent; tick a run in Runs & diff",
                    className="hint" if baseline else "error",
                )
            )
        notes.insert(0, html.Span(f"{len(view.nodes)} nodes for {len(graph.ops):,} ops", className="hint"))
        metrics = explorer.op_metrics(run_id, compilation, baseline)
        figure = graph_figure(view, graph, metrics, mode, shown, matches)
        # the groups open and those drawn closed, which can be opened next (all of a 100k-op
        # model's groups, tens of thousands, made the page's dropdown freeze the browser)
        offered = dict.fromkeys([*groups, *(n.id for n in view.nodes if n.id in tree.members)])
        options = [{"label": g.removeprefix(GROUP), "value": g} for g in offered]
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
        if triggered() == ids.PENDING_OVERRIDES:  # only whether Apply has something to apply
            return (*(no_update,) * (len(FORM_FIELDS) + 2), not selected and not pending, no_update)
        compilation = explorer.compilation(explorer.run(run_id))
        record = explorer.op_record(run_id, selected) if selected else None
        values = form_values(compilation, selected)
        shown = provenance(compilation, level, selected)
        no_op = values[0] is None
        return (
            inspector_children(compilation, level, shown[0] if shown else selected, record),
            *values,
            applies_to_choices(compilation, selected),
            no_op and not pending,
            no_op,
        )

    @app.callback(
        Output(ids.OV_MEMORY, "options"),
        Output(ids.OV_GRID_ROWS, "options"),
        Output(ids.OV_GRID_COLS, "options"),
        Output(ids.OV_DTYPE, "options"),
        Input(ids.TARGET_SELECT, "value"),
    )
    def form_choices(target):
        try:
            return override_choices(explorer.target(target))
        except TilescopeError:
            return no_update, no_update, no_update, no_update

    # before the browser-side callbacks below: registered after them, the timeline's outline was
    # drawn ahead of the views and a selection took ~120 ms longer on bert-base (measured)
    analysis = analysis_callbacks.register(app, explorer)

    # in the browser, to save a round trip before the views can ask for the selection
    app.clientside_callback(
        "function(click, expanded) { return window.tilescope.clickNode(click, expanded); }",
        Output(ids.SELECTED_OP, "data"),
        Output(ids.GRAPH_GROUPS, "value", allow_duplicate=True),
        Input(ids.GRAPH_VIEW, "clickData"),
        State(ids.GRAPH_GROUPS, "value"),
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
            choose_model,
            open_link,
            write_link,
            upload_model,
            apply_override,
            refresh_runs,
            show_graph,
            show_mlir,
            show_summary,
            stage_override,
            remove_pending,
            show_pending,
            import_overrides,
            export_run,
            inspect,
            form_choices,
        )
    } | analysis
