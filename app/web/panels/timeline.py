"""The timeline tab, as Tracy draws one: the device row, then one row per core (its engines in lanes
of its row, if asked), over counter plots on the same time axis. Zoom and pan are drawn in the
browser over what was loaded (a view's width either side); the server is asked again only for finer
detail or time outside it. Zones show their names where they fit (tilescope.js), hover names a
zone with its duration and why, and a click selects its op and pins its card beside the timeline."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from dash import Input, Output, State, dcc, html, no_update
from plotly.subplots import make_subplots

from compiler.tracks import core_track, parse_track

from .. import ids
from ..callback_context import clicked_op, only_triggered, triggered
from ..panel import PageContext, Panel, Wiring
from ..style import LOADING, SELECTED, TOP_LEGEND, base_layout, graph_config, kind_colour, message_figure, plain
from ..zone_card import op_info
from ..zone_segments import segments
from ...workbench.timeline_view import CORE_ZONE_BUDGET, DEVICE_ROW

MERGED = "merged"  # legend entry of "N zones" markers
MERGED_COLOUR = "#9ca3af"
ROW_PX = 16  # height of one timeline row
MAX_ZONE_PX = 900  # rows get thinner past this, and core labels skip rows
MIN_LABEL_PX = 11  # rows thinner than this are not labelled one by one
LANES = {"reader": -0.3, "compute": 0.0, "writer": 0.3}  # an engine's lane, as a share of its core's row
OP_INFO_BUDGET = 20_000  # ops whose kind, time and why a figure carries for hover and the zone card
COUNTER_PX = 90  # height of one counter plot
# counter name -> (title of its plot, unit divisor, unit, axis label)
COUNTER_PLOTS = {
    "l1_bytes": ("L1 in use, fullest core", 1024, "KiB", "L1"),
    "dram_bytes_per_s": ("DRAM bandwidth", 1e9, "GB/s", "DRAM"),
    "lls_bytes_per_s": ("LLS bandwidth", 1e9, "GB/s", "LLS"),
    "link_bytes_per_s": ("link bandwidth, sent per device", 1e9, "GB/s", "link"),  # on several devices
}


def layout(_page: PageContext) -> list:
    shown = dcc.Checklist(
        id=ids.TIMELINE_SHOW,
        value=["counters"],
        inline=True,
        className="checks",
        options={
            "engines": "engine lanes (reader, compute, writer) in each core row",
            "counters": "counters (L1 in use, DRAM and link bandwidth)",
        },
    )
    hint = html.P(
        "The device row (on several devices, then a row per device and per set of links its collectives use), "
        "then one row per core (of device 0: every device runs the same program on its piece); "
        "wheel to zoom, drag to pan or (with the zoom tool) select a range; click a zone to select its op.",
        className="hint",
    )
    card = html.Div(
        html.P("Hover a zone for its time and why; click it to pin it here.", className="hint"),
        id=ids.TIMELINE_ZONE,
        className="zone-card",
    )
    graph = dcc.Graph(id=ids.TIMELINE_VIEW, config=graph_config("timeline"), figure=message_figure(LOADING, 240))
    return [
        html.Div([hint, shown], className="timeline-controls"),
        html.Div([graph, card], className="timeline-body"),
        html.Div(id=ids.TIMELINE_TIP, className="zone-tip"),
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
        records = {r.name: r for r in explorer.op_records(run_id)}
        return timeline_figure(
            view.items,
            kinds,
            selected,
            window,
            view.hidden_cores,
            view.core_zones,
            counters,
            rows=view.rows,
            meta=figure_meta(view, window or (0.0, run.total_ns / 1e3), records),
        )

    return {"select_in_timeline": select_in_timeline, "show_timeline": show_timeline}


def in_browser(app) -> None:
    # only the relayout events that move the time axis past what the figure holds reach the server
    # (tilescope.timeAxisChange): a zoom or pan inside it is drawn in the browser; and a request for
    # any other event (a resize, as the page grows a scroll bar) would replace a request still
    # running for a new run (Dash keeps the newest of a callback's requests) and lose that run
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
    # names in the zones wide enough, a hover card, and the zone card a click pins: in the browser,
    # again after every zoom and pan (tilescope.js hooks the drawn figure's events)
    app.clientside_callback(
        "function(figure) { return window.tilescope.hookTimeline(figure); }",
        Output(ids.TIMELINE_TIP, "className"),
        Input(ids.TIMELINE_VIEW, "figure"),
    )
    # only the open tab is on the page: as the timeline's opens, its figure is drawn anew, to be
    # hooked, outlined and given the pinned card again; a zone pinned elsewhere (find zone's list)
    # is kept for it, until another run is shown
    app.clientside_callback(
        "function(tab, pin, run, selected, figure) {"
        " return window.tilescope.timelineShown(tab, pin, selected, figure); }",
        Output(ids.TIMELINE_TIP, "className", allow_duplicate=True),
        Input(ids.ANALYSIS_TABS, "value"),
        Input(ids.TIMELINE_PIN, "data"),
        Input(ids.RUN_SELECT, "value"),
        State(ids.SELECTED_OP, "data"),
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


def core_row(track: str) -> str:
    """The row `track` is drawn in: an engine's zones go in a lane of its core's row."""
    core = parse_track(track)
    return core_track((core.row, core.col)) if core and core.engine else track


def lane(track: str) -> float:
    """Where in its row `track` is drawn, as a share of the row: 0 for a row's own zones."""
    core = parse_track(track)
    return LANES.get(core.engine, 0.0) if core and core.engine else 0.0


def outline(start_us: float, end_us: float, row: float, half: float = 0.45) -> dict:
    """The box around one of the selected op's zones (tilescope.js draws the same)."""
    return dict(
        type="rect",
        name=SELECTED,
        xref="x",
        yref="y",
        x0=start_us,
        x1=end_us,
        y0=row - half,
        y1=row + half,
        line=dict(color="#111827", width=2),
        fillcolor="rgba(0,0,0,0)",
        layer="above",
    )


def figure_meta(view, shown_us: tuple[float, float], records: Mapping) -> dict:
    """What tilescope.js reads off the figure: the time it holds (us) and for which view's width,
    whether a zoom inside needs more from the server, and each drawn op's kind, time, bound and why
    for the hover and zone cards (sent once per op, not once per zone)."""
    drawn = {i.op for i in view.items if i.op and i.track == DEVICE_ROW}
    ops = {}
    if len(drawn) <= OP_INFO_BUDGET:
        for name in drawn:
            if (r := records.get(name)) is not None:
                ops[name] = op_info(r)
    return dict(
        loaded=[view.window[0] / 1e3, view.window[1] / 1e3],
        span=shown_us[1] - shown_us[0],
        complete=view.complete,
        core_zones=view.core_zones,
        budget=CORE_ZONE_BUDGET,
        hidden=view.hidden_cores,
        ops=ops,
    )


def timeline_figure(
    zones: Sequence,
    kinds: Mapping[str, str],
    selected: str | None,
    window: tuple[float, float] | None = None,
    hidden_cores: int = 0,
    core_zones: int = 0,
    counters: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    rows: Sequence[str] | None = None,
    meta: dict | None = None,
) -> go.Figure:
    """One row per core (`rows`, drawn or waiting for a zoom, so the figure keeps its height; by
    default those the zones are on), engines' zones in lanes of their core's row, one bar per zone,
    coloured by op kind; times in us. Bars are WebGL line segments, so tens of thousands draw at
    once. Zones merged by the level-of-detail query (count > 1) are grey "N zones" bars. The
    selected op's zones are outlined. Under the zones, one plot per counter (`counters`: name ->
    (t_ns, value) steps) on the same time axis. `window` keeps the axis where the user zoomed;
    `meta` (figure_meta) is for tilescope.js."""
    rows = list(rows or sorted({core_row(z.track) for z in zones}, key=row_key))
    row = {track: i for i, track in enumerate(rows)}
    at = {t: row[core_row(t)] + lane(t) for t in {z.track for z in zones}}
    plots = [name for name in COUNTER_PLOTS if (counters or {}).get(name)]
    zone_px = max(170, min(MAX_ZONE_PX, 40 + ROW_PX * len(rows)))
    fig = make_subplots(
        rows=1 + len(plots),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.025 if plots else 0,
        row_heights=[zone_px, *[COUNTER_PX] * len(plots)],
    )
    row_px = (zone_px - 40) / max(len(rows), 1)
    _add_zones(fig, zones, kinds, at, max(2.0, min(12.0, 0.7 * row_px)), max(1.5, 0.22 * row_px))
    for i, name in enumerate(plots, start=2):
        _add_counter(fig, name, counters[name], i)
    for i in range(1, 2 + len(plots)):
        axis = {"range": list(window), "autorange": False} if window else {}
        fig.update_xaxes(showgrid=True, gridcolor="#e4e7eb", zeroline=False, row=i, col=1, **axis)
    fig.update_xaxes(title="time (us)", row=1 + len(plots), col=1)
    every = max(1, math.ceil(MIN_LABEL_PX / max(row_px, 1e-9)))  # thin rows: every n-th core is labelled
    labelled = [t for i, t in enumerate(rows) if t == DEVICE_ROW or i % every == 1 % every]
    fig.update_yaxes(
        tickvals=[row[t] for t in labelled],
        ticktext=[row_label(t) for t in labelled],
        tickfont=dict(size=9),
        fixedrange=True,
        range=[len(rows) - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        row=1,
        col=1,
    )
    fig.update_layout(
        legend=TOP_LEGEND,
        hovermode="closest",
        hoverdistance=40,
        dragmode="pan",
        showlegend=True,
        meta={**(meta or {}), "rows": rows},
        # outlines are layout shapes, not a trace: moving them (tilescope.js) redraws no WebGL trace
        shapes=[
            outline(z.start_ns / 1e3, z.end_ns / 1e3, at[z.track], 0.45 if core_row(z.track) == z.track else 0.15)
            for z in zones
            if selected and z.op == selected
        ],
    )
    if hidden_cores:
        _note_hidden(fig, hidden_cores, core_zones)
    return base_layout(fig, zone_px + 40 + COUNTER_PX * len(plots), top=30)


def _add_zones(
    fig: go.Figure, zones: Sequence, kinds: Mapping[str, str], at: Mapping[str, float], width: float, lane: float
) -> None:
    """One WebGL trace per op kind, and per kind for the engines' lanes (merged markers last, in
    grey); a kind's first trace names it in the legend. Hover and click cards are tilescope.js's:
    Plotly's hover label is off."""
    in_lane = {t for t in at if core_row(t) != t}
    traces: dict[tuple[str, bool], list] = {}
    for z in zones:
        traces.setdefault((kinds.get(z.op, "?") if z.op else MERGED, z.track in in_lane), []).append(z)
    named = sorted({k for k, _ in traces} - {MERGED}) + ([MERGED] if any(k == MERGED for k, _ in traces) else [])
    for kind in named:
        for lanes in (False, True):
            drawn = traces.get((kind, lanes))
            if not drawn:
                continue
            x, y, ops, names = segments(drawn, at)
            fig.add_trace(
                go.Scattergl(
                    x=x,
                    y=y,
                    customdata=ops,
                    text=names,
                    mode="lines",
                    name=plain(kind),
                    legendgroup=kind,
                    showlegend=not lanes or (kind, False) not in traces,
                    connectgaps=False,
                    line=dict(
                        color=MERGED_COLOUR if kind == MERGED else kind_colour(kind), width=lane if lanes else width
                    ),
                    hoverinfo="none",
                    meta={"half": 0.15 if lanes else 0.45},
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
