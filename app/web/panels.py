"""The analysis panels under the workspace (statistics, memory, roofline, runs and diff) as Dash
components built from what the explorer returns."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from dash import dash_table, dcc, html

from perfdb.schema import Run

from . import ids
from ..workbench.diff import changes_text, more, settings_text, time_split
from .figures import duration_histogram, graph_config

TABLE_STYLE = dict(
    style_table={"overflowX": "auto", "maxHeight": "360px", "overflowY": "auto"},
    style_cell={
        "fontFamily": "Inter, system-ui, sans-serif",
        "fontSize": "12px",
        "padding": "3px 8px",
        "border": "none",
        "borderBottom": "1px solid #e4e7eb",
        "maxWidth": "420px",
        "minWidth": "64px",
        "overflow": "hidden",
        "textOverflow": "ellipsis",
    },
    style_header={
        "fontWeight": "600",
        "color": "#616e7c",
        "backgroundColor": "#f5f7fa",
        "border": "none",
        "borderBottom": "1px solid #cbd2d9",
    },
    style_data_conditional=[{"if": {"state": "active"}, "backgroundColor": "#eff6ff", "border": "1px solid #2563eb"}],
    fixed_rows={"headers": True},
    sort_action="native",
    page_action="none",
    cell_selectable=True,
)


def _us(ns: float) -> float:
    return round(ns / 1e3, 3)


STAT_COLUMNS = (
    ("count", "count"),
    ("total_ns", "total us"),
    ("mean_ns", "mean us"),
    ("min_ns", "min us"),
    ("max_ns", "max us"),
    ("median_ns", "median us"),
    ("p90_ns", "p90 us"),
    ("pct_of_run", "% of run"),
)


def stats_columns(by: str) -> list[dict]:
    return [{"name": by, "id": by}] + [{"name": label, "id": k, "type": "numeric"} for k, label in STAT_COLUMNS]


def stats_data(rows: Sequence[dict], by: str) -> list[dict]:
    """Per op name or kind, Tracy's statistics window: times in us, the share of the run in %."""

    def value(row: dict, key: str):
        if key == "count":
            return row[key]
        return round(row[key], 2) if key == "pct_of_run" else _us(row[key])

    # a row's id is its op name (or type), so a click on the table names it (active_cell.row_id)
    return [{"id": r[by], by: r[by], **{k: value(r, k) for k, _ in STAT_COLUMNS}} for r in rows]


def stats_table() -> dash_table.DataTable:
    return dash_table.DataTable(
        id=ids.STATS_TABLE,
        data=[],
        columns=stats_columns("name"),
        **TABLE_STYLE,
        style_cell_conditional=[{"if": {"column_id": c}, "textAlign": "left"} for c in ("name", "kind")],
    )


def memory_children(view: dict) -> list:
    """The table under the memory chart: what fills the fullest core at the fullest op."""
    peak = view["peak"]
    if peak is None:
        return [html.P("Nothing of this run is placed in L1.", className="hint")]
    capacity = view["capacity"]
    rows = [
        ("tensor", name, size, f"{address:#x}" if address is not None else "-")
        for name, size, address in peak["tensors"]
    ]
    rows += [("circular buffer", name, size, f"{pages} pages") for name, size, pages in peak["cbs"]]
    total = sum(size for _, _, size, _ in rows)
    body = [
        html.Tr(
            [
                html.Td(kind),
                html.Td(name, className="mono"),
                html.Td(f"{size / 1024:,.1f}", className="num"),
                html.Td(
                    html.Div(
                        className=f"fill {kind.split()[0]}",
                        style={"width": f"{min(100.0, size / capacity * 100):.1f}%"},
                    )
                ),
                html.Td(where, className="mono"),
            ]
        )
        for kind, name, size, where in rows
    ]
    r, c = peak["core"]
    return [
        html.P(
            [
                html.B(f"Peak {total / 1024:,.1f} KiB of {capacity / 1024:,.0f} KiB"),
                f" on core {r},{c} while {peak['op']} runs ({total / capacity * 100:.0f}% of L1)",
            ],
            className="peak-line",
        ),
        html.Table(
            [
                html.Tr(
                    [
                        html.Th("what"),
                        html.Th("name"),
                        html.Th("KiB"),
                        html.Th("share of L1"),
                        html.Th("address / pages"),
                    ]
                ),
                *body,
            ],
            className="grid-table",
        ),
    ]


RUN_COLUMNS = (
    ("id", "run", "numeric"),
    ("label", "label", "text"),
    ("kind", "kind", "text"),
    ("target", "target", "text"),
    ("policy", "policy", "text"),
    ("total_us", "total us", "numeric"),
    ("overrides", "overrides", "numeric"),
    ("parent", "parent", "text"),
    ("created", "created (UTC)", "text"),
)


def runs_data(runs: Sequence[Run]) -> list[dict]:
    return [
        {
            "id": r.id,
            "label": r.label or "baseline",
            "kind": r.kind,
            "target": r.target.name,
            "policy": r.policy,
            "total_us": _us(r.total_ns),
            "overrides": len(r.overrides),
            "parent": str(r.parent_id or ""),
            "created": r.created_at.strftime("%Y-%m-%d %H:%M"),
        }
        for r in runs
    ]


def runs_table() -> dash_table.DataTable:
    """Every run of the model; tick two to compare them."""
    return dash_table.DataTable(
        id=ids.RUNS_TABLE,
        data=[],
        row_selectable="multi",
        selected_rows=[],
        columns=[{"name": label, "id": key, "type": kind} for key, label, kind in RUN_COLUMNS],
        **TABLE_STYLE,
        style_cell_conditional=[{"if": {"column_id": "label"}, "textAlign": "left"}],
    )


SHOWN_ONLY_IN = 10  # inserted or removed ops listed by name; the rest are counted


def diff_children(found: dict, timelines: go.Figure | None = None, limit: int = 200) -> list:
    """Two runs compared (app.diff.compare, with the runs and their op durations): what makes the
    comparison suspect, totals and how they split between device and host, the overrides that
    differ, the two runs' ops aligned on one time axis (`timelines`), per-op deltas by impact with
    the ops found in one run only, and the overlaid duration histograms."""
    a, b = found["runs"][found["a"]], found["runs"][found["b"]]
    delta = found["total_delta_ns"]
    ratio = b.total_ns / a.total_ns if a.total_ns else None
    verdict = "faster" if delta < 0 else "slower" if delta > 0 else "the same"
    warnings = [html.P(f"Warning: {w}", className="hint", style={"color": "var(--warn)"}) for w in found["warnings"]]
    header = html.Div(
        [
            html.Span(f"#{a.id} {a.label or 'baseline'}", className="pill a"),
            html.Span("vs"),
            html.Span(f"#{b.id} {b.label or 'baseline'}", className="pill b"),
            html.Span(f"{_us(a.total_ns):,.1f} us -> {_us(b.total_ns):,.1f} us", className="metric"),
            html.Span(
                f"{_us(delta):+z,.1f} us" + (f" (x{ratio:.3f}, {verdict})" if ratio else ""),
                className=f"metric {'worse' if delta > 0 else 'better' if delta < 0 else ''}",
            ),
            html.Span(time_split(found), className="muted"),
        ],
        className="diff-head",
    )
    only = found["overrides"]
    settings = (
        [
            html.Span("  settings: ", className="muted"),
            html.Code(settings_text(found["settings"])),
        ]
        if found["settings"]
        else []
    )
    overrides = html.Div(
        [
            html.Span("overrides only in A: ", className="muted"),
            html.Code(", ".join(only["a"]) or "none"),
            html.Span("  only in B: ", className="muted"),
            html.Code(", ".join(only["b"]) or "none"),
            *settings,
        ],
        className="diff-overrides",
    )
    rows = [
        {
            "name": op["name"],
            "a_us": _us(op["a_ns"]),
            "b_us": _us(op["b_ns"]),
            "delta_us": _us(op["delta_ns"]),
            "ratio": round(op["ratio"], 3) if op["ratio"] is not None else None,
            "changes": changes_text(op["changes"]),
        }
        for op in found["ops"][:limit]
    ]
    table = dash_table.DataTable(
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
        **{
            **TABLE_STYLE,
            "style_data_conditional": [
                *TABLE_STYLE["style_data_conditional"],
                {
                    "if": {"filter_query": "{delta_us} > 0", "column_id": "delta_us"},
                    "color": "#b91c1c",
                    "fontWeight": "600",
                },
                {
                    "if": {"filter_query": "{delta_us} < 0", "column_id": "delta_us"},
                    "color": "#15803d",
                    "fontWeight": "600",
                },
            ],
        },
        style_cell_conditional=[{"if": {"column_id": c}, "textAlign": "left"} for c in ("name", "changes")],
    )
    extra = []
    if len(found["ops"]) > limit:
        extra.append(html.P(f"The {limit} ops of largest |delta| of {len(found['ops'])}.", className="hint"))
    extra += _only_in(f"Removed (only in A #{a.id})", found["removed"])
    extra += _only_in(f"Inserted (only in B #{b.id})", found["inserted"])
    histogram = dcc.Graph(
        id=ids.DIFF_HISTOGRAM,
        config=graph_config("duration-histogram"),
        figure=duration_histogram(found["durations"][a.id], found["durations"][b.id], (f"A #{a.id}", f"B #{b.id}")),
    )
    aligned = (
        [dcc.Graph(id=ids.DIFF_TIMELINES, config=graph_config("diff-timelines"), figure=timelines)] if timelines else []
    )
    return [
        *warnings,
        header,
        overrides,
        *aligned,
        html.Div([html.Div([table, *extra], className="diff-table"), histogram], className="diff-body"),
    ]


def _only_in(title: str, ops: Sequence[dict]) -> list:
    """Ops found in one run only (a to_layout an override inserted), with their time: the first
    SHOWN_ONLY_IN by name, the rest counted."""
    if not ops:
        return []
    total = sum(op["ns"] for op in ops)
    items = [html.Li(f"{op['name']}  {op['kind']}  {_us(op['ns']):,.2f} us") for op in ops[:SHOWN_ONLY_IN]]
    items += [html.Li(line) for line in more(len(ops) - SHOWN_ONLY_IN)]
    return [
        html.P(f"{title}: {len(ops)} op{'s' * (len(ops) != 1)}, {_us(total):,.2f} us", className="hint"),
        html.Ul(items, className="outcomes"),
    ]
