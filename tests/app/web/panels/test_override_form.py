"""The override form: Apply and re-run, the pending list, overrides files, and what one Apply
costs the views that show its run."""

from __future__ import annotations

import math

import json

import pytest
from dash import no_update

from tilescope.app.web.panels.override_form import SHOWN_PENDING, problem_list
from tilescope.app.workbench import runs
from tilescope.overrides import Problems
from tilescope.overrides.override_set import MAX_ITEMS
from tilescope.overrides.validate import SHOWN_PROBLEMS
from tilescope.perfdb import runs as stored_runs

from . import conftest
from ...workbench.test_override_form import CROWDED, CROWDING
from .conftest import (
    CONSUMER,
    FC1,
    MODEL,
    POLICY,
    STAGES,
    TARGET,
    apply,
    data_url,
    fired,
    form,
    marked_text,
    records,
    rerun,
    shown_run,
    zones,
)
from .test_timeline import outlined, zones_drawn


def test_apply_override_reruns_stores_a_child_run_and_refreshes_views(app, cb):
    base_id = shown_run(cb)
    filled = cb["fill_form"](FC1, base_id)["form"]  # a click on its node (assets/graph.js click, in the browser)
    # 128 tile columns over 64 cores
    applied = apply(cb, base_id, **{**filled, "memory": "l1", "memory_layout": "width_sharded"})
    new_id = applied["run_id"]
    assert new_id != base_id and applied["pending"] == []
    assert [o["value"] for o in applied["run_options"]] == [new_id, base_id]
    assert "applied" in str(applied["status"])
    run = app.explorer.run(new_id)
    kernel_ops = len(app.explorer.view(new_id).compilation.kernel.ops)
    assert [s.children[1] for s in STAGES[-3:]] == [  # the progress line's stages
        "re-run: compiling...",
        f"re-run: simulating {kernel_ops} ops...",
        "re-run: storing the run...",
    ]
    assert run.parent_id == base_id
    assert run.overrides == [f"{FC1}=8x8:l1:width_sharded:tile:bf16"]

    before, after = records(app, base_id), records(app, new_id)
    assert after[FC1].memory == "l1" and before[FC1].memory == "dram"
    # fc1 writes to its own L1 and its consumer reads it from there: both get faster
    assert after[FC1].duration_ns < before[FC1].duration_ns
    assert after[CONSUMER].duration_ns < before[CONSUMER].duration_ns
    # the change explains itself at once: totals, device and host shares, the ops that moved most
    delta = str(applied["status"])
    total_a, total_b = (app.explorer.run(i).total_ns / 1e3 for i in (base_id, new_id))
    assert f"vs #{base_id}: " in delta and f"total {total_a:,.1f} -> {total_b:,.1f} us" in delta
    assert "device -" in delta and "host/idle" in delta
    fastest = min((FC1, CONSUMER), key=lambda n: after[n].duration_ns - before[n].duration_ns)
    assert f"{fastest} -{(before[fastest].duration_ns - after[fastest].duration_ns) / 1e3:,.2f} us" in delta
    # with the model's error on it: both predictions' bands (Wormhole's held-out error of the kind)
    band = math.hypot(
        before[fastest].error_band * before[fastest].duration_ns, after[fastest].error_band * after[fastest].duration_ns
    )
    assert f" +- {band / 1e3:,.2f} us" in delta

    mlir, summary = cb["show_mlir"](new_id, "layout", FC1), cb["show_summary"](new_id)
    highlighted = marked_text(mlir)
    assert "#ts.layout<l1, width_sharded" in highlighted and FC1 in highlighted
    assert "overrides" in str(summary)
    timeline = cb["show_timeline"](new_id, None, [], FC1)
    op_zones = [z for z in zones(app, new_id) if z.depth == 0]
    # a device row with each op once, then every core's op zones
    assert zones_drawn(timeline) == len(app.explorer.durations(new_id)) + len(op_zones)
    assert outlined(timeline) == sum(1 for z in op_zones if z.op == FC1) + 1  # its cores and the device row


def _run_select_callbacks(app) -> int:
    """The server-side callbacks the page runs when the shown run changes."""
    return sum(
        1
        for spec in app.callback_map.values()
        # a server-side callback has its function here; one run in the browser has not
        if "callback" in spec and any(i["id"] == "run-select" and i["property"] == "value" for i in spec["inputs"])
    )


def test_after_apply_every_view_shares_one_read_of_the_new_run_and_one_compile_lookup(app, cb, monkeypatch):
    """What Apply sets off: the new run id reaches every view of it, which ask for it at once;
    they share one read of the run and one compilation."""
    base_id = shown_run(cb)
    cb["show_summary"](base_id)  # the page shows the run Apply starts from
    reads, lookups = [], []
    get_run, compile_cached = stored_runs.get_run, runs.compile_cached
    monkeypatch.setattr(
        stored_runs, "get_run", lambda session, run_id: reads.append(run_id) or get_run(session, run_id)
    )
    monkeypatch.setattr(runs, "compile_cached", lambda *a, **k: lookups.append(a[0]) or compile_cached(*a, **k))

    new_id = rerun(cb, base_id, memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    # every view of the run, as the page asks for them with the timeline tab open
    views = {
        "show_graph": lambda: cb["show_graph"](new_id, "graph", FC1),
        "show_mlir": lambda: cb["show_mlir"](new_id, "graph", FC1),
        "show_summary": lambda: cb["show_summary"](new_id),
        "offer_replay": lambda: cb["offer_replay"](new_id, TARGET),
        "inspect": lambda: cb["inspect"](FC1, new_id, "graph"),
        "fill_form": lambda: cb["fill_form"](FC1, new_id),
        "offer_grids": lambda: cb["offer_grids"](new_id, FC1, "output", "width_sharded", "default", 8, 8),
        "show_timeline": lambda: cb["show_timeline"](new_id, None, ["counters"], FC1),
        "show_statistics": lambda: cb["show_statistics"](new_id, "name", "timeline"),
        "find_zone": lambda: cb["find_zone"](new_id, FC1, None, "timeline", "name"),
        "show_memory": lambda: cb["show_memory"](new_id, "timeline"),
        "show_roofline": lambda: cb["show_roofline"](new_id, FC1, "timeline"),
        "show_diff": lambda: cb["show_diff"]([], new_id, "timeline"),
        "write_link": lambda: cb["write_link"](MODEL, TARGET, POLICY, "graph", new_id, FC1, [], "host", {"search": ""}),
    }
    assert len(views) == _run_select_callbacks(app), "a view of the run is missing from this count"
    for view in views.values():
        view()
    assert reads == [new_id] and len(lookups) == 1
    # and with every tab open in turn
    for tab in ("statistics", "memory", "roofline"):
        (
            cb["show_statistics"](new_id, "name", tab),
            cb["show_memory"](new_id, tab),
            cb["show_roofline"](new_id, FC1, tab),
        )
    assert reads == [new_id] and len(lookups) == 1


def test_second_override_of_the_same_op_replaces_the_first(app, cb):
    first = rerun(cb, shown_run(cb), memory="l1", memory_layout="block_sharded", rows=4, cols=8)
    second = rerun(cb, first, memory="dram", memory_layout="interleaved", rows=4, cols=4)
    assert app.explorer.run(second).overrides == [f"{FC1}=4x4:dram:interleaved:tile:bf16"]


def test_impossible_override_is_reported_and_stores_nothing(app, cb):
    # fc1's output of a wide MLP (128x8192 bf16 = 2 MiB) does not fit one core's 1464 KiB of L1
    wide = "zoo:mlp?layers=1&hidden=8192"
    wide_id = shown_run(cb, wide)
    runs_before = len(app.explorer.run_options(wide, TARGET))
    applied = apply(cb, wide_id, memory="l1", memory_layout="block_sharded", rows=1, cols=1)
    assert applied["run_options"] is no_update and applied["run_id"] is no_update
    assert "rejected" in str(applied["status"]) and "KiB" in str(applied["status"])
    assert len(app.explorer.run_options(wide, TARGET)) == runs_before


def test_apply_lists_every_impossible_override_and_applies_none(app, cb):
    """Unknown op, grid beyond the target, L1 that does not fit, fidelity on a target without:
    one line each, naming the override and the cause; no run stored, the pending list kept."""
    mtia_id = shown_run(cb, target="mtia_v1")
    runs_before = len(app.explorer.run_options(MODEL, "mtia_v1"))
    pending = [
        "mlp.layer.0.fc3.matmul=l1",
        f"{CONSUMER}=result#0:9x9",
        f"{FC1}=1x1:l1:interleaved:tile:bf16",
        f"{CONSUMER}=fidelity#lofi",
        f"{CONSUMER}=8x8:dram:interleaved",  # possible: not listed
    ]
    applied = apply(cb, mtia_id, selected=None, pending=pending)
    assert applied["run_id"] is no_update and applied["pending"] is no_update
    head, listed = applied["status"].children
    assert head.children.startswith("Not re-run: 4 overrides cannot apply, so none was applied.")
    assert [li.children for li in listed.children] == [
        f"override 'mlp.layer.0.fc3.matmul=l1': no such op in {MODEL}; did you mean {CONSUMER}, {FC1}?",
        f"override '{CONSUMER}=result#0:9x9' rejected: grid 9x9 outside mtia_v1's 8x8 grid",
        f"override '{FC1}=1x1:l1:interleaved:tile:bf16' rejected: the result needs 1024 KiB per core in l1, "
        "128 KiB available",
        f"override '{CONSUMER}=fidelity#lofi' rejected: mtia_v1 has no math fidelity setting "
        "(its engine costs the same at each)",
    ]
    assert len(app.explorer.run_options(MODEL, "mtia_v1")) == runs_before


def test_apply_of_a_huge_pending_list_names_a_page_of_problems_and_counts_the_rest(cb):
    pending = [f"{FC1}=8x8:l1:width_sharded", *(f"op{i}=2x2:dram:interleaved" for i in range(MAX_ITEMS - 1))]
    applied = apply(cb, shown_run(cb), selected=None, pending=pending)
    head, listed = applied["status"].children
    assert head.children.startswith(f"Not re-run: {MAX_ITEMS - 1:,} overrides cannot apply")
    lines = [li.children for li in listed.children]
    assert len(lines) == SHOWN_PROBLEMS + 1 and lines[-1] == f"... and {MAX_ITEMS - 1 - SHOWN_PROBLEMS:,} more"
    assert lines[0].startswith("override 'op0=2x2:dram:interleaved': no such op")


def test_what_only_a_compile_finds_impossible_is_listed_the_same_way(app, cb):
    """Outputs that each fit L1 but not both at once: the memory planner rejects one, nothing is stored."""
    crowded_id = shown_run(cb, CROWDED)
    runs_before = len(app.explorer.run_options(CROWDED, TARGET))
    applied = apply(cb, crowded_id, selected=None, pending=CROWDING)
    head, listed = applied["status"].children
    assert head.children.startswith("Not re-run: 1 override cannot apply")
    assert listed.children[0].children.startswith(f"override '{CROWDING[-1]}' rejected: L1 overflow: it needs ")
    assert len(app.explorer.run_options(CROWDED, TARGET)) == runs_before


def test_add_to_pending_refuses_an_impossible_override_with_one_line(cb):
    mtia_id, pending = shown_run(cb, target="mtia_v1"), [f"{CONSUMER}=8x8:dram:interleaved"]
    layout = dict(memory="dram", memory_layout="interleaved", rows=8, cols=8)
    refused = cb["stage_override"](1, mtia_id, FC1, pending, form(fidelity="hifi2", **layout))
    assert refused["pending"] is no_update
    assert refused["status"].children == (
        f"Not added: override '{FC1}=8x8:dram:interleaved:tile:bf16:fidelity#hifi2' rejected: "
        "mtia_v1 has no math fidelity setting (its engine costs the same at each)"
    )
    refused = cb["stage_override"](1, mtia_id, FC1, pending, form(**{**layout, "rows": 12}))
    assert refused["pending"] is no_update and "grid 12x8 outside mtia_v1's 8x8 grid" in refused["status"].children
    staged = cb["stage_override"](1, mtia_id, FC1, pending, form(**layout))
    assert staged["status"] is None and staged["pending"] == [*pending, f"{FC1}=8x8:dram:interleaved:tile:bf16"]


def test_form_without_a_selected_op_says_so(cb):
    applied = apply(cb, shown_run(cb), selected=None, memory="l1", memory_layout="block_sharded", rows=4, cols=8)
    assert "select an op" in str(applied["status"])


def test_the_override_form_offers_what_the_selected_target_has(cb):
    mtia = cb["form_choices"]("mtia_v1")
    assert mtia["memories"] == ["l1", "lls", "dram"] and "i8" in mtia["dtypes"]
    blackhole = cb["form_choices"]("blackhole_p150")
    assert "lls" not in blackhole["memories"]
    grids = cb["offer_grids"](shown_run(cb, target="blackhole_p150"), None, "output", "interleaved", "default", 8, 8)
    assert [o["value"] for o in grids["rows_options"]] == list(range(1, 11)) and grids["cols_options"][-1][
        "value"
    ] == 13
    assert cb["form_choices"]("no-such-target") is no_update
    # Tenstorrent's tiny tiles and math fidelities only where the engine has them
    assert blackhole["tiles"] == ["default", "32x32", "16x32", "8x32", "4x32", "2x32", "1x32"]
    assert blackhole["fidelities"] == ["default", "lofi", "hifi2", "hifi3", "hifi4"]
    assert mtia["tiles"] == ["default", "32x32"] and mtia["fidelities"] == ["default"]
    corsair = cb["form_choices"]("corsair")
    assert corsair["tiles"] == ["default", "64x64"] and corsair["fidelities"] == ["default"]


def test_the_form_can_ask_for_a_math_fidelity(app, cb):
    new_id = rerun(cb, shown_run(cb), memory="dram", memory_layout="interleaved", rows=8, cols=8, fidelity="lofi")
    assert app.explorer.run(new_id).overrides == [f"{FC1}=8x8:dram:interleaved:tile:bf16:fidelity#lofi"]
    assert cb["fill_form"](FC1, new_id)["form"]["fidelity"] == "lofi"


def test_pending_overrides_re_run_together_in_one_child_run(app, cb):
    base_id = shown_run(cb)

    def stage(selected, pending, **fields):
        return cb["stage_override"](1, base_id, selected, pending, form(**fields))

    staged = stage(FC1, [], memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    assert staged["status"] is None and staged["pending"] == [f"{FC1}=8x8:l1:width_sharded:tile:bf16"]
    # staging the same op again replaces its entry; another op joins the list
    pending = stage(FC1, staged["pending"], memory="l1", memory_layout="block_sharded", rows=4, cols=8)["pending"]
    pending = stage(CONSUMER, pending, memory="dram", memory_layout="interleaved", rows=8, cols=8, fidelity="hifi2")[
        "pending"
    ]
    assert pending == [
        f"{FC1}=4x8:l1:block_sharded:tile:bf16",
        f"{CONSUMER}=8x8:dram:interleaved:tile:bf16:fidelity#hifi2",
    ]
    assert "Add to pending" in str(cb["show_pending"]([])) and CONSUMER in str(cb["show_pending"](pending))

    # the form still shows the selected consumer as it is: only the pending list is applied
    as_it_is = cb["fill_form"](CONSUMER, base_id)["form"]
    applied = cb["apply_override"](conftest.progress, 1, base_id, CONSUMER, pending, as_it_is)
    assert applied["pending"] == [] and str(applied["status"]).count("badge applied") == 2
    run = app.explorer.run(applied["run_id"])
    assert run.overrides == pending and run.parent_id == base_id


def test_the_form_sets_an_operand_tile_blocking_and_buffering_and_rejects_a_bad_block(app, cb):
    base_id = shown_run(cb)
    layout = dict(memory_layout="interleaved", rows=8, cols=8)
    staged = cb["stage_override"](1, base_id, FC1, [], form(memory="l1", applies_to="operand 0", **layout))
    assert staged["pending"] == [f"{FC1}=8x8:l1:interleaved:tile:bf16:operand#0"]
    applied = apply(
        cb, base_id, memory="dram", fidelity="hifi2", tile="32x32", block="4x2x2", double_buffer="off", **layout
    )
    assert "rejected" not in str(applied["status"])
    assert app.explorer.run(applied["run_id"]).overrides == [
        f"{FC1}=8x8:dram:interleaved:tile:bf16:fidelity#hifi2:block#4x2x2:double_buffer#false:tile#32x32"
    ]
    bad = cb["stage_override"](1, base_id, FC1, [], form(memory="l1", block="4x4", **layout))
    assert "expected M x N x K" in str(bad["status"])


def test_an_overrides_file_of_any_format_joins_the_pending_list_and_bad_items_are_listed(cb):
    text = f"override-output-layout={FC1}=4x4:l1:block_sharded,no.such=1x1:dram:interleaved:tile:bf16:fidelity#nope"
    imported = cb["import_overrides"](data_url(text), "opts.txt", [f"{FC1}=8x8:dram:interleaved"])
    assert imported["pending"] == [f"{FC1}=4x4:l1:block_sharded"] and imported["contents"] is None
    assert "opts.txt: 1 override added" in str(imported["status"]) and "nope" in str(imported["status"])
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
    pending = cb["import_overrides"](data_url(explorer_json), "tt-explorer.json", [])["pending"]
    assert pending and pending[0].startswith(f"{CONSUMER}=8x1:l1:height_sharded")
    damaged = cb["import_overrides"]("data:;base64,@@@", "broken.json", [])
    assert damaged["pending"] is no_update and "the upload is damaged (not base64)" in str(damaged["status"])
    broken = cb["import_overrides"](data_url("{ not json"), "broken.json", [])
    assert broken["pending"] is no_update and "not valid JSON" in str(broken["status"])


def test_a_file_of_many_overrides_joins_the_pending_list_in_one_pass_and_a_page_of_it_is_shown(cb):
    """Each item replaces a pending override of the same op part and goes last; the page lists
    the first SHOWN_PENDING with a count of the rest."""
    text = "override-output-layout=" + ",".join(f"op{i}=2x2:dram:interleaved" for i in range(50_000))
    imported = cb["import_overrides"](
        data_url(text), "many.txt", ["op3=1x1:l1:interleaved", "other=1x1:l1:interleaved"]
    )
    pending = imported["pending"]
    assert len(pending) == 50_001 and "50,000 overrides added" in str(imported["status"])
    assert pending[:3] == ["other=1x1:l1:interleaved", "op0=2x2:dram:interleaved", "op1=2x2:dram:interleaved"]
    assert "op3=2x2:dram:interleaved" in pending and "op3=1x1:l1:interleaved" not in pending
    shown = cb["show_pending"](pending)
    assert len(shown.children) == SHOWN_PENDING + 1
    assert shown.children[-1].children == f"... and {50_001 - SHOWN_PENDING:,} more"


def test_a_pending_list_past_a_files_limit_is_one_line_before_any_item_is_read(cb):
    run_id = shown_run(cb)
    huge = ["not an override"] * (MAX_ITEMS + 1)  # a page may send anything
    said = f"{MAX_ITEMS + 1:,} pending overrides: at most {MAX_ITEMS:,}"
    staged = cb["stage_override"](
        1, run_id, FC1, huge[:-1], form(memory="l1", memory_layout="interleaved", rows=8, cols=8)
    )
    assert staged["pending"] is no_update and staged["status"].children == f"Not added: {said}"
    empty = {name: None for name in form()}
    assert cb["apply_override"](conftest.progress, 1, run_id, None, huge, empty)["status"].children == said
    imported = cb["import_overrides"](data_url(f"override-output-layout={FC1}=4x4:l1:interleaved"), "x.txt", huge[:-1])
    assert imported["status"].children == said


@pytest.mark.parametrize("field, value", [("rows", "eight"), ("tile", "wide"), ("applies_to", "operand x")])
def test_a_form_value_the_menus_do_not_offer_is_one_line(cb, field, value):
    """A page may send any value for a field: it is refused with a line naming it."""
    fields = {"memory": "l1", "memory_layout": "interleaved", "rows": 8, "cols": 8, field: value}
    applied = apply(cb, shown_run(cb), **fields)
    assert applied["run_id"] is no_update and applied["status"].children.startswith("override form: ")


def test_a_reruns_label_names_every_override_it_runs_with(app, cb):
    first = rerun(cb, shown_run(cb), memory="l1", memory_layout="width_sharded", rows=8, cols=8)
    second = rerun(
        cb, first, selected=CONSUMER, memory="dram", memory_layout="interleaved", rows=8, cols=8, fidelity="lofi"
    )
    parent, label = app.explorer.view(first).label, app.explorer.view(second).label
    # the parent's override and the new one, not only what this Apply changed
    assert label.startswith(parent + ", " + CONSUMER + "=") and "lofi" in label, (parent, label)


def test_a_label_of_many_overrides_counts_them_and_names_the_new_ones():
    from tilescope.app.workbench.run_labels import overrides_label
    from tilescope.overrides import parse_item

    items = [parse_item(f"op{i}=l1") for i in range(5)]
    assert overrides_label(items[:3]) == "op0=l1, op1=l1, op2=l1"
    assert overrides_label(items, items[4:]) == "5 overrides: op4=l1, ..."


def test_the_sharding_field_shows_for_a_run_over_several_devices_and_reshards_the_op(app, cb):
    one_device = cb["fill_form"](FC1, shown_run(cb))
    assert one_device["sharding_hidden"] is True and one_device["form"]["sharding"] == ""
    base_id = shown_run(cb, target="t3k")
    filled = cb["fill_form"](CONSUMER, base_id)
    assert filled["sharding_hidden"] is False and filled["sharding_placeholder"] == "{},{model}"
    # fc2 is row-parallel: its partial sums are reduced and scattered, each device keeping its columns
    applied = apply(cb, base_id, selected=CONSUMER, **{**filled["form"], "sharding": "{},{model}"})
    assert "badge applied" in str(applied["status"])
    run = app.explorer.run(applied["run_id"])
    assert run.overrides == [f"{CONSUMER}=8x8:dram:interleaved:tile:bf16:sharding#{{}},{{model}}"]
    kinds = [op.kind for op in app.explorer.view(applied["run_id"]).compilation.levels["partition"].ops]
    assert "reduce_scatter" in kinds and "all_reduce" not in kinds
    bad = apply(cb, base_id, selected=CONSUMER, **{**filled["form"], "sharding": "{},{vocab}"})
    assert bad["run_id"] is no_update and 'mesh has no axis "vocab"' in str(bad["status"])


def test_the_grid_menus_offer_the_grids_the_tensor_divides_into_and_move_one_that_does_not(cb):
    """fc1's output is 4x128 tiles: block-sharded over at most 4 rows of cores (3 leave the last a
    partial shard, as ttnn does); a grid the form holds that does not fit moves to the nearest that
    does, the dimension just chosen kept."""
    run_id = shown_run(cb)
    offered = cb["offer_grids"](run_id, FC1, "output", "block_sharded", "default", 8, 8)
    rows = offered["rows_options"]
    assert [o["value"] for o in rows if o.get("disabled")] == [5, 6, 7, 8]
    assert rows[4]["title"].startswith(
        "no grid of 5 rows gives each core a shard of mlp.layer.0.gelu (4x128 tiles of 32x32) block_sharded"
    )
    assert (offered["rows"], offered["cols"]) == (4, 8) and offered["note"].endswith("grid set to 4x8")
    kept = fired(
        "override-grid-cols.value", cb["offer_grids"], run_id, FC1, "output", "height_sharded", "default", 4, 2
    )
    assert (kept["rows"], kept["cols"], kept["note"]) == (
        2,
        2,
        "height_sharded over 4x2 cores has more cores than mlp.layer.0.gelu (4x128 tiles of 32x32) has shards: "
        "grid set to 2x2",
    )
    chosen = fired(
        "override-grid-rows.value", cb["offer_grids"], run_id, FC1, "output", "block_sharded", "default", 2, 8
    )
    assert chosen["rows"] is no_update and chosen["note"] is None  # a grid that divides, chosen: the note goes
    # what a page sends that the menus do not offer is left for Add to name
    odd = cb["offer_grids"](run_id, FC1, "output", "block_sharded", "default", "eight", 8)
    assert odd["rows"] is no_update
    forged = cb["offer_grids"](run_id, {"op": 1}, ["x"], {"a": 1}, "0x0", 10**30, None)
    assert all(not o.get("disabled") for o in forged["rows_options"])  # no op: every grid


def test_problems_are_counted_in_words_that_agree_with_the_count(cb):
    one, two = Problems(), Problems()
    one.add("override 'a=l1': no op named 'a'")
    two.add("x"), two.add("y")
    assert problem_list(one).children[0].children == (
        "Not re-run: 1 override cannot apply, so none was applied. Fix or remove it, then apply again."
    )
    assert problem_list(two).children[0].children.endswith("Fix or remove them, then apply again.")
