"""Plotly figures: pure functions from compiler graphs and perfdb rows to figures."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.colors
import plotly.graph_objects as go

from compiler.ir import Graph

from .grouping import GROUP, GroupedView, layered_positions

FONT = "Inter, system-ui, -apple-system, Segoe UI, sans-serif"
# One colour per op kind on the timeline (24 distinct before any repeats).
KIND_COLOURS = tuple(plotly.colors.qualitative.Dark24)
MAX_LABELLED_NODES = 60


def graph_config(name: str) -> dict:
    """A figure's toolbar: wheel zoom, and the camera button saves an SVG named after the view."""
    return {
        "displaylogo": False, "scrollZoom": True,
        "toImageButtonOptions": {"format": "svg", "filename": f"tilescope-{name}"},
    }


def _base_layout(fig: go.Figure, height: int) -> go.Figure:
    fig.update_layout(
        height=height,
        margin=dict(l=8, r=8, t=8, b=8),
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        font=dict(family=FONT, size=12, color="#1f2933"),
        hoverlabel=dict(font=dict(family=FONT, size=12)),
        uirevision="keep",  # zoom and pan survive a refresh of the same view
    )
    return fig


@dataclass(frozen=True)
class OpMetric:
    """What the graph can be coloured by, for one op of a run."""
    duration_ns: float
    bound: str
    pct_peak: float
    memory: str | None  # where its output lives (None before the layout level decides)
    delta_ns: float | None  # its duration minus the baseline run's (None without a baseline)


# colour mode -> what the colour bar or legend calls it
COLOUR_MODES = {
    "duration": "device time", "bound": "bound by", "memory": "output memory", "pct_peak": "% of peak",
    "delta": "delta vs baseline",
}
MEMORY_COLOURS = {"dram": "#dc2626", "l1": "#16a34a", "lls": "#9333ea", "mixed": "#f59e0b"}
NO_DATA = "#cbd2d9"


def node_value(mode: str, ops: Sequence[str], metrics: Mapping[str, OpMetric]):
    """A node's colour value: the sum of its ops' times (or deltas), their time-weighted % of peak
    (its FLOPs over its time against the peak), the bound of its longest op, or the memory its
    outputs share ("mixed" when they differ). None when no op of it has the figure."""
    found = [metrics[o] for o in ops if o in metrics]
    if mode == "duration":
        return sum(m.duration_ns for m in found) / 1e3 if found else None
    if mode == "delta":
        deltas = [m.delta_ns for m in found if m.delta_ns is not None]
        return sum(deltas) / 1e3 if deltas else None
    if mode == "pct_peak":
        total = sum(m.duration_ns for m in found)
        return sum(m.pct_peak * m.duration_ns for m in found) / total if total > 0 else None
    if mode == "bound":
        return max(found, key=lambda m: m.duration_ns).bound if found else None
    if mode == "memory":
        spaces = {m.memory for m in found if m.memory}
        return (spaces.pop() if len(spaces) == 1 else "mixed") if spaces else None
    raise ValueError(f"unknown colour mode {mode!r}")


def _short(name: str) -> str:
    """The last three scopes of a hierarchical name: enough to tell layers apart in a label."""
    parts = name.split(".")
    return ".".join(parts[-3:]) if len(parts) > 3 else name


def _category_colour(mode: str, value: str) -> str:
    return BOUND_COLOURS.get(value, "#6b7280") if mode == "bound" else MEMORY_COLOURS.get(value, "#0891b2")


def graph_figure(
    view: GroupedView, graph: Graph, metrics: Mapping[str, OpMetric], mode: str = "duration",
    selected: Sequence[str] = (), matches: Sequence[str] = (),
) -> go.Figure:
    """The grouped graph: ops as small squares, collapsed groups as big ones (click to open), tensors
    as edges with their types on hover; coloured by `mode` with a colour bar or a legend. The nodes
    holding a `selected` op are outlined in blue, those holding a search match ringed in amber."""
    positions = layered_positions([n.id for n in view.nodes], [(e.src, e.dst) for e in view.edges])
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    mid_x, mid_y, mid_text = [], [], []
    for edge in view.edges:
        (x0, y0), (x1, y1) = positions[edge.src], positions[edge.dst]
        edge_x += [x0, x1, None]
        edge_y += [y0, y1, None]
        mid_x.append((x0 + x1) / 2)
        mid_y.append((y0 + y1) / 2)
        shown = [graph.tensors[t] for t in edge.tensors[:3]]
        more = f"<br>and {len(edge.tensors) - 3} more" if len(edge.tensors) > 3 else ""
        mid_text.append("<br>".join(
            f"{t.name}: {t.type_str()}" + (f" {t.layout.mlir()}" if t.layout else "") for t in shown
        ) + more)

    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=edge_x, y=edge_y, mode="lines", line=dict(color="#9aa5b1", width=1.2), hoverinfo="skip", showlegend=False,
    ))
    fig.add_trace(go.Scatter(
        x=mid_x, y=mid_y, mode="markers", marker=dict(size=6, color="#cbd2d9"), hovertext=mid_text,
        hoverinfo="text", showlegend=False, name="tensors",
    ))
    values = {n.id: node_value(mode, n.ops, metrics) for n in view.nodes}
    labelled = len(view.nodes) <= MAX_LABELLED_NODES  # beyond that, labels only overlap: hover instead

    def hover(node) -> str:
        value = values[node.id]
        shown = "" if value is None else (
            f"<br>{COLOUR_MODES[mode]}: " + (value if isinstance(value, str) else f"{value:,.2f}" + _UNITS[mode])
        )
        if node.is_group:
            kinds = sorted({graph.op(o).kind for o in node.ops})
            return (f"<b>{node.id.removeprefix(GROUP)}</b><br>group of {len(node.ops)} ops: "
                    f"{', '.join(kinds[:6])}{' ...' if len(kinds) > 6 else ''}{shown}<br><i>click to open</i>")
        op = graph.op(node.id)
        out = graph.tensors[op.outputs[0]] if op.outputs else None
        shape = f"<br>{out.type_str()}" if out else ""
        placed = f"<br>{out.layout.mlir()}" if out is not None and out.layout else ""
        return f"<b>{op.name}</b><br>{op.kind}{shape}{placed}{shown}"

    def add_nodes(nodes, name: str, marker: dict, showlegend: bool) -> None:
        if not nodes:
            return
        fig.add_trace(go.Scatter(
            x=[positions[n.id][0] for n in nodes], y=[positions[n.id][1] for n in nodes],
            mode="markers+text" if labelled else "markers",
            text=[(f"{n.label} ({len(n.ops)})" if n.is_group else _short(n.id)) for n in nodes] if labelled else None,
            textposition="bottom center", textfont=dict(size=10, color="#3e4c59"),
            customdata=[n.id for n in nodes], hovertext=[hover(n) for n in nodes], hoverinfo="text",
            marker=dict(
                size=[30 if n.is_group else 18 for n in nodes], symbol="square",
                line=dict(width=[2 if n.is_group else 1 for n in nodes], color="#52606d"), **marker,
            ),
            name=name, showlegend=showlegend,
        ))

    valued = [n for n in view.nodes if values[n.id] is not None]
    blank = [n for n in view.nodes if values[n.id] is None]
    if mode in ("bound", "memory"):
        for category in sorted({values[n.id] for n in valued}):
            add_nodes([n for n in valued if values[n.id] == category], category,
                      {"color": _category_colour(mode, category)}, True)
    elif valued:
        numbers = [values[n.id] for n in valued]
        scale = dict(color=numbers, showscale=True, colorbar=dict(
            title=dict(text=COLOUR_MODES[mode] + _UNITS[mode], side="right"), thickness=10, len=0.8,
        ))
        if mode == "delta":
            reach = max(abs(v) for v in numbers) or 1.0
            scale.update(colorscale="RdBu_r", cmin=-reach, cmax=reach)  # red: slower than the baseline
        else:
            scale.update(colorscale="YlOrRd" if mode == "duration" else "Viridis")
        add_nodes(valued, "ops", scale, False)
    add_nodes(blank, "no data", {"color": NO_DATA}, mode in ("bound", "memory") or bool(valued))

    for name, wanted, colour, size in (("matches", set(matches), "#f59e0b", 40), ("selected", set(selected), "#2563eb", 44)):
        ringed = [n for n in view.nodes if wanted.intersection(n.ops)]
        if ringed:
            fig.add_trace(go.Scatter(
                x=[positions[n.id][0] for n in ringed], y=[positions[n.id][1] for n in ringed], mode="markers",
                hoverinfo="skip", showlegend=False, name=name,
                marker=dict(size=[size if n.is_group else size - 10 for n in ringed], symbol="square-open",
                            color=colour, line=dict(width=3, color=colour)),  # an open symbol is drawn in its colour
            ))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor=None)
    fig.update_layout(
        dragmode="pan", clickmode="event",
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=dict(text=COLOUR_MODES[mode] + ":")),
    )
    fig = _base_layout(fig, 460)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


_UNITS = {"duration": " (us)", "delta": " (us)", "pct_peak": " (%)", "bound": "", "memory": ""}


def _row_key(track: str) -> tuple[int, int]:
    """The device row first, then cores in row-major order."""
    if not track.startswith("core "):
        return -1, -1
    r, c = track.removeprefix("core ").split(",")
    return int(r), int(c)


MERGED = "merged"  # legend entry of "N zones" markers
MERGED_COLOUR = "#9ca3af"


SELECTED = "selected"  # the trace outlining the selected op's zones, drawn under the others


def _segments(zones: Sequence, row: Mapping[str, int]) -> tuple[list, list, list, list]:
    """Zones as line segments for WebGL: start, middle and end vertices (hover and click find the
    nearest vertex), then a gap."""
    x: list = []
    y: list = []
    ops: list = []
    names: list = []
    for z in zones:
        s, e, r = z.start_ns / 1e3, z.end_ns / 1e3, row[z.track]
        x += [s, (s + e) / 2, e, None]
        y += [r, r, r, None]
        ops += [z.op or None] * 3 + [None]  # a merged marker selects nothing
        names += [z.op or z.name] * 3 + [None]
    return x, y, ops, names


def timeline_figure(
    zones: Sequence, kinds: Mapping[str, str], selected: str | None, window: tuple[float, float] | None = None,
    hidden_cores: int = 0, core_zones: int = 0,
) -> go.Figure:
    """Tracy-style: one row per core, one bar per op zone, coloured by op kind; times in us. Bars
    are WebGL line segments, so tens of thousands draw at once. Zones merged by the level-of-detail
    query (count > 1) are grey "N zones" bars. The selected op's zones are outlined (the browser
    redraws the outline on selection). `window` keeps the axis where the user zoomed."""
    op_zones = [z for z in zones if z.depth == 0]
    tracks = sorted({z.track for z in op_zones}, key=_row_key)
    row = {track: i for i, track in enumerate(tracks)}

    def kind_of(z) -> str:
        return kinds.get(z.op, "?") if z.op else MERGED

    kind_order = sorted({kind_of(z) for z in op_zones} - {MERGED}) + ([MERGED] if any(not z.op for z in op_zones) else [])
    colour = {k: KIND_COLOURS[i % len(KIND_COLOURS)] for i, k in enumerate(kind_order)}
    colour[MERGED] = MERGED_COLOUR
    height = max(240, min(900, 70 + 14 * len(tracks)))
    width = max(2.0, min(12.0, 0.7 * (height - 70) / max(len(tracks), 1)))  # a bar fills ~70% of its row
    fig = go.Figure()
    x, y, ops, _ = _segments([z for z in op_zones if selected and z.op == selected], row)
    fig.add_trace(go.Scattergl(
        x=x, y=y, customdata=ops, mode="lines", name=SELECTED, line=dict(color="#111827", width=width + 4),
        hoverinfo="skip", showlegend=False,
    ))
    for kind in kind_order:
        x, y, ops, names = _segments([z for z in op_zones if kind_of(z) == kind], row)
        fig.add_trace(go.Scattergl(
            x=x, y=y, customdata=ops, text=names, mode="lines", name=kind, connectgaps=False,
            line=dict(color=colour[kind], width=width),
            hovertemplate="<b>%{text}</b><br>%{x:.2f} us<extra>" + kind + "</extra>",
        ))
    fig.update_layout(
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=None),
        hovermode="closest", hoverdistance=40,
        xaxis=dict(
            title="time (us)", showgrid=True, gridcolor="#e4e7eb", zeroline=False,
            **({"range": list(window), "autorange": False} if window else {}),
        ),
        yaxis=dict(
            tickvals=list(range(len(tracks))), ticktext=tracks, tickfont=dict(size=9), fixedrange=True,
            range=[len(tracks) - 0.5, -0.5], showgrid=False, zeroline=False,
        ),
        dragmode="zoom",
    )
    if hidden_cores:
        fig.add_annotation(
            text=f"{hidden_cores} core rows hidden: {core_zones:,} zones in this window; zoom in to see them",
            xref="paper", yref="paper", x=0, y=0.98, yanchor="top", xanchor="left", showarrow=False,
            font=dict(size=11, color="#616e7c"), bgcolor="rgba(255,255,255,0.85)",
        )
    fig = _base_layout(fig, height)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


def zones_drawn(figure: go.Figure) -> int:
    """How many zones (or merged markers) a timeline figure draws, outline excluded."""
    return sum(sum(1 for v in trace.x if v is None) for trace in figure.data if trace.name != SELECTED)


BOUND_COLOURS = {
    "compute": "#2563eb", "dram": "#dc2626", "l1": "#16a34a", "noc": "#9333ea", "vector": "#0891b2",
    "dispatch": "#6b7280", "balanced": "#f59e0b", "measured": "#111827",
}


def roofline_figure(points: Sequence[dict], roofs: Mapping[str, float], peak_flops: float, selected: str | None) -> go.Figure:
    """The run's ops on the target's roofline, log-log: attainable FLOP/s is the lower of peak
    compute and (bytes/s of a memory x FLOPs per byte). `points` carry name, kind, bound,
    intensity (FLOPs per byte of the memory named in `memory`), achieved (FLOP/s) and memory."""
    fig = go.Figure()
    xs = [p["intensity"] for p in points] or [1.0]
    lo, hi = min(min(xs) / 4, 0.1), max(max(xs) * 4, 1e4)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    dash_of = {0: "solid", 1: "dash", 2: "dot"}
    for i, (memory, bandwidth) in enumerate(roofs.items()):
        fig.add_trace(go.Scatter(
            x=grid, y=[min(peak_flops, bandwidth * x) / 1e12 for x in grid], mode="lines", name=f"{memory} roof",
            line=dict(color="#374151", width=1.5, dash=dash_of.get(i, "dashdot")), hoverinfo="skip",
        ))
    for bound in sorted({p["bound"] for p in points}):
        mine = [p for p in points if p["bound"] == bound]
        fig.add_trace(go.Scatter(
            x=[p["intensity"] for p in mine], y=[p["achieved"] / 1e12 for p in mine], mode="markers",
            name=f"{bound}-bound", customdata=[p["name"] for p in mine],
            marker=dict(
                color=BOUND_COLOURS.get(bound, "#6b7280"), size=[14 if p["name"] == selected else 8 for p in mine],
                symbol=["circle" if p["memory"] == "dram" else "diamond" for p in mine],
                line=dict(width=[2 if p["name"] == selected else 0 for p in mine], color="#111827"),
            ),
            hovertext=[
                f"<b>{p['name']}</b><br>{p['kind']}<br>{p['intensity']:.1f} FLOP/{p['memory']} byte"
                f"<br>{p['achieved'] / 1e12:.2f} TFLOP/s ({p['achieved'] / peak_flops * 100:.0f}% of peak)"
                for p in mine
            ],
            hoverinfo="text",
        ))
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOPs per byte)", gridcolor="#e4e7eb")
    fig.update_yaxes(type="log", title="TFLOP/s", gridcolor="#e4e7eb")
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=None), clickmode="event")
    fig = _base_layout(fig, 380)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


def memory_figure(envelope: Sequence[tuple[float, float]], capacity: float, peak: Mapping | None) -> go.Figure:
    """L1 in use on the fullest core over the run (KiB, a step per op), with the capacity and the
    planner's peak marked."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[t / 1e3 for t, _ in envelope], y=[v / 1024 for _, v in envelope], mode="lines", line_shape="hv",
        fill="tozeroy", name="L1 in use, fullest core", line=dict(color="#2563eb", width=1.5),
        hovertemplate="%{x:.2f} us<br>%{y:,.1f} KiB<extra></extra>",
    ))
    fig.add_hline(y=capacity / 1024, line=dict(color="#b91c1c", dash="dash", width=1),
                  annotation_text=f"L1 capacity {capacity / 1024:,.0f} KiB", annotation_position="top left")
    if envelope:
        t, v = max(envelope, key=lambda p: p[1])
        fig.add_trace(go.Scatter(
            x=[t / 1e3], y=[v / 1024], mode="markers+text", name="peak", marker=dict(color="#b91c1c", size=9),
            text=[f"peak {v / 1024:,.1f} KiB" + (f" at {peak['op']}" if peak and peak.get("op") else "")],
            textposition="top right", hoverinfo="skip",
        ))
    fig.update_xaxes(title="time (us)", gridcolor="#e4e7eb")
    fig.update_yaxes(title="KiB per core", gridcolor="#e4e7eb", rangemode="tozero")
    fig.update_layout(showlegend=False)
    return _base_layout(fig, 300)


def duration_histogram(a: Sequence[float], b: Sequence[float], labels: tuple[str, str]) -> go.Figure:
    """Two runs' op durations overlaid on shared log bins, as Tracy's compare view draws them."""
    fig = go.Figure()
    values = [d for d in (*a, *b) if d > 0]
    if values:
        lo, hi = math.log10(min(values) / 1e3), math.log10(max(values) / 1e3)
        size = max((hi - lo) / 40, 1e-3)
        for durations, label, colour in ((a, labels[0], "#2563eb"), (b, labels[1], "#f59e0b")):
            fig.add_trace(go.Histogram(
                x=[math.log10(d / 1e3) for d in durations if d > 0], name=label, opacity=0.6,
                marker_color=colour, xbins=dict(start=lo - size, end=hi + size, size=size),
                hovertemplate="%{y} ops<extra>" + label + "</extra>",
            ))
    ticks = [k + math.log10(m) for k in range(-3, 6) for m in (1, 2, 5)]
    fig.update_xaxes(
        title="op duration", tickvals=ticks, ticktext=[f"{10.0 ** t:.3g} us" for t in ticks], gridcolor="#e4e7eb",
    )
    fig.update_yaxes(title="ops", gridcolor="#e4e7eb")
    fig.update_layout(barmode="overlay", legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    fig = _base_layout(fig, 260)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig
