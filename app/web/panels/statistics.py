"""The statistics tab, as Tracy's statistics window: per op or per op type, counts and times; the
ops done once per model load, when the run has any; under them, find zone: how the selected op's
zones (or one type's ops) spread, and the zones of the bars a user picks."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import plotly.graph_objects as go
from dash import Input, Output, Patch, State, dcc, html, no_update

from tilescope.perfdb.statistics import OpStats

from tilescope.app.web import ids
from tilescope.app.web.callback_context import triggered
from tilescope.app.web.grids import column, grid, grid_style
from tilescope.app.web.panel import PageContext, Panel, Wiring, outputs
from tilescope.app.web.style import LOADING, base_layout, graph_config, message_figure, plain, us
from tilescope.app.web.zone_card import pinned
from tilescope.app.workbench.find_zone import MAX_BUCKETS, Buckets, FoundZone, Picked, pick
from tilescope.app.workbench.load_time import kinds_text, ops_text
from tilescope.app.workbench.natural_order import GRID_COMPARATOR
from tilescope.app.workbench.run_view import RunView
from tilescope.app.web.device_table import devices_children

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
IDLE_ROW = "host / idle"  # the row of the step's time with no op running, pinned under the ops
PINNED_STYLE = {"function": "params.node.rowPinned ? {fontStyle: 'italic', background: '#f5f7fa'} : null"}


def layout(_page: PageContext) -> list:
    by = dcc.RadioItems(
        id=ids.STATS_BY,
        options={"name": "per op", "kind": "per op type", "code": "per op code", "source": "per line of source"},
        value="name",
        inline=True,
        className="segmented light",
    )
    # the busiest first; every row is rendered only when scrolled into view
    table = grid(ids.STATS_TABLE, stats_columns("name"), height=STATS_PX, getRowStyle=PINNED_STYLE)
    return [by, table, html.Div(id=ids.LOAD_OPS_VIEW), *find_zone_layout()]


def stats_columns(by: str) -> list[dict]:
    """Per op type every column; per op, each row is one op: no spread to show. Sorted by total time;
    a click on the names' header sorts them in natural order (`layer.2` before `layer.10`)."""
    shown = [(k, label, kind) for k, label, kind in STAT_COLUMNS if by != "name" or k not in SPREAD]
    first = column(
        by,
        {"name": "op", "kind": "op type", "code": "op code", "source": "line of source"}.get(by, by),
        minWidth=260 if by in ("name", "source") else 160,
        flex=3,
        comparator=GRID_COMPARATOR,
    )
    return [first] + [column(k, label, kind, sort="desc" if k == "total_ns" else None) for k, label, kind in shown]


def stats_data(rows: Sequence[OpStats], by: str) -> list[dict]:
    """Per op name or kind, Tracy's statistics window: times in us, the share of the run in %. A
    row of one op has no spread: its mean, min, max, median and p90 are left empty rather than
    repeating its time five times."""

    def value(row: OpStats, key: str):
        if key == "count":
            return row.count
        if key in SPREAD and row.count == 1:
            return None
        return round(row.pct_of_run, 2) if key == "pct_of_run" else us(getattr(row, key))

    # a row's id is its op name (or type), so a click on the table names it (cellClicked.rowId)
    return [{"id": r.group, by: r.group, **{k: value(r, k) for k, _, _ in STAT_COLUMNS}} for r in rows]


def idle_rows(idle_ns: float, total_ns: float, by: str) -> Patch:
    """The row pinned under the table: the step's time with no op running (the host issuing ops,
    or the device waiting on it), so the shares of the run add up to 100%."""
    row = {"id": IDLE_ROW, by: IDLE_ROW} | {k: None for k, _, _ in STAT_COLUMNS}
    row |= {"total_ns": us(idle_ns), "pct_of_run": round(idle_ns / total_ns * 100, 2) if total_ns else None}
    pinned = Patch()
    pinned["pinnedBottomRowData"] = [row]
    return pinned


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(
            data=Output(ids.STATS_TABLE, "rowData"),
            columns=Output(ids.STATS_TABLE, "columnDefs"),
            style=Output(ids.STATS_TABLE, "style"),
            pinned=Output(ids.STATS_TABLE, "dashGridOptions"),
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
        run = explorer.view(run_id)
        return dict(
            data=data,
            columns=stats_columns(by),
            style=grid_style(len(data) + 1, STATS_PX),
            pinned=idle_rows(explorer.idle_ns(run), run.total_ns, by),
            load=devices_children(explorer.device_split(run)) + load_ops_children(run),
        )

    @app.callback(
        output=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        inputs=dict(cell=Input(ids.STATS_TABLE, "cellClicked")),
        state=dict(by=State(ids.STATS_BY, "value")),
        prevent_initial_call=True,
    )
    def select_in_statistics(cell, by):
        """A row of the per-op table is an op: select it (rows of the per-type table are not)."""
        if not cell or by != "name" or cell.get("rowId") in (None, IDLE_ROW):
            return no_update
        return cell["rowId"]

    return {f.__name__: f for f in (show_statistics, select_in_statistics)} | _register_find_zone(wiring)


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


# --- find zone ---------------------------------------------------------------------------------

FOUND = dict(
    figure=Output(ids.FIND_ZONE, "figure"),
    shown=Output(ids.FIND_ZONE_OF, "data"),
    note=Output(ids.FIND_ZONE_NOTE, "children"),
    rows=Output(ids.FIND_ZONE_TABLE, "rowData"),
    columns=Output(ids.FIND_ZONE_TABLE, "columnDefs"),
    style=Output(ids.FIND_ZONE_TABLE, "style"),
)
# what a pick on the histogram changes: the note and the list under it (Plotly draws the pick)
PICKED = {
    k: Output(FOUND[k].component_id, FOUND[k].component_property, allow_duplicate=True)
    for k in ("note", "rows", "columns", "style")
}
LIST_PX = 260  # the list of a pick's zones at most; it scrolls past it
HIDDEN = {"display": "none"}
PICK_HINT = (
    "Click a bar for its zones, or drag across bars for a range of them; shift-click adds a bar, a double click clears."
)


def find_zone_layout() -> list:
    hint = html.P(
        "Select an op for the spread of its zones over the cores, or click a row of the "
        "per-type table for the spread of that type's ops.",
        className="hint",
    )
    graph = dcc.Graph(id=ids.FIND_ZONE, config=graph_config("find-zone"), figure=message_figure(LOADING, 120))
    table = grid(ids.FIND_ZONE_TABLE, found_columns({}), height=LIST_PX)
    table.style = HIDDEN  # until a pick
    note = html.P(id=ids.FIND_ZONE_NOTE, className="hint")
    return [html.H4("Find zone", className="subhead"), hint, dcc.Store(id=ids.FIND_ZONE_OF), graph, note, table]


def _register_find_zone(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=FOUND,
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            selected=Input(ids.SELECTED_OP, "data"),
            cell=Input(ids.STATS_TABLE, "cellClicked"),
            tab=Input(ids.ANALYSIS_TABS, "value"),
        ),
        state=dict(by=State(ids.STATS_BY, "value"), shown=State(ids.FIND_ZONE_OF, "data")),
    )
    def find_zone(run_id, selected=None, cell=None, tab=TAB, by="name", shown=None):
        """The spread of the selected op's zones over its cores, or of the ops of the type whose
        row was clicked in the per-type table, with nothing picked yet. Drawn when its tab is
        open: a selection elsewhere should not wait for it. An op picked in its list, or the op
        it shows, is selected without drawing it again (which would lose the pick)."""
        if run_id is None or tab != TAB:
            return no_update
        fired, shown = triggered(), _subject(shown)
        if fired == ids.SELECTED_OP and shown and shown["run"] == run_id and selected in (shown["op"], shown["picked"]):
            return outputs(FOUND, shown=shown | {"picked": None}) if shown["picked"] else no_update
        if fired == ids.STATS_TABLE:
            if by == "name" or not cell or not isinstance(cell.get("rowId"), str) or cell["rowId"] == IDLE_ROW:
                return no_update  # a click in the per-op table selects its op, which draws it
            subject = {"run": run_id, "op": None, "kind": cell["rowId"], "picked": None, "by": by}
        else:
            subject = {"run": run_id, "op": selected, "kind": None, "picked": None, "by": "kind"}
        zones = explorer.find_zone(run_id, op=subject["op"], kind=subject["kind"], by=subject["by"])
        # a new subject starts with nothing picked (Plotly keeps a pick while the revision stays)
        revision = hashlib.blake2b(
            repr((run_id, subject["op"], subject["kind"], subject["by"])).encode(), digest_size=8
        ).hexdigest()
        figure = find_zone_histogram(zones, _what(subject), revision, "ops" if subject["kind"] else "zones")
        return dict(figure=figure, shown=subject, **found_list(None, subject))

    @app.callback(
        output=PICKED,
        inputs=dict(chosen=Input(ids.FIND_ZONE, "selectedData")),
        state=dict(shown=State(ids.FIND_ZONE_OF, "data")),
        prevent_initial_call=True,
    )
    def list_zones(chosen, shown):
        """The zones of the bars picked on the histogram (a click, a drag across several), as
        Tracy's find zone lists them: the longest first, a page of them at most."""
        subject = _subject(shown)
        if subject is None or (subject["op"] is None and subject["kind"] is None):
            return found_list(None, subject or {})
        zones = explorer.find_zone(subject["run"], op=subject["op"], kind=subject["kind"], by=subject["by"])
        return found_list(pick(zones, picked_bars(chosen)) if chosen else None, subject)

    @app.callback(
        output=dict(
            selected=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
            shown=Output(ids.FIND_ZONE_OF, "data", allow_duplicate=True),
            pin=Output(ids.TIMELINE_PIN, "data"),
        ),
        inputs=dict(cell=Input(ids.FIND_ZONE_TABLE, "cellClicked")),
        state=dict(rows=State(ids.FIND_ZONE_TABLE, "rowData"), shown=State(ids.FIND_ZONE_OF, "data")),
        prevent_initial_call=True,
    )
    def pick_zone(cell, rows, shown):
        """A row of the list selects its op and pins its zone (or, of an op type, the op) to the
        timeline's zone card."""
        subject, wanted = _subject(shown), (cell or {}).get("rowId")
        row = next((r for r in rows or () if isinstance(r, dict) and r.get("id") == wanted), None)
        if subject is None or row is None or not isinstance(row.get("op"), str):
            return no_update
        record = explorer.op_record(subject["run"], row["op"])
        if record is None:
            return no_update
        pin = pinned(record, str(row.get("track")), _number(row.get("start_us")), _number(row.get("duration_us")))
        return dict(selected=record.name, shown=subject | {"picked": record.name}, pin=pin)

    return {f.__name__: f for f in (find_zone, list_zones, pick_zone)}


def _subject(shown) -> dict | None:
    """What find zone shows (its store), if it is what find_zone writes there."""
    if not isinstance(shown, dict) or not isinstance(shown.get("run"), int):
        return None
    named = {k: shown.get(k) if isinstance(shown.get(k), str) else None for k in ("op", "kind", "picked")}
    return {"run": shown["run"], **named, "by": "code" if shown.get("by") == "code" else "kind"}


def _number(value) -> float:
    """A number of a table row as the browser sent it back; 0 for anything else."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _what(subject: dict) -> str:
    if subject["kind"] is None:
        return subject["op"] or ""
    return f"op {'code' if subject.get('by') == 'code' else 'type'} {subject['kind']}"


def picked_bars(chosen) -> list[int]:
    """The bars of the histogram a selection holds (plotly's selectedData), by number."""
    points = (chosen or {}).get("points") if isinstance(chosen, dict) else None
    return [
        p["pointNumber"]
        for p in (points if isinstance(points, list) else [])[:MAX_BUCKETS]
        if isinstance(p, dict) and p.get("curveNumber") == 0 and type(p.get("pointNumber")) is int
    ]


def found_columns(subject: dict) -> list[dict]:
    """An op's zones by core; an op type's ops by name."""
    where = column("op", "op", minWidth=260, flex=3) if subject.get("kind") else column("track", "core", flex=2)
    return [where, column("start_us", "start us", "us"), column("duration_us", "duration us", "us_ns", sort="desc")]


def found_list(picked: Picked | None, subject: dict) -> dict:
    """The note and the table under the histogram: how to pick, before a pick; then the pick's
    zones, the longest first, and how many more there are."""
    columns = found_columns(subject)
    if picked is None or not picked.total:
        note = PICK_HINT if picked is None else "No zones in the bars picked."
        return dict(note=note, rows=[], columns=columns, style=HIDDEN)
    things = ("op" if subject.get("kind") else "zone") + ("" if picked.total == 1 else "s")
    lo, hi = (t / 1e3 for t in picked.span_ns)
    places = decimals(hi - lo)
    note = f"{picked.total:,} {things} of {lo:,.{places}f} .. {hi:,.{places}f} us, the longest first"
    if picked.more:
        note += f" ({len(picked.listed):,} listed, and {picked.more:,} more)"
    note += ". Click one to select its op and pin it beside the timeline."
    rows = [
        {"id": z.op if subject.get("kind") else f"{z.track}@{z.start_ns}", "op": z.op, "track": z.track}
        | {"start_us": us(z.start_ns), "duration_us": us(z.duration_ns)}
        for z in picked.listed
    ]
    return dict(note=note, rows=rows, columns=columns, style=grid_style(len(rows), LIST_PX))


def decimals(width_us: float) -> int:
    """Places after the point that tell a bar's ends apart: 2, up to 3 (the nanosecond) for narrow bars."""
    return 3 if 0 < width_us < 0.01 else 2


def find_zone_histogram(zones: Sequence[FoundZone], what: str, revision: str = "", unit: str = "zones") -> go.Figure:
    """Tracy's find zone: how the durations of `what` spread, in bars a click or a drag picks
    (Buckets: at most MAX_BUCKETS, whatever the count), with their mean and median."""
    if not zones:
        return message_figure(
            f"{what}: no zones" if what else "Nothing selected: select an op, or click an op type's row.", 120
        )
    durations = sorted(z.duration_ns / 1e3 for z in zones)
    buckets = Buckets.of([z.duration_ns for z in zones])
    edges = [[e / 1e3 for e in buckets.edges(i)] for i in range(len(buckets.counts))]
    places = decimals(buckets.width_ns / 1e3)
    span = f"%{{customdata[0]:,.{places}f}} .. %{{customdata[1]:,.{places}f}} us"
    fig = go.Figure(
        go.Bar(
            x=[(lo + hi) / 2 for lo, hi in edges],
            y=list(buckets.counts),
            width=buckets.width_ns / 1e3 * 0.95,
            customdata=edges,
            marker_color="#2563eb",
            # the bars picked stand out; Plotly keeps the pick until the histogram is drawn anew
            selected=dict(marker=dict(color="#f59e0b")),
            unselected=dict(marker=dict(opacity=0.4)),
            hovertemplate=f"{span}: %{{y}} {unit}<extra></extra>",
            name=plain(what),
        )
    )
    half = len(durations) // 2
    mean = sum(durations) / len(durations)
    median = durations[half] if len(durations) % 2 else (durations[half - 1] + durations[half]) / 2
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
    title = f"{plain(what)}: {len(durations):,} {unit}, {durations[0]:,.2f} .. {durations[-1]:,.2f} us"
    fig.update_xaxes(title="duration (us)", gridcolor="#e4e7eb")
    # whole counts: a few zones would get ticks at 0.2, 0.4, ...
    fig.update_yaxes(title=unit, gridcolor="#e4e7eb", dtick=1 if max(buckets.counts) <= 5 else None)
    fig.update_layout(title=dict(text=title, font=dict(size=12), x=0), showlegend=False)
    base_layout(fig, 260, top=34)
    # a click picks a bar, a drag a range of them (across, whatever its height); a new subject
    # starts with nothing picked and the whole range in view
    fig.update_layout(clickmode="event+select", dragmode="select", selectdirection="h", uirevision=revision)
    return fig
