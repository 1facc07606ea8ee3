"""The graph panel: the selected level's graph grouped by name scope, coloured by a metric, with
a regex search; a click selects an op or opens a group."""

from __future__ import annotations


from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.ir.graph import Graph

from tilescope.app.web import ids
from tilescope.app.web.callback_context import diff_pair, first_trace, only_triggered, triggered
from tilescope.app.web.graph_figure import COLOUR_MODES, graph_figure, graph_rings
from tilescope.app.web.panel import PageContext, Panel, Wiring, outputs
from tilescope.app.web.style import LOADING, graph_config, labelled, menu, message_figure
from tilescope.app.workbench.graph_view import provenance, search_ops
from tilescope.app.workbench.grouping import GROUP, MAX_NODES, GroupedView
from tilescope.app.workbench.measured_runs import no_model_lines
from tilescope.app.workbench.natural_order import natural_key


def layout(_page: PageContext) -> html.Div:
    controls = html.Div(
        [
            labelled(
                "Colour by",
                menu(ids.GRAPH_COLOUR, [{"label": v, "value": k} for k, v in COLOUR_MODES.items()], "duration"),
                "field colour",
            ),
            labelled(
                "Search (regex)",
                dcc.Input(
                    id=ids.GRAPH_SEARCH,
                    type="text",
                    debounce=True,
                    placeholder="e.g. layer\\.1\\..*matmul",
                    className="search",
                ),
                "field search",
            ),
            labelled(
                "Open groups",
                dcc.Dropdown(id=ids.GRAPH_GROUPS, options=[], value=None, multi=True, placeholder="all groups closed"),
                "field groups",
            ),
        ],
        className="graph-controls",
    )
    return html.Div(
        [
            html.H3("Graph"),
            controls,
            dcc.Graph(id=ids.GRAPH_VIEW, config=graph_config("graph"), figure=message_figure(LOADING, 520)),
            html.Div(id=ids.GRAPH_NOTE, className="graph-note"),
        ],
        className="panel",
    )


SHOWN = dict(
    figure=Output(ids.GRAPH_VIEW, "figure"),
    group_options=Output(ids.GRAPH_GROUPS, "options"),
    groups=Output(ids.GRAPH_GROUPS, "value"),
    note=Output(ids.GRAPH_NOTE, "children"),
)


def register(wiring: Wiring) -> dict:
    explorer = wiring.explorer

    @wiring.app.callback(
        output=SHOWN,
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            level=Input(ids.LEVEL_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            expanded=Input(ids.GRAPH_GROUPS, "value"),
            mode=Input(ids.GRAPH_COLOUR, "value"),
            pattern=Input(ids.GRAPH_SEARCH, "value"),
            ticked=Input(ids.TICKED_RUNS, "data"),
        ),
    )
    def show_graph(run_id, level="graph", selected=None, expanded=None, mode="duration", pattern=None, ticked=None):
        """The selected level's graph, grouped by name scope: the groups the user opened (the
        default opening on a new model), plus those holding the op selected elsewhere."""
        trigger = triggered()
        if run_id is None or (trigger == ids.TICKED_RUNS and mode != "delta"):
            return no_update
        run = explorer.view(run_id)
        if run.compilation is None:  # a measured run read from a report
            head, replay = no_model_lines(run.model_ref, run.kind)
            offer = ", or press Replay above" if run.measured else ""
            said = html.Span(f"{head} {replay}{offer}.", className="hint")
            return dict(figure=message_figure(head, 520), group_options=[], groups=[], note=said)
        tree = explorer.scope_tree(run, level)
        groups = [g for g in (expanded or []) if g in tree.members]
        if expanded is None or (expanded and not groups and trigger != ids.GRAPH_GROUPS):
            groups = sorted(tree.default_expansion(), key=_label_order)  # a new page or another model
        shown = provenance(run.compilation, level, selected)
        if trigger in (ids.SELECTED_OP, None):
            groups += [g for name in shown for g in tree.ancestors_of(name)]  # reveal the selected op
        graph = run.compilation.graph_at(level)
        notes = []
        matches = _search(graph, pattern, notes)
        focus = matches[0] if matches and trigger in (ids.GRAPH_SEARCH, None) else None
        if focus:
            groups += tree.ancestors_of(focus)  # a search opens the way to its first match
        groups = list(dict.fromkeys(groups))  # in the order they were opened
        view = tree.view(groups)
        # a selection among the nodes drawn moves the ring only: the figure is patched, not redrawn
        if only_triggered(ids.SELECTED_OP) and groups == (expanded or []):
            return outputs(SHOWN, figure=first_trace(graph_rings(view, shown)))
        if len(view.nodes) > MAX_NODES:  # the last groups opened close again
            fits = tree.fitting(groups)
            closed, groups = groups[len(fits) :], fits
            view = tree.view(groups)
            notes.append(_kept_closed(closed))
        if pattern and matches:
            notes.append(_found(matches, pattern, view, focus))
        baseline = _baseline(run, mode, ticked, notes, explorer.baseline_id(run) if mode == "delta" else None)
        notes.insert(0, html.Span(f"{len(view.nodes)} nodes for {len(graph.ops):,} ops", className="hint"))
        loaded = {op.name for op in run.load_ops}
        metrics = explorer.op_metrics(run, baseline)
        figure = graph_figure(view, graph, metrics, mode, shown, matches, loaded, focus and view.node_of[focus])
        figure.layout.meta["open"] = groups  # a click on a box's label closes it: the browser needs the rest
        # the groups open and those drawn closed, which can be opened next (all of a 100k-op
        # model's groups, tens of thousands, made the page's dropdown freeze the browser)
        offered = sorted({*groups, *(n.id for n in view.nodes if n.id in tree.members)}, key=_label_order)
        options = [{"label": g.removeprefix(GROUP), "value": g} for g in offered]
        return dict(figure=figure, group_options=options, groups=groups, note=notes)

    return {"show_graph": show_graph}


def _kept_closed(closed: list[str]) -> html.Span:
    which = closed[0].removeprefix(GROUP) + (f" and {len(closed) - 1:,} more groups" if len(closed) > 1 else "")
    return html.Span(
        f"{which} stay{'s' * (len(closed) == 1)} closed: at most {MAX_NODES} nodes are drawn; "
        "open a group inside it, or close another",
        className="error",
    )


def _search(graph: Graph, pattern: str | None, notes: list) -> list[str]:
    """The ops the search matches; why it failed joins `notes`."""
    try:
        return search_ops(graph, pattern)
    except TilescopeError as err:
        notes.append(html.Span(str(err), className="error"))
        return []


def _found(matches: list[str], pattern: str, view: GroupedView, focus: str | None) -> html.Span:
    holding = len({view.node_of[m] for m in matches})
    said = f"{len(matches)} op matches" if len(matches) == 1 else f"{len(matches):,} ops match"
    where = f", in {holding:,} node{'s' * (holding != 1)}"
    first = f"; centred on {view.node_of[focus].removeprefix(GROUP)}" if focus else ""
    # quoted as typed: repr() would double each backslash of a pattern such as layer\.1
    return html.Span(f"{said} '{pattern}'{where}{first}", className="matches")


def _label_order(group: str) -> tuple:
    """Groups as a person lists them: by name, numbers as numbers (layer.2 before layer.10)."""
    return natural_key(group.removeprefix(GROUP))


def _baseline(run, mode: str, ticked, notes: list, baseline: int | None) -> int | None:
    """The run a delta colouring compares with: a ticked run, else the run's parent or baseline."""
    if mode != "delta":
        return None
    pair = diff_pair(ticked or [], run, baseline)
    baseline = pair[0] if pair else None
    notes.append(
        html.Span(
            f"delta vs run #{baseline}"
            if baseline
            else "no baseline: this run is its model's baseline; tick a run in Runs & diff",
            className="hint" if baseline else "error",
        )
    )
    return baseline


def in_browser(app) -> None:
    # a click selects in the browser, to save a round trip before the views can ask for the selection
    app.clientside_callback(
        ClientsideFunction("graph", "click"),
        Output(ids.SELECTED_OP, "data"),
        Output(ids.GRAPH_GROUPS, "value", allow_duplicate=True),
        Input(ids.GRAPH_VIEW, "clickData"),
        State(ids.GRAPH_GROUPS, "value"),
        prevent_initial_call=True,
    )
    # labels that follow the zoom, and a box's label that closes its group (assets/graph.js)
    app.clientside_callback(
        ClientsideFunction("graph", "hook"),
        Output(ids.GRAPH_VIEW, "className"),
        Input(ids.GRAPH_VIEW, "figure"),
        State(ids.GRAPH_VIEW, "id"),
        State(ids.GRAPH_GROUPS, "id"),
    )


PANEL = Panel("main", "Graph", "graph", layout, register, in_browser)
