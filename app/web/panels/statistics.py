"""The statistics tab, as Tracy's statistics window: per op or per op type, counts and times; the
ops done once per model load, when the run has any; under them, find zone: how the selected op's
zones (or one type's ops) spread."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from dash import Input, Output, State, dcc, html, no_update

from .. import ids
from ..callback_context import triggered
from ..grids import column, grid, grid_style
from ..panel import PageContext, Panel, Wiring
from ..style import LOADING, base_layout, graph_config, message_figure, plain, us
from ...workbench.load_time import kinds_text, ops_text
from ...workbench.run_view import RunView

STAT_COLUMNS = (
    ("count", "count", "count"),
    ("total_ns", "total us", "us"),
    ("mean_ns", "mean us", "us"),
    ("min_ns", "min us", "us"),
    ("max_ns", "max us", "us"),
    ("median_ns", "median us", "us"),
    ("p90_ns", "p90 us", "us"),
    ("pct_of_run", "% of run", "pct"),
)
SPREAD = ("mean_ns", "min_ns", "max_ns", "median_ns", "p90_ns")  # of a row's several ops
TAB = "statistics"
STATS_PX = 380  # the statistics table's height at most; it scrolls past it


def layout(_page: PageContext) -> list:
    by = dcc.RadioItems(
        id=ids.STATS_BY,
        options={"name": "per op", "kind": "per op type"},
        value="name",
        inline=True,
        className="segmented light",
    )
    # the busiest first; every row is rendered only when scrolled into view
    table = grid(ids.STATS_TABLE, stats_columns("name"), height=STATS_PX)
    hint = html.P(
        "Select an op for the spread of its zones over the cores, or click a row of the "
        "per-type table for the spread of that type's ops.",
        className="hint",
    )
    find_zone = dcc.Graph(id=ids.FIND_ZONE, config=graph_config("find-zone"), figure=message_figure(LOADING, 120))
    return [by, table, html.Div(id=ids.LOAD_OPS_VIEW), html.H4("Find zone", className="subhead"), hint, find_zone]


def stats_columns(by: str) -> list[dict]:
    """Per op type every column; per op, each row is one op: no spread to show. Sorted by total time."""
    shown = [(k, label, kind) for k, label, kind in STAT_COLUMNS if by != "name" or k not in SPREAD]
    first = column(by, "op" if by == "name" else "op type", minWidth=260 if by == "name" else 160, flex=3)
    return [first] + [column(k, label, kind, sort="desc" if k == "total_ns" else None) for k, label, kind in shown]


def stats_data(rows: Sequence[dict], by: str) -> list[dict]:
    """Per op name or kind, Tracy's statistics window: times in us, the share of the run in %. A
    row of one op has no spread: its mean, min, max, median and p90 are left empty rather than
    repeating its time five times."""

    def value(row: dict, key: str):
        if key == "count":
            return row[key]
        if key in SPREAD and row["count"] == 1:
            return None
        return round(row[key], 2) if key == "pct_of_run" else us(row[key])

    # a row's id is its op name (or type), so a click on the table names it (cellClicked.rowId)
    return [{"id": r[by], by: r[by], **{k: value(r, k) for k, _, _ in STAT_COLUMNS}} for r in rows]


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(
            data=Output(ids.STATS_TABLE, "rowData"),
            columns=Output(ids.STATS_TABLE, "columnDefs"),
            style=Output(ids.STATS_TABLE, "style"),
            load=Output(ids.LOAD_OPS_VIEW, "children"),
        ),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            by=Input(ids.STATS_BY, "value"),
            tab=Input(ids.ANALYSIS_TABS, "value"),
        ),
    )
    def show_statistics(run_id, by="name", tab=TAB):
        if run_id is None or tab != TAB:
            return no_update
        data = stats_data(explorer.statistics(run_id, by), by)
        return dict(
            data=data,
            columns=stats_columns(by),
            style=grid_style(len(data), STATS_PX),
            load=load_ops_children(explorer.view(run_id)),
        )

    @app.callback(
        output=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        inputs=dict(cell=Input(ids.STATS_TABLE, "cellClicked")),
        state=dict(by=State(ids.STATS_BY, "value")),
        prevent_initial_call=True,
    )
    def select_in_statistics(cell, by):
        """A row of the per-op table is an op: select it (rows of the per-type table are not)."""
        if not cell or by != "name" or cell.get("rowId") is None:
            return no_update
        return cell["rowId"]

    @app.callback(
        output=Output(ids.FIND_ZONE, "figure"),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            cell=Input(ids.STATS_TABLE, "cellClicked"),
            tab=Input(ids.ANALYSIS_TABS, "value"),
        ),
        state=dict(by=State(ids.STATS_BY, "value")),
    )
    def find_zone(run_id, selected=None, cell=None, tab=TAB, by="name"):
        """The spread of the selected op's zones over its cores, or of the ops of the type whose
        row was clicked in the per-type table. Drawn when its tab is open: a selection elsewhere
        should not wait for it."""
        if run_id is None or tab != TAB:
            return no_update
        if triggered() == ids.STATS_TABLE and by == "kind" and cell and cell.get("rowId"):
            kind = cell["rowId"]
            return find_zone_histogram(explorer.find_zone(run_id, kind=kind), f"ops of type {kind}")
        return find_zone_histogram(explorer.find_zone(run_id, op=selected), selected or "")

    return {f.__name__: f for f in (show_statistics, select_in_statistics, find_zone)}


PANEL = Panel("tab", "Statistics", TAB, layout, register)

LOAD_COLUMNS = (
    ("name", "load-time op", "text"),
    ("kind", "kind", "text"),
    ("us", "us", "us"),
    ("bound", "bound", "text"),
    ("memory", "memory", "text"),
)


def load_ops_children(run: RunView) -> list:
    """The ops the run does once when its model is loaded (const-eval), in the order they run: they
    are not in the table above, whose shares are of the time per step."""
    if not run.load_ops:
        return []
    rows = [
        {"id": op.name, "name": op.name, "kind": op.kind, "us": us(op.duration_ns), "bound": op.bound}
        | {"memory": op.memory}
        for op in run.load_ops
    ]
    columns = [column(key, label, kind, flex=3 if key == "name" else 1) for key, label, kind in LOAD_COLUMNS]
    table = grid(ids.LOAD_OPS_TABLE, columns, rows, height=240)
    return [
        html.H4(f"Once per model load: {ops_text(len(run.load_ops), run.load_ns)}", className="subhead"),
        html.P(
            "Ops on weights and constants only, which the compiler evaluates once when the model is loaded "
            f"(const-eval): not in the time per step, nor in the shares above. By kind: {kinds_text(run.load_ops)}.",
            className="hint",
        ),
        table,
    ]


def find_zone_histogram(durations_ns: Sequence[float], what: str) -> go.Figure:
    """Tracy's find zone: how the durations of `what` spread, with their mean and median."""
    fig = go.Figure()
    zones = sorted(d / 1e3 for d in durations_ns)
    if zones:
        fig.add_trace(
            go.Histogram(
                x=zones,
                nbinsx=min(60, max(10, len(zones) // 2)),
                marker_color="#2563eb",
                hovertemplate="%{x} us: %{y}<extra></extra>",
                name=plain(what),
            )
        )
        half = len(zones) // 2
        mean, median = sum(zones) / len(zones), zones[half] if len(zones) % 2 else (zones[half - 1] + zones[half]) / 2
        marks = [(mean, "mean", "top right"), (median, "median", "top left")]
        if abs(mean - median) <= 1e-6 * max(abs(mean), 1e-9):
            marks = [(mean, "mean = median", "top right")]  # equal zones, as cores given equal shares are
        for value, label, side in marks:
            fig.add_vline(
                x=value,
                line=dict(color="#b91c1c" if label == "mean" else "#111827", dash="dash", width=1),
                annotation_text=f"{label} {value:,.2f} us",
                annotation_position=side,
            )
        title = f"{plain(what)}: {len(zones):,} zones, {zones[0]:,.2f} .. {zones[-1]:,.2f} us"
    else:
        return message_figure(
            f"{what}: no zones" if what else "Nothing selected: select an op, or click an op type's row.", 120
        )
    fig.update_xaxes(title="duration (us)", gridcolor="#e4e7eb")
    fig.update_yaxes(title="zones", gridcolor="#e4e7eb")
    fig.update_layout(title=dict(text=title, font=dict(size=12), x=0), showlegend=False, bargap=0.05)
    return base_layout(fig, 260, top=34)
