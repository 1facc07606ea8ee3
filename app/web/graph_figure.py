"""The graph figure: a level's graph grouped by name scope, coloured by a metric, with rings
around the selection and the search's matches."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import plotly.graph_objects as go

from tilescope.compiler.ir.graph import Graph

from tilescope.app.web.style import BOUND_COLOURS, SELECTED, TOP_LEGEND, base_layout, plain
from tilescope.app.workbench.graph_view import OpMetric
from tilescope.app.workbench.graph_layout import Box, nested_layout
from tilescope.app.workbench.grouping import GROUP, GroupedView

# colour mode -> what the colour bar or legend calls it
COLOUR_MODES = {
    "duration": "device time",
    "bound": "bound by",
    "memory": "output memory",
    "pct_peak": "% of peak",
    "delta": "delta vs baseline",
}
_UNITS = {"duration": " (us)", "delta": " (us)", "pct_peak": " (%)", "bound": "", "memory": ""}
MEMORY_COLOURS = {"dram": "#dc2626", "l1": "#16a34a", "lls": "#9333ea", "mixed": "#f59e0b"}
NO_DATA = "#cbd2d9"
AT_LOAD = "#c4b5fd"  # ops run once per model load: no time in the step to colour them by
FOCUS_REACH = 6  # columns (and rows) shown either side of a search's first match
BOX_FILLS = ("rgba(37, 99, 235, 0.05)", "rgba(37, 99, 235, 0.09)")  # an open group's box, by depth in turn
FIRST = 1e18  # label weight of a node holding a selected op or a match: labelled before any other
PLOT_PX = (820, 380)  # the graph's plot area on a laptop screen, to size the markers for
GROUP_WEIGHT = 1e15  # a group's label weight (plus its ops): before any op's (its time in ns)
# nodes a node's output may reach before its edges are drawn only for a selection: an input every
# layer reads (an attention mask) fanned over every box, a grey band at 300 layers (Model
# Explorer leaves such edges out too)
FANOUT = 8


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
    loaded: Collection[str] = (),
    focus: str | None = None,
) -> go.Figure:
    """The grouped graph: ops as small squares, collapsed groups as big ones (click to open), tensors
    as edges with their types on hover; coloured by `mode` with a colour bar or a legend. The nodes
    holding a `selected` op are outlined in blue, those holding a search match ringed in amber.
    Nodes whose ops all run once per model load (`loaded`: const-eval) have no time in the step:
    they get a colour of their own rather than "no data". A `focus` node (a search's first match)
    is centred, in a view a few columns wide."""
    layout = nested_layout(view)
    positions = layout.positions
    fanned = fanned_out(view)
    # always there, and first: a new selection changes only this trace (graph_rings)
    fig = go.Figure(graph_rings(view, selected, positions))
    for trace in _edge_traces(view, graph, positions, fanned):
        fig.add_trace(trace)
    values = {n.id: node_value(mode, n.ops, metrics) for n in view.nodes}
    loaded = set(loaded)
    first = {n.id for n in view.nodes if set(n.ops).intersection(selected) or set(n.ops).intersection(matches)}
    weights = {n.id: _label_weight(n, metrics, first) for n in view.nodes}
    nodes = _Nodes(fig, graph, positions, mode, values, loaded, weights, fanned)
    valued = [n for n in view.nodes if values[n.id] is not None]
    if mode in ("bound", "memory"):
        for category in sorted({values[n.id] for n in valued}):
            chosen = [n for n in valued if values[n.id] == category]
            nodes.add(chosen, category, {"color": _category_colour(mode, category)}, True)
    elif valued:
        nodes.add(valued, "ops", _colour_scale(mode, [values[n.id] for n in valued]), False)
    blank = [n for n in view.nodes if values[n.id] is None]
    at_load = [n for n in blank if n.ops and loaded.issuperset(n.ops)]
    nodes.add(at_load, "once per model load", {"color": AT_LOAD}, True)
    blank = [n for n in blank if not (n.ops and loaded.issuperset(n.ops))]
    nodes.add(blank, "no data", {"color": NO_DATA}, mode in ("bound", "memory") or bool(valued) or bool(at_load))
    ringed = [n for n in view.nodes if set(matches).intersection(n.ops)]
    if ringed:
        fig.add_trace(_rings(ringed, positions, "matches", "#f59e0b", 10))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor=None)
    home = None
    if focus in positions:
        x, y = positions[focus]
        home = [x - FOCUS_REACH, x + FOCUS_REACH, y - FOCUS_REACH, y + FOCUS_REACH]
    elif positions:  # the whole view with a margin: an outer box's edges are not the plot's
        xs = [p[0] for p in positions.values()] + [v for b in layout.boxes for v in (b.x0, b.x1)]
        ys = [p[1] for p in positions.values()] + [v for b in layout.boxes for v in (b.y0, b.y1)]
        home = [min(xs) - 0.6, max(xs) + 0.6, min(ys) - 0.6, max(ys) + 0.6]
    if home:
        fig.update_xaxes(range=home[:2], autorange=False)
        fig.update_yaxes(range=home[2:], autorange=False)
    fig.update_layout(
        dragmode="pan",
        clickmode="event",
        legend={**TOP_LEGEND, "title": dict(text=COLOUR_MODES[mode] + ":")},
        shapes=[_box_shape(box) for box in layout.boxes],
        # the browser labels the boxes and the nodes that have room, and sizes the nodes (markers
        # of `px` at the `home` ranges) as the zoom grows or shrinks them (assets/graph.js label)
        meta={"boxes": [[b.x0, b.y1, b.x1, plain(b.label), b.group] for b in layout.boxes], "home": home},
    )
    fig = base_layout(fig, 460, top=30)
    if focus in positions:
        fig.update_layout(uirevision=f"focus:{focus}")  # a new focus moves a view the user panned
    return fig


def _box_shape(box: Box) -> dict:
    return dict(
        type="rect",
        xref="x",
        yref="y",
        x0=box.x0,
        y0=box.y0,
        x1=box.x1,
        y1=box.y1,
        layer="below",
        line=dict(color="#9aa5b1", width=1),
        fillcolor=BOX_FILLS[box.depth % 2],
        name="group-box",
    )


def _label_weight(node, metrics: Mapping[str, OpMetric], first: set[str]) -> float:
    """Which labels the browser keeps when they would overlap: the selection's and the matches',
    then groups (the bigger first), then ops by time."""
    if node.id in first:
        return FIRST
    if node.is_group:
        return GROUP_WEIGHT + len(node.ops)
    return metrics[node.id].duration_ns if node.id in metrics else 0.0


TENSOR_PX = 6  # a tensor marker's size at the view's first zoom
TENSOR_AT = (0.5, 0.3, 0.7, 0.2, 0.8)  # where along an edge its tensor marker may go, the middle first


def _off_nodes(positions: Mapping) -> Callable[[float, float], bool]:
    """A test of whether a point is clear of every node's cell: a tensor marker on a node would
    take the node's clicks."""
    cells: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for x, y in positions.values():
        cells.setdefault((int(x // 1), int(y // 1)), []).append((x, y))

    def clear(x: float, y: float) -> bool:
        cx, cy = int(x // 1), int(y // 1)
        near = (p for dx in (-1, 0, 1) for dy in (-1, 0, 1) for p in cells.get((cx + dx, cy + dy), ()))
        return all(abs(x - px) >= 0.5 or abs(y - py) >= 0.5 for px, py in near)

    return clear


def fanned_out(view: GroupedView) -> dict[str, int]:
    """The nodes whose outputs more than FANOUT nodes read, and how many do."""
    readers: dict[str, set[str]] = {}
    for edge in view.edges:
        readers.setdefault(edge.src, set()).add(edge.dst)
    return {src: len(dst) for src, dst in readers.items() if len(dst) > FANOUT}


def _edge_traces(view: GroupedView, graph: Graph, positions: Mapping, fanned: Mapping) -> list[go.Scatter]:
    """The edges as lines, and a marker along each edge, clear of the nodes, naming its tensors on
    hover (none when the whole edge runs past nodes). The edges of a node read by many (`fanned`)
    are left to the selection's trace (graph_rings)."""
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    mid_x, mid_y, mid_text = [], [], []
    clear = _off_nodes(positions)
    for edge in view.edges:
        if edge.src in fanned:
            continue
        (x0, y0), (x1, y1) = positions[edge.src], positions[edge.dst]
        edge_x += [x0, x1, None]
        edge_y += [y0, y1, None]
        at = next((t for t in TENSOR_AT if clear(x0 + t * (x1 - x0), y0 + t * (y1 - y0))), None)
        if at is None:
            continue
        mid_x.append(x0 + at * (x1 - x0))
        mid_y.append(y0 + at * (y1 - y0))
        shown = [graph.tensors[t] for t in edge.tensors[:3]]
        more = f"<br>and {len(edge.tensors) - 3} more" if len(edge.tensors) > 3 else ""
        mid_text.append(
            "<br>".join(plain(f"{t.name}: {t.type_str()}" + (f" {t.layout.mlir()}" if t.layout else "")) for t in shown)
            + more
        )
    lines = go.Scatter(
        x=edge_x, y=edge_y, mode="lines", line=dict(color="#9aa5b1", width=1.2), hoverinfo="skip", showlegend=False
    )
    middles = go.Scatter(
        x=mid_x,
        y=mid_y,
        mode="markers",
        marker=dict(size=[TENSOR_PX] * len(mid_x), color="#cbd2d9"),
        hovertext=mid_text,
        hoverinfo="text",
        showlegend=False,
        name="tensors",
        meta={"px": [TENSOR_PX] * len(mid_x)},
    )
    return [lines, middles]


def _colour_scale(mode: str, numbers: list[float]) -> dict:
    title = dict(text=COLOUR_MODES[mode] + _UNITS[mode], side="right")
    scale = dict(color=numbers, showscale=True, colorbar=dict(title=title, thickness=10, len=0.8))
    if mode == "delta":
        reach = max(abs(v) for v in numbers) or 1.0
        scale.update(colorscale="RdBu_r", cmin=-reach, cmax=reach)  # red: slower than the baseline
    else:
        scale.update(colorscale="YlOrRd" if mode == "duration" else "Viridis")
    return scale


class _Nodes:
    """Adds the graph's nodes to a figure, one trace per colour category."""

    def __init__(
        self,
        fig: go.Figure,
        graph: Graph,
        positions: Mapping,
        mode: str,
        values: dict,
        loaded: set[str],
        weights: dict,
        fanned: Mapping[str, int],
    ):
        self.fig, self.graph, self.positions, self.mode, self.values = fig, graph, positions, mode, values
        self.loaded = loaded  # ops run once per model load
        self.weights = weights
        self.fanned = fanned  # nodes whose edges are drawn for a selection only, and their readers
        self.group_px, self.op_px = marker_px(positions)

    def hover(self, node) -> str:
        value = self.values[node.id]
        shown = ""
        if value is not None:
            said = value if isinstance(value, str) else f"{value:,.2f}" + _UNITS[self.mode]
            shown = f"<br>{COLOUR_MODES[self.mode]}: {said}"
        if node.id in self.fanned:
            shown += f"<br>read by {self.fanned[node.id]} nodes: its edges are drawn when it, or a reader, is selected"
        if node.is_group:
            kinds = sorted({self.graph.op(o).kind for o in node.ops})
            return (
                f"<b>{plain(node.id.removeprefix(GROUP))}</b><br>group of {len(node.ops)} ops: "
                f"{plain(', '.join(kinds[:6]))}{' ...' if len(kinds) > 6 else ''}{shown}<br><i>click to open</i>"
            )
        op = self.graph.op(node.id)
        out = self.graph.tensors[op.outputs[0]] if op.outputs else None
        shape = f"<br>{plain(out.type_str())}" if out else ""
        placed = f"<br>{plain(out.layout.mlir())}" if out is not None and out.layout else ""
        once = "<br>once per model load (const-eval), not in each step" if op.name in self.loaded else ""
        return f"<b>{plain(op.name)}</b><br>{plain(op.kind)}{shape}{placed}{shown}{once}"

    def add(self, nodes, name: str, marker: dict, showlegend: bool) -> None:
        if not nodes:
            return
        at = self.positions
        labels = [plain(f"{n.label} ({len(n.ops)})" if n.is_group else _short(n.label)) for n in nodes]
        sizes = [self.group_px if n.is_group else self.op_px for n in nodes]
        self.fig.add_trace(
            go.Scatter(
                x=[at[n.id][0] for n in nodes],
                y=[at[n.id][1] for n in nodes],
                mode="markers",
                # labelled in the browser, where it knows which have room at the zoom shown
                meta={"labels": labels, "weights": [self.weights[n.id] for n in nodes], "px": sizes},
                customdata=[n.id for n in nodes],
                hovertext=[self.hover(n) for n in nodes],
                hoverinfo="text",
                marker=dict(
                    size=sizes,
                    symbol="square",
                    line=dict(width=[2 if n.is_group else 1 for n in nodes], color="#52606d"),
                    **marker,
                ),
                name=name,
                showlegend=showlegend,
            )
        )


def marker_px(positions: Mapping) -> tuple[float, float]:
    """A closed group's and an op's marker size: most of a cell at the plot's usual size at most, so
    a long row of layers does not draw its nodes over each other."""
    xs, ys = [p[0] for p in positions.values()], [p[1] for p in positions.values()]
    if not xs:
        return 30, 18
    cell = min(PLOT_PX[0] / (max(xs) - min(xs) + 1.5), PLOT_PX[1] / (max(ys) - min(ys) + 1.5))
    return max(8, min(30, 0.8 * cell)), max(6, min(18, 0.6 * cell))


def _rings(nodes, positions, name: str, colour: str, margin: int, edges: Sequence = ()) -> go.Scatter:
    """Open squares `margin` px wider than the nodes they ring, and `edges` as lines in their colour."""
    group_px, op_px = marker_px(positions)
    x: list[float | None] = []
    y: list[float | None] = []
    px: list[float] = []  # a ring's node's size; 0 for the ends of an edge, which have no marker
    for n in nodes:  # a point apiece, apart: no line joins them
        x += [positions[n.id][0], None]
        y += [positions[n.id][1], None]
        px += [group_px if n.is_group else op_px, 0]
    for edge in edges:
        (x0, y0), (x1, y1) = positions[edge.src], positions[edge.dst]
        x += [x0, x1, None]
        y += [y0, y1, None]
        px += [0, 0, 0]
    return go.Scatter(
        x=x,
        y=y,
        mode="lines+markers",
        connectgaps=False,
        hoverinfo="skip",
        showlegend=False,
        name=name,
        line=dict(color=colour, width=1.5),
        marker=dict(
            size=[p + margin if p else 0 for p in px],
            symbol="square-open",
            color=colour,
            line=dict(width=3, color=colour),
        ),  # an open symbol is drawn in its colour
        meta={"px": px, "pad": margin},  # the browser sizes the rings with their nodes as the zoom changes
    )


def graph_rings(view: GroupedView, selected: Sequence[str], positions: Mapping | None = None) -> go.Scatter:
    """The rings around the nodes holding a selected op, and the edges of a node many read
    (fanned_out) that start or end at one: the graph figure's first trace."""
    if positions is None:
        positions = nested_layout(view).positions
    ringed = [n for n in view.nodes if set(selected).intersection(n.ops)]
    ids, fanned = {n.id for n in ringed}, fanned_out(view)
    edges = [e for e in view.edges if e.src in fanned and (e.src in ids or e.dst in ids)]
    return _rings(ringed, positions, SELECTED, "#2563eb", 14, edges)
