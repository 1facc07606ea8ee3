"""Where a grouped view's nodes go: left-to-right layers of dataflow, each open group laid out as
a box of its own inside its parent's layers, as Model Explorer nests layers.

Coordinates are in node cells: a node takes a 1 x 1 cell with its marker at the centre, so nodes
one cell apart never touch. y grows upwards, as the figure's axis does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from tilescope.app.workbench.grouping import GroupedView

PAD = 0.3  # cells between a box's edge and what it holds, at its sides and bottom
HEAD = 0.6  # cells above what a box holds: room for its label
GAP = 0.3  # cells between a box and what is next to it: boxes side by side do not touch
CLOSED_GROUP = (1.4, 1.0)  # cells a closed group's node takes: its marker is bigger than an op's


@dataclass(frozen=True)
class Box:
    """An open group's outline: what it holds is drawn inside."""

    group: str
    label: str
    x0: float
    y0: float
    x1: float
    y1: float
    depth: int  # 0 for a box at the top, 1 inside one, ...


@dataclass(frozen=True)
class Layout:
    positions: dict[str, tuple[float, float]]  # each node's centre
    boxes: list[Box]  # outer boxes before the boxes inside them


def layers(items: list[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each item's column: as late as its readers allow (so side chains such as weight reshapes
    sit next to the op that reads them, not all in the first column). `items` come in graph order;
    an edge against that order (folding ops into groups can close a loop) does not push its
    reader right."""
    index = {n: i for i, n in enumerate(items)}
    dag = nx.DiGraph()
    dag.add_nodes_from(items)
    dag.add_edges_from((s, d) for s, d in edges if index[s] < index[d])
    depth: dict[str, int] = {}
    for name in items:
        depth[name] = max((depth[p] + 1 for p in dag.predecessors(name)), default=0)
    last = max(depth.values(), default=0)
    layer: dict[str, int] = {}
    for name in reversed(items):
        layer[name] = min((layer[s] - 1 for s in dag.successors(name)), default=last)
    return layer


def nested_layout(view: GroupedView) -> Layout:
    """The view's nodes in layers, each open group a box laid out on its own and then placed as
    one item of the layers around it."""
    parent = view.parent or {n.id: None for n in view.nodes}
    items: dict[str | None, dict[str, None]] = {None: {}}  # each box's direct items, in graph order
    for node in view.nodes:
        inner, outer = node.id, parent.get(node.id)
        while True:
            items.setdefault(outer, {})[inner] = None
            if outer is None:
                break
            inner, outer = outer, parent.get(outer)
    edges: dict[str | None, set[tuple[str, str]]] = {}
    for edge in view.edges:
        box, src, dst = _meeting(parent, edge.src, edge.dst)
        edges.setdefault(box, set()).add((src, dst))
    depth = {box: _depth(parent, box) for box in items}
    size: dict[str, tuple[float, float]] = {n.id: CLOSED_GROUP if n.is_group else (1.0, 1.0) for n in view.nodes}
    offset: dict[str, tuple[float, float]] = {}  # each item's top-left inside its box's inner area
    for box in sorted(items, key=lambda b: -depth[b]):  # inner boxes are sized first
        width, height = _place(list(items[box]), edges.get(box, ()), size, offset)
        if box is not None:
            size[box] = (width + 2 * PAD + GAP, height + HEAD + PAD + GAP)  # its outline is inset by GAP / 2
    positions: dict[str, tuple[float, float]] = {}
    boxes: list[Box] = []
    origin: dict[str | None, tuple[float, float]] = {None: (0.0, 0.0)}  # each box's inner top-left
    for box in sorted(items, key=lambda b: depth[b]):  # outer boxes are placed first
        ox, oy = origin[box]
        for item in items[box]:
            x, y = ox + offset[item][0], oy + offset[item][1]
            if item in items:
                x, y, (w, h) = x + GAP / 2, y + GAP / 2, size[item]
                w, h = w - GAP, h - GAP
                boxes.append(Box(item, view.open_labels.get(item, item), x, -y - h, x + w, -y, depth[box]))
                origin[item] = (x + PAD, y + HEAD)
            else:
                positions[item] = (x + size[item][0] / 2, -(y + size[item][1] / 2))
    return Layout(positions, boxes)


def _meeting(parent: dict, src: str, dst: str) -> tuple[str | None, str, str]:
    """The innermost box holding both ends of an edge, and the items of that box holding each."""
    chain_src, chain_dst = _chain(parent, src), _chain(parent, dst)
    shared = 0
    while shared < min(len(chain_src), len(chain_dst)) - 1 and chain_src[shared + 1] == chain_dst[shared + 1]:
        shared += 1
    return chain_src[shared], chain_src[shared + 1], chain_dst[shared + 1]


def _chain(parent: dict, node: str | None) -> list[str | None]:
    """The boxes around `node`, outermost (None, the top) first, then the node itself."""
    chain = [node]
    while node is not None:
        node = parent.get(node)
        chain.append(node)
    return chain[::-1]


def _depth(parent: dict, box: str | None) -> int:
    return len(_chain(parent, box)) - 1


def _place(items: list[str], edges, size: dict, offset: dict) -> tuple[float, float]:
    """Lay `items` (of the sizes given) out in columns, writing each one's top-left into `offset`;
    the width and height they take. Each column is as wide as its widest item, and its items are
    stacked and centred in the tallest column's height."""
    layer = layers(items, edges)
    columns: dict[int, list[str]] = {}
    for item in items:  # graph order keeps each column stable across runs
        columns.setdefault(layer[item], []).append(item)
    ordered = [columns[c] for c in sorted(columns)]
    height = max((sum(size[i][1] for i in column) for column in ordered), default=0.0)
    x = 0.0
    for column in ordered:
        width = max(size[i][0] for i in column)
        y = (height - sum(size[i][1] for i in column)) / 2
        for item in column:
            offset[item] = (x + (width - size[item][0]) / 2, y)
            y += size[item][1]
        x += width
    return x, height
