"""The compiler levels: input -> graph -> layout -> kernel, each inspectable and printable as MLIR."""

from __future__ import annotations

import re

import pytest

from tilescope.compiler.ir.meta import KERNEL, L1_BYTES, L1_LIVE, L1_LIVE_PER_CORE, L1_PEAK, PLACED, SHARDING_OUTCOMES
from tilescope.compiler.ir.graph import LEVELS
from tilescope.compiler.frontend.mlir_import import parse_module
from tilescope.compiler.frontend.model_refs import load_model
from tilescope.compiler.pipeline.options import CompileOptions
from tilescope.compiler.pipeline.stages import compile_model

from ..conftest import DATA


@pytest.fixture(params=["mnist", "zoo:mlp", "tiny"])
def compiled(request, wormhole, tiny_path):
    ref = {"zoo:mlp": "zoo:mlp", "tiny": tiny_path}.get(request.param) or request.getfixturevalue("mnist_path")
    return compile_model(load_model(ref), wormhole)


def test_levels_in_order(compiled):
    assert list(compiled.levels) == ["graph", "partition", "layout", "kernel"]
    for level, graph in compiled.levels.items():
        assert graph.level == level
    assert LEVELS == ("input", "graph", "partition", "layout", "kernel")


def test_every_input_op_is_kept_or_accounted_for_by_provenance(compiled):
    graph_ops = compiled.levels["graph"].ops
    sources = [name for op in graph_ops for name in op.source]
    assert sorted(sources) == sorted(op.name for op in compiled.model.graph.ops)  # each exactly once
    assert all(op.source[0] == op.name for op in graph_ops)  # fused ops keep the producer's name
    names = [op.name for op in graph_ops]
    for level in ("layout", "kernel"):
        assert [op.name for op in compiled.levels[level].ops] == names


def test_mnist_bias_adds_and_relus_fuse_into_their_matmuls(mnist_path, wormhole):
    graph = compile_model(load_model(mnist_path), wormhole).levels["graph"]
    assert [(op.name, op.attrs.get("fused")) for op in graph.ops] == [
        ("matmul_0", ("add_0", "relu_0")),
        ("matmul_1", ("add_1", "relu_1")),
        ("matmul_2", ("add_2",)),
    ]
    first = graph.op("matmul_0")
    assert first.inputs == ["input_1", "linear_relu_stack.0.weight", "linear_relu_stack.0.bias"]
    assert first.outputs == ["relu_0"] and graph.outputs == ["add_2"]


def test_levels_are_independent_copies(compiled):
    graph, layout, kernel = (compiled.levels[k] for k in ("graph", "layout", "kernel"))
    assert all(op.kind.startswith("ttir.") for op in compiled.model.graph.ops)  # input untouched
    assert all(t.layout is None for t in graph.tensors.values())
    assert all(t.layout is not None for t in layout.tensors.values())
    assert all(KERNEL not in op.meta for op in layout.ops)
    assert all(op.meta[KERNEL] is not None for op in kernel.ops)
    assert graph.ops[0] is not layout.ops[0] is not kernel.ops[0]


def test_graph_level_uses_the_op_vocabulary(compiled):
    kinds = {op.kind for op in compiled.levels["graph"].ops}
    assert kinds <= {"matmul", "add", "relu", "gelu"}
    assert "matmul" in kinds
    assert compiled.warnings == []


def test_default_layout_is_dram_interleaved_on_the_whole_grid(compiled):
    layout = compiled.levels["layout"]
    for op in layout.ops:
        assert op.attrs["grid"] == (8, 8)
        out = layout.tensors[op.outputs[0]].layout
        assert (out.memory, out.memory_layout, out.grid) == ("dram", "interleaved", (8, 8))
        assert out.dtype == layout.tensors[op.outputs[0]].dtype
    for name in layout.inputs:
        assert layout.tensors[name].layout.memory == "dram"


def test_kernel_splits_every_op_over_its_grid(compiled):
    for op in compiled.kernel.ops:
        kernel = op.meta[KERNEL]
        assert kernel.grid == (8, 8)
        assert 1 <= kernel.cores_used <= 64
        cores = [c for g in kernel.groups for c in g.cores]
        assert len(cores) == len(set(cores)) == kernel.cores_used
        assert all(0 <= r < 8 and 0 <= c < 8 for r, c in cores)
        for group in kernel.groups:
            assert sum(t.bytes for t in group.reads) > 0 and sum(t.bytes for t in group.writes) > 0
            assert group.compute.cycles > 0


def test_mnist_matmul_kernel_facts(mnist_path, wormhole):
    """1x784 @ 784x512 f32: 1 row tile, 16 column tiles, K = 25 tiles -> 1D split over 16 cores;
    the first core fetches A (the whole 1x784 row) from DRAM and multicasts it to the other 15."""
    kernel = compile_model(load_model(mnist_path), wormhole).kernel
    matmul = kernel.op("matmul_0").meta[KERNEL]
    assert matmul.program == "matmul_1d_mcast_in0"
    assert matmul.cores_used == 16
    sender, receivers = sorted(matmul.groups, key=lambda g: len(g.cores))
    assert sender.cores == ((0, 0),) and len(receivers.cores) == 15
    for group in (sender, receivers):
        assert group.compute.engine == "matrix"
        assert group.compute.fidelity == "hifi4"  # f32 default
        assert group.compute.tiles == 25
        # 25 HiFi4 tile matmuls, then the fused bias add and relu: 2 vector passes of 8 cycles
        assert group.compute.cycles == 25 * 64 + 2 * 8
        assert group.blocks == 5  # K = 25 tiles in steps of 5
        (w,) = group.writes
        assert (w.tensor, w.bytes) == ("relu_0", 4096)  # the fused relu's output
    a, b, bias = sender.reads
    assert (a.tensor, a.path, a.bytes) == ("input_1", "dram", 25 * 4096)
    assert (b.tensor, b.path, b.bytes) == ("linear_relu_stack.0.weight", "dram", 25 * 4096)
    assert (bias.tensor, bias.path, bias.bytes) == ("linear_relu_stack.0.bias", "dram", 4096)
    a, b, _ = receivers.reads
    assert (a.tensor, a.path, a.bytes) == ("input_1", "mcast", 25 * 4096)
    assert (b.path, b.bytes) == ("dram", 25 * 4096)
    assert [cb.name for cb in sender.cbs] == ["in0", "in1", "in2", "out"]


def test_all_four_levels_reparse_with_the_mlir_parser(compiled):
    for level in LEVELS:
        text = compiled.mlir(level)
        module = parse_module(text, level)
        assert str(module)  # the parser built a module
        if level != "input":
            assert f'ts.level = "{level}"' in text


def test_mlir_text_is_deterministic(compiled, wormhole):
    again = compile_model(load_model(compiled.model.ref), wormhole)
    for level in LEVELS:
        assert again.mlir(level) == compiled.mlir(level)


def test_unknown_level_is_an_error(compiled):
    with pytest.raises(KeyError):
        compiled.mlir("bogus")


def test_op_count_in_text(compiled):
    text = compiled.mlir("graph")
    assert len(re.findall(r'= "ts\.', text)) == len(compiled.levels["graph"].ops)


def _sim_rows(sim):
    return (
        [(o.name, o.start_ns, o.duration_ns, o.bound, o.why, o.bytes) for o in sim.ops],
        list(sim.zones),
        list(sim.counters),
    )


@pytest.mark.parametrize(
    "ref, policy, item",
    [
        ("zoo:bert-base?layers=2", "dram-interleaved", "encoder.layer.0.attention.self.query.matmul=l1:interleaved"),
        ("zoo:bert-base?layers=2", "dram-interleaved", "encoder.layer.1.output.LayerNorm.layer_norm=2x2"),
        # fused attention, a KV cache written in place and const-eval work at load
        ("zoo:llama-3.2-1b?mode=decode&layers=2", "optimizer", "model.layers.1.mlp.up_proj.matmul=bfp4"),
        # the greedy policy's L1 placement taken from the base compile, one output moved back to DRAM
        ("zoo:bert-base?layers=2", "greedy-l1", "encoder.layer.0.intermediate.dense.matmul=dram"),
        # an operand read in another layout: a conversion inserted before the op
        ("zoo:bert-base?layers=2", "dram-interleaved", "encoder.layer.1.attention.output.dense.matmul=operand#0:l1"),
    ],
)
def test_a_compile_and_simulation_since_an_earlier_one_equal_those_from_scratch(wormhole, ref, policy, item):
    """The incremental path (since=, known=) reuses the graph level and the unchanged ops' kernels
    and timings, and gives what compiling and simulating from nothing gives."""
    from tilescope.compiler.sim.simulator import simulate
    from tilescope.overrides import parse_item

    model = load_model(ref)
    base = compile_model(model, wormhole, CompileOptions(policy=policy))
    base_sim = simulate(base.kernel, wormhole)
    options = CompileOptions([parse_item(item)], policy)
    fresh = compile_model(model, wormhole, options)
    since = compile_model(model, wormhole, options, since=base)
    assert since.levels["graph"] is base.levels["graph"]
    # the policy's placement is taken, not made again; what the override moved is its own
    assert since.levels["layout"].meta[PLACED] is base.levels["layout"].meta[PLACED]
    for level in ("graph", "layout", "kernel"):
        assert since.mlir(level) == fresh.mlir(level)
    assert since.override_outcomes == fresh.override_outcomes
    assert since.levels["layout"].meta[L1_PEAK] == fresh.levels["layout"].meta[L1_PEAK]
    live = [(op.name, op.meta[L1_LIVE], op.meta[L1_BYTES]) for op in since.kernel.ops]
    assert live == [(op.name, op.meta[L1_LIVE], op.meta[L1_BYTES]) for op in fresh.kernel.ops]
    kernels = {op.name: op.meta[KERNEL] for op in since.kernel.ops}
    assert kernels == {op.name: op.meta[KERNEL] for op in fresh.kernel.ops}
    before = {op.name: op.meta[KERNEL] for op in base.kernel.ops}
    kept = [name for name, kernel in kernels.items() if kernel is not None and kernel is before.get(name)]
    changed = [name for name, kernel in kernels.items() if kernel != before.get(name)]
    split = sum(kernel is not None for kernel in kernels.values())  # views and constants have none
    assert item.split("=")[0] in changed and len(kept) > 0.8 * split  # its neighbourhood only
    again, scratch = simulate(since.kernel, wormhole, known=base_sim.costs), simulate(fresh.kernel, wormhole)
    assert _sim_rows(again) == _sim_rows(scratch)
    assert [(o.name, o.duration_ns) for o in again.load_ops] == [(o.name, o.duration_ns) for o in scratch.load_ops]


def test_an_earlier_compilation_of_another_model_or_target_is_not_reused(wormhole):
    from tilescope.compiler.targets.catalog import load_target

    blackhole = load_target("blackhole_p150")
    model = load_model("zoo:mlp")
    other = compile_model(load_model("zoo:bert-base?layers=2"), wormhole)
    assert compile_model(model, wormhole, since=other).levels["graph"] is not other.levels["graph"]
    on_wormhole = compile_model(model, wormhole)
    on_blackhole = compile_model(model, blackhole, since=on_wormhole)
    assert on_blackhole.mlir("kernel") == compile_model(model, blackhole).mlir("kernel")
    assert on_blackhole.levels["graph"] is not on_wormhole.levels["graph"]


SHARDED = "zoo:llama-3.2-1b?layers=1&devices=8"
DOWN_BY_COLUMNS = "model.layers.0.mlp.down_proj.matmul=operand#1:sharding#{model},{}"
LM_HEAD_BY_ROWS = "lm_head.matmul=operand#1:sharding#{},{model}"


@pytest.mark.parametrize(
    "before, after, partition_kept",
    [
        ((), (DOWN_BY_COLUMNS,), False),  # a sharding added
        ((DOWN_BY_COLUMNS,), (LM_HEAD_BY_ROWS,), False),  # another one instead
        ((DOWN_BY_COLUMNS, LM_HEAD_BY_ROWS), (), False),  # all removed
        ((DOWN_BY_COLUMNS,), (DOWN_BY_COLUMNS, "lm_head.matmul=l1"), True),  # the same shardings
        ((DOWN_BY_COLUMNS,), ("model.layers.0.mlp.down_proj.matmul=operand#1:bf16:sharding#{model},{}",), True),
        (("lm_head.matmul=sharding#{vocab},{}",), ("lm_head.matmul=sharding#{},{vocab}",), False),  # both rejected
    ],
)
def test_a_recompile_with_other_sharding_overrides_partitions_again_and_equals_one_from_scratch(
    before, after, partition_kept
):
    """The partition level is reused only when the shardings asked for are the same; the graph
    level always. Either way the levels, outcomes and simulation are those of a fresh compile."""
    from tilescope.compiler.sim.simulator import simulate
    from tilescope.compiler.targets.catalog import load_target
    from tilescope.overrides import parse_item

    t3k = load_target("t3k")
    model = load_model(SHARDED)
    base = compile_model(model, t3k, CompileOptions([parse_item(i) for i in before]))
    base_sim = simulate(base.kernel, t3k)
    options = CompileOptions([parse_item(i) for i in after])
    fresh = compile_model(model, t3k, options)
    since = compile_model(model, t3k, options, since=base)
    assert since.levels["graph"] is base.levels["graph"]
    assert (since.levels["partition"] is base.levels["partition"]) == partition_kept
    for level in ("graph", "partition", "layout", "kernel"):
        assert since.mlir(level) == fresh.mlir(level), level
    assert since.override_outcomes == fresh.override_outcomes
    assert since.levels["partition"].meta[SHARDING_OUTCOMES] == fresh.levels["partition"].meta[SHARDING_OUTCOMES]
    again, scratch = simulate(since.kernel, t3k, known=base_sim.costs), simulate(fresh.kernel, t3k)
    assert _sim_rows(again) == _sim_rows(scratch)
    # and the earlier compilation is as it was
    assert base.mlir("partition") == compile_model(model, t3k, CompileOptions([parse_item(i) for i in before])).mlir(
        "partition"
    )


def test_a_compile_since_one_with_another_policy_places_afresh(wormhole):
    """The placement is the policy's: under another policy (or L1 cap) it is made again."""
    model = load_model("zoo:bert-base?layers=2")
    base = compile_model(model, wormhole)
    for policy, cap in (("greedy-l1", 0.5), ("greedy-l1", 0.25)):
        options = CompileOptions(policy=policy, l1_usage_cap=cap)
        since = compile_model(model, wormhole, options, since=base)
        fresh = compile_model(model, wormhole, options)
        assert since.levels["layout"].meta[PLACED] is not base.levels["layout"].meta[PLACED]
        assert since.mlir("layout") == fresh.mlir("layout") != base.mlir("layout")
        base = since


DECODE = "zoo:llama-3.2-1b?mode=decode&layers=2"
GATE_MUL_IN_L1 = "model.layers.1.mlp.gate_mul=4x4:l1:block_sharded"  # more than L1 holds beside the rest


@pytest.mark.parametrize(
    "ref, target_name, steps",
    [
        # one tensor read twice (the rotary table), KV caches written in place (no result), an
        # embedding lookup, a fused-away op; the policy changes and comes back
        (
            DECODE,
            "wormhole_n150",
            [
                ((), "greedy-l1", 0.8),
                (
                    (
                        "model.rotary_emb.emb=operand#1:l1",
                        "model.layers.0.self_attn.k_cache.update=operand#1:l1",
                        "model.embed_tokens.gather=operand#0:l1",
                        "model.layers.0.self_attn.softmax=4x4",
                        "model.layers.0.self_attn.q_proj.matmul=fidelity#lofi",  # layer 1's was renamed from it
                        "model.layers.1.mlp.up_proj.matmul=fidelity#lofi:double_buffer#false",
                    ),
                    "greedy-l1",
                    0.8,
                ),
                (
                    (
                        "model.rotary_emb.emb=operand#0:l1:interleaved",
                        "model.layers.1.self_attn.v_cache.update=operand#1:l1",
                        "model.layers.1.mlp.up_proj.matmul=block#1x2x2:subblock#1x2:bf16",
                    ),
                    "optimizer",
                    0.5,
                ),
                (("model.layers.0.self_attn.k_cache.update=operand#1:l1",), "greedy-l1", 0.8),
            ],
        ),
        # the graph's fusions as overrides: head splits fused, a merge kept apart, a matmul's
        # activation kept apart, then all as the compiler would have them
        (
            "zoo:llama-3.2-1b?layers=2",
            "wormhole_n150",
            [
                ((), "greedy-l1", 0.8),
                (
                    (
                        "model.layers.0.self_attn.q_proj.split_heads=fuse#true:l1:interleaved",
                        "model.layers.1.self_attn.k_proj.split_heads=fuse#true",
                        "model.layers.1.self_attn.context.merge_heads=fuse#false",
                    ),
                    "greedy-l1",
                    0.8,
                ),
                (
                    (
                        "model.layers.0.self_attn.q_proj.split_heads=fuse#true",
                        "model.layers.0.mlp.gate_proj.matmul=fuse#false",
                    ),
                    "greedy-l1",
                    0.9,
                ),
                ((), "greedy-l1", 0.8),
            ],
        ),
        # overrides the L1 planner rejects, then not asked, then asked again
        (
            "zoo:llama-3.2-1b?layers=2",
            "mtia_v1",
            [
                ((), "greedy-l1", 0.8),
                (
                    (
                        GATE_MUL_IN_L1,
                        "model.layers.0.mlp.act_fn.silu=dram",
                        "model.layers.0.self_attn.k_proj.matmul=2x2",
                    ),
                    "greedy-l1",
                    0.8,
                ),
                (("model.layers.0.mlp.act_fn.silu=dram",), "greedy-l1", 0.8),
                ((GATE_MUL_IN_L1,), "dram-interleaved", 0.8),
            ],
        ),
        # ops reading one tensor twice beside ops reading two alike, a matmul whose operands are
        # alike (a short tile asked: A is read in short tiles, B in full ones), two results
        (
            "repeated_operands.mlir",
            "wormhole_n150",
            [
                ((), "dram-interleaved", 0.8),
                (("layer.0.matmul=tile#16x32", "layer.0.twice=operand#1:l1"), "dram-interleaved", 0.8),
                (("layer.0.matmul=tile#16x32", "layer.1.square=l1", "layer.0.split=result#1:l1"), "greedy-l1", 0.8),
                (("layer.1.matmul=tile#16x32", "layer.1.cache.update=operand#1:l1"), "dram-interleaved", 0.8),
            ],
        ),
        # 32 devices: a sharding added, kept with other layouts, then dropped; one layer's op in
        # another dtype, shaped like the other layer's
        (
            "zoo:llama-3.2-1b?layers=2&devices=8",
            "galaxy",
            [
                ((), "dram-interleaved", 0.8),
                ((DOWN_BY_COLUMNS, "model.layers.1.mlp.gate_proj.matmul=bfp8"), "dram-interleaved", 0.8),
                ((DOWN_BY_COLUMNS, "model.layers.1.mlp.up_proj.matmul=l1"), "dram-interleaved", 0.8),
                (("model.layers.1.mlp.up_proj.matmul=f32",), "greedy-l1", 0.8),
            ],
        ),
    ],
)
def test_a_chain_of_compiles_each_since_the_last_equals_compiles_from_scratch(ref, target_name, steps, monkeypatch):
    """Each compile and simulation built on the one before (the placement, the operand layouts
    found and the kernels split in every earlier compile, kernels renamed from one that is no
    longer compiled) gives what compiling and simulating from nothing gives, and that is what
    compiling with no op's work taken from another's gives, down to each op's L1 on every core."""
    from tilescope.compiler.analysis.operand_layout import required_layout
    from tilescope.compiler.passes import split_kernels
    from tilescope.compiler.passes.insert_to_layout import InsertToLayout
    from tilescope.compiler.sim.simulator import simulate
    from tilescope.compiler.targets.catalog import load_target
    from tilescope.overrides import parse_item

    target = load_target(target_name)
    model = load_model(str(DATA / ref) if ref.endswith(".mlir") else ref)

    def unshared(options):
        """Every op's kernel split and operand layouts found for it alone."""
        with monkeypatch.context() as patch:
            patch.setattr(split_kernels, "_by_position", lambda key: object())  # shaped like no other op
            patch.setattr(InsertToLayout, "_required", lambda self, g, op, t: required_layout(self.target, g, op, t))
            return compile_model(model, target, options)

    before, costs, templates_gone = None, None, 0
    for items, policy, cap in steps:
        options = CompileOptions([parse_item(i) for i in items], policy, cap)
        since = compile_model(model, target, options, since=before)
        fresh = compile_model(model, target, options)
        alone = unshared(options)
        assert _facts(since) == _facts(fresh) == _facts(alone), items
        assert _l1_of_live_tensors(since) == _l1_planned(since)
        again = simulate(since.kernel, target, known=costs)
        assert _timings(again) == _timings(simulate(fresh.kernel, target)) == _timings(simulate(alone.kernel, target))
        kernels = [op.meta[KERNEL] for op in since.kernel.ops if op.meta[KERNEL] is not None]
        present = {id(kernel) for kernel in kernels}
        templates_gone += sum(k.like is not None and id(k.like) not in present for k in kernels)
        before, costs = since, again.costs
    assert templates_gone > 0  # a kernel renamed from one an override has since replaced


def _facts(compilation) -> tuple:
    """Every level's text, the overrides' outcomes, the L1 peak, and each op's L1 and kernel."""
    levels = [compilation.mlir(level) for level in ("graph", "partition", "layout", "kernel")]
    ops = []
    for op in compilation.kernel.ops:
        per_core = op.meta[L1_LIVE_PER_CORE]
        per_core = None if per_core is None else per_core.tolist()
        ops.append((op.name, op.meta[L1_LIVE], op.meta[L1_BYTES], per_core, op.meta[KERNEL]))
    return levels, compilation.override_outcomes, compilation.levels["layout"].meta[L1_PEAK], ops


def _l1_planned(compilation) -> list[tuple[str, tuple[int, int], float]]:
    """Each op's L1 in use as the planner counted it, on core 0,0 and its fullest core."""
    import numpy as np

    found = []
    for op in compilation.kernel.ops:
        per_core = op.meta[L1_LIVE_PER_CORE]
        if per_core is not None:
            fullest = tuple(int(i) for i in np.unravel_index(int(per_core.argmax()), per_core.shape))
            found += [(op.name, core, float(per_core[core])) for core in sorted({(0, 0), fullest})]
    return found


def _l1_of_live_tensors(compilation) -> list[tuple[str, tuple[int, int], float]]:
    """The same cores' L1 in use, added up from the tensors placed there and live at the op."""
    from tilescope.compiler.analysis.l1_usage import l1_live_at

    kernel, target = compilation.kernel, compilation.target
    return [
        (name, core, float(sum(t.bytes for t in l1_live_at(kernel, target, name, core))))
        for name, core, _ in _l1_planned(compilation)
    ]


def _timings(sim) -> tuple:
    """Every op's timing as a whole (its tensors too), at load and in the step, zones, counters."""
    from dataclasses import astuple

    return [astuple(o) for o in sim.ops], [astuple(o) for o in sim.load_ops], list(sim.zones), list(sim.counters)


DATA_TILING_STEPS = [
    ((), False),
    ((), True),
    (("encoder.layer.0.intermediate.dense.matmul=inner_tiles#8x8x1",), True),
    (("encoder.layer.0.intermediate.dense.matmul=inner_tiles#8x8x1", "encoder.layer.1.output.dense.matmul=l1"), True),
    (("encoder.layer.1.output.dense.matmul=l1",), False),
]


@pytest.mark.parametrize("target_name", ["x86_avx512", "wormhole_n150"])
def test_compiles_across_data_tiling_and_inner_tiles_each_since_the_last_equal_those_from_scratch(target_name):
    """Data-tiling switched on and off, and a matmul's inner tiles overridden, between compiles
    that each build on the one before: each equals a compile from nothing."""
    from tilescope.compiler.sim.simulator import simulate
    from tilescope.compiler.targets.catalog import load_target
    from tilescope.overrides import parse_item

    target = load_target(target_name)
    model = load_model("zoo:bert-base?layers=2&seq=128")
    before, costs = None, None
    for items, tiled in DATA_TILING_STEPS:
        options = CompileOptions([parse_item(i) for i in items], data_tiling=tiled)
        since = compile_model(model, target, options, since=before)
        fresh = compile_model(model, target, options)
        assert _facts(since) == _facts(fresh), (items, tiled)
        again = simulate(since.kernel, target, known=costs)
        assert _timings(again) == _timings(simulate(fresh.kernel, target)), (items, tiled)
        before, costs = since, again.costs
