"""The override search: never slower than its start, the same result for the same seed and trial
limit, within its budget, and a model with nothing left to gain ends after one pass, saying so."""

from __future__ import annotations

import pytest

from tilescope.compiler.ir.meta import KERNEL
from tilescope.compiler.frontend.mlir_import import import_mlir
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model
from tilescope.compiler.sim.simulator import simulate
from tilescope.compiler.targets.catalog import load_target
from tilescope.overrides import check_overrides, format_item, parse_item
from tilescope.overrides.candidates import candidates, combined, pre_rejected
from tilescope.overrides.search import LAYOUT_KNOBS, alike, contributions, tune

TRACE = CompileOptions(dispatch="trace")  # a tuned model is deployed with a captured trace
RELU = """func.func @main(%a: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %0 = "ttir.relu"(%a) : (tensor<64x64xbf16>) -> tensor<64x64xbf16>
  return %0 : tensor<64x64xbf16>
}
"""


@pytest.fixture(scope="module")
def mlp():
    return load_model("zoo:mlp?layers=1")


def test_the_same_seed_finds_the_same_set_and_it_is_never_slower(wormhole, mlp):
    first = tune(mlp, wormhole, TRACE, budget_s=None, max_trials=25, seed=3)
    again = tune(mlp, wormhole, TRACE, budget_s=None, max_trials=25, seed=3)
    assert (first.items, first.best_ns, first.trials) == (again.items, again.best_ns, again.trials)
    assert first.trials == 25 and first.stopped == "stopped after its 25 trials"
    assert first.best_ns <= first.start_ns == min(first.policies.values())
    # each item in the set was kept for a gain
    assert {item for change in first.gains for item in change.items} >= set(first.items)
    assert all(change.ns > 0 for change in first.gains)


def test_the_best_set_reproduces_its_time_and_passes_the_check(wormhole, mlp):
    tuned = tune(mlp, wormhole, TRACE, budget_s=None, max_trials=40, seed=1)
    assert tuned.items, "an mlp on Wormhole has something to gain"
    assert not check_overrides(tuned.options, compile_model(mlp, wormhole, CompileOptions(policy=tuned.policy)))
    again = compile_model(mlp, wormhole, tuned.options)
    assert simulate(again.kernel, wormhole, "trace").total_ns == tuned.best_ns < tuned.start_ns


class Ticks:
    """A clock that moves TICK seconds each time it is read, whatever the machine's load: the
    budget then ends after the same trials on every run."""

    TICK = 0.01

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += self.TICK
        return self.now


def test_a_time_budget_ends_the_search(wormhole):
    # two BERT layers: a pass over their ops' candidates is thousands of trials
    clock = Ticks()
    tuned = tune(load_model("zoo:bert-base?layers=2"), wormhole, TRACE, budget_s=0.5, seed=0, clock=clock)
    assert tuned.stopped == "stopped at the end of its time budget" and tuned.trials > 0
    # the deadline is read before each trial, so the search ends a few reads past it, not a pass later
    assert 0.5 <= tuned.seconds <= 0.5 + 5 * Ticks.TICK


def test_a_model_with_nothing_left_to_gain_ends_after_one_pass(wormhole):
    relu = import_mlir(RELU, "relu.mlir")
    done = tune(relu, wormhole, TRACE, budget_s=None, seed=0)
    assert done.stopped in ("a pass over every op kept nothing", "no override of any op makes it faster")
    again = tune(relu, wormhole, done.options, budget_s=None, seed=0, starts=(done.policy,))
    assert again.stopped == "no override of any op makes it faster" and again.gains == []
    assert again.best_ns == again.start_ns == done.best_ns
    current = done.items[0] if done.items else None
    # every candidate is compiled once, but those the layout pass's sharding check refuses first
    tries = candidates(again.compilation, "relu_0", LAYOUT_KNOBS, current)
    assert again.trials == sum(not pre_rejected(again.compilation, item) for item in tries) < len(tries)


def test_candidates_keep_to_the_knobs_asked_for(wormhole, mlp):
    compiled = compile_model(mlp, wormhole)
    layout_only = candidates(compiled, "mlp.layer.0.fc1.matmul", LAYOUT_KNOBS)
    assert "mlp.layer.0.fc1.matmul=l1:block_sharded" in layout_only and "mlp.layer.0.fc1.matmul=4x8" in layout_only
    assert not any("bfp8" in c or "fidelity#" in c for c in layout_only)
    blocks = [c.split("=")[1] for c in layout_only if "block#" in c]
    bm, bn, kb = compiled.kernel.op("mlp.layer.0.fc1.matmul").meta[KERNEL].block
    assert blocks and f"block#{bm}x{bn}x{kb}" not in blocks  # other passes than the kernel's own
    subblocks = [c for c in blocks if c.startswith("subblock#")]
    assert subblocks and all(
        int(h) * int(w) <= wormhole.pipeline.dest_tiles
        for h, w in (c.removeprefix("subblock#").split("x") for c in subblocks)
    )
    precise = candidates(compiled, "mlp.layer.0.fc1.matmul", ("dtype", "fidelity"))
    assert "mlp.layer.0.fc1.matmul=bfp8" in precise and "mlp.layer.0.fc1.matmul=fidelity#lofi" in precise


def test_a_candidate_changes_one_knob_of_the_item_the_op_has():
    assert combined(None, "mm=l1:block_sharded") == "mm=l1:block_sharded"
    # another sub-block keeps the block and where the output lives
    assert combined("mm=l1:block_sharded:block#4x2x2", "mm=subblock#2x1") == (
        "mm=l1:block_sharded:block#4x2x2:subblock#2x1"
    )
    # a grid gives each core another share: its blocking goes; DRAM is interleaved
    assert combined("mm=l1:block_sharded:block#4x2x2:subblock#2x1", "mm=4x4") == "mm=4x4:l1:block_sharded"
    assert combined("mm=4x4:l1:block_sharded:double_buffer#false", "mm=dram") == "mm=4x4:dram:double_buffer#false"
    assert combined("mm=block#4x2x2:subblock#2x1", "mm=block#4x2x4") == "mm=block#4x2x4"


def test_alike_ops_are_grouped_and_only_the_models_own_ops_are_tuned(wormhole):
    bert = load_model("zoo:bert-base?layers=3&seq=128")
    compiled = compile_model(bert, wormhole, CompileOptions(policy="greedy-l1"))
    sim = simulate(compiled.kernel, wormhole, "trace")
    groups = alike(compiled, sim, {})
    own = {op.name for op in bert.graph.ops}
    layout_names = {op.name for op in compiled.levels["layout"].ops}
    assert {name for names in groups for name in names} <= own
    assert layout_names - own, "fuse-attention makes an op the model does not have: no override may name it"
    # the first two layers' intermediate matmuls run the same kernel (the last writes the output): one group
    both = [names for names in groups if "encoder.layer.0.intermediate.dense.matmul" in names]
    assert both and "encoder.layer.1.intermediate.dense.matmul" in both[0]
    for names in groups:
        kernels = {id(k.like or k) for k in (compiled.kernel.op(n).meta[KERNEL] for n in names)}
        assert len(kernels) == 1
    # slowest group first
    durations = {t.name: t.duration_ns for t in sim.ops}
    totals = [sum(durations[n] for n in names) for names in groups]
    assert totals == sorted(totals, reverse=True)


def test_what_each_part_of_the_set_is_worth_is_measured_without_it(wormhole, mlp):
    tuned = tune(mlp, wormhole, TRACE, budget_s=None, max_trials=40, seed=1)
    worth = contributions(mlp, wormhole, tuned)
    assert worth and len(worth) <= len(tuned.items)
    for label, ns in worth:
        item = label.split(" (and ")[0]
        without = [parse_item(i) for i in tuned.items if i != item]
        alone = simulate(
            compile_model(mlp, wormhole, CompileOptions(without, tuned.policy)).kernel, wormhole, "trace"
        ).total_ns
        assert ns == pytest.approx(alone - tuned.best_ns)


def test_how_an_op_reads_an_operand_is_kept_as_the_start_gave_it(wormhole, mlp):
    operand = "mlp.layer.0.fc2.matmul=operand#0:l1:interleaved"
    start = (operand, "mlp.layer.0.fc2.matmul=dram")
    options = CompileOptions([parse_item(i) for i in start], dispatch="trace")
    tuned = tune(mlp, wormhole, options, budget_s=None, max_trials=30, seed=0)
    assert format_item(parse_item(operand)) in tuned.items and tuned.dropped == []
    assert not any("operand#" in item for change in tuned.gains for item in change.items)
    again = compile_model(mlp, wormhole, tuned.options)
    assert simulate(again.kernel, wormhole, "trace").total_ns == tuned.best_ns


def test_start_items_the_policy_rejects_are_left_out_and_named(wormhole, mlp):
    rejected = "mlp.layer.0.fc1.matmul=l1:height_sharded"
    compiled = compile_model(mlp, wormhole, CompileOptions([parse_item(rejected)], "greedy-l1"))
    assert [o.status for o in compiled.override_outcomes] == ["rejected"]
    options = CompileOptions([parse_item(rejected)], dispatch="trace")
    tuned = tune(mlp, wormhole, options, budget_s=None, max_trials=60, starts=("greedy-l1",))
    assert tuned.dropped == [rejected] and rejected not in tuned.items
    assert (
        tuned.start_ns
        == simulate(compile_model(mlp, wormhole, CompileOptions(policy="greedy-l1")).kernel, wormhole, "trace").total_ns
    )
    assert tuned.gains, "with the rejected item left out, the search goes on"


def test_a_group_is_worth_what_the_set_loses_without_all_its_ops(wormhole):
    bert = load_model("zoo:bert-base?layers=3&seq=128")
    tuned = tune(bert, wormhole, TRACE, budget_s=None, max_trials=40, seed=0)
    worth = contributions(bert, wormhole, tuned)
    grouped = [(label, ns) for label, ns in worth if " (and " in label]
    assert grouped, "the first two layers' ops change together"
    label, ns = grouped[0]
    value = label.partition(" (and ")[0].partition("=")[2]
    group = {i for i in tuned.items if i.endswith("=" + value)}
    assert len(group) >= 2
    without = [parse_item(i) for i in tuned.items if i not in group]
    alone = simulate(
        compile_model(bert, wormhole, CompileOptions(without, tuned.policy)).kernel, wormhole, "trace"
    ).total_ns
    assert ns == pytest.approx(alone - tuned.best_ns)


def test_the_search_fuses_head_splits_and_starts_from_other_l1_caps(wormhole):
    """Compiler choices are knobs too: a Llama layer's head splits, which tt-mlir fuses only with
    op constraints on, are each a reshape re-tiling every row until fused with their permute."""
    llama = load_model("zoo:llama-3.2-1b?layers=1")
    tuned = tune(llama, wormhole, TRACE, budget_s=None, max_trials=160, seed=0)
    fused = [item for item in tuned.items if item.endswith("fuse#true")]
    assert {item.partition("=")[0].rsplit(".", 2)[1] for item in fused} == {"q_proj", "k_proj", "v_proj"}
    assert "greedy-l1 at L1 cap 0.9" in tuned.policies and tuned.start in tuned.policies
    again = compile_model(llama, wormhole, tuned.options)
    assert {op.kind for op in again.levels["graph"].ops} >= {"split_heads", "concatenate_heads"}
    assert simulate(again.kernel, wormhole, "trace").total_ns == tuned.best_ns < 0.95 * tuned.start_ns
    assert not check_overrides(tuned.options, compile_model(llama, wormhole, CompileOptions(policy=tuned.policy)))
    # without the knobs, neither
    plain = tune(llama, wormhole, TRACE, knobs=("memory",), budget_s=None, max_trials=5, seed=0)
    assert set(plain.policies) == {"dram-interleaved", "greedy-l1"}
    assert not any("fuse#" in item for item in plain.items)


def test_the_search_says_why_candidates_were_illegal(wormhole):
    tuned = tune(load_model("zoo:bert-base?layers=1"), wormhole, TRACE, budget_s=None, max_trials=120, seed=0)
    families = {name: count for name, count, _ in tuned.illegal.families()}
    assert sum(families.values()) == tuned.illegal.total > 0
    assert families.get("shard does not divide", 0) > 0
    example = tuned.illegal.families()[0][2][0].example
    assert "=" in example and ": " in example  # the item, then the compiler's reason in full


def test_a_candidate_checked_before_its_trial_is_one_the_compiler_rejects_for_that_reason(wormhole):
    """The search skips a candidate whose sharding cannot give each core a shard; the check is the
    layout pass's, so the trial it saves would have been rejected with the same words."""
    model = load_model("zoo:bert-base?layers=1")
    options = CompileOptions(policy="greedy-l1", dispatch="trace")
    base = compile_model(model, wormhole, options)
    skipped = 0
    for op in base.levels["layout"].ops:
        if op.kind == "to_layout" or not op.outputs:
            continue
        for item in candidates(base, op.name, LAYOUT_KNOBS):
            known = pre_rejected(base, item)
            if not known:
                continue
            skipped += 1
            trial = compile_model(model, wormhole, options.with_overrides([parse_item(item)]), since=base)
            [outcome] = trial.override_outcomes
            assert (outcome.status, outcome.reason) == ("rejected", known), item
    assert skipped > 10


def test_a_data_tiled_matmuls_inner_tiles_are_a_knob_the_registers_bound():
    cpu = load_target("x86_avx512")
    mlp = load_model("zoo:mlp?layers=1")
    tiled = CompileOptions(data_tiling=True, dispatch="trace")
    compiled = compile_model(mlp, cpu, tiled)
    tries = candidates(compiled, "mlp.layer.0.fc1.matmul", ("inner_tiles",))
    # each of M0, N0 and K0 halved or doubled
    assert "mlp.layer.0.fc1.matmul=inner_tiles#8x16x2" in tries and len(tries) == 6
    tuned = tune(mlp, cpu, tiled, knobs=("inner_tiles",), budget_s=None, max_trials=24, seed=0)
    assert tuned.best_ns <= tuned.start_ns and all("inner_tiles#" in item for item in tuned.items)
    # 32 rows of 16-lane accumulators, a row of B and an element of A: 34 of AVX-512's 32 registers
    families = {name: reasons for name, _, reasons in tuned.illegal.families()}
    assert "need 34 vector registers" in families["inner tiles do not fit the registers"][0].example


def test_where_a_pass_keeps_nothing_the_least_slower_changes_are_tried_in_pairs(wormhole, mlp):
    """A larger move: two changes that each made the step slower, tried together, the pair kept
    only when it beats the best (here each op's output moved back to DRAM: slower either way)."""
    from tilescope.overrides.search import _Search, _try_pairs
    from tilescope.overrides.search_start import fastest_start

    clock = Ticks()
    _, _, best, _ = fastest_start(mlp, wormhole, TRACE, ("greedy-l1",), float("inf"), print, lambda: False, clock)
    search = _Search(mlp, wormhole, CompileOptions(policy="greedy-l1", dispatch="trace"), float("inf"), None, bool)
    fc1, fc2 = ("mlp.layer.0.fc1.matmul",), ("mlp.layer.0.fc2.matmul",)
    search.missed(fc1, (f"{fc1[0]}=dram",), 5.0)
    search.missed(fc1, (f"{fc1[0]}=dram:double_buffer#false",), 9.0)  # the least slower is kept
    search.missed(fc2, (f"{fc2[0]}=dram",), 7.0)
    stopped, names, items, winner = _try_pairs(search, best)
    assert search.trials == 1 and stopped == ""
    assert winner is None and (names, items) == ((), ())
    together = compile_model(
        mlp, wormhole, TRACE.with_overrides([parse_item(f"{fc1[0]}=dram"), parse_item(f"{fc2[0]}=dram")])
    )
    assert simulate(together.kernel, wormhole, "trace").total_ns >= best.sim.total_ns
