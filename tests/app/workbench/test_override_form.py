"""The override form's overrides: staging one refuses what cannot apply to the shown run, and a
re-run's check names every pending item, the form and the run's own overrides that cannot."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.override_form import (
    FormValues,
    rejections,
    rerun_overrides,
    rerun_problems,
    sharding_placeholder,
    staged_override,
)
from tilescope.compiler.errors import TilescopeError
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.overrides import Problems, check_overrides, format_item, parse_item
from tilescope.perfdb.engine import open_db, session_factory

MLP = "zoo:mlp?layers=1"
FC1, FC2 = "mlp.layer.0.fc1.matmul", "mlp.layer.0.fc2.matmul"
LAYOUT = dict(memory="dram", memory_layout="interleaved", rows=8, cols=8, layout="tile", dtype="bf16")


@pytest.fixture
def explorer(sqlite_url):
    return Explorer(session_factory(open_db(sqlite_url)))


def _run(explorer, target="wormhole_n150", model=MLP):
    return explorer.view(explorer.ensure_run(model, target))


@pytest.mark.parametrize(
    "target, op, fields, reason",
    [
        ("wormhole_n150", "nope", {}, f"no such op in {MLP}"),
        ("wormhole_n150", FC1, dict(rows=9), "grid 9x8 outside wormhole_n150's 8x8 grid"),
        ("wormhole_n150", FC1, dict(rows=1, cols=1, memory="l1", dtype="f32"), "needs 2048 KiB per core in l1"),
        ("mtia_v1", FC1, dict(tile="16x32"), "tile 16x32 not supported on mtia_v1; tiles: 32x32"),
        ("mtia_v1", FC1, dict(fidelity="lofi"), "mtia_v1 has no math fidelity setting"),
        ("mtia_v1", FC2, dict(dtype="bfp8"), "mtia_v1 cannot compute in bfp8"),
        ("wormhole_n150", FC1, dict(block="4x4"), "block '4x4': expected M x N x K tiles per core"),
        ("wormhole_n150", FC1, dict(cols="eight"), "override form: grid cols 'eight' is not a choice it offers"),
        (
            "wormhole_n150",
            FC1,
            dict(sharding="{},{model}"),
            "sharding#{},{model}: no mesh: wormhole_n150 is one device",
        ),
        ("t3k", FC1, dict(sharding="{},{vocab}"), 'mesh has no axis "vocab" (its axes: "model")'),
        ("t3k", FC1, dict(sharding="{model"), "override form: sharding '{model': expected {mesh axes} per"),
        # a fusion that is off by default, asked of a matmul: none of the graph's fusions starts there
        ("wormhole_n150", FC1, dict(fuse="fuse"), "fuse#true applies to a fusion that is off by default"),
        ("wormhole_n150", FC1, dict(fuse="<script>"), "override form: fusion '<script>' is not a choice it offers"),
    ],
)
def test_staging_refuses_an_override_that_cannot_apply_with_one_line(explorer, target, op, fields, reason):
    with pytest.raises(TilescopeError) as refused:
        staged_override(_run(explorer, target), op, FormValues(**{**LAYOUT, **fields}))
    assert reason in str(refused.value) and "\n" not in str(refused.value)


def test_staging_keeps_an_override_that_applies(explorer):
    staged = staged_override(_run(explorer), FC1, FormValues(**{**LAYOUT, "memory": "l1", "fidelity": "lofi"}))
    assert format_item(staged) == f"{FC1}=8x8:l1:interleaved:tile:bf16:fidelity#lofi"


def test_the_form_keeps_an_op_out_of_the_graphs_fusions(explorer):
    """fc1's bias add and activation are fused into it by default; "keep apart" leaves them ops."""
    staged = staged_override(_run(explorer), FC1, FormValues(**{**LAYOUT, "fuse": "keep apart"}))
    assert format_item(staged) == f"{FC1}=8x8:dram:interleaved:tile:bf16:fuse#false"


def test_asked_only_to_fuse_the_form_leaves_the_fused_ops_layout_to_the_compiler(explorer):
    """Under greedy-l1 a key projection's head split (a reshape) is height-sharded over 8x8 cores;
    fused, its result has other tiles. Choosing Fusion alone sends the fusion alone."""
    from tilescope.app.workbench.override_form import form_values

    run = explorer.view(
        explorer.ensure_run("zoo:llama-3.2-1b?layers=1", "wormhole_n150", CompileOptions(policy="greedy-l1"))
    )
    split = "model.layers.0.self_attn.k_proj.split_heads"
    shown = form_values(run, split)
    assert shown.memory_layout == "height_sharded" and shown.fuse == "default"
    staged = staged_override(run, split, replace(shown, fuse="fuse"))
    assert format_item(staged) == f"{split}=fuse#true"
    with pytest.raises(TilescopeError, match="Fusion applies to the op"):
        staged_override(run, split, replace(shown, fuse="fuse", applies_to="operand 0"))


def test_over_several_devices_the_form_shards_the_output_or_an_operand(explorer):
    run = _run(explorer, "t3k")
    assert sharding_placeholder(run.compilation) == "{},{model}"
    assert sharding_placeholder(_run(explorer).compilation) is None  # one device: no field
    weight = FormValues(**{**LAYOUT, "applies_to": "operand 1", "sharding": " replicated "})
    assert (
        format_item(staged_override(run, FC1, weight))
        == f"{FC1}=8x8:dram:interleaved:tile:bf16:operand#1:sharding#replicated"
    )
    output = staged_override(run, FC2, FormValues(**{**LAYOUT, "sharding": "{},{model}"}))
    assert output.sharding.spec() == "{},{model}" and output.operand is None
    assert staged_override(run, FC1, FormValues(**LAYOUT)).sharding is None  # left empty: the compiler's


def test_a_reruns_problems_are_every_pending_item_and_the_form_at_once(explorer):
    run, problems = _run(explorer), Problems()
    pending = ["garbage", 7, "nope=l1", f"{FC2}=9x9", f"{FC1}=8x8:l1:width_sharded"]
    form = FormValues(**{**LAYOUT, "rows": "eight"})
    items = rerun_overrides(run, FC2, pending, form, problems)
    assert [format_item(o) for o in items] == ["nope=l1", f"{FC2}=9x9", f"{FC1}=8x8:l1:width_sharded"]
    rerun_problems(run, items, problems)
    assert problems.lines == [
        "override 'garbage': expected OP=PARAMS, e.g. matmul_1=2x2:l1:block_sharded",
        "pending item 2: 7 is not an override",
        "override form: grid rows 'eight' is not a choice it offers",
        f"override 'nope=l1': no such op in {MLP}",
        f"override '{FC2}=9x9' rejected: grid 9x9 outside wormhole_n150's 8x8 grid",
    ]
    # without a list to collect them in, the first stops the reading, as staging and imports need
    with pytest.raises(TilescopeError, match="'garbage'"):
        rerun_overrides(run, FC2, pending, form)


def test_a_reruns_check_covers_the_runs_own_overrides_as_the_new_ones_replace_them(explorer):
    run = _run(explorer)
    child_id, _ = explorer.apply_overrides(run.id, [parse_item(f"{FC1}=1x1:l1:interleaved:bf16")])
    child = explorer.view(child_id)
    # f32 doubles the child's fc1 output in one core's L1: the run's own override, made impossible
    assert rerun_problems(child, [parse_item(f"{FC1}=result#0:f32")]).lines == [
        f"override '{FC1}=result#0:f32' rejected: the result needs 2048 KiB per core in l1, 1464 KiB available"
    ]
    assert not rerun_problems(child, [parse_item(f"{FC1}=8x8:l1:interleaved:f32")])  # replaces the run's


# two outputs in L1 at f32 that each fit a core, but not both at once beside the circular buffers
CROWDED = "zoo:bert-base?layers=1&batch=16"
CROWDING = [
    f"encoder.layer.0.{name}=l1:interleaved:f32"
    for name in ("attention.output.LayerNorm.layer_norm", "intermediate.dense.matmul")
]


def test_what_only_the_memory_planner_rejects_is_listed_from_the_compile(wormhole):
    model, items = load_model(CROWDED), [parse_item(i) for i in CROWDING]
    assert not check_overrides(CompileOptions(items), compile_model(model, wormhole))  # each is possible on its own
    outcomes = [o.as_dict() for o in compile_model(model, wormhole, CompileOptions(items)).override_outcomes]
    problems = rejections(outcomes)
    assert problems.count == 1 and problems.lines[0].startswith(
        f"override '{CROWDING[-1]}' rejected: L1 overflow: it needs 1152.0 KiB per core"
    )
