"""What the override form shows for an op of a run: every knob the run's override of the op part
holds, so the next Apply keeps what it does not change."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilescope.app.workbench.explorer import Explorer
from tilescope.app.workbench.override_form import (
    OUTPUT,
    applies_to_choices,
    form_values,
    rerun_overrides,
    rerun_problems,
)
from tilescope.compiler.pipeline.op_override import APPLIED, LAYOUT_FIELDS
from tilescope.overrides import format_item, parse_item
from tilescope.perfdb.engine import open_db, session_factory

MLP = "zoo:mlp?layers=1"
FC1, FC2 = "mlp.layer.0.fc1.matmul", "mlp.layer.0.fc2.matmul"
KNOBS = LAYOUT_FIELDS + ("sharding", "operand", "result")


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    return Explorer(session_factory(open_db(f"sqlite:///{tmp_path_factory.mktemp('form')}/t.db")))


BASELINES: dict[str, int] = {}  # by target: the first run stored of the model, with no override


def _child(explorer, target: str, item: str):
    """A run whose one override is `item`, applied."""
    base = BASELINES.setdefault(target, explorer.ensure_run(MLP, target))
    child_id, outcomes = explorer.apply_overrides(base, [parse_item(item)])
    assert [o["status"] for o in outcomes] == [APPLIED], outcomes
    return explorer.view(child_id)


@pytest.mark.parametrize(
    "target, item, part",
    [
        ("wormhole_n150", f"{FC1}=block#4x2x2", OUTPUT),
        ("wormhole_n150", f"{FC1}=8x8:dram:interleaved:block#4x2x2:subblock#2x2", OUTPUT),
        ("wormhole_n150", f"{FC1}=tile#16x32", OUTPUT),
        ("wormhole_n150", f"{FC1}=double_buffer#false", OUTPUT),
        ("wormhole_n150", f"{FC1}=double_buffer#true:fidelity#lofi", OUTPUT),
        ("wormhole_n150", f"{FC1}=operand#1:8x8:l1:width_sharded", "operand 1"),
        ("wormhole_n150", f"{FC1}=result#0:l1:interleaved:block#4x2x2", "result 0"),
        ("t3k", f"{FC2}=sharding#{{}},{{model}}", OUTPUT),
        ("t3k", f"{FC1}=operand#1:sharding#replicated", "operand 1"),
    ],
)
def test_the_form_shows_every_knob_of_the_runs_override_and_the_next_apply_keeps_them(explorer, target, item, part):
    run = _child(explorer, target, item)
    op, held = parse_item(item).op, parse_item(item)
    shown = form_values(run, op)
    assert shown.applies_to == part  # the part the run's override lays out
    marked = [c for c in applies_to_choices(run, op) if c.overridden]
    assert [c.value for c in marked] == [part]
    # a changed dtype (and, for the op's own work, fidelity), as a user changes them, then Apply
    changed = replace(shown, dtype="f32", fidelity="hifi2" if part != "operand 1" else shown.fidelity)
    items = rerun_overrides(run, op, [], changed)
    assert not rerun_problems(run, items), rerun_problems(run, items).lines
    (after,) = [o for o in run.rerun_with(items).overrides if o.key == held.key]
    kept = {k: getattr(held, k) for k in KNOBS if getattr(held, k) is not None and k not in ("dtype", "fidelity")}
    assert {k: getattr(after, k) for k in kept} == kept, format_item(after)
    assert after.dtype == "f32"
    # the form left as it shows the op re-runs nothing new: the run's override is its own
    assert rerun_overrides(run, op, ["other=l1"], shown) == [parse_item("other=l1")]


def test_another_part_of_the_op_shows_its_own_layout_and_override(explorer):
    run = _child(explorer, "wormhole_n150", f"{FC1}=operand#1:8x8:l1:width_sharded")
    output = form_values(run, FC1, OUTPUT)
    assert (output.memory, output.memory_layout, output.block) == ("dram", "interleaved", "")
    weight = form_values(run, FC1, "operand 1")
    assert (weight.memory, weight.memory_layout, weight.rows, weight.cols) == ("l1", "width_sharded", 8, 8)
    assert form_values(run, FC1, "operand 9").applies_to == OUTPUT  # a part the op lacks: its output
    assert form_values(run, FC1, {"forged": 1}).applies_to == OUTPUT
    assert form_values(run, FC1, "operand -1").applies_to == OUTPUT
    # an op a page names that is no op: an empty form, as with none selected
    assert form_values(run, {"forged": 1}) == form_values(run, ["x"]) == form_values(run, None)
    assert [c.value for c in applies_to_choices(run, {"forged": 1})] == [OUTPUT]
