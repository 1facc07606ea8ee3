"""The runs & diff tab: every run of the model, then the measured runs of other models and reports,
and two of them compared (app/web/diff_view.py)."""

from __future__ import annotations

from collections.abc import Sequence

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from tilescope.compiler.profiles.measured_ops import MEASURED
from tilescope.perfdb.schema import Run

from tilescope.app.web import ids
from tilescope.app.web.callback_context import diff_pair
from tilescope.app.web.diff_table import unchanged_toggle
from tilescope.app.web.aligned_runs import aligned_timelines, back_to_back, changed_ops, outlined, timeline_rows
from tilescope.app.web.diff_view import diff_body, diff_children
from tilescope.app.web.grids import column, grid, grid_style
from tilescope.app.web.panel import PageContext, Panel, Wiring
from tilescope.app.web.style import us
from tilescope.app.workbench.measured_runs import is_report

TAB = "runs"
RUNS_PX = 260  # the runs table's height at most: past it, it scrolls
REPLAY = "replay"  # the kind a replay of a measured report is listed as: simulated, op by op
RUN_COLUMNS = (
    ("id", "run", "count"),
    ("label", "label", "text"),
    ("model", "model", "text"),
    ("kind", "kind", "text"),
    ("target", "target", "text"),
    ("policy", "policy", "text"),
    ("total_us", "total us", "us"),
    ("load_us", "load us (once)", "us"),  # const-eval: once per model load, not in the total
    ("overrides", "overrides", "count"),
    ("parent", "parent", "text"),
    ("created", "created (UTC)", "text"),
)


def layout(_page: PageContext) -> list:
    columns = [column(key, label, kind, flex={"label": 3, "model": 2}.get(key, 1)) for key, label, kind in RUN_COLUMNS]
    table = grid(
        ids.RUNS_TABLE,
        columns,
        height=RUNS_PX,
        rowSelection={"mode": "multiRow", "checkboxes": True, "headerCheckbox": False, "enableClickSelection": False},
    )
    hint = html.P(
        "Tick two runs to compare them; otherwise the shown run is compared with the run it came from. "
        "The model's runs come first, then measured runs of other reports (a Wormhole's and a Blackhole's "
        "report of one model compare as two measured runs).",
        className="hint",
    )
    ticked = dcc.Store(id=ids.TICKED_RUNS, data=[])
    # over the per-op table: it lists the ops that changed, this adds those that did not
    unchanged = dcc.Checklist(id=ids.DIFF_UNCHANGED, options=[], value=[], className="diff-unchanged")
    view = html.Div([html.Div(id=ids.DIFF_HEAD), unchanged, html.Div(id=ids.DIFF_BODY)], id=ids.DIFF_VIEW)
    return [hint, table, ticked, view]


def runs_data(runs: Sequence[Run]) -> list[dict]:
    return [
        {
            "id": r.id,
            "label": r.label or "baseline",
            "model": r.model_ref,
            "kind": kind_of(r),
            "target": r.target.name,
            "policy": "" if r.kind == MEASURED else r.policy,  # no compiler ran it
            "total_us": us(r.total_ns),
            "load_us": us(r.load_ns),
            "overrides": len(r.overrides),
            "parent": str(r.parent_id or ""),
            "created": r.created_at.strftime("%Y-%m-%d %H:%M"),
        }
        for r in runs
    ]


def kind_of(run: Run) -> str:
    """measured; a replay (a report simulated op by op); or simulated (a model compiled)."""
    return REPLAY if run.kind != MEASURED and is_report(run.model_ref) else run.kind


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(
            rows=Output(ids.RUNS_TABLE, "rowData"),
            style=Output(ids.RUNS_TABLE, "style"),
            ticked=Output(ids.RUNS_TABLE, "selectedRows"),
            ticked_ids=Output(ids.TICKED_RUNS, "data", allow_duplicate=True),
            url_state=Output(ids.URL_STATE, "data", allow_duplicate=True),
        ),
        inputs=dict(_options=Input(ids.RUN_SELECT, "options")),
        state=dict(model=State(ids.MODEL_SELECT, "value"), linked=State(ids.URL_STATE, "data")),
        prevent_initial_call="initial_duplicate",
    )
    def list_runs(_options, model, linked=None):
        """The model's runs, then measured runs of others; the pair a link compares comes ticked. The
        ticked runs' ids, which the diff, the graph and the link read, are set here with the rows,
        and by a tick in the browser."""
        rows = runs_data(explorer.listed_runs(model))
        pair = (linked or {}).get("diff") or []
        ticked = [row["id"] for row in rows if row["id"] in pair]
        shown = dict(
            rows=rows, style=grid_style(len(rows), RUNS_PX), ticked={"ids": [str(i) for i in ticked]}, ticked_ids=ticked
        )
        return shown | dict(url_state={**linked, "diff": []} if pair else no_update)

    @app.callback(
        output=dict(
            view=Output(ids.DIFF_HEAD, "children"),
            body=Output(ids.DIFF_BODY, "children"),
            unchanged=Output(ids.DIFF_UNCHANGED, "options"),
        ),
        inputs=dict(
            ticked=Input(ids.TICKED_RUNS, "data"),
            run_id=Input(ids.RUN_SELECT, "value"),
            tab=Input(ids.ANALYSIS_TABS, "value"),
            shown=Input(ids.DIFF_UNCHANGED, "value"),
        ),
    )
    def show_diff(ticked, run_id, tab=TAB, shown=None):
        """Two ticked runs: the older against the newer. One: it against the shown run. None: the
        shown run against the run it was derived from. The ops that did not change are left out
        of the per-op table unless the toggle over it is ticked."""
        if run_id is None or tab != TAB:
            return no_update
        shown_run = explorer.view(run_id)
        pair = diff_pair(ticked or [], shown_run, explorer.baseline_id(shown_run))
        if pair is None:
            none = html.P("This run is its model's baseline; tick two runs to compare them.", className="hint")
            return dict(view=none, body=[], unchanged=[])
        found = explorer.diff(*pair)
        a, b = (explorer.op_records(i) for i in pair)
        if MEASURED in (found.runs.a.kind, found.runs.b.kind):
            a, b = back_to_back(a), back_to_back(b)
        kinds = {r.name: r.kind for r in (*a, *b)}
        changed = changed_ops(found.comparison.diff)
        rows = [
            (row, outlined(row[1], ops))
            for side, records, run, links, ops in (
                ("A", a, found.runs.a, found.links.a, changed.a),
                ("B", b, found.runs.b, found.links.b, changed.b),
            )
            for row in timeline_rows(f"{side} #{run.id}", records, run.tracks, links)
        ]
        every = isinstance(shown, list) and "show" in shown
        timelines = aligned_timelines([row for row, _ in rows], kinds, [names for _, names in rows])
        return dict(
            view=diff_children(found, timelines),
            body=diff_body(found, every),
            unchanged=unchanged_toggle(found.comparison.diff),
        )

    return {"list_runs": list_runs, "show_diff": show_diff}


def in_browser(app) -> None:
    # a tick names its run's id; a tick the grid echoes back (rows the server ticked) changes nothing
    app.clientside_callback(
        ClientsideFunction("runs", "ticked"),
        Output(ids.TICKED_RUNS, "data"),
        Input(ids.RUNS_TABLE, "selectedRows"),
        State(ids.TICKED_RUNS, "data"),
        prevent_initial_call=True,
    )


PANEL = Panel("tab", "Runs & diff", TAB, layout, register, in_browser)
