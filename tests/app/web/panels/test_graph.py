"""The graph panel: grouping, colouring, search, and names shown as text."""

from __future__ import annotations

import pytest

from tilescope.app.workbench.graph_view import search_ops
from tilescope.app.workbench.grouping import MAX_NODES
from tilescope.app.workbench.natural_order import natural_key
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.ir.graph import Graph, Op

from .conftest import CONSUMER, FC1, TARGET, POLICY, data_url, marked_text, progress, rerun, shown_run


def _ops_drawn(figure) -> set[str]:
    return {
        n
        for t in figure.data
        if t.name not in ("selected", "matches", "tensors") and t.customdata is not None
        for n in t.customdata
    }


def _ringed(trace) -> int:
    """How many nodes a ring trace rings (its points with a marker: the ends of its edges have none)."""
    return sum(1 for px in trace.meta["px"] if px)


def test_a_small_graph_opens_with_every_group_open_and_every_op_drawn(app, cb):
    run_id = shown_run(cb)
    shown = cb["show_graph"](run_id)
    assert shown["groups"] == ["group:mlp.layer.0"]
    assert _ops_drawn(shown["figure"]) == {op.name for op in app.explorer.view(run_id).compilation.kernel.ops}


def test_level_switch_keeps_the_selection_and_maps_it_through_provenance(cb):
    run_id = shown_run(cb)
    for level in ("input", "graph", "layout", "kernel"):
        figure, mlir = cb["show_graph"](run_id, level, FC1)["figure"], cb["show_mlir"](run_id, level, FC1)
        assert len(next(t for t in figure.data if t.name == "selected").x) >= 1, level
        assert FC1 in marked_text(mlir) or level == "input"


def test_a_large_graph_opens_grouped_a_click_opens_a_group_and_an_op_selected_elsewhere_is_revealed(cb):
    run_id = shown_run(cb, "zoo:mlp?layers=60")
    shown = cb["show_graph"](run_id, "input")
    drawn = _ops_drawn(shown["figure"])
    closed = sorted(d for d in drawn if d.startswith("group:"))
    groups = shown["groups"]
    assert closed and len(drawn) <= 200 and "nodes for 300 ops" in str(shown["note"])
    assert {o["value"] for o in shown["group_options"]} >= set(groups) | set(closed)

    opened = [*groups, closed[0]]  # a click on the group (assets/graph.js click, in the browser tests)
    after = cb["show_graph"](run_id, "input", expanded=opened)
    assert closed[0] not in _ops_drawn(after["figure"]) and closed[0] in after["groups"]

    hidden = "mlp.layer.59.fc2.matmul"
    assert hidden not in drawn
    revealed = cb["show_graph"](run_id, "input", selected=hidden, expanded=groups)
    assert hidden in _ops_drawn(revealed["figure"]) and set(revealed["groups"]) > set(groups)
    ring = next(t for t in revealed["figure"].data if t.name == "selected")
    assert _ringed(ring) == 1


def test_the_graph_colours_by_bound_memory_peak_and_delta_against_the_parent_run(cb):
    base_id = shown_run(cb)
    new_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)

    def figure(run_id, mode):
        return cb["show_graph"](run_id, "kernel", mode=mode)["figure"]

    bound = figure(new_id, "bound")
    assert {t.name for t in bound.data if t.showlegend} <= {
        "compute",
        "dram",
        "l1",
        "noc",
        "vector",
        "dispatch",
        "balanced",
    }
    memory = figure(new_id, "memory")
    assert {"l1", "dram"} <= {t.name for t in memory.data if t.showlegend}
    assert FC1 in next(t for t in memory.data if t.name == "l1").customdata

    ops = next(t for t in figure(new_id, "pct_peak").data if t.name == "ops")
    assert all(0 <= v <= 100 for v in ops.marker.color) and "% of peak" in ops.marker.colorbar.title.text

    delta = cb["show_graph"](new_id, "kernel", mode="delta")
    assert f"delta vs run #{base_id}" in str(delta["note"])
    ops = next(t for t in delta["figure"].data if t.name == "ops")
    by_op = dict(zip(ops.customdata, ops.marker.color))
    assert by_op[FC1] < 0 and by_op[CONSUMER] < 0  # both got faster (red is slower)
    assert ops.marker.cmin == -ops.marker.cmax
    assert "no baseline" in str(cb["show_graph"](base_id, "kernel", mode="delta")["note"])


def test_regex_search_rings_the_matching_ops_and_a_bad_pattern_is_one_line(cb):
    run_id = shown_run(cb)
    found = cb["show_graph"](run_id, "kernel", pattern=r"fc\d\.matmul")
    ring = next(t for t in found["figure"].data if t.name == "matches")
    assert _ringed(ring) == 2 and "2 ops match" in str(found["note"])
    bad = cb["show_graph"](run_id, "kernel", pattern="fc1(")
    assert "not a regular expression" in str(bad["note"]) and not any(t.name == "matches" for t in bad["figure"].data)


def test_opening_more_groups_than_a_view_can_draw_keeps_the_last_ones_closed(app, cb):
    run_id = shown_run(cb, "zoo:mlp?layers=100")
    everything = app.explorer.scope_tree(app.explorer.view(run_id), "input").groups
    shown = cb["show_graph"](run_id, "input", expanded=everything)
    opened = shown["groups"]
    assert len(_ops_drawn(shown["figure"])) <= MAX_NODES < 500  # 100 layers of 5 ops
    assert opened == everything[: len(opened)] and len(opened) < len(everything)
    assert "more groups stay closed: at most" in str(shown["note"])
    # the groups offered to open: those open, and those drawn closed, not every group of the model
    drawn = {
        g for t in shown["figure"].data for g in (t.customdata or []) if isinstance(g, str) and g.startswith("group:")
    }
    offered = {o["value"] for o in shown["group_options"]}
    assert offered == set(opened) | (drawn & set(everything)) and len(offered) < len(everything)


MARKUP_MLIR = """
func.func @forward(%x: tensor<256x256xbf16> {ttir.name = "x"}, %w: tensor<256x256xbf16> {ttir.name = "w"}) -> tensor<256x256xbf16> {
  %0 = "ttir.matmul"(%x, %w) : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("<a href='https://evil.example'>mm</a>")
  %1 = "ttir.exp"(%0) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("<b>e</b>&amp;")
  return %1 : tensor<256x256xbf16>
}
"""


def _texts(figure) -> list[str]:
    """Every string a figure shows: trace names, texts, hover texts and templates, titles, ticks, annotations."""
    found = []

    def walk(value) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for key, inner in value.items():
                if key not in ("customdata", "uid", "type", "id"):
                    walk(inner)
        elif isinstance(value, (list, tuple)):
            for inner in value:
                walk(inner)
        elif hasattr(value, "tolist"):
            walk(value.tolist())

    walk(figure.to_plotly_json())
    return found


def test_op_names_show_as_text_in_every_figure_never_as_markup(cb):
    loaded = cb["upload_model"](progress, data_url(MARKUP_MLIR), "markup.mlir", TARGET, POLICY)
    assert "Loaded" in str(loaded["message"])
    run_id = shown_run(cb, loaded["model"])
    mm = "<a href='https://evil.example'>mm</a>"
    figures = [
        cb["show_graph"](run_id, "input", selected=mm)["figure"],
        cb["show_timeline"](run_id, None, [], mm),
        cb["show_roofline"](run_id, mm),
        cb["find_zone"](run_id, mm, None, "statistics", "name")["figure"],
    ]
    shown = [text for figure in figures for text in _texts(figure)]
    assert any("&lt;a href='https://evil.example'&gt;mm&lt;/a&gt;" in t for t in shown)
    assert any("&lt;b&gt;e&lt;/b&gt;&amp;amp;" in t for t in shown)
    assert not [t for t in shown if "<a " in t or "<b>e" in t], "a name reached a figure as markup"
    # selecting still works on the names as they are
    assert cb["select_in_roofline"]({"points": [{"customdata": mm}]}) == mm


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(a|aa)+$", "(a*)*" * 50 + "b", "(.*a){60}", "^(([a-z])+.)+[A-Z]([a-z])+$"]
)
def test_a_catastrophic_search_pattern_matches_in_linear_time(pattern):
    """Patterns that make a backtracking engine run for hours on a 50-character name: RE2 answers
    (a hang here would be the regression), and says no op matches."""
    names = ["a" * 50 + "!", "a" * 55 + "." * 40 + "!"]  # no pattern matches them; a backtracker takes hours to say so
    graph = Graph("g", "graph", {}, [Op(name, "ts.op!", [], []) for name in names], [], [])
    assert search_ops(graph, pattern) == []


def test_a_search_finds_an_op_fused_into_another_in_the_op_that_runs_it():
    mm = Op("fc1.matmul", "matmul", [], [], {"fused": ("fc1.bias_add", "act")})
    graph = Graph("g", "graph", {}, [mm, Op("act2", "gelu", [], [])], [], [])
    assert search_ops(graph, "bias_add") == ["fc1.matmul"] and search_ops(graph, "^act") == ["fc1.matmul", "act2"]


def test_a_search_pattern_re2_cannot_take_is_one_line():
    graph = Graph("g", "graph", {}, [], [], [])
    for pattern, reason in (
        (r"(a)\1", "invalid escape sequence"),
        ("(?=a)", "invalid perl operator"),
        ("x" * 1001, "at most 1000 characters"),
        ("((a{100}){100}){100}", "invalid repetition size"),
    ):
        with pytest.raises(TilescopeError) as err:
            search_ops(graph, pattern)
        assert reason in str(err.value) and "\n" not in str(err.value)


def test_an_op_run_once_per_model_load_is_drawn_as_such_not_as_no_data(app, cb):
    from tests.perfdb.load_work import store_hoisted

    from .conftest import MODEL

    plain = cb["show_graph"](shown_run(cb))["figure"]
    assert "once per model load" not in {t.name for t in plain.data}
    run_id, _ = store_hoisted(app.explorer.sessions, {FC1}, ref=MODEL)
    figure = cb["show_graph"](run_id)["figure"]
    (loaded,) = [t for t in figure.data if t.name == "once per model load"]
    assert list(loaded.customdata) == [FC1] and loaded.showlegend
    assert "once per model load (const-eval)" in loaded.hovertext[0]
    assert FC1 not in {n for t in figure.data if t.name == "no data" for n in t.customdata}
    assert CONSUMER in {n for t in figure.data if t.name == "ops" for n in t.customdata}


def test_a_search_opens_the_way_to_its_first_match_in_a_chunked_group_and_centres_it(app, cb):
    run_id = shown_run(cb, "zoo:mlp?layers=150")  # `mlp.layer` holds 150 layers: chunked by 100
    target = "mlp.layer.137.fc2.matmul"
    found = cb["show_graph"](run_id, "input", pattern=r"layer\.137\.fc2\.matmul$")
    assert target in _ops_drawn(found["figure"])
    assert "group:mlp.layer[100-149]" in found["groups"] and "1 op matches" in str(found["note"])
    assert f"centred on {target}" in str(found["note"])
    ring = next(t for t in found["figure"].data if t.name == "matches")
    x, y = ring.x[0], ring.y[0]
    layout = found["figure"].layout
    assert layout.xaxis.range[0] < x < layout.xaxis.range[1] and layout.yaxis.range[0] < y < layout.yaxis.range[1]
    assert layout.uirevision == f"focus:{target}"
    # the chunk is labelled by the children it holds
    tree = app.explorer.scope_tree(app.explorer.view(run_id), "input")
    assert [tree.label(c) for c in tree.children("group:mlp.layer")] == ["layer[0-99]", "layer[100-149]"]


def test_open_groups_are_drawn_as_boxes_and_the_browser_gets_every_label_and_its_weight(cb):
    run_id = shown_run(cb, "zoo:mlp?layers=3")
    shown = cb["show_graph"](run_id, "input", selected="mlp.layer.1.fc1.matmul")
    figure = shown["figure"]
    boxes = [s for s in figure.layout.shapes if s.name == "group-box"]
    meta = figure.layout.meta
    assert {b[4] for b in meta["boxes"]} >= {"group:mlp.layer.1"} and len(boxes) == len(meta["boxes"])
    assert meta["open"] == shown["groups"]  # what a click on a box's label leaves open, in the browser
    nodes = [t for t in figure.data if t.meta and "labels" in t.meta]
    labels = {n: lw for t in nodes for n, *lw in zip(t.customdata, t.meta["labels"], t.meta["weights"])}
    assert set(labels) == _ops_drawn(figure)
    # the selected op's label is kept first, then the longest ops
    weights = sorted(((w, n) for n, (_, w) in labels.items()), reverse=True)
    assert weights[0][1] == "mlp.layer.1.fc1.matmul"


def test_a_tensor_marker_never_sits_on_a_node_where_it_would_take_the_nodes_clicks(cb):
    run_id = shown_run(cb, "zoo:bert-base?layers=2")
    for level in ("input", "kernel"):
        figure = cb["show_graph"](run_id, level)["figure"]
        tensors = next(t for t in figure.data if t.name == "tensors")
        nodes = [(x, y) for t in figure.data if t.meta and "labels" in t.meta for x, y in zip(t.x, t.y)]
        edges = next(t for t in figure.data if t.mode == "lines")
        assert len(tensors.x) > 0.8 * len([x for x in edges.x if x is None])  # most edges keep theirs
        for x, y in zip(tensors.x, tensors.y):
            assert all(abs(x - nx) >= 0.5 or abs(y - ny) >= 0.5 for nx, ny in nodes), (level, x, y)


BERT = "zoo:bert-base?seq=128"
MASK_READERS = 12  # the attention mask is read by every layer


def _segments(trace) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The line segments of a trace drawn as x0, x1, None, ..."""
    xs, ys = list(trace.x), list(trace.y)
    return [((xs[i], ys[i]), (xs[i + 1], ys[i + 1])) for i in range(len(xs) - 1) if None not in (xs[i], xs[i + 1])]


def test_open_groups_come_in_natural_order(cb):
    run_id = shown_run(cb, BERT)
    shown = cb["show_graph"](run_id)
    layers = [g for g in shown["groups"] if g.startswith("group:encoder.layer.")]
    assert layers == [f"group:encoder.layer.{i}" for i in range(12)]  # not 4, 10, 3, ...
    labels = [o["label"] for o in shown["group_options"]]
    assert labels.index("encoder.layer.2") < labels.index("encoder.layer.10")
    assert labels == sorted(labels, key=natural_key)


def test_the_search_note_shows_the_pattern_as_typed(cb):
    run_id = shown_run(cb, BERT)
    note = " ".join(span.children for span in cb["show_graph"](run_id, pattern=r"layer\.1\..*query")["note"])
    assert r"3 ops match 'layer\.1\..*query'" in note and "\\\\" not in note  # one backslash each, not two


def test_edges_of_an_input_every_layer_reads_are_drawn_only_for_a_selection(cb):
    run_id = shown_run(cb, BERT)
    figure = cb["show_graph"](run_id)["figure"]
    nodes = {n: (x, y) for t in figure.data if t.meta and "labels" in t.meta for n, x, y in zip(t.customdata, t.x, t.y)}
    hovers = {n: h for t in figure.data if t.meta and "labels" in t.meta for n, h in zip(t.customdata, t.hovertext)}
    fanning = [n for n, h in hovers.items() if f"read by {MASK_READERS} nodes" in h]
    assert len(fanning) == 1 and "attention_mask" in fanning[0]
    source = nodes[fanning[0]]
    edges = next(t for t in figure.data if t.mode == "lines")
    assert not [s for s in _segments(edges) if s[0] == source]  # no fan of 12 lines over the layers
    assert len(_segments(edges)) > 12  # the others are drawn
    # selected: its 12 edges drawn with the selection's ring
    ring = cb["show_graph"](run_id, selected=fanning[0])["figure"].data[0]
    assert ring.name == "selected" and len([s for s in _segments(ring) if s[0] == source]) == MASK_READERS
    # a reader selected: its edge from the mask, only
    reader = "encoder.layer.3.attention.self.scaled_dot_product_attention"
    ring = cb["show_graph"](run_id, selected=reader)["figure"].data[0]
    assert len([s for s in _segments(ring) if s[0] == source]) == 1


def test_the_nodes_carry_their_size_for_the_browser_to_scale_with_the_zoom(cb):
    figure = cb["show_graph"](shown_run(cb, BERT))["figure"]
    scaled = [t for t in figure.data if t.meta and "px" in t.meta]
    assert {t.name for t in scaled} >= {"selected", "ops", "tensors"}
    for trace in scaled:
        pad = trace.meta.get("pad", 0)
        assert list(trace.marker.size) == [px + pad if px else 0 for px in trace.meta["px"]]
    x0, x1 = figure.layout.xaxis.range
    assert figure.layout.meta["home"] == [x0, x1, *figure.layout.yaxis.range]
