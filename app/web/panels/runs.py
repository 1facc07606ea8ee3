"""The runs & diff tab: every run of the model; two runs compared as Tracy's compare view does,
with the totals and how they split, both runs' work once per model load, the overrides that
differ, both runs on one time axis, the per-op deltas (and the ops moved between the step and the
model's load) and the overlaid duration histograms."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import plotly.graph_objects as go
from dash import Input, Output, State, dash_table, dcc, html, no_update

from perfdb.schema import Run

from .. import ids
from ..callback_context import diff_pair
from ..panel import PageContext, Panel, Wiring
from ..style import TABLE_STYLE, TOP_LEGEND, base_layout, graph_config, kind_colour, plain, us
from ..zone_segments import segments, vertices
from ...workbench.diff import changes_text, more, moved_text, settings_text, time_split
from ...workbench.load_time import duration_text, ops_text

TAB = "runs"
RUN_COLUMNS = (
    ("id", "run", "numeric"),
    ("label", "label", "text"),
    ("kind", "kind", "text"),
    ("target", "target", "text"),
    ("policy", "policy", "text"),
    ("total_us", "total us", "numeric"),
    ("load_us", "load us (once)", "numeric"),  # const-eval: once per model load, not in the total
    ("overrides", "overrides", "numeric"),
    ("parent", "parent", "text"),
    ("created", "created (UTC)", "text"),
)
SHOWN_ONLY_IN = 10  # inserted or removed ops listed by name; the rest are counted
SHOWN_OPS = 200  # rows of the per-op delta table


def layout(_page: PageContext) -> list:
    table = dash_table.DataTable(
        id=ids.RUNS_TABLE,
        data=[],
        row_selectable="multi",
        selected_rows=[],
        columns=[{"name": label, "id": key, "type": kind} for key, label, kind in RUN_COLUMNS],
        **TABLE_STYLE,
        style_cell_conditional=[{"if": {"column_id": "label"}, "textAlign": "left"}],
    )
    hint = html.P(
        "Tick two runs to compare them; otherwise the shown run is compared with the run it came from.",
        className="hint",
    )
    return [hint, table, html.Div(id=ids.DIFF_VIEW, className="diff-view")]


def runs_data(runs: Sequence[Run]) -> list[dict]:
    return [
        {
            "id": r.id,
            "label": r.label or "baseline",
            "kind": r.kind,
            "target": r.target.name,
            "policy": r.policy,
            "total_us": us(r.total_ns),
            "load_us": us(r.load_ns),
            "overrides": len(r.overrides),
            "parent": str(r.parent_id or ""),
            "created": r.created_at.strftime("%Y-%m-%d %H:%M"),
        }
        for r in runs
    ]


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=dict(
            rows=Output(ids.RUNS_TABLE, "data"),
            ticked=Output(ids.RUNS_TABLE, "selected_rows"),
            ticked_ids=Output(ids.RUNS_TABLE, "selected_row_ids"),
            url_state=Output(ids.URL_STATE, "data", allow_duplicate=True),
        ),
        inputs=dict(_options=Input(ids.RUN_SELECT, "options")),
        state=dict(model=State(ids.MODEL_SELECT, "value"), linked=State(ids.URL_STATE, "data")),
        prevent_initial_call="initial_duplicate",
    )
    def list_runs(_options, model, linked=None):
        """The model's runs; the pair a link compares comes ticked. The table derives the ticked
        rows' ids only from a user's clicks, so they are set here with the rows: the diff and the
        graph read the ids."""
        rows = runs_data(explorer.runs_of(model))
        pair = (linked or {}).get("diff") or []
        ticked = [i for i, row in enumerate(rows) if row["id"] in pair]
        shown = dict(rows=rows, ticked=ticked, ticked_ids=[rows[i]["id"] for i in ticked])
        return shown | dict(url_state={**linked, "diff": []} if pair else no_update)

    @app.callback(
        output=Output(ids.DIFF_VIEW, "children"),
        inputs=dict(
            ticked=Input(ids.RUNS_TABLE, "selected_row_ids"),
            run_id=Input(ids.RUN_SELECT, "value"),
            tab=Input(ids.ANALYSIS_TABS, "value"),
        ),
    )
    def show_diff(ticked, run_id, tab=TAB):
        """Two ticked runs: the older against the newer. One: it against the shown run. None: the
        shown run against the run it was derived from."""
        if run_id is None or tab != TAB:
            return no_update
        pair = diff_pair(ticked or [], explorer.view(run_id))
        if pair is None:
            return html.P("This run has no parent run; tick two runs to compare them.", className="hint")
        found = explorer.diff(*pair)
        a, b = (explorer.op_records(i) for i in pair)
        kinds = {r.name: r.kind for r in (*a, *b)}
        changed = {op["name"] for op in found["ops"] if op["changes"]}
        return diff_children(found, aligned_timelines(a, b, (f"A #{pair[0]}", f"B #{pair[1]}"), kinds, changed))

    return {"list_runs": list_runs, "show_diff": show_diff}


PANEL = Panel("tab", "Runs & diff", TAB, layout, register)


# --- the diff --------------------------------------------------------------------------------


def diff_children(found: dict, timelines: go.Figure | None = None, limit: int = SHOWN_OPS) -> list:
    """Two runs compared (app.workbench.diff.compare, with the runs and their op durations): what
    makes the comparison suspect, totals and how they split between device and host, the
    overrides that differ, the two runs' ops aligned on one time axis (`timelines`), per-op
    deltas by impact with the ops found in one run only, and the overlaid duration histograms."""
    a, b = found["runs"][found["a"]], found["runs"][found["b"]]
    warnings = [html.P(f"Warning: {w}", className="hint", style={"color": "var(--warn)"}) for w in found["warnings"]]
    extra = []
    if len(found["ops"]) > limit:
        extra.append(html.P(f"The {limit} ops of largest |delta| of {len(found['ops'])}.", className="hint"))
    extra += _only_in(f"Removed (only in A #{a.id})", found["removed"])
    extra += _only_in(f"Inserted (only in B #{b.id})", found["inserted"])
    extra += _moved(f"Moved to load time in B #{b.id} (per step in A #{a.id})", found["moved_to_load"])
    extra += _moved(f"Moved into the step in B #{b.id} (load time in A #{a.id})", found["moved_into_step"])
    labels = (f"A #{a.id}", f"B #{b.id}")
    histogram = dcc.Graph(
        id=ids.DIFF_HISTOGRAM,
        config=graph_config("duration-histogram"),
        figure=duration_histogram(found["durations"][a.id], found["durations"][b.id], labels),
    )
    aligned = (
        [dcc.Graph(id=ids.DIFF_TIMELINES, config=graph_config("diff-timelines"), figure=timelines)] if timelines else []
    )
    table = html.Div([_delta_table(found["ops"][:limit]), *extra], className="diff-table")
    return [
        *warnings,
        _diff_head(found, a, b),
        *_diff_load(found),
        _diff_overrides(found),
        *aligned,
        html.Div([table, histogram], className="diff-body"),
    ]


def _diff_head(found: dict, a: Run, b: Run) -> html.Div:
    delta = found["total_delta_ns"]
    ratio = b.total_ns / a.total_ns if a.total_ns else None
    verdict = "faster" if delta < 0 else "slower" if delta > 0 else "the same"
    return html.Div(
        [
            html.Span(f"#{a.id} {a.label or 'baseline'}", className="pill a"),
            html.Span("vs"),
            html.Span(f"#{b.id} {b.label or 'baseline'}", className="pill b"),
            html.Span(f"{us(a.total_ns):,.1f} us -> {us(b.total_ns):,.1f} us", className="metric"),
            html.Span(
                f"{us(delta):+z,.1f} us" + (f" (x{ratio:.3f}, {verdict})" if ratio else ""),
                className=f"metric {'worse' if delta > 0 else 'better' if delta < 0 else ''}",
            ),
            html.Span(time_split(found), className="muted"),
        ],
        className="diff-head",
    )


def _diff_load(found: dict) -> list:
    """Both runs' work once per model load (const-eval), when either has any: apart from the totals
    above, which are per step."""
    a, b = found["times"]["a"], found["times"]["b"]
    if not (a["load_ops"] or b["load_ops"]):
        return []
    delta = found["load_delta_ns"]
    return [
        html.Div(
            [
                html.Span("load time, once per model load (const-eval, not in the totals):", className="muted"),
                html.Span(
                    f"{ops_text(a['load_ops'], a['load_ns'])} -> {ops_text(b['load_ops'], b['load_ns'])}",
                    className="metric",
                ),
                html.Span(f"({'-' if delta < 0 else '+'}{duration_text(abs(delta))})", className="muted"),
            ],
            id=ids.DIFF_LOAD,
            className="diff-head",
        )
    ]


def _diff_overrides(found: dict) -> html.Div:
    only = found["overrides"]
    settings = []
    if found["settings"]:
        settings = [html.Span("  settings: ", className="muted"), html.Code(settings_text(found["settings"]))]
    return html.Div(
        [
            html.Span("overrides only in A: ", className="muted"),
            html.Code(", ".join(only["a"]) or "none"),
            html.Span("  only in B: ", className="muted"),
            html.Code(", ".join(only["b"]) or "none"),
            *settings,
        ],
        className="diff-overrides",
    )


def _delta_table(ops: Sequence[dict]) -> dash_table.DataTable:
    rows = [
        {
            "name": op["name"],
            "a_us": us(op["a_ns"]),
            "b_us": us(op["b_ns"]),
            "delta_us": us(op["delta_ns"]),
            "ratio": round(op["ratio"], 3) if op["ratio"] is not None else None,
            "changes": changes_text(op["changes"]),
        }
        for op in ops
    ]
    sign = [("{delta_us} > 0", "#b91c1c"), ("{delta_us} < 0", "#15803d")]
    coloured = [
        {"if": {"filter_query": query, "column_id": "delta_us"}, "color": colour, "fontWeight": "600"}
        for query, colour in sign
    ]
    return dash_table.DataTable(
        id=ids.DIFF_TABLE,
        data=rows,
        columns=[
            {"name": "op", "id": "name"},
            {"name": "A us", "id": "a_us", "type": "numeric"},
            {"name": "B us", "id": "b_us", "type": "numeric"},
            {"name": "delta us", "id": "delta_us", "type": "numeric"},
            {"name": "B/A", "id": "ratio", "type": "numeric"},
            {"name": "changes", "id": "changes"},
        ],
        **{**TABLE_STYLE, "style_data_conditional": [*TABLE_STYLE["style_data_conditional"], *coloured]},
        style_cell_conditional=[{"if": {"column_id": c}, "textAlign": "left"} for c in ("name", "changes")],
    )


def _op_list(title: str, ops: Sequence[dict], total_ns: float, describe, per: str = "") -> list:
    """A titled list of ops with their total: the first SHOWN_ONLY_IN by name, the rest counted."""
    if not ops:
        return []
    items = [html.Li(f"{op['name']}  {op['kind']}  {describe(op)}") for op in ops[:SHOWN_ONLY_IN]]
    items += [html.Li(line) for line in more(len(ops) - SHOWN_ONLY_IN)]
    return [
        html.P(f"{title}: {len(ops)} op{'s' * (len(ops) != 1)}, {total_ns / 1e3:,.2f} us{per}", className="hint"),
        html.Ul(items, className="outcomes"),
    ]


def _only_in(title: str, ops: Sequence[dict]) -> list:
    """Ops found in one run only (a to_layout an override inserted), with their time."""
    return _op_list(title, ops, sum(op["ns"] for op in ops), lambda op: f"{op['ns'] / 1e3:,.2f} us")


def _moved(title: str, ops: Sequence[dict]) -> list:
    """Ops one run does in every step and the other once per model load, with both times."""
    return _op_list(title, ops, sum(op["step_ns"] for op in ops), moved_text, per=" per step")


def duration_histogram(a: Sequence[float], b: Sequence[float], labels: tuple[str, str]) -> go.Figure:
    """Two runs' op durations overlaid on shared log bins, as Tracy's compare view draws them."""
    fig = go.Figure()
    values = [d for d in (*a, *b) if d > 0]
    ticks: list[float] = []
    if values:
        lo, hi = math.log10(min(values) / 1e3), math.log10(max(values) / 1e3)
        size = max((hi - lo) / 40, 1e-3)
        for durations, label, colour in ((a, labels[0], "#2563eb"), (b, labels[1], "#f59e0b")):
            fig.add_trace(
                go.Histogram(
                    x=[math.log10(d / 1e3) for d in durations if d > 0],
                    name=label,
                    opacity=0.6,
                    marker_color=colour,
                    xbins=dict(start=lo - size, end=hi + size, size=size),
                    hovertemplate="%{y} ops<extra>" + label + "</extra>",
                )
            )
        ticks = _log_ticks(lo - size, hi + size)
    fig.update_xaxes(
        title="op duration", tickvals=ticks, ticktext=[f"{10.0**t:.3g} us" for t in ticks], gridcolor="#e4e7eb"
    )
    fig.update_yaxes(title="ops", gridcolor="#e4e7eb")
    fig.update_layout(barmode="overlay", legend={**TOP_LEGEND, "title": None})
    return base_layout(fig, 260, top=30)


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Tick positions (log10 of us) between lo and hi: 1, 2, 5 times a power of ten, or, when the
    range holds fewer than three of those (durations within one decade), round steps across it."""
    ticks = [k + math.log10(m) for k in range(math.floor(lo), math.ceil(hi) + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]
    if len(inside) >= 3:
        return inside
    low, high = 10.0**lo, 10.0**hi
    rough = (high - low) / 8  # at most about eight ticks
    magnitude = 10.0 ** math.floor(math.log10(rough))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= rough)
    first = math.ceil(low / step) * step
    return [math.log10(first + i * step) for i in range(int((high - first) / step) + 1) if first + i * step > 0]


class RowOp(NamedTuple):
    """An op on one row of the aligned diff, shaped like a zone for `segments`."""

    track: str
    op: str
    start_ns: float
    end_ns: float
    name: str = ""
    depth: int = 0


def aligned_timelines(
    a: Sequence, b: Sequence, labels: tuple[str, str], kinds: Mapping[str, str], changed: set[str]
) -> go.Figure:
    """Two runs' ops (records with name, start_ns, duration_ns) as two rows on one time axis, so
    where B gains or loses time against A shows as the rows drifting apart. Ops an override
    changed are outlined in both rows."""
    order = sorted({kinds.get(r.name, "?") for r in (*a, *b)})
    colour = {k: kind_colour(k) for k in order}
    fig = go.Figure()
    row = {"a": 0, "b": 1}
    for kind in order:
        ops = [
            RowOp(label, r.name, r.start_ns, r.start_ns + r.duration_ns)
            for label, records in (("a", a), ("b", b))
            for r in records
            if kinds.get(r.name, "?") == kind
        ]
        x, y, op_names, _ = segments(ops, row)
        durations = [f"{plain(o.op)}<br>{(o.end_ns - o.start_ns) / 1e3:,.2f} us" for o in ops]
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=y,
                text=vertices(durations, ""),
                customdata=op_names,
                mode="lines",
                name=plain(kind),
                connectgaps=False,
                line=dict(color=colour[kind], width=22),
                hovertemplate="<b>%{text}</b><extra>" + plain(kind) + "</extra>",
            )
        )
    box = dict(type="rect", xref="x", yref="y", line=dict(color="#111827", width=2), fillcolor="rgba(0,0,0,0)")
    fig.update_layout(
        shapes=[
            dict(box, x0=r.start_ns / 1e3, x1=(r.start_ns + r.duration_ns) / 1e3, y0=i - 0.4, y1=i + 0.4, layer="above")
            for i, records in enumerate((a, b))
            for r in records
            if r.name in changed
        ]
    )
    fig.update_xaxes(title="time (us)", showgrid=True, gridcolor="#e4e7eb", zeroline=False)
    fig.update_yaxes(
        tickvals=[0, 1], ticktext=list(labels), range=[1.6, -0.6], fixedrange=True, showgrid=False, zeroline=False
    )
    fig.update_layout(legend=TOP_LEGEND, hovermode="closest", dragmode="zoom")
    return base_layout(fig, 170, top=30)
