"""What every panel draws alike: fonts, colours, a figure's frame and toolbar, a table's look,
and how text from a model is made safe to show."""

from __future__ import annotations

import html as text_html
import zlib

import plotly.colors
import plotly.graph_objects as go
from dash import dcc, html

FONT = "Inter, system-ui, -apple-system, Segoe UI, sans-serif"
KIND_COLOURS = tuple(plotly.colors.qualitative.Dark24)
# The kinds most of a run's time goes to, each a colour of its own that a reader learns; any other
# kind takes one by its name's hash, as Tracy colours zones. Either way a kind's colour does not
# depend on what else is on screen: the same in every window of a zoom, every run and every panel.
_KNOWN_KINDS = {
    "matmul": 0,
    "conv2d": 19,
    "scaled_dot_product_attention": 7,
    "scaled_dot_product_attention_decode": 17,
    "add": 2,
    "subtract": 10,
    "multiply": 14,
    "softmax": 4,
    "layernorm": 6,
    "rmsnorm": 21,
    "to_layout": 3,
    "reshape": 15,
    "permute": 8,
    "typecast": 13,
    "embedding": 16,
    "update_cache": 9,
    "relu": 1,
    "gelu": 12,
    "silu": 11,
}
BOUND_COLOURS = {
    "compute": "#2563eb",
    "dram": "#dc2626",
    "l1": "#16a34a",
    "noc": "#9333ea",
    "vector": "#0891b2",
    "dispatch": "#6b7280",
    "balanced": "#f59e0b",
    "measured": "#111827",
}
SELECTED = "selected"  # the name of the selection's ring (graph, roofline) and outlines (timeline)


_OTHER_KINDS = [i for i in range(len(KIND_COLOURS)) if i not in _KNOWN_KINDS.values()]
UNKNOWN_KIND_COLOUR = "#9ca3af"  # an op whose kind the run does not record


def kind_colour(kind: str) -> str:
    """The colour of an op kind, wherever it is drawn; other kinds hash into the colours the known
    ones leave free, so none is mistaken for a matmul."""
    if kind == "?":
        return UNKNOWN_KIND_COLOUR
    index = _KNOWN_KINDS.get(kind)
    if index is None:
        index = _OTHER_KINDS[zlib.crc32(kind.encode()) % len(_OTHER_KINDS)]
    return KIND_COLOURS[index]


def plain(text: str) -> str:
    """Text from a model (op names, kinds, tensors) as Plotly shows it: Plotly reads <b>, <a href>
    and the like in every label as markup, and shows the entities &lt; &gt; &amp; as characters."""
    return text_html.escape(str(text), quote=False)


def us(ns: float) -> float:
    """Nanoseconds as the microseconds tables show, to the nanosecond."""
    return round(ns / 1e3, 3)


def graph_config(name: str) -> dict:
    """A figure's toolbar: wheel zoom, and the camera button saves an SVG named after the view."""
    return {
        "displaylogo": False,
        "scrollZoom": True,
        "toImageButtonOptions": {"format": "svg", "filename": f"tilescope-{name}"},
    }


def base_layout(fig: go.Figure, height: int, top: int = 8) -> go.Figure:
    """The frame every figure shares; `top` leaves room for a legend or title above the plot."""
    fig.update_layout(
        height=height,
        margin=dict(l=8, r=8, t=top, b=8),
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        font=dict(family=FONT, size=12, color="#1f2933"),
        hoverlabel=dict(font=dict(family=FONT, size=12)),
        uirevision="keep",  # zoom and pan survive a refresh of the same view
    )
    return fig


def message_figure(text: str, height: int = 160) -> go.Figure:
    """A figure that says what it waits for, or why it is empty: no blank axes."""
    fig = go.Figure()
    fig.add_annotation(
        text=plain(text), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False, font=dict(size=13, color="#616e7c")
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return base_layout(fig, height)


LOADING = "Loading the run..."  # what a view shows until its first figure arrives


TOP_LEGEND = dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=None)


def labelled(label: str, control, class_name: str = "field", **more) -> html.Div:
    return html.Div([html.Label(label, className="field-label"), control], className=class_name, **more)


def menu(component_id: str, options, value=None, **more) -> dcc.Dropdown:
    """A dropdown that always holds a choice."""
    return dcc.Dropdown(id=component_id, options=options, value=value, clearable=False, **more)


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


def error(text: str) -> html.P:
    return html.P(text, className="error")


LISTED = 6  # items a line names before it counts the rest (a tuned run has hundreds of overrides)
LISTED_IN_TOOLTIP = 200


def some_of(items: list[str], shown: int = LISTED) -> str:
    """The first `shown` items, then how many more: a line stays a line."""
    if len(items) <= shown:
        return ", ".join(items)
    return ", ".join(items[:shown]) + f", ... and {len(items) - shown:,} more"


def all_of(items: list[str]) -> str:
    """A tooltip's list: every item, one per line, up to a limit."""
    more = len(items) - LISTED_IN_TOOLTIP
    return "\n".join(items[:LISTED_IN_TOOLTIP]) + (f"\n... and {more:,} more" if more > 0 else "")
