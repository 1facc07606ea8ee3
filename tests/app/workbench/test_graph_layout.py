"""Laying a grouped view out: dataflow left to right, each open group a box around what it holds."""

from __future__ import annotations

import itertools

import pytest

from tilescope.app.workbench.graph_layout import layers, nested_layout
from tilescope.app.workbench.grouping import ScopeTree
from tilescope.compiler.frontend.model_refs import load_model


@pytest.fixture(scope="module")
def bert_tree():
    return ScopeTree(load_model("zoo:bert-base?layers=2").graph)


def test_layers_run_left_to_right_and_an_edge_against_graph_order_is_ignored():
    column = layers(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")])
    assert column["a"] < column["b"] < column["c"]


def test_every_open_group_is_a_box_around_exactly_the_nodes_it_holds(bert_tree):
    view = bert_tree.view(bert_tree.default_expansion())
    layout = nested_layout(view)
    assert set(layout.positions) == {n.id for n in view.nodes}
    assert {b.group for b in layout.boxes} == set(view.open_labels) and layout.boxes
    for box in layout.boxes:
        inside = {n for n, (x, y) in layout.positions.items() if box.x0 < x < box.x1 and box.y0 < y < box.y1}
        held = {n.id for n in view.nodes if _within(view.parent, n.id, box.group)}
        assert inside == held, box.group
        assert box.label == bert_tree.label(box.group)


def test_boxes_side_by_side_do_not_overlap_and_a_box_inside_another_lies_within_it(bert_tree):
    view = bert_tree.view(bert_tree.default_expansion())
    layout = nested_layout(view)
    for a, b in itertools.combinations(layout.boxes, 2):
        if _within(view.parent, a.group, b.group) or _within(view.parent, b.group, a.group):
            outer, inner = (b, a) if _within(view.parent, a.group, b.group) else (a, b)
            assert outer.x0 < inner.x0 < inner.x1 < outer.x1 and outer.y0 < inner.y0 < inner.y1 < outer.y1
            assert inner.depth > outer.depth
        else:
            assert a.x1 <= b.x0 or b.x1 <= a.x0 or a.y1 <= b.y0 or b.y1 <= a.y0, (a.group, b.group)
    assert {b.depth for b in layout.boxes} >= {0, 1}
    # outer boxes come first: drawn in that order, an inner box's fill lies over its parent's
    seen: set[str] = set()
    for box in layout.boxes:
        assert view.parent[box.group] is None or view.parent[box.group] in seen
        seen.add(box.group)


def test_nodes_never_share_a_cell(bert_tree):
    positions = nested_layout(bert_tree.view(bert_tree.default_expansion())).positions
    for (a, (xa, ya)), (b, (xb, yb)) in itertools.combinations(positions.items(), 2):
        assert abs(xa - xb) >= 0.99 or abs(ya - yb) >= 0.99, (a, b)


def test_a_view_without_open_groups_has_no_boxes_and_reads_left_to_right(bert_tree):
    view = bert_tree.view([])
    layout = nested_layout(view)
    assert layout.boxes == []
    for edge in view.edges:
        src, dst = layout.positions[edge.src], layout.positions[edge.dst]
        if view.nodes.index(next(n for n in view.nodes if n.id == edge.src)) < view.nodes.index(
            next(n for n in view.nodes if n.id == edge.dst)
        ):
            assert src[0] < dst[0]


def _within(parent: dict, node: str, group: str) -> bool:
    """Whether `group` is drawn around `node`, at any depth."""
    outer = parent.get(node)
    while outer is not None:
        if outer == group:
            return True
        outer = parent.get(outer)
    return False
