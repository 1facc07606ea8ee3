"""The timeline tab, as Tracy draws one: the device row, then one row per core (with its engines'
rows if asked), over counter plots on the same time axis. Zoom and pan ask the server for the
window at its level of detail; a click on a zone selects its op."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from dash import Input, Output, State, dcc, html, no_update
from plotly.subplots import make_subplots

from compiler.tracks import parse_track

from .. import ids
from ..callback_context import clicked_op, only_triggered, triggered
from ..panel import PageContext, Panel, Wiring
from ..style import SELECTED, TOP_LEGEND, base_layout, graph_config, kind_colour, plain
from ..zone_segments import segments

MERGED = "merged"  # legend entry of "N zones" markers
MERGED_COLOUR = "#9ca3af"
ROW_PX = 14  # height of one timeline row
MAX_ZONE_PX = 3000  # the page scrolls past this; rows get thinner
MIN_LABEL_PX = 11  # rows thinner than this are not labelled one by one
COUNTER_PX = 90  # height of one counter plot
# counter name -> (title of its plot, unit divisor, unit, axis label)
COUNTER_PLOTS = {
    "l1_bytes": ("L1 in use, fullest core", 1024, "KiB", "L1"),
    "dram_bytes_per_s": ("DRAM bandwidth", 1e9, "GB/s", "DRAM"),
    "lls_bytes_per_s": ("LLS bandwidth", 1e9, "GB/s", "LLS"),
}


def layout(_page: PageContext) -> list:
    shown = dcc.Checklist(
        id=ids.TIMELINE_SHOW,
        value=["counters"],
        inline=True,
        className="checks",
        options={
            "engines": "engine rows (reader, compute, writer)",
            "counters": "counters (L1 in use, DRAM bandwidth)",
        },
    )
    hint = html.P(
        "The device row, then one row per core; wheel to zoom, drag to select a range; click a zone to select its op.",
        className="hint",
    )
    return [
        html.Div([hint, shown], className="timeline-controls"),
        dcc.Graph(id=ids.TIMELINE_VIEW, config=graph_config("timeline")),
    ]


def x_window(relayout: dict | None) -> tuple[float, float] | None:
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
    return any(
        key.startswith("xaxis") and key.endswith(".autorange") and value for key, value in (relayout or {}).items()
    )


def register(wiring: Wiring) -> dict:
    explorer, app = wiring.explorer, wiring.app

    @app.callback(
        output=Output(ids.SELECTED_OP, "data", allow_duplicate=True),
        inputs=dict(click=Input(ids.TIMELINE_VIEW, "clickData")),
        prevent_initial_call=True,
    )
    def select_in_timeline(click):
        return clicked_op(click)

    @app.callback(
        output=Output(ids.TIMELINE_VIEW, "figure"),
        inputs=dict(
            run_id=Input(ids.RUN_SELECT, "value"),
            relayout=Input(ids.TIMELINE_ZOOM, "data"),
            shown=Input(ids.TIMELINE_SHOW, "value"),
        ),
        state=dict(selected=State(ids.SELECTED_OP, "data")),
    )
    def show_timeline(run_id, relayout=None, shown=None, selected=None):
        """The whole run, or on zoom and pan the window shown, at one level of detail: the query
        returns a few thousand items whatever the run's size. `shown` adds engine rows and counters."""
        if run_id is None:
            return no_update
        # a zoom alone: the first draw's relayout event can come with the run, which must not be lost
        zoomed = only_triggered(ids.TIMELINE_ZOOM)
        window = x_window(relayout) if zoomed or triggered() is None else None
        if zoomed and window is None and not _x_reset(relayout):
            return no_update  # not a change of the time axis
        if triggered() == ids.TIMELINE_SHOW:
            window = x_window(relayout)  # keep the window when rows are added or taken away
        shown = shown or []
        run = explorer.view(run_id)
        kinds = {op.name: op.kind for op in run.compilation.kernel.ops}
        view = explorer.timeline(run, window and (window[0] * 1e3, window[1] * 1e3), engines="engines" in shown)
        counters = explorer.counters(run_id) if "counters" in shown else None
        return timeline_figure(view.items, kinds, selected, window, view.hidden_cores, view.core_zones, counters)

    return {"select_in_timeline": select_in_timeline, "show_timeline": show_timeline}


def in_browser(app) -> None:
    # only the relayout events that move the time axis reach the server: a request for any other
    # (a resize, as the page grows a scroll bar) would replace a request still running for a new run
    # (Dash keeps the newest of a callback's requests) and, having nothing to draw, lose that run
    app.clientside_callback(
        "function(relayout) { return window.tilescope.timeAxisChange(relayout); }",
        Output(ids.TIMELINE_ZOOM, "data"),
        Input(ids.TIMELINE_VIEW, "relayoutData"),
        prevent_initial_call=True,
    )
    # outlining the selected op's zones is done in the browser, by a relayout of the drawn figure
    # (its output is never set: the timeline is not rebuilt)
    app.clientside_callback(
        "function(selected, figure) { return window.tilescope.highlightZones(selected, figure); }",
        Output(ids.TIMELINE_VIEW, "figure", allow_duplicate=True),
        Input(ids.SELECTED_OP, "data"),
        State(ids.TIMELINE_VIEW, "figure"),
        prevent_initial_call=True,
    )


PANEL = Panel("tab", "Timeline", "timeline", layout, register, in_browser)


# --- the figure ------------------------------------------------------------------------------


def row_key(track: str) -> tuple[int, int, int]:
    """The device row first, then cores in row-major order, each followed by its engines."""
    core = parse_track(track)
    return (-1, -1, -1) if core is None else (core.row, core.col, core.rank)


def row_label(track: str) -> str:
    core = parse_track(track)
    return f"↳ {core.engine}" if core and core.engine else track


def _is_engine(track: str) -> bool:
    core = parse_track(track)
    return bool(core and core.engine)


def outline(start_us: float, end_us: float, row: int) -> dict:
    """The box around one of the selected op's zones (tilescope.js draws the same)."""
    return dict(
        type="rect",
        name=SELECTED,
        xref="x",
        yref="y",
        x0=start_us,
        x1=end_us,
        y0=row - 0.45,
        y1=row + 0.45,
        line=dict(color="#111827", width=2),
        fillcolor="rgba(0,0,0,0)",
        layer="above",
    )


def timeline_figure(
    zones: Sequence,
    kinds: Mapping[str, str],
    selected: str | None,
    window: tuple[float, float] | None = None,
    hidden_cores: int = 0,
    core_zones: int = 0,
    counters: Mapping[str, Sequence[tuple[float, float]]] | None = None,
) -> go.Figure:
    """One row per core (each followed by its engines' rows when their zones are given), one bar
    per zone, coloured by op kind; times in us. Bars are WebGL line segments, so tens of
    thousands draw at once. Zones merged by the level-of-detail query (count > 1) are grey "N
    zones" bars. The selected op's zones are outlined. Under the zones, one plot per counter
    (`counters`: name -> (t_ns, value) steps) on the same time axis. `window` keeps the axis where
    the user zoomed."""
    tracks = sorted({z.track for z in zones}, key=row_key)
    row = {track: i for i, track in enumerate(tracks)}
    plots = [name for name in COUNTER_PLOTS if (counters or {}).get(name)]
    zone_px = max(170, min(MAX_ZONE_PX, 40 + ROW_PX * len(tracks)))
    fig = make_subplots(
        rows=1 + len(plots),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.025 if plots else 0,
        row_heights=[zone_px, *[COUNTER_PX] * len(plots)],
    )
    width = max(2.0, min(12.0, 0.7 * (zone_px - 40) / max(len(tracks), 1)))  # a bar fills ~70% of its row
    _add_zones(fig, zones, kinds, row, width)
    for i, name in enumerate(plots, start=2):
        _add_counter(fig, name, counters[name], i)
    for i in range(1, 2 + len(plots)):
        axis = {"range": list(window), "autorange": False} if window else {}
        fig.update_xaxes(showgrid=True, gridcolor="#e4e7eb", zeroline=False, row=i, col=1, **axis)
    fig.update_xaxes(title="time (us)", row=1 + len(plots), col=1)
    # rows too thin for a label each keep the core rows' labels; hover names the engine
    labelled = [t for t in tracks if (zone_px - 40) / max(len(tracks), 1) >= MIN_LABEL_PX or not _is_engine(t)]
    fig.update_yaxes(
        tickvals=[row[t] for t in labelled],
        ticktext=[row_label(t) for t in labelled],
        tickfont=dict(size=9),
        fixedrange=True,
        range=[len(tracks) - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        row=1,
        col=1,
    )
    fig.update_layout(
        legend=TOP_LEGEND,
        hovermode="closest",
        hoverdistance=40,
        dragmode="zoom",
        # outlines are layout shapes, not a trace: moving them (tilescope.js) redraws no WebGL trace
        shapes=[
            outline(z.start_ns / 1e3, z.end_ns / 1e3, row[z.track]) for z in zones if selected and z.op == selected
        ],
    )
    if hidden_cores:
        _note_hidden(fig, hidden_cores, core_zones)
    return base_layout(fig, zone_px + 40 + COUNTER_PX * len(plots), top=30)


def _add_zones(fig: go.Figure, zones: Sequence, kinds: Mapping[str, str], row: Mapping[str, int], width: float) -> None:
    """One WebGL trace per op kind (merged markers last, in grey)."""

    def kind_of(z) -> str:
        return kinds.get(z.op, "?") if z.op else MERGED

    kind_order = sorted({kind_of(z) for z in zones} - {MERGED}) + ([MERGED] if any(not z.op for z in zones) else [])
    colour = {k: kind_colour(k) for k in kind_order} | {MERGED: MERGED_COLOUR}
    for kind in kind_order:
        x, y, ops, names = segments([z for z in zones if kind_of(z) == kind], row)
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=y,
                customdata=ops,
                text=names,
                mode="lines",
                name=plain(kind),
                connectgaps=False,
                line=dict(color=colour[kind], width=width),
                hovertemplate="<b>%{text}</b><br>%{x:.2f} us<extra>" + plain(kind) + "</extra>",
            ),
            row=1,
            col=1,
        )


def _add_counter(fig: go.Figure, name: str, steps: Sequence[tuple[float, float]], at: int) -> None:
    title, unit, label, short = COUNTER_PLOTS[name]
    xy = np.asarray(steps, dtype=np.float64).reshape(-1, 2)
    fig.add_trace(
        go.Scatter(
            x=xy[:, 0] / 1e3,
            y=xy[:, 1] / unit,
            mode="lines",
            line_shape="hv",
            fill="tozeroy",
            line=dict(color="#2563eb" if name == "l1_bytes" else "#dc2626", width=1),
            name=title,
            showlegend=False,
            hovertemplate="%{x:.2f} us<br>%{y:,.1f} " + label + "<extra>" + title + "</extra>",
        ),
        row=at,
        col=1,
    )
    fig.update_yaxes(
        title=dict(text=f"{short} {label}", font=dict(size=10)), rangemode="tozero", gridcolor="#e4e7eb", row=at, col=1
    )


def _note_hidden(fig: go.Figure, hidden_cores: int, core_zones: int) -> None:
    fig.add_annotation(
        text=f"{hidden_cores} core rows hidden: {core_zones:,} zones in this window; zoom in to see them",
        xref="x domain",
        yref="y domain",
        x=0,
        y=0.98,
        yanchor="top",
        xanchor="left",
        showarrow=False,
        font=dict(size=11, color="#616e7c"),
        bgcolor="rgba(255,255,255,0.85)",
    )
