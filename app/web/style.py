"""What every panel draws alike: fonts, colours, a figure's frame and toolbar, a table's look,
and how text from a model is made safe to show."""

from __future__ import annotations

import functools
import html as text_html
import zlib

import numpy as np
import plotly.colors
import plotly.graph_objects as go
from dash import dcc, html

from tilescope.compiler.ir import opset

FONT = "Inter, system-ui, -apple-system, Segoe UI, sans-serif"
# The kinds most of a run's time goes to keep the colours a reader has learned (plotly's Dark24);
# every other kind of the compiler's vocabulary gets one of its own, picked as far as possible from
# those already taken, as the eye sees colours (CIELAB), so no two kinds of a model look alike. A
# kind's colour does not depend on what else is on screen: the same in every window of a zoom,
# every run and every panel, as Tracy colours zones by name.
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
EXTRA_COLOURS = 24  # colours beyond the vocabulary's, that kinds from elsewhere hash into
UNKNOWN_KIND_COLOUR = "#9ca3af"  # an op whose kind the run does not record
BOUND_COLOURS = {
    "compute": "#2563eb",
    "dram": "#dc2626",
    "l1": "#16a34a",
    "noc": "#9333ea",
    "latency": "#db2777",
    "vector": "#0891b2",
    "dispatch": "#6b7280",
    "balanced": "#f59e0b",
    "measured": "#111827",
}
SELECTED = "selected"  # the name of the selection's ring (graph, roofline) and outlines (timeline)


def cielab(colour: str) -> tuple[float, float, float]:
    """A "#rrggbb" colour in CIELAB (D65), where distance is how different two colours look."""
    return tuple(float(v) for v in _lab(_rgb([colour]))[0])


def _rgb(colours: list[str]) -> np.ndarray:
    return np.array([[int(c[i : i + 2], 16) / 255 for i in (1, 3, 5)] for c in colours])


def _lab(rgb: np.ndarray) -> np.ndarray:
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    f = xyz / [0.95047, 1.0, 1.08883]
    f = np.where(f > (6 / 29) ** 3, np.cbrt(f), f / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


@functools.cache
def _kind_colours() -> tuple[dict[str, str], tuple[str, ...]]:
    """(kind -> colour for the whole vocabulary, the extra colours): greedy farthest-point picks
    from an sRGB grid, dark enough for white names and coloured enough not to read as the grey of
    merged zones."""
    dark24 = plotly.colors.qualitative.Dark24
    taken = {kind: dark24[i] for kind, i in _KNOWN_KINDS.items()}
    grid = np.linspace(0.0, 1.0, 16)
    rgb = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), axis=-1).reshape(-1, 3)
    lab = _lab(rgb)
    fits = (lab[:, 0] >= 25) & (lab[:, 0] <= 65) & (np.hypot(lab[:, 1], lab[:, 2]) >= 20)
    rgb, lab = rgb[fits], lab[fits]
    fixed = _lab(_rgb(list(taken.values())))
    nearest = np.linalg.norm(lab[:, None] - fixed[None], axis=2).min(axis=1)
    others = [kind for kind in opset.KINDS if kind not in taken]
    picked = []
    for _ in range(len(others) + EXTRA_COLOURS):
        best = int(np.argmax(nearest))
        picked.append("#" + "".join(f"{round(v * 255):02X}" for v in rgb[best]))
        nearest = np.minimum(nearest, np.linalg.norm(lab - lab[best], axis=1))
    return {**taken, **dict(zip(others, picked))}, tuple(picked[len(others) :])


def kind_colour(kind: str) -> str:
    """The colour of an op kind, wherever it is drawn: its own for every kind of the vocabulary;
    a kind from elsewhere (an imported report) hashes into colours no vocabulary kind has."""
    if kind == "?":
        return UNKNOWN_KIND_COLOUR
    colours, extra = _kind_colours()
    return colours.get(kind) or extra[zlib.crc32(kind.encode()) % len(extra)]


def ink(colour: str) -> str:
    """The colour of a name written on `colour`: white on the dark, near-black on the light."""
    return "#ffffff" if cielab(colour)[0] < 62 else "#111827"


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
