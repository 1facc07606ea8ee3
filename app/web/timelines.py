"""Tracy-style timelines: a run's zones by core (with engine sub-rows) over its counter plots, and
two runs' op rows aligned one above the other for a diff."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from compiler.simulator import ENGINES  # a core's sub-rows, in the order a tile moves through them

from .figures import KIND_COLOURS, SELECTED, base_layout, plain

MERGED = "merged"  # legend entry of "N zones" markers
MERGED_COLOUR = "#9ca3af"
ROW_PX = 14  # height of one timeline row
MAX_ZONE_PX = 3000  # the page scrolls past this; rows get thinner
MIN_LABEL_PX = 11  # rows thinner than this are not labelled one by one
COUNTER_PX = 90  # height of one counter plot


def row_key(track: str) -> tuple[int, int, int]:
    """The device row first, then cores in row-major order, each followed by its engines."""
    if not track.startswith("core "):
        return -1, -1, -1
    core, _, engine = track.removeprefix("core ").partition("/")
    r, c = core.split(",")
    return int(r), int(c), (ENGINES.index(engine) + 1 if engine in ENGINES else 0)


def row_label(track: str) -> str:
    core, _, engine = track.partition("/")
    return f"↳ {engine}" if engine else core


def _segments(zones: Sequence, row: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Zones as line segments for WebGL: start, middle and end vertices (hover and click find the
    nearest vertex), then a gap (NaN). Arrays, not lists: plotly checks a list element by element,
    which for a timeline of thousands of zones cost more than the query."""
    n = len(zones)
    start = np.fromiter((z.start_ns for z in zones), np.float64, n) / 1e3
    end = np.fromiter((z.end_ns for z in zones), np.float64, n) / 1e3
    rows = np.fromiter((row[z.track] for z in zones), np.float64, n)
    gap = np.full(n, np.nan)
    # a merged marker selects nothing; an engine's zone is that engine's phase of the op
    ops = [z.op or None for z in zones]
    labels = [plain(f"{z.op} · {z.name}" if z.op and z.depth else (z.op or z.name)) for z in zones]
    return (
        np.column_stack([start, (start + end) / 2, end, gap]).ravel(),
        np.column_stack([rows, rows, rows, gap]).ravel(),
        _vertices(ops, None),
        _vertices(labels, ""),
    )


def _vertices(values: list, gap) -> np.ndarray:
    """Each value for a segment's three vertices, then `gap`."""
    out = np.empty(4 * len(values), dtype=object)
    for i in range(3):
        out[i::4] = values
    out[3::4] = gap
    return out


class RowOp(NamedTuple):
    """An op on one row of the aligned diff, shaped like a zone for _segments."""

    track: str
    op: str
    start_ns: float
    end_ns: float
    name: str = ""
    depth: int = 0


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


# counter name -> (title of its plot, unit divisor, unit, axis label)
COUNTER_PLOTS = {
    "l1_bytes": ("L1 in use, fullest core", 1024, "KiB", "L1"),
    "dram_bytes_per_s": ("DRAM bandwidth", 1e9, "GB/s", "DRAM"),
    "lls_bytes_per_s": ("LLS bandwidth", 1e9, "GB/s", "LLS"),
}


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

    def kind_of(z) -> str:
        return kinds.get(z.op, "?") if z.op else MERGED

    kind_order = sorted({kind_of(z) for z in zones} - {MERGED}) + ([MERGED] if any(not z.op for z in zones) else [])
    colour = {k: KIND_COLOURS[i % len(KIND_COLOURS)] for i, k in enumerate(kind_order)}
    colour[MERGED] = MERGED_COLOUR
    plots = [name for name in COUNTER_PLOTS if (counters or {}).get(name)]
    zone_px = max(170, min(MAX_ZONE_PX, 40 + ROW_PX * len(tracks)))
    # rows too thin for a label each keep the core rows' labels; hover names the engine
    labelled = [t for t in tracks if (zone_px - 40) / max(len(tracks), 1) >= MIN_LABEL_PX or "/" not in t]
    height = zone_px + 40 + COUNTER_PX * len(plots)
    fig = make_subplots(
        rows=1 + len(plots),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.025 if plots else 0,
        row_heights=[zone_px, *[COUNTER_PX] * len(plots)],
    )
    width = max(2.0, min(12.0, 0.7 * (zone_px - 40) / max(len(tracks), 1)))  # a bar fills ~70% of its row
    for kind in kind_order:
        x, y, ops, names = _segments([z for z in zones if kind_of(z) == kind], row)
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
    for i, name in enumerate(plots, start=2):
        title, unit, label, short = COUNTER_PLOTS[name]
        steps = np.asarray(counters[name], dtype=np.float64).reshape(-1, 2)
        fig.add_trace(
            go.Scatter(
                x=steps[:, 0] / 1e3,
                y=steps[:, 1] / unit,
                mode="lines",
                line_shape="hv",
                fill="tozeroy",
                line=dict(color="#2563eb" if name == "l1_bytes" else "#dc2626", width=1),
                name=title,
                showlegend=False,
                hovertemplate="%{x:.2f} us<br>%{y:,.1f} " + label + "<extra>" + title + "</extra>",
            ),
            row=i,
            col=1,
        )
        fig.update_yaxes(
            title=dict(text=f"{short} {label}", font=dict(size=10)),
            rangemode="tozero",
            gridcolor="#e4e7eb",
            row=i,
            col=1,
        )
    for i in range(1, 2 + len(plots)):
        fig.update_xaxes(
            showgrid=True,
            gridcolor="#e4e7eb",
            zeroline=False,
            row=i,
            col=1,
            **({"range": list(window), "autorange": False} if window else {}),
        )
    fig.update_xaxes(title="time (us)", row=1 + len(plots), col=1)
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
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=None),
        hovermode="closest",
        hoverdistance=40,
        dragmode="zoom",
        # outlines are layout shapes, not a trace: moving them (tilescope.js) redraws no WebGL trace
        shapes=[
            outline(z.start_ns / 1e3, z.end_ns / 1e3, row[z.track]) for z in zones if selected and z.op == selected
        ],
    )
    if hidden_cores:
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
    fig = base_layout(fig, height)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


def aligned_timelines(
    a: Sequence,
    b: Sequence,
    labels: tuple[str, str],
    kinds: Mapping[str, str],
    changed: set[str],
) -> go.Figure:
    """Two runs' ops (records with name, start_ns, duration_ns) as two rows on one time axis, so
    where B gains or loses time against A shows as the rows drifting apart. Ops an override
    changed are outlined in both rows."""
    order = sorted({kinds.get(r.name, "?") for r in (*a, *b)})
    colour = {k: KIND_COLOURS[i % len(KIND_COLOURS)] for i, k in enumerate(order)}
    fig = go.Figure()
    row = {"a": 0, "b": 1}
    for kind in order:
        ops = [
            RowOp(label, r.name, r.start_ns, r.start_ns + r.duration_ns)
            for label, records in (("a", a), ("b", b))
            for r in records
            if kinds.get(r.name, "?") == kind
        ]
        x, y, op_names, _ = _segments(ops, row)
        durations = [f"{plain(o.op)}<br>{(o.end_ns - o.start_ns) / 1e3:,.2f} us" for o in ops]
        fig.add_trace(
            go.Scattergl(
                x=x,
                y=y,
                text=_vertices(durations, ""),
                customdata=op_names,
                mode="lines",
                name=plain(kind),
                connectgaps=False,
                line=dict(color=colour[kind], width=22),
                hovertemplate="<b>%{text}</b><extra>" + plain(kind) + "</extra>",
            )
        )
    fig.update_layout(
        shapes=[
            dict(
                type="rect",
                xref="x",
                yref="y",
                x0=r.start_ns / 1e3,
                x1=(r.start_ns + r.duration_ns) / 1e3,
                y0=row - 0.4,
                y1=row + 0.4,
                line=dict(color="#111827", width=2),
                fillcolor="rgba(0,0,0,0)",
                layer="above",
            )
            for row, records in enumerate((a, b))
            for r in records
            if r.name in changed
        ]
    )
    fig.update_xaxes(title="time (us)", showgrid=True, gridcolor="#e4e7eb", zeroline=False)
    fig.update_yaxes(
        tickvals=[0, 1], ticktext=list(labels), range=[1.6, -0.6], fixedrange=True, showgrid=False, zeroline=False
    )
    fig.update_layout(
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=None), hovermode="closest", dragmode="zoom"
    )
    fig = base_layout(fig, 170)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig
