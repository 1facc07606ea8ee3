"""The explorer's callbacks, called directly: click -> inspect -> override -> re-run -> views."""

from __future__ import annotations

import pytest
from dash import no_update

from app.workbench import explorer as explorer_module
from app.web.callbacks import diff_pair
from app.workbench.grouping import MAX_NODES
from app.web.server import create_app
from perfdb import queries

from .test_timelines import zones_drawn

MODEL = "zoo:mlp?layers=1"
TARGET = "wormhole_n150"
FC1 = "mlp.layer.0.fc1.matmul"  # bias add and gelu fused in
CONSUMER = "mlp.layer.0.fc2.matmul"


@pytest.fixture
def app(tmp_path):
    return create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, TARGET, job_dir=str(tmp_path / "jobs"))


@pytest.fixture
def cb(app):
    return app.tilescope_callbacks


STAGES: list = []  # what background jobs reported, newest last


def _progress(value) -> None:
    STAGES.append(value[0])


def _graph(cb, run_id, level="graph", selected=None, expanded=None, mode="duration", pattern=None, ticked=None):
    return cb["show_graph"](run_id, level, selected, expanded, mode, pattern, ticked)


def _ops_drawn(figure) -> set[str]:
    return {
        n
        for t in figure.data
        if t.name not in ("selected", "matches", "tensors") and t.customdata is not None
        for n in t.customdata
    }


def _records(app, run_id):
    with app.explorer.sessions() as session:
        return {r.name: r for r in queries.op_records(session, run_id)}


def test_page_opens_on_a_stored_run_of_the_example_model(app, cb):
    options, run_id, status, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    assert status is None
    assert [o["value"] for o in options] == [run_id]
    assert "baseline" in options[0]["label"]
    figure, _, groups, _ = _graph(cb, run_id)
    assert groups == ["group:mlp.layer.0"]  # a small graph opens with every group open
    assert _ops_drawn(figure) == {op.name for op in app.explorer.compilation(app.explorer.run(run_id)).kernel.ops}
    mlir = cb["show_mlir"](run_id, "graph", None)
    assert mlir[0].startswith('module @"zoo:mlp?layers=1"')


def test_a_click_on_a_zone_selects_its_op_and_a_click_on_anything_else_nothing(cb):
    assert cb["select_in_timeline"]({"points": [{"customdata": CONSUMER}]}) == CONSUMER
    assert cb["select_in_timeline"]({"points": [{"x": 1, "y": 2}]}) is no_update
    assert cb["select_in_timeline"](None) is no_update


def test_inspector_shows_timings_and_fills_the_form_with_the_current_layout(cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    inspector, *values, applies_to, apply_disabled, stage_disabled = cb["inspect"](FC1, run_id, "graph")
    text = str(inspector)
    assert FC1 in text and "duration" in text and "bound" in text
    assert tuple(values) == ("dram", "interleaved", 8, 8, "tile", "bf16", "default", "output", "default", "", "default")
    assert applies_to == ["output", "operand 0", "operand 1", "operand 2"]  # activation, weight and the fused bias
    assert apply_disabled is False and stage_disabled is False
    *_, apply_disabled, stage_disabled = cb["inspect"](None, run_id, "graph")
    assert apply_disabled is True and stage_disabled is True
    *_, apply_disabled, _ = cb["inspect"](None, run_id, "graph", [f"{FC1}=8x8:l1:block_sharded"])
    assert apply_disabled is False  # the pending list alone can be applied


def test_apply_override_reruns_stores_a_child_run_and_refreshes_views(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    selected = FC1  # a click on its node (tilescope.js clickNode, in the browser tests)
    _, _, _, rows, cols, layout, dtype, fidelity, *_ = cb["inspect"](selected, base_id, "graph")

    options, new_id, status, pending = cb["apply_override"](
        _progress,
        1,
        base_id,
        selected,
        [],
        "l1",
        "width_sharded",
        rows,
        cols,
        layout,
        dtype,
        fidelity,  # 128 tile columns over 64 cores
    )

    assert new_id != base_id
    assert [o["value"] for o in options] == [new_id, base_id]
    assert "applied" in str(status)
    run = app.explorer.run(new_id)
    kernel_ops = len(app.explorer.compilation(run).kernel.ops)
    assert [s.children[1] for s in STAGES[-3:]] == [  # the progress line's stages
        "re-run: compiling...",
        f"re-run: simulating {kernel_ops} ops...",
        "re-run: storing the run...",
    ]
    assert run.parent_id == base_id
    assert run.overrides == [f"{FC1}=8x8:l1:width_sharded:tile:bf16"]

    before, after = _records(app, base_id), _records(app, new_id)
    assert after[FC1].memory == "l1" and before[FC1].memory == "dram"
    # fc1 writes to its own L1 and its consumer reads it from there: both get faster
    assert after[FC1].duration_ns < before[FC1].duration_ns
    assert after[CONSUMER].duration_ns < before[CONSUMER].duration_ns

    mlir, summary = cb["show_mlir"](new_id, "layout", FC1), cb["show_summary"](new_id)
    highlighted = str(mlir[1].children)
    assert "#ts.layout<l1, width_sharded" in highlighted and FC1 in highlighted
    assert "overrides" in str(summary)
    timeline = cb["show_timeline"](new_id, None, [], FC1)
    op_zones = [z for z in _zones(app, new_id) if z.depth == 0]
    # a device row with each op once, then every core's op zones
    assert zones_drawn(timeline) == len(app.explorer.durations(new_id)) + len(op_zones)
    outlines = [s for s in timeline.layout.shapes if s.name == "selected"]
    assert len(outlines) == sum(1 for z in op_zones if z.op == FC1) + 1  # its cores and the device row


def test_second_override_of_the_same_op_replaces_the_first(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, first, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "block_sharded", 4, 8, "tile", "bf16")
    _, second, _, _ = cb["apply_override"](_progress, 2, first, FC1, [], "dram", "interleaved", 4, 4, "tile", "bf16")
    assert app.explorer.run(second).overrides == [f"{FC1}=4x4:dram:interleaved:tile:bf16"]


def test_impossible_override_is_reported_and_stores_nothing(app, cb):
    # fc1's output of a wide MLP (128x8192 bf16 = 2 MiB) does not fit one core's 1464 KiB of L1
    wide = "zoo:mlp?layers=1&hidden=8192"
    _, wide_id, _, _ = cb["choose_model"](wide, TARGET, "dram-interleaved")
    runs_before = len(app.explorer.run_options(wide, TARGET))
    options, value, status, _ = cb["apply_override"](
        _progress, 1, wide_id, "mlp.layer.0.fc1.matmul", [], "l1", "block_sharded", 1, 1, "tile", "bf16"
    )
    assert options is no_update and value is no_update
    assert "rejected" in str(status) and "KiB" in str(status)
    assert len(app.explorer.run_options(wide, TARGET)) == runs_before


def test_form_without_a_selected_op_says_so(cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, _, status, _ = cb["apply_override"](_progress, 1, base_id, None, [], "l1", "block_sharded", 4, 8, "tile", "bf16")
    assert "select an op" in str(status)


def test_level_switch_keeps_the_selection_and_maps_it_through_provenance(cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    for level in ("input", "graph", "layout", "kernel"):
        figure, mlir = _graph(cb, run_id, level, FC1)[0], cb["show_mlir"](run_id, level, FC1)
        assert len(next(t for t in figure.data if t.name == "selected").x) >= 1, level
        assert FC1 in str(mlir[1].children) or level == "input"


def test_a_run_on_a_target_file_reopens_and_reruns_from_what_it_stored(tmp_path):
    from compiler.target import BUILTIN_DIR

    target_file = tmp_path / "mine.toml"
    target_file.write_text(
        (BUILTIN_DIR / "wormhole_n150.toml").read_text().replace('name = "wormhole_n150"', 'name = "mine"')
    )
    app = create_app(f"sqlite:///{tmp_path}/ui.db", MODEL, str(target_file), job_dir=str(tmp_path / "jobs"))
    cb = app.tilescope_callbacks
    options, run_id, _, _ = cb["choose_model"](MODEL, str(target_file), "dram-interleaved")
    again_options, again_id, _, _ = cb["choose_model"](MODEL, str(target_file), "dram-interleaved")
    assert again_id == run_id and len(again_options) == len(options) == 1  # found, not stored anew
    run = app.explorer.run(run_id)
    assert (run.target.name, run.target_ref) == ("mine", str(target_file)) and 'name = "mine"' in run.target.description
    target_file.unlink()  # the run keeps its own copy of the target
    figure = _graph(cb, run_id, "kernel")[0]
    assert figure.data
    _, new_id, status, _ = cb["apply_override"](
        _progress, 1, run_id, FC1, [], "l1", "block_sharded", 4, 8, "tile", "bf16"
    )
    assert "applied" in str(status) and app.explorer.run(new_id).target.name == "mine"


def test_the_override_form_offers_what_the_selected_target_has(cb):
    memories, rows, cols, dtypes = cb["form_choices"]("mtia_v1")
    assert memories == ["l1", "lls", "dram"] and rows == list(range(1, 9)) and "i8" in dtypes
    memories, rows, cols, _ = cb["form_choices"]("blackhole_p150")
    assert "lls" not in memories and rows[-1] == 13 and cols[-1] == 10
    assert cb["form_choices"]("no-such-target")[0] is no_update


def test_the_form_can_ask_for_a_math_fidelity(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, new_id, status, _ = cb["apply_override"](
        _progress, 1, base_id, FC1, [], "dram", "interleaved", 8, 8, "tile", "bf16", "lofi"
    )
    assert app.explorer.run(new_id).overrides == [f"{FC1}=8x8:dram:interleaved:tile:bf16:fidelity#lofi"]
    fidelity = cb["inspect"](FC1, new_id, "graph")[7]
    assert fidelity == "lofi"


def test_the_timeline_shows_the_zoomed_window_with_short_zones_merged(app, cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    run = app.explorer.run(run_id)
    everything = cb["show_timeline"](run_id, None, [], None)
    assert "merged" not in [t.name for t in everything.data]  # ops are microseconds long: all drawn
    # zoom into the first op: only the zones in that window, and the axis stays there
    first = min(_zones(app, run_id, depth=0), key=lambda z: z.start_ns)
    window = [first.start_ns / 1e3, (first.start_ns + first.end_ns) / 2e3]
    zoomed = cb["show_timeline"](run_id, {"xaxis.range[0]": window[0], "xaxis.range[1]": window[1]}, [], None)
    assert list(zoomed.layout.xaxis.range) == window
    assert 0 < zones_drawn(zoomed) < zones_drawn(everything)
    # a view a few pixels wide merges whole ops into grey "N zones" bars, one per core
    coarse = app.explorer.timeline(run_id, (0.0, run.total_ns), pixels=2).items
    merged = [z for z in coarse if z.count > 1]
    assert merged and all(z.name == f"{z.count} zones" and z.op == "" for z in merged)
    from app.web.timelines import timeline_figure

    figure = timeline_figure(coarse, {}, None)
    markers = next(t for t in figure.data if t.name == "merged")
    # a marker shows its count on hover but selects no op when clicked
    assert set(markers.customdata) == {None} and any(n and n.endswith(" zones") for n in markers.text)
    assert cb["select_in_timeline"]({"points": [{"customdata": None}]}) is no_update
    # the device row draws every op while a figure can (a 100k-op run's would be 40 MB)
    assert sum(z.count for z in coarse if z.track == "device") == len([z for z in coarse if z.track == "device"])


def test_the_device_row_merges_short_ops_when_a_run_has_more_than_a_figure_draws(app, cb, monkeypatch):
    from app.workbench import explorer

    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    run = app.explorer.run(run_id)
    monkeypatch.setattr(explorer, "CORE_ZONE_BUDGET", 1)  # fewer than the model's two ops
    device = [z for z in app.explorer.timeline(run_id, (0.0, run.total_ns), pixels=2).items if z.track == "device"]
    ops = len(app.explorer.op_records(run_id))
    assert len(device) < ops and sum(z.count for z in device) == ops
    assert any(z.count > 1 and z.name == f"{z.count} zones" for z in device)


def test_core_rows_wait_for_a_zoom_when_a_window_holds_too_many_zones(app, cb, monkeypatch):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    ops = len(app.explorer.durations(run_id))
    monkeypatch.setattr(explorer_module, "CORE_ZONE_BUDGET", 10)
    view = app.explorer.timeline(run_id)
    assert view.hidden_cores == 64 and view.core_zones > 10
    assert [i.track for i in view.items] == ["device"] * ops
    figure = cb["show_timeline"](run_id, None, [], None)
    assert zones_drawn(figure) == ops and "64 core rows hidden" in figure.layout.annotations[0].text


def test_statistics_per_op_and_type_and_a_row_click_selects_the_op(app, cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    rows, columns = cb["show_statistics"](run_id, "name")
    durations = app.explorer.durations(run_id)
    assert {r["name"] for r in rows} == set(durations) and columns[0]["id"] == "name"
    fc1 = next(r for r in rows if r["name"] == FC1)
    assert fc1["count"] == 1 and fc1["total_ns"] == pytest.approx(durations[FC1] / 1e3, abs=1e-3)  # shown in us
    assert sum(r["pct_of_run"] for r in rows) == pytest.approx(100, abs=0.1)
    kinds, columns = cb["show_statistics"](run_id, "kind")
    assert columns[0]["id"] == "kind" and sum(r["count"] for r in kinds) == len(rows)
    assert cb["select_in_statistics"]({"row": 0, "column": 0, "row_id": FC1}, "name") == FC1
    assert cb["select_in_statistics"]({"row": 0, "column": 0, "row_id": None}, "kind") is no_update


def test_memory_view_shows_l1_over_time_and_what_makes_the_peak(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, run_id, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")
    figure, peak = cb["show_memory"](run_id)
    view = app.explorer.memory(run_id)
    used = [v for _, v in view["envelope"]]
    assert used and max(used) > 0 and view["capacity"] == 1499136
    assert list(figure.data[0].y) == [v / 1024 for v in used]
    # fc1's output sits in L1 while its consumer reads it; the peak names the tensors and buffers there
    names = [name for name, _, _ in view["peak"]["tensors"]]
    assert names and all(size > 0 for _, size, _ in view["peak"]["tensors"])
    assert view["peak"]["cbs"] and view["peak"]["bytes"] == pytest.approx(
        sum(size for _, size, _ in view["peak"]["tensors"]) + sum(size for _, size, _ in view["peak"]["cbs"])
    )
    assert f"while {view['peak']['op']} runs" in str(peak)


def test_roofline_places_compute_ops_under_the_roofs_and_selects_on_click(app, cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    points, roofs, peak = app.explorer.roofline(run_id)
    assert {p["name"] for p in points} == {FC1, CONSUMER}
    for p in points:  # nothing beats the roofline of its memory
        assert p["achieved"] <= min(peak, roofs[p["memory"]] * p["intensity"]) * 1.0001
    figure = cb["show_roofline"](run_id, FC1)
    assert {t.name for t in figure.data} >= {"dram roof", "l1 roof"}
    assert cb["select_in_roofline"]({"points": [{"customdata": CONSUMER}]}) == CONSUMER


def test_runs_table_and_diff_of_a_rerun_against_its_parent(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, run_id, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")
    rows, ticked, ticked_ids, _ = cb["list_runs"](None, MODEL)
    assert [r["id"] for r in rows] == [run_id, base_id] and ticked == ticked_ids == []
    assert rows[0]["overrides"] == 1 and rows[0]["parent"] == str(base_id)
    shown = app.explorer.run(run_id)
    assert diff_pair([], shown) == (base_id, run_id)
    assert diff_pair([run_id, base_id], shown) == (base_id, run_id)
    assert diff_pair([base_id], shown) == (base_id, run_id)
    assert diff_pair([], app.explorer.run(base_id)) is None
    view = str(cb["show_diff"]([], run_id))
    assert f"#{base_id} baseline" in view and f"#{run_id}" in view and FC1 in view
    assert "memory dram->l1" in view  # the layout change of the op
    assert "no parent run" in str(cb["show_diff"]([], base_id))


def test_the_diff_shows_the_inserted_op_the_time_split_and_warns_of_other_targets(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    operand = f"{CONSUMER}=operand#1:l1:width_sharded:1x8"
    _, run_id, _, _ = cb["apply_override"](
        _progress, 1, base_id, None, [operand], "dram", "interleaved", 8, 8, "tile", "bf16"
    )
    found = app.explorer.diff(base_id, run_id)
    view = str(cb["show_diff"]([], run_id))
    (inserted,) = found["inserted"]
    assert f"Inserted (only in B #{run_id}): 1 op, {inserted['ns'] / 1e3:,.2f} us" in view
    assert f"{CONSUMER}.in1.to_layout  to_layout" in view and "Removed" not in view
    assert (
        "operand 1 memory dram->l1, operand 1 memory_layout interleaved->width_sharded, operand 1 grid 1x1->1x8" in view
    )
    assert f"device {found['device_delta_ns'] / 1e3:+.2f} us, host/idle {found['host_delta_ns'] / 1e3:+.2f} us" in view
    assert "Warning" not in view
    _, other_id, _, _ = cb["choose_model"](MODEL, "blackhole_p150", "dram-interleaved")
    view = str(cb["show_diff"]([base_id, other_id], other_id))
    assert f"Warning: different targets: run {base_id} ran on wormhole_n150, run {other_id} on blackhole_p150" in view


SMALL_MLIR = """
func.func @forward(%x: tensor<256x256xbf16> {ttir.name = "x"}) -> tensor<256x256xbf16> {
  %0 = "ttir.exp"(%x) : (tensor<256x256xbf16>) -> tensor<256x256xbf16> loc("e")
  return %0 : tensor<256x256xbf16>
}
"""


def _data_url(data: bytes) -> str:
    import base64

    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def test_an_uploaded_mlir_file_becomes_a_model_with_a_run(app, cb):
    options, ref, message, cleared = cb["upload_model"](
        _progress, _data_url(SMALL_MLIR.encode()), "tiny.mlir", TARGET, "dram-interleaved"
    )
    assert ref.startswith("upload/") and ref.endswith("/tiny.mlir") and ref in options
    assert "Loaded tiny.mlir" in str(message) and cleared is None  # so the same file can be dropped again
    # any case of the suffix; a '#' is not read as a function selector
    _, odd, message, _ = cb["upload_model"](
        _progress, _data_url(SMALL_MLIR.encode()), "v#2.MLIR", TARGET, "dram-interleaved"
    )
    assert odd.endswith("/v_2.MLIR") and "Loaded" in str(message)
    runs, run_id, status, _ = cb["choose_model"](ref, TARGET, "dram-interleaved")
    assert status is None and [r["value"] for r in runs] == [run_id]
    assert set(app.explorer.durations(run_id)) == {"e"}
    # another policy re-compiles from the stored text: there is no such file
    _, other, status, _ = cb["choose_model"](ref, TARGET, "greedy-l1")
    assert status is None and other != run_id and app.explorer.run(other).model.source_text == SMALL_MLIR


@pytest.mark.parametrize(
    "name, data, reason",
    [
        ("notes.txt", b"hello", "not an .mlir file"),
        ("bad.mlir", b"this is not MLIR {", "bad.mlir"),
        ("binary.mlir", b"\xff\xfe\x00\x81", "not MLIR text (not UTF-8)"),
    ],
)
def test_a_bad_upload_is_one_line_on_the_page_and_changes_nothing(app, cb, name, data, reason):
    before = len(queries.list_runs(app.explorer.sessions()))
    options, value, message, _ = cb["upload_model"](_progress, _data_url(data), name, TARGET, "dram-interleaved")
    assert options is no_update and value is no_update
    text = message.children
    assert reason in text and "\n" not in text and "Traceback" not in text
    assert len(queries.list_runs(app.explorer.sessions())) == before


def test_an_upload_over_the_size_limit_is_refused(app, cb, monkeypatch):
    monkeypatch.setattr(explorer_module, "MAX_SOURCE_BYTES", 100)
    _, _, message, _ = cb["upload_model"](
        _progress, _data_url(SMALL_MLIR.encode()), "tiny.mlir", TARGET, "dram-interleaved"
    )
    assert message.children.startswith("tiny.mlir: ") and "MiB is over the" in message.children


def test_a_large_graph_opens_grouped_a_click_opens_a_group_and_an_op_selected_elsewhere_is_revealed(cb):
    _, run_id, _, _ = cb["choose_model"]("zoo:mlp?layers=60", TARGET, "dram-interleaved")
    figure, options, groups, note = _graph(cb, run_id, "input")
    drawn = _ops_drawn(figure)
    closed = sorted(d for d in drawn if d.startswith("group:"))
    assert closed and len(drawn) <= 200 and "nodes for 300 ops" in str(note)
    assert {o["value"] for o in options} >= set(groups) | set(closed)

    opened = [*groups, closed[0]]  # a click on the group (tilescope.js clickNode, in the browser tests)
    figure, _, groups_after, _ = _graph(cb, run_id, "input", expanded=opened)
    assert closed[0] not in _ops_drawn(figure) and closed[0] in groups_after

    hidden = "mlp.layer.59.fc2.matmul"
    assert hidden not in drawn
    figure, _, revealed, _ = _graph(cb, run_id, "input", selected=hidden, expanded=groups)
    assert hidden in _ops_drawn(figure) and set(revealed) > set(groups)
    ring = next(t for t in figure.data if t.name == "selected")
    assert len(ring.x) == 1


def test_the_graph_colours_by_bound_memory_peak_and_delta_against_the_parent_run(cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, new_id, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")

    bound = _graph(cb, new_id, "kernel", mode="bound")[0]
    assert {t.name for t in bound.data if t.showlegend} <= {
        "compute",
        "dram",
        "l1",
        "noc",
        "vector",
        "dispatch",
        "balanced",
    }
    memory = _graph(cb, new_id, "kernel", mode="memory")[0]
    assert {"l1", "dram"} <= {t.name for t in memory.data if t.showlegend}
    fc1_in_l1 = next(t for t in memory.data if t.name == "l1")
    assert FC1 in fc1_in_l1.customdata

    peak = _graph(cb, new_id, "kernel", mode="pct_peak")[0]
    ops = next(t for t in peak.data if t.name == "ops")
    assert all(0 <= v <= 100 for v in ops.marker.color) and "% of peak" in ops.marker.colorbar.title.text

    delta, _, _, note = _graph(cb, new_id, "kernel", mode="delta")
    assert f"delta vs run #{base_id}" in str(note)
    ops = next(t for t in delta.data if t.name == "ops")
    by_op = dict(zip(ops.customdata, ops.marker.color))
    assert by_op[FC1] < 0 and by_op[CONSUMER] < 0  # both got faster (red is slower)
    assert ops.marker.cmin == -ops.marker.cmax
    assert "no baseline" in str(_graph(cb, base_id, "kernel", mode="delta")[3])


def test_regex_search_rings_the_matching_ops_and_a_bad_pattern_is_one_line(cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    figure, _, _, note = _graph(cb, run_id, "kernel", pattern=r"fc\d\.matmul")
    ring = next(t for t in figure.data if t.name == "matches")
    assert len(ring.x) == 2 and "2 ops match" in str(note)
    figure, _, _, note = _graph(cb, run_id, "kernel", pattern="fc1(")
    assert "not a regular expression" in str(note) and not any(t.name == "matches" for t in figure.data)


def test_opening_more_groups_than_a_view_can_draw_keeps_the_last_ones_closed(app, cb):
    _, run_id, _, _ = cb["choose_model"]("zoo:mlp?layers=100", TARGET, "dram-interleaved")
    everything = app.explorer.scope_tree(app.explorer.run(run_id), "input").groups
    figure, options, opened, note = _graph(cb, run_id, "input", expanded=everything)
    assert len(_ops_drawn(figure)) <= MAX_NODES < 500  # 100 layers of 5 ops
    assert opened == everything[: len(opened)] and len(opened) < len(everything)
    assert "more groups stay closed: at most" in str(note)
    # the groups offered to open: those open, and those drawn closed, not every group of the model
    drawn = {g for t in figure.data for g in (t.customdata or []) if isinstance(g, str) and g.startswith("group:")}
    assert {o["value"] for o in options} == set(opened) | (drawn & set(everything)) and len(options) < len(everything)


def _upload(text: str) -> str:
    import base64

    return "data:application/octet-stream;base64," + base64.b64encode(text.encode()).decode()


def test_pending_overrides_re_run_together_in_one_child_run(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    pending, status = cb["stage_override"](1, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")
    assert status is None and pending == [f"{FC1}=8x8:l1:width_sharded:tile:bf16"]
    # staging the same op again replaces its entry; another op joins the list
    pending, _ = cb["stage_override"](2, FC1, pending, "l1", "block_sharded", 4, 8, "tile", "bf16")
    pending, _ = cb["stage_override"](3, CONSUMER, pending, "dram", "interleaved", 8, 8, "tile", "bf16", "hifi2")
    assert pending == [
        f"{FC1}=4x8:l1:block_sharded:tile:bf16",
        f"{CONSUMER}=8x8:dram:interleaved:tile:bf16:fidelity#hifi2",
    ]
    assert "Add to pending" in str(cb["show_pending"]([])) and CONSUMER in str(cb["show_pending"](pending))

    # the form still shows the selected consumer as it is: only the pending list is applied
    values = cb["inspect"](CONSUMER, base_id, "graph")[1:12]
    _, new_id, status, cleared = cb["apply_override"](_progress, 1, base_id, CONSUMER, pending, *values)
    assert cleared == [] and str(status).count("badge applied") == 2
    assert app.explorer.run(new_id).overrides == pending
    assert app.explorer.run(new_id).parent_id == base_id


def test_the_form_sets_an_operand_tile_blocking_and_buffering_and_rejects_a_bad_block(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    pending, _ = cb["stage_override"](
        1, FC1, [], "l1", "interleaved", 8, 8, "tile", "bf16", "default", "operand 0", "default", "", "default"
    )
    assert pending == [f"{FC1}=8x8:l1:interleaved:tile:bf16:operand#0"]
    _, new_id, status, _ = cb["apply_override"](
        _progress,
        1,
        base_id,
        FC1,
        [],
        "dram",
        "interleaved",
        8,
        8,
        "tile",
        "bf16",
        "hifi2",
        "output",
        "32x32",
        "4x2x2",
        "off",
    )
    assert "rejected" not in str(status)
    assert app.explorer.run(new_id).overrides == [
        f"{FC1}=8x8:dram:interleaved:tile:bf16:fidelity#hifi2:block#4x2x2:double_buffer#false:tile#32x32"
    ]
    _, status = cb["stage_override"](
        1, FC1, [], "l1", "interleaved", 8, 8, "tile", "bf16", "default", "output", "default", "4x4"
    )
    assert "expected M x N x K" in str(status)


def test_an_overrides_file_of_any_format_joins_the_pending_list_and_bad_items_are_listed(cb):
    import json

    text = f"override-output-layout={FC1}=4x4:l1:block_sharded,no.such=1x1:dram:interleaved:tile:bf16:fidelity#nope"
    pending, status, cleared = cb["import_overrides"](_upload(text), "opts.txt", [f"{FC1}=8x8:dram:interleaved"])
    assert pending == [f"{FC1}=4x4:l1:block_sharded"] and cleared is None
    assert "1 override(s) added" in str(status) and "nope" in str(status)
    explorer_json = json.dumps(
        {
            f'loc("{CONSUMER}")': {
                "named_location": CONSUMER,
                "attributes": [
                    {"key": "grid_shape", "value": "[8, 1]"},
                    {"key": "buffer_type", "value": "L1"},
                    {"key": "tensor_memory_layout", "value": "HEIGHT_SHARDED"},
                ],
            }
        }
    )
    pending, status, _ = cb["import_overrides"](_upload(explorer_json), "tt-explorer.json", [])
    assert pending and pending[0].startswith(f"{CONSUMER}=8x1:l1:height_sharded")
    pending, status, _ = cb["import_overrides"]("data:;base64,@@@", "broken.json", [])
    assert pending is no_update and "the upload is damaged (not base64)" in str(status)
    pending, status, _ = cb["import_overrides"](_upload("{ not json"), "broken.json", [])
    assert pending is no_update and "not valid JSON" in str(status)


def test_a_file_of_many_overrides_joins_the_pending_list_in_one_pass_and_a_page_of_it_is_shown(cb):
    """Each item replaces a pending override of the same op part and goes last; the page lists
    the first SHOWN_PENDING with a count of the rest."""
    from app.web.callbacks import SHOWN_PENDING

    text = "override-output-layout=" + ",".join(f"op{i}=2x2:dram:interleaved" for i in range(50_000))
    pending, status, _ = cb["import_overrides"](
        _upload(text), "many.txt", ["op3=1x1:l1:interleaved", "other=1x1:l1:interleaved"]
    )
    assert len(pending) == 50_001 and "50000 override(s) added" in str(status)
    assert pending[:3] == ["other=1x1:l1:interleaved", "op0=2x2:dram:interleaved", "op1=2x2:dram:interleaved"]
    assert "op3=2x2:dram:interleaved" in pending and "op3=1x1:l1:interleaved" not in pending
    shown = cb["show_pending"](pending)
    assert len(shown.children) == SHOWN_PENDING + 1
    assert shown.children[-1].children == f"... and {50_001 - SHOWN_PENDING:,} more"


def test_a_pending_list_past_a_files_limit_is_one_line_before_any_item_is_read(cb):
    from overrides.formats import MAX_ITEMS

    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    huge = ["not an override"] * (MAX_ITEMS + 1)  # a page may send anything
    said = f"{MAX_ITEMS + 1:,} pending overrides: at most {MAX_ITEMS:,}"
    pending, status = cb["stage_override"](1, FC1, huge[:-1], "l1", "interleaved", 8, 8, "tile", "bf16")
    assert pending is no_update and status.children == said
    _, _, status, _ = cb["apply_override"](_progress, 1, run_id, None, huge, *[None] * 11)
    assert status.children == said
    _, status, _ = cb["import_overrides"](
        _upload(f"override-output-layout={FC1}=4x4:l1:interleaved"), "x.txt", huge[:-1]
    )
    assert status.children == said


def test_the_shown_run_exports_its_trace_ops_and_overrides(cb):
    import json

    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, run_id, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")
    trace, _ = cb["export_run"](1, run_id, "chrome")
    events = json.loads(trace["content"])["traceEvents"]
    assert trace["filename"] == f"tilescope-run{run_id}-trace.json" and any(e.get("name") == FC1 for e in events)
    table, _ = cb["export_run"](1, run_id, "csv")
    assert table["filename"].endswith(".csv") and FC1 in table["content"] and table["content"].startswith("OP CODE")
    options, _ = cb["export_run"](1, run_id, "tt-mlir")
    assert options["content"].startswith(f"override-output-layout={FC1}=8x8:l1:width_sharded:tile:bf16 ")
    ours, _ = cb["export_run"](1, run_id, "overrides")
    assert json.loads(ours["content"])["overrides"]
    download, message = cb["export_run"](1, run_id, "pdf")
    assert download is no_update and "unknown export format" in str(message)


def test_a_link_reopens_the_model_level_run_op_and_diff_pair_it_names(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, new_id, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")
    search = cb["write_link"](MODEL, TARGET, "dram-interleaved", "kernel", base_id, FC1, [new_id, base_id], True)
    assert "level=kernel" in search and f"run={base_id}" in search and f"diff={base_id}%2C{new_id}" in search
    assert cb["write_link"](MODEL, TARGET, "dram-interleaved", "kernel", base_id, FC1, [], False) is no_update

    options, model, target, policy, level, op, linked, applied = cb["open_link"](f"http://host/{search}", False)
    assert (model, target, policy, level, op, applied) == (MODEL, TARGET, "dram-interleaved", "kernel", FC1, True)
    assert MODEL in options and linked == {"run": base_id, "diff": [base_id, new_id]}
    # the link's run is shown, not the newest, and only once
    _, shown, _, linked = cb["choose_model"](MODEL, TARGET, "dram-interleaved", linked)
    assert shown == base_id and linked["run"] is None
    _, newest, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved", linked)
    assert newest == new_id
    rows, ticked, ticked_ids, linked = cb["list_runs"](None, MODEL, linked)
    assert sorted(rows[i]["id"] for i in ticked) == sorted(ticked_ids) == [base_id, new_id] and linked["diff"] == []
    # what the diff reads: the table sets the ids of ticked rows only on a user's click
    assert f"#{base_id}" in str(cb["show_diff"](ticked_ids, base_id)) and f"#{new_id}" in str(
        cb["show_diff"](ticked_ids, base_id)
    )

    assert cb["open_link"](f"http://host/{search}", True) == (no_update,) * 8  # read once per page load
    *_, op, linked, _ = cb["open_link"]("http://host/?level=nonsense&run=abc&diff=1", False)
    assert op is no_update and linked == {"run": None, "diff": []}
    _, shown, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved", {"run": 99999, "diff": []})
    assert shown == new_id  # a run the database does not hold: the newest instead


def test_the_timeline_adds_engine_rows_and_counter_plots_and_keeps_a_counter_zoom(app, cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    plain = cb["show_timeline"](run_id, None, [], None)
    engines = cb["show_timeline"](run_id, None, ["engines"], None)
    rows = list(engines.layout.yaxis.ticktext)
    assert len(rows) == 1 + 64 * 4 and rows[1:5] == ["core 0,0", "↳ reader", "↳ compute", "↳ writer"]
    phases = [z for z in _zones(app, run_id, depth=1)]
    assert zones_drawn(engines) == zones_drawn(plain) + len(phases)

    with_counters = cb["show_timeline"](run_id, None, ["counters"], None)
    plots = {t.name: t for t in with_counters.data if t.type == "scatter"}
    assert set(plots) == {"L1 in use, fullest core", "DRAM bandwidth"}
    memory = app.explorer.memory(run_id)
    assert max(plots["L1 in use, fullest core"].y) == max(v for _, v in memory["envelope"]) / 1024
    # while an op that reads DRAM runs, the plot shows its bytes over its time
    with app.explorer.sessions() as session:
        record = next(r for r in queries.op_records(session, run_id) if r.bytes.get("dram"))
    at = list(plots["DRAM bandwidth"].x).index(record.start_ns / 1e3)
    expected = record.bytes["dram"] / (record.duration_ns / 1e9) / 1e9
    assert abs(plots["DRAM bandwidth"].y[at] - expected) < 1e-6 * expected
    # a zoom on a counter plot's axis is a zoom of the timeline
    zoomed = cb["show_timeline"](run_id, {"xaxis2.range[0]": 1.0, "xaxis2.range[1]": 2.0}, ["counters"], None)
    assert list(zoomed.layout.xaxis.range) == [1.0, 2.0]


def test_find_zone_shows_the_spread_of_an_op_over_its_cores_and_of_an_op_type(app, cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    record = app.explorer.op_record(run_id, FC1)
    assert cb["find_zone"](run_id, FC1, None, "timeline", "name") is no_update  # its tab is closed
    figure = cb["find_zone"](run_id, FC1, None, "statistics", "name")
    assert len(figure.data[0].x) == record.cores == 64
    assert f"{FC1}: 64 zones" in figure.layout.title.text
    kind = record.kind
    rows, _ = cb["show_statistics"](run_id, "kind")
    assert kind in [r["id"] for r in rows]
    by_kind = app.explorer.find_zone(run_id, kind=kind)
    assert len(by_kind) == sum(1 for r in app.explorer.op_records(run_id) if r.kind == kind)
    assert "nothing selected" in cb["find_zone"](run_id, None, None, "statistics", "name").layout.title.text


def test_the_diff_aligns_the_two_runs_timelines_and_outlines_the_changed_op(app, cb):
    _, base_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    _, run_id, _, _ = cb["apply_override"](_progress, 1, base_id, FC1, [], "l1", "width_sharded", 8, 8, "tile", "bf16")
    view = cb["show_diff"]([], run_id)
    aligned = next(c for c in view if getattr(c, "id", None) == "diff-timelines").figure
    assert list(aligned.layout.yaxis.ticktext) == [f"A #{base_id}", f"B #{run_id}"]
    a, b = (app.explorer.op_record(i, FC1) for i in (base_id, run_id))
    boxes = {(round(s.x0, 6), round(s.x1, 6)) for s in aligned.layout.shapes}
    assert {(round(r.start_ns / 1e3, 6), round((r.start_ns + r.duration_ns) / 1e3, 6)) for r in (a, b)} <= boxes


def test_hidden_analysis_views_wait_for_their_tab(cb):
    _, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    assert cb["show_statistics"](run_id, "name", "timeline") == (no_update, no_update)
    assert cb["show_memory"](run_id, "timeline") == (no_update, no_update)
    assert cb["show_roofline"](run_id, FC1, "statistics") is no_update
    assert cb["show_diff"](None, run_id, "memory") is no_update
    rows, _ = cb["show_statistics"](run_id, "name", "statistics")
    assert FC1 in {row["name"] for row in rows}
    assert cb["show_roofline"](run_id, FC1, "roofline").data


def test_runs_stored_elsewhere_join_the_run_list_without_a_reload(app, cb):
    from app.workbench.runs import execute

    options, run_id, _, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved")
    assert cb["refresh_runs"](1, MODEL, TARGET, options) is no_update  # nothing new
    # a CI pipeline stores a run of the same model on the shared database
    other = execute(app.explorer.sessions, MODEL, TARGET, [f"{FC1}=l1"], label="from CI").run_id
    fresh = cb["refresh_runs"](2, MODEL, TARGET, options)
    assert [o["value"] for o in fresh] == [other, run_id] and "from CI" in fresh[0]["label"]
    assert cb["refresh_runs"](3, MODEL, TARGET, fresh) is no_update


@pytest.mark.parametrize(
    "query", ["run=99999999999999999999&diff=1,99999999999999999999", "run=%C2%B2", "run=-1&diff=0,1"]
)
def test_a_link_with_run_ids_no_database_holds_opens_the_newest_run(cb, query):
    *_, linked, _ = cb["open_link"](f"http://host/?{query}", False)
    assert linked == {"run": None, "diff": []}
    _, run_id, status, _ = cb["choose_model"](MODEL, TARGET, "dram-interleaved", {"run": 2**70, "diff": []})
    assert status is None and isinstance(run_id, int)


def test_a_link_to_a_target_or_policy_the_page_does_not_offer_keeps_the_menus(cb):
    offered = [{"label": t, "value": t} for t in ("wormhole_n150", "blackhole_p150")]
    result = cb["open_link"](
        "http://host/?target=/etc/x.toml&policy=nosuch&level=kernel", False, offered, ["dram-interleaved"]
    )
    assert result[2] is no_update and result[3] is no_update and result[4] == "kernel"


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


def test_op_names_show_as_text_in_every_figure_never_as_markup(app, cb):
    _, ref, message, _ = cb["upload_model"](
        _progress, _data_url(MARKUP_MLIR.encode()), "markup.mlir", TARGET, "dram-interleaved"
    )
    assert "Loaded" in str(message)
    _, run_id, _, _ = cb["choose_model"](ref, TARGET, "dram-interleaved")
    mm = "<a href='https://evil.example'>mm</a>"
    figures = [
        _graph(cb, run_id, "input", selected=mm)[0],
        cb["show_timeline"](run_id, None, [], mm),
        cb["show_roofline"](run_id, mm),
        cb["find_zone"](run_id, mm, None, "statistics", "name"),
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
    from app.workbench.explorer import search_ops
    from compiler.ir import Graph, Op

    names = ["a" * 50 + "!", "a" * 55 + "." * 40 + "!"]  # no pattern matches them; a backtracker takes hours to say so
    graph = Graph("g", "graph", {}, [Op(name, "ts.op!", [], []) for name in names], [], [])
    assert search_ops(graph, pattern) == []


def test_a_search_pattern_re2_cannot_take_is_one_line():
    from app.workbench.explorer import search_ops
    from compiler.errors import TilescopeError
    from compiler.ir import Graph

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


def _zones(app, run_id: int, depth: int | None = None) -> list:
    with app.explorer.sessions() as session:
        return queries.zones(session, run_id, depth=depth)
