"""Plotly figures: pure functions from compiler graphs and perfdb rows to figures."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import plotly.colors
import plotly.graph_objects as go

from compiler.ir import Graph

from ..workbench.explorer import OpMetric
from ..workbench.grouping import GROUP, GroupedView, layered_positions

FONT = "Inter, system-ui, -apple-system, Segoe UI, sans-serif"
# One colour per op kind on the timeline (24 distinct before any repeats).
KIND_COLOURS = tuple(plotly.colors.qualitative.Dark24)
MAX_LABELLED_NODES = 60


def plain(text: str) -> str:
    """Text from a model (op names, kinds, tensors) as Plotly shows it: Plotly reads <b>, <a href>
    and the like in every label as markup, and shows the entities &lt; &gt; &amp; as characters."""
    return html.escape(str(text), quote=False)


def graph_config(name: str) -> dict:
    """A figure's toolbar: wheel zoom, and the camera button saves an SVG named after the view."""
    return {
        "displaylogo": False,
        "scrollZoom": True,
        "toImageButtonOptions": {"format": "svg", "filename": f"tilescope-{name}"},
    }


def base_layout(fig: go.Figure, height: int) -> go.Figure:
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


# colour mode -> what the colour bar or legend calls it
COLOUR_MODES = {
    "duration": "device time",
    "bound": "bound by",
    "memory": "output memory",
    "pct_peak": "% of peak",
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
    view: GroupedView,
    graph: Graph,
    metrics: Mapping[str, OpMetric],
    mode: str = "duration",
    selected: Sequence[str] = (),
    matches: Sequence[str] = (),
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
        mid_text.append(
            "<br>".join(plain(f"{t.name}: {t.type_str()}" + (f" {t.layout.mlir()}" if t.layout else "")) for t in shown)
            + more
        )

    # always there, and first: a new selection changes only this trace (graph_rings)
    fig = go.Figure(graph_rings(view, selected, positions))
    fig.add_trace(
        go.Scatter(
            x=edge_x,
            y=edge_y,
            mode="lines",
            line=dict(color="#9aa5b1", width=1.2),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=mid_x,
            y=mid_y,
            mode="markers",
            marker=dict(size=6, color="#cbd2d9"),
            hovertext=mid_text,
            hoverinfo="text",
            showlegend=False,
            name="tensors",
        )
    )
    values = {n.id: node_value(mode, n.ops, metrics) for n in view.nodes}
    labelled = len(view.nodes) <= MAX_LABELLED_NODES  # beyond that, labels only overlap: hover instead

    def hover(node) -> str:
        value = values[node.id]
        shown = (
            ""
            if value is None
            else (f"<br>{COLOUR_MODES[mode]}: " + (value if isinstance(value, str) else f"{value:,.2f}" + _UNITS[mode]))
        )
        if node.is_group:
            kinds = sorted({graph.op(o).kind for o in node.ops})
            return (
                f"<b>{plain(node.id.removeprefix(GROUP))}</b><br>group of {len(node.ops)} ops: "
                f"{plain(', '.join(kinds[:6]))}{' ...' if len(kinds) > 6 else ''}{shown}<br><i>click to open</i>"
            )
        op = graph.op(node.id)
        out = graph.tensors[op.outputs[0]] if op.outputs else None
        shape = f"<br>{plain(out.type_str())}" if out else ""
        placed = f"<br>{plain(out.layout.mlir())}" if out is not None and out.layout else ""
        return f"<b>{plain(op.name)}</b><br>{plain(op.kind)}{shape}{placed}{shown}"

    def add_nodes(nodes, name: str, marker: dict, showlegend: bool) -> None:
        if not nodes:
            return
        fig.add_trace(
            go.Scatter(
                x=[positions[n.id][0] for n in nodes],
                y=[positions[n.id][1] for n in nodes],
                mode="markers+text" if labelled else "markers",
                text=[plain(f"{n.label} ({len(n.ops)})" if n.is_group else _short(n.label)) for n in nodes]
                if labelled
                else None,
                # neighbouring columns label above and below in turn: a chain of nodes, one per column,
                # has less room across than its labels need
                textposition=["bottom center" if int(positions[n.id][0]) % 2 == 0 else "top center" for n in nodes],
                textfont=dict(size=10, color="#3e4c59"),
                customdata=[n.id for n in nodes],
                hovertext=[hover(n) for n in nodes],
                hoverinfo="text",
                marker=dict(
                    size=[30 if n.is_group else 18 for n in nodes],
                    symbol="square",
                    line=dict(width=[2 if n.is_group else 1 for n in nodes], color="#52606d"),
                    **marker,
                ),
                name=name,
                showlegend=showlegend,
            )
        )

    valued = [n for n in view.nodes if values[n.id] is not None]
    blank = [n for n in view.nodes if values[n.id] is None]
    if mode in ("bound", "memory"):
        for category in sorted({values[n.id] for n in valued}):
            add_nodes(
                [n for n in valued if values[n.id] == category],
                category,
                {"color": _category_colour(mode, category)},
                True,
            )
    elif valued:
        numbers = [values[n.id] for n in valued]
        scale = dict(
            color=numbers,
            showscale=True,
            colorbar=dict(
                title=dict(text=COLOUR_MODES[mode] + _UNITS[mode], side="right"),
                thickness=10,
                len=0.8,
            ),
        )
        if mode == "delta":
            reach = max(abs(v) for v in numbers) or 1.0
            scale.update(colorscale="RdBu_r", cmin=-reach, cmax=reach)  # red: slower than the baseline
        else:
            scale.update(colorscale="YlOrRd" if mode == "duration" else "Viridis")
        add_nodes(valued, "ops", scale, False)
    add_nodes(blank, "no data", {"color": NO_DATA}, mode in ("bound", "memory") or bool(valued))

    ringed = [n for n in view.nodes if set(matches).intersection(n.ops)]
    if ringed:
        fig.add_trace(_rings(ringed, positions, "matches", "#f59e0b", 40))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor=None)
    fig.update_layout(
        dragmode="pan",
        clickmode="event",
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=dict(text=COLOUR_MODES[mode] + ":")),
    )
    fig = base_layout(fig, 460)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


def _rings(nodes, positions, name: str, colour: str, size: int) -> go.Scatter:
    return go.Scatter(
        x=[positions[n.id][0] for n in nodes],
        y=[positions[n.id][1] for n in nodes],
        mode="markers",
        hoverinfo="skip",
        showlegend=False,
        name=name,
        marker=dict(
            size=[size if n.is_group else size - 10 for n in nodes],
            symbol="square-open",
            color=colour,
            line=dict(width=3, color=colour),
        ),  # an open symbol is drawn in its colour
    )


def graph_rings(view: GroupedView, selected: Sequence[str], positions: Mapping | None = None) -> go.Scatter:
    """The rings around the nodes holding a selected op: the graph figure's first trace."""
    if positions is None:
        positions = layered_positions([n.id for n in view.nodes], [(e.src, e.dst) for e in view.edges])
    return _rings([n for n in view.nodes if set(selected).intersection(n.ops)], positions, SELECTED, "#2563eb", 44)


SELECTED = "selected"  # the name of the selection's ring (graph, roofline) and outlines (timeline)

_UNITS = {"duration": " (us)", "delta": " (us)", "pct_peak": " (%)", "bound": "", "memory": ""}


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


def roofline_figure(
    points: Sequence[dict], roofs: Mapping[str, float], peak_flops: float, selected: str | None
) -> go.Figure:
    """The run's ops on the target's roofline, log-log: attainable FLOP/s is the lower of peak
    compute and (bytes/s of a memory x FLOPs per byte). `points` carry name, kind, bound,
    intensity (FLOPs per byte of the memory named in `memory`), achieved (FLOP/s) and memory."""
    # always there, and first: a new selection changes only this trace (roofline_ring)
    fig = go.Figure(roofline_ring(points, selected))
    xs = [p["intensity"] for p in points] or [1.0]
    lo, hi = min(min(xs) / 4, 0.1), max(max(xs) * 4, 1e4)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    dash_of = {0: "solid", 1: "dash", 2: "dot"}
    for i, (memory, bandwidth) in enumerate(roofs.items()):
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=[min(peak_flops, bandwidth * x) / 1e12 for x in grid],
                mode="lines",
                name=f"{memory} roof",
                line=dict(color="#374151", width=1.5, dash=dash_of.get(i, "dashdot")),
                hoverinfo="skip",
            )
        )
    for bound in sorted({p["bound"] for p in points}):
        mine = [p for p in points if p["bound"] == bound]
        fig.add_trace(
            go.Scatter(
                x=[p["intensity"] for p in mine],
                y=[p["achieved"] / 1e12 for p in mine],
                mode="markers",
                name=f"{bound}-bound",
                customdata=[p["name"] for p in mine],
                marker=dict(
                    color=BOUND_COLOURS.get(bound, "#6b7280"),
                    size=8,
                    symbol=["circle" if p["memory"] == "dram" else "diamond" for p in mine],
                ),
                hovertext=[
                    f"<b>{plain(p['name'])}</b><br>{plain(p['kind'])}<br>{p['intensity']:.1f} FLOP/{p['memory']} byte"
                    f"<br>{p['achieved'] / 1e12:.2f} TFLOP/s ({p['achieved'] / peak_flops * 100:.0f}% of peak)"
                    for p in mine
                ],
                hoverinfo="text",
            )
        )
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOPs per byte)", gridcolor="#e4e7eb")
    fig.update_yaxes(type="log", title="TFLOP/s", gridcolor="#e4e7eb")
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0, title=None), clickmode="event")
    fig = base_layout(fig, 380)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


def roofline_ring(points: Sequence[dict], selected: str | None) -> go.Scatter:
    """The ring around the selected op's point: the roofline figure's first trace."""
    chosen = [p for p in points if p["name"] == selected]
    return go.Scatter(
        x=[p["intensity"] for p in chosen],
        y=[p["achieved"] / 1e12 for p in chosen],
        mode="markers",
        name=SELECTED,
        marker=dict(size=16, symbol="circle-open", color="#2563eb", line=dict(width=3, color="#2563eb")),
        hoverinfo="skip",
        showlegend=False,
    )


def memory_figure(envelope: Sequence[tuple[float, float]], capacity: float, peak: Mapping | None) -> go.Figure:
    """L1 in use on the fullest core over the run (KiB, a step per op), with the capacity and the
    planner's peak marked."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[t / 1e3 for t, _ in envelope],
            y=[v / 1024 for _, v in envelope],
            mode="lines",
            line_shape="hv",
            fill="tozeroy",
            name="L1 in use, fullest core",
            line=dict(color="#2563eb", width=1.5),
            hovertemplate="%{x:.2f} us<br>%{y:,.1f} KiB<extra></extra>",
        )
    )
    fig.add_hline(
        y=capacity / 1024,
        line=dict(color="#b91c1c", dash="dash", width=1),
        annotation_text=f"L1 capacity {capacity / 1024:,.0f} KiB",
        annotation_position="top left",
    )
    if envelope:
        t, v = max(envelope, key=lambda p: p[1])
        fig.add_trace(
            go.Scatter(
                x=[t / 1e3],
                y=[v / 1024],
                mode="markers+text",
                name="peak",
                marker=dict(color="#b91c1c", size=9),
                text=[f"peak {v / 1024:,.1f} KiB" + (f" at {plain(peak['op'])}" if peak and peak.get("op") else "")],
                textposition="top right",
                hoverinfo="skip",
            )
        )
    fig.update_xaxes(title="time (us)", gridcolor="#e4e7eb")
    fig.update_yaxes(title="KiB per core", gridcolor="#e4e7eb", rangemode="tozero")
    fig.update_layout(showlegend=False)
    return base_layout(fig, 300)


def duration_histogram(a: Sequence[float], b: Sequence[float], labels: tuple[str, str]) -> go.Figure:
    """Two runs' op durations overlaid on shared log bins, as Tracy's compare view draws them."""
    fig = go.Figure()
    values = [d for d in (*a, *b) if d > 0]
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
    ticks = _log_ticks(lo - size, hi + size) if values else []
    fig.update_xaxes(
        title="op duration",
        tickvals=ticks,
        ticktext=[f"{10.0**t:.3g} us" for t in ticks],
        gridcolor="#e4e7eb",
    )
    fig.update_yaxes(title="ops", gridcolor="#e4e7eb")
    fig.update_layout(barmode="overlay", legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    fig = base_layout(fig, 260)
    fig.update_layout(margin=dict(l=8, r=8, t=30, b=8))
    return fig


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


def find_zone_histogram(durations_ns: Sequence[float], what: str) -> go.Figure:
    """Tracy's find zone: how the durations of `what` spread, with their mean and median."""
    fig = go.Figure()
    us = sorted(d / 1e3 for d in durations_ns)
    if us:
        fig.add_trace(
            go.Histogram(
                x=us,
                nbinsx=min(60, max(10, len(us) // 2)),
                marker_color="#2563eb",
                hovertemplate="%{x} us: %{y}<extra></extra>",
                name=plain(what),
            )
        )
        mean, median = (
            sum(us) / len(us),
            us[len(us) // 2] if len(us) % 2 else (us[len(us) // 2 - 1] + us[len(us) // 2]) / 2,
        )
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
        title = f"{plain(what)}: {len(us):,} zones, {us[0]:,.2f} .. {us[-1]:,.2f} us"
    else:
        title = f"{plain(what)}: no zones" if what else "nothing selected"
    fig.update_xaxes(title="duration (us)", gridcolor="#e4e7eb")
    fig.update_yaxes(title="zones", gridcolor="#e4e7eb")
    fig.update_layout(title=dict(text=title, font=dict(size=12), x=0), showlegend=False, bargap=0.05)
    fig = base_layout(fig, 260)
    fig.update_layout(margin=dict(l=8, r=8, t=34, b=8))
    return fig
